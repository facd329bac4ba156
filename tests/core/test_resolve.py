"""Quote resolution beyond the golden cases: anchors, slice digests, modes (seed 000, V1)."""

from __future__ import annotations

import hashlib
import json

import pytest

from arkai.core import canonjson
from arkai.core.document import Document
from arkai.core.evidence import evidence_from_match
from arkai.core.resolve import resolve_quote
from arkai.model.evidence import EvidenceLine, Span


def _sha(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _span(text: str, quote: str, **kw: object) -> Span:
    match = resolve_quote(Document(text.encode("utf-8")), quote, **kw)  # type: ignore[arg-type]
    assert match.span is not None, match.resolution
    return match.span


# A long ASCII document whose characters are all distinct by position, so any anchor slice can
# be located unambiguously with str.index.
LONG = "".join(f"{i:03d}|" for i in range(100))  # 400 chars, "000|001|...|099|"


# --- anchor_text ---------------------------------------------------------------------------


def test_anchor_is_80_chars_centred_on_the_quote() -> None:
    quote = "050|051|"
    span = _span(LONG, quote)
    anchor = span.anchor_text
    assert anchor is not None
    assert len(anchor) == 80
    assert quote in anchor
    at = LONG.index(anchor)
    assert anchor == LONG[at : at + 80]
    before = LONG.index(quote) - at
    after = 80 - before - len(quote)
    assert abs(before - after) <= 1


def test_anchor_clipped_at_document_start() -> None:
    span = _span(LONG, "001|")
    assert span.anchor_text == LONG[:80]


def test_anchor_clipped_at_document_end() -> None:
    span = _span(LONG, "098|")
    assert span.anchor_text == LONG[-80:]


def test_anchor_of_quote_at_very_start_and_end() -> None:
    assert _span(LONG, "000").anchor_text == LONG[:80]
    assert _span(LONG, "099|").anchor_text == LONG[-80:]


def test_anchor_of_short_document_is_the_whole_document() -> None:
    text = "a short line\nand another"
    assert _span(text, "line").anchor_text == text


def test_anchor_of_long_quote_is_its_first_80_chars() -> None:
    quote = LONG[100:300]
    span = _span(LONG, quote)
    assert span.anchor_text == quote[:80]


@pytest.mark.parametrize("filler", ["🚀", "東", "é", "e\u0301", "ab🐍"])
def test_anchor_counts_code_points_and_never_splits_multibyte(filler: str) -> None:
    text = filler * 60 + " needle " + filler * 60
    span = _span(text, "needle")
    anchor = span.anchor_text
    assert anchor is not None
    assert "\ufffd" not in anchor
    assert len(anchor) == 80
    assert " needle " in anchor
    assert anchor in text
    assert anchor.encode("utf-8") in text.encode("utf-8")


@pytest.mark.parametrize("filler", ["🚀", "東京", "é"])
def test_anchor_at_edges_of_multibyte_document(filler: str) -> None:
    text = "start" + filler * 100 + "end"
    assert _span(text, "start").anchor_text == text[:80]
    assert _span(text, "end").anchor_text == text[-80:]


# --- slice digest ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "quote", "mode"),
    [
        ("one two three", "two", "exact"),
        ("x🚀y x🚀y", "🚀y", "exact"),
        ("first\r\nsecond", "t\r\ns", "exact"),
        ("Hello World", "hello", "insensitive"),
        ("\u00c9COLE", "\u00e9cole", "insensitive"),
        ("The quick brown fox jumps over the lazy dog", "quick brown fax jumps", "fuzzy"),
    ],
)
def test_slice_sha256_is_digest_of_bytes_at_span(text: str, quote: str, mode: str) -> None:
    data = text.encode("utf-8")
    span = _span(text, quote, mode=mode)
    assert span.slice_sha256 == _sha(data[span.start : span.end])
    # The digest is of the document's bytes, which for non-exact matches differ from the quote.
    if mode != "exact":
        assert data[span.start : span.end] != quote.encode("utf-8")


def test_slice_sha256_differs_between_different_slices() -> None:
    a = _span("alpha beta", "alpha")
    b = _span("alpha beta", "beta")
    assert a.slice_sha256 != b.slice_sha256


# --- modes -------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["EXACT", "fuzzy ", "case_insensitive", "", "normalized"])
def test_invalid_mode_raises_value_error(mode: str) -> None:
    with pytest.raises(ValueError, match="mode"):
        resolve_quote(Document(b"some text"), "some", mode=mode)


def test_invalid_mode_raises_even_for_empty_quote() -> None:
    with pytest.raises(ValueError):
        resolve_quote(Document(b"some text"), "", mode="bogus")


def test_exact_is_the_default_mode() -> None:
    doc = Document(b"Hello World")
    assert resolve_quote(doc, "hello world").resolution.status == "unresolved"
    assert resolve_quote(doc, "Hello").resolution.method == "exact"


def test_fuzzy_mode_labels_method_and_reports_score() -> None:
    text = "The quick brown fox jumps over the lazy dog near the river bank."
    match = resolve_quote(Document(text.encode()), "quick brown fax jumps over", mode="fuzzy")
    res, span = match.resolution, match.span
    assert res.method == "fuzzy"
    assert res.status == "matched_fuzzy"
    assert res.score is not None
    assert 0 < res.score < 100
    assert span is not None
    sliced = text.encode()[span.start : span.end].decode()
    assert "brown" in sliced and "jumps" in sliced
    assert res.to_dict()["score"] == round(res.score, 2)


def test_fuzzy_evidence_line_round_trips_through_jsonl() -> None:
    # The score is written with 2 decimals; the line read back must equal the line built.
    text = "The quick brown fox jumps over the lazy dog near the river bank."
    line = evidence_from_match(
        match=resolve_quote(Document(text.encode()), "quick brown fax jumps over", mode="fuzzy"),
        content_id="0" * 16,
        claim="a fox jumped",
        quote="quick brown fax jumps over",
        confidence=0.5,
        extractor="extract_claims",
        ts="2026-01-12T10:00:00Z",
    )
    assert line.resolution.method == "fuzzy"
    encoded = canonjson.dumps_line(line.to_dict())
    back = EvidenceLine.from_dict(json.loads(encoded))
    assert back == line
    assert canonjson.dumps_line(back.to_dict()) == encoded


def test_fuzzy_mode_prefers_exact_match() -> None:
    match = resolve_quote(Document(b"quick brown fox"), "brown", mode="fuzzy")
    assert match.resolution.method == "exact"
    assert match.resolution.score is None
    assert "score" not in match.resolution.to_dict()


def test_fuzzy_mode_leaves_unrelated_quote_unresolved() -> None:
    match = resolve_quote(Document(b"quick brown fox"), "zzzzzzzzzzzzzzzzzzzz", mode="fuzzy")
    assert match.resolution.status == "unresolved"
    assert match.span is None


def test_exact_mode_never_uses_extension_methods() -> None:
    doc = Document(b"The quick brown fox")
    for quote in ["THE QUICK", "quick brwn fox", "fox jumps"]:
        res = resolve_quote(doc, quote).resolution
        assert res.method in {"none", "normalized_hint"}
        assert res.status == "unresolved"


# --- documents that are not clean UTF-8 ----------------------------------------------------


def test_exact_match_after_invalid_utf8_bytes() -> None:
    data = b"\xff\xfe HELLO world"
    match = resolve_quote(Document(data), "HELLO")
    assert match.span is not None
    assert data[match.span.start : match.span.end] == b"HELLO"


@pytest.mark.parametrize(
    ("quote", "mode", "must_contain"),
    [("hello", "insensitive", b"HELLO"), ("HELLO wrld", "fuzzy", b"HELLO")],
)
def test_non_exact_spans_map_to_bytes_after_invalid_utf8(
    quote: str, mode: str, must_contain: bytes
) -> None:
    # Each invalid byte decodes to U+FFFD (3 bytes); offsets must still be those of the raw bytes.
    data = b"\xff\xfe HELLO world"
    match = resolve_quote(Document(data), quote, mode=mode)
    assert match.span is not None
    assert match.resolution.method == ("case_insensitive" if mode == "insensitive" else "fuzzy")
    sliced = data[match.span.start : match.span.end]
    assert sliced.startswith(must_contain)
    assert match.span.slice_sha256 == _sha(sliced)


# --- resolution invariants -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "quote", "status"),
    [
        ("a b a b", "a b", "ambiguous"),
        ("a b c", "b", "resolved"),
        ("a b c", "d", "unresolved"),
        ("a  b", "a b", "unresolved"),
    ],
)
def test_resolution_fields_agree_with_status(text: str, quote: str, status: str) -> None:
    match = resolve_quote(Document(text.encode()), quote)
    res = match.resolution
    assert res.status == status
    if status == "unresolved":
        assert match.span is None
        assert (res.match_count, res.match_rank) == (0, None)
        assert res.reason in {"no_match", "normalized_match_only"}
        assert res.method == (
            "normalized_hint" if res.reason == "normalized_match_only" else "none"
        )
    else:
        assert match.span is not None
        assert res.match_rank == 1
        assert res.method == "exact"
        if status == "resolved":
            assert (res.match_count, res.reason) == (1, None)
        else:
            assert res.match_count > 1
            assert res.reason == "multiple_matches"


def test_custom_artifact_name_is_recorded() -> None:
    match = resolve_quote(Document(b"notes here"), "notes", artifact="wisdom.md")
    assert match.span is not None
    assert match.span.artifact == "wisdom.md"


def test_resolving_many_quotes_against_one_document_is_consistent() -> None:
    # Document caches its indexes; a later lookup must not be affected by an earlier one.
    text = "[00:00:01] alpha\n[00:00:02] beta\ngamma\n[00:00:03] delta"
    doc = Document(text.encode())
    expected = {
        "delta": (4, "00:00:03"),
        "alpha": (1, "00:00:01"),
        "gamma": (3, "00:00:02"),
        "beta": (2, "00:00:02"),
    }
    for quote, (line, ts) in expected.items():
        span = resolve_quote(doc, quote).span
        assert span is not None
        assert (span.line, span.video_timestamp) == (line, ts)
