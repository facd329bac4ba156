"""Property tests for the V1 span contract: any substring resolves back to its own bytes.

Every expectation here is computed naively (scan every byte offset) and compared with the
resolver, which uses indexes and caches.
"""

from __future__ import annotations

import hashlib
import json
import unicodedata

from hypothesis import assume, event, given, settings
from hypothesis import strategies as st

from arkai.core import canonjson
from arkai.core.document import Document
from arkai.core.evidence import evidence_from_match
from arkai.core.resolve import resolve_quote
from arkai.model.evidence import EvidenceLine

SETTINGS = settings(max_examples=200, deadline=None)

# Pieces that make offsets interesting (multibyte, combining marks, ZWJ, CRLF) and repeats likely.
PIECES = [
    "a", "b", "ab", " ", "  ", "\n", "\r\n", "\t", "🚀", "🐍", "東", "京",
    "é", "e\u0301", "\u0301", "\u200d", "Ω", "[00:01:02] ",
]  # fmt: skip
_piece = st.one_of(st.sampled_from(PIECES), st.characters(codec="utf-8"))
texts = st.lists(_piece, max_size=60).map("".join)
nonempty_texts = st.lists(_piece, min_size=1, max_size=60).map("".join)


def naive_occurrences(data: bytes, needle: bytes) -> list[int]:
    """Every byte offset where ``needle`` starts, overlaps included."""
    n = len(needle)
    return [k for k in range(len(data) - n + 1) if data[k : k + n] == needle]


def naive_line_col(data: bytes, offset: int) -> tuple[int, int]:
    head = data[:offset]
    line_start = head.rfind(b"\n") + 1
    return head.count(b"\n") + 1, len(data[line_start:offset].decode("utf-8")) + 1


def sha(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


@st.composite
def text_and_substring(draw: st.DrawFn) -> tuple[str, str]:
    """A text and a non-empty slice ``text[i:j]`` of it."""
    text = draw(nonempty_texts)
    i = draw(st.integers(0, len(text) - 1))
    j = draw(st.integers(i + 1, len(text)))
    return text, text[i:j]


@SETTINGS
@given(text_and_substring())
def test_any_substring_resolves_to_its_first_occurrence(case: tuple[str, str]) -> None:
    text, quote = case
    assume(quote.strip())
    data, needle = text.encode("utf-8"), quote.encode("utf-8")
    match = resolve_quote(Document(data), quote)
    res, span = match.resolution, match.span

    hits = naive_occurrences(data, needle)
    assert hits, "a substring always occurs"
    event(f"status={res.status}")
    assert span is not None
    assert data[span.start : span.end] == needle
    assert span.start == hits[0]
    assert res.method == "exact"
    assert res.match_count == len(hits)
    assert res.match_rank == 1
    if len(hits) == 1:
        assert (res.status, res.reason) == ("resolved", None)
    else:
        assert (res.status, res.reason) == ("ambiguous", "multiple_matches")
    assert span.slice_sha256 == sha(needle)
    assert (span.line, span.column) == naive_line_col(data, span.start)


@SETTINGS
@given(text_and_substring())
def test_anchor_surrounds_quote_without_splitting_characters(case: tuple[str, str]) -> None:
    text, quote = case
    assume(quote.strip())
    span = resolve_quote(Document(text.encode("utf-8")), quote).span
    assert span is not None and span.anchor_text is not None
    anchor = span.anchor_text
    assert anchor in text
    if len(quote) < 80:
        assert quote in anchor
        assert len(anchor) == min(80, len(text))
    else:
        assert anchor == quote[:80]


@SETTINGS
@given(texts, texts)
def test_absent_quote_is_unresolved_without_span(text: str, quote: str) -> None:
    data = text.encode("utf-8")
    assume(quote.strip() and quote.encode("utf-8") not in data)
    match = resolve_quote(Document(data), quote)
    res = match.resolution
    event(f"method={res.method}")
    assert match.span is None
    assert res.status == "unresolved"
    assert (res.match_count, res.match_rank) == (0, None)
    assert (res.method, res.reason) in {
        ("none", "no_match"),
        ("normalized_hint", "normalized_match_only"),
    }


@SETTINGS
@given(st.sampled_from(["", " ", "\n", "\r\n", " \t "]), texts)
def test_blank_quote_is_unresolved(quote: str, text: str) -> None:
    match = resolve_quote(Document(text.encode("utf-8")), quote)
    assert match.span is None
    assert match.resolution.status == "unresolved"


# --- the normalized hint -----------------------------------------------------------------

WORD_CHARS = "abcxyzé東🚀"
words = st.lists(st.text(alphabet=WORD_CHARS, min_size=1, max_size=5), min_size=2, max_size=12)


@SETTINGS
@given(words, st.data())
def test_whitespace_variant_of_substring_is_hint_only(ws: list[str], data: st.DataObject) -> None:
    text = " ".join(ws)
    i = data.draw(st.integers(0, len(ws) - 2))
    j = data.draw(st.integers(i + 2, len(ws)))
    sep = data.draw(st.sampled_from(["  ", "\n", "\r\n", "\t", " \n "]))
    quote = sep.join(ws[i:j])
    # The document only ever has single spaces between words, so the variant cannot occur.
    match = resolve_quote(Document(text.encode("utf-8")), quote)
    assert match.span is None
    assert (match.resolution.method, match.resolution.reason) == (
        "normalized_hint",
        "normalized_match_only",
    )


@SETTINGS
@given(words, st.data())
def test_nfd_variant_of_nfc_substring_is_hint_only(ws: list[str], data: st.DataObject) -> None:
    text = " ".join(ws)
    i = data.draw(st.integers(0, len(ws) - 1))
    j = data.draw(st.integers(i + 1, len(ws)))
    quote = unicodedata.normalize("NFD", " ".join(ws[i:j]))
    assume("é" in " ".join(ws[i:j]))
    # The document has no combining marks, so the decomposed quote cannot occur byte for byte.
    match = resolve_quote(Document(text.encode("utf-8")), quote)
    assert match.span is None
    assert match.resolution.method == "normalized_hint"


# --- timestamps --------------------------------------------------------------------------

line_bodies = st.text(alphabet="ab é東🚀", max_size=12)
stamps = st.one_of(st.none(), st.tuples(st.integers(0, 99), st.integers(0, 59), st.integers(0, 59)))


@SETTINGS
@given(
    st.lists(st.tuples(stamps, line_bodies), min_size=1, max_size=8),
    st.sampled_from(["\n", "\r\n"]),
    st.data(),
)
def test_video_timestamp_is_last_stamp_at_or_before_span(
    lines: list[tuple[tuple[int, int, int] | None, str]], eol: str, data: st.DataObject
) -> None:
    rendered = []
    for stamp, body in lines:
        prefix = "" if stamp is None else "[{:02d}:{:02d}:{:02d}] ".format(*stamp)
        rendered.append(prefix + body)
    text = eol.join(rendered)
    i = data.draw(st.integers(0, len(text)))
    j = data.draw(st.integers(i, len(text)))
    quote = text[i:j]
    assume(quote.strip())

    raw = text.encode("utf-8")
    span = resolve_quote(Document(raw), quote).span
    assert span is not None
    # Which rendered line holds the span's first byte, by walking line lengths.
    pos, expected = 0, None
    for (stamp, _), line in zip(lines, rendered, strict=True):
        if pos > span.start:
            break
        if stamp is not None:
            expected = "{:02d}:{:02d}:{:02d}".format(*stamp)
        pos += len(line.encode("utf-8")) + len(eol)
    assert span.video_timestamp == expected


# --- case-insensitive mode ---------------------------------------------------------------

ci_texts = st.text(alphabet="aAbB \n🚀東", min_size=1, max_size=40)


@SETTINGS
@given(ci_texts, st.data())
def test_insensitive_mode_finds_first_caseless_occurrence(text: str, data: st.DataObject) -> None:
    i = data.draw(st.integers(0, len(text) - 1))
    j = data.draw(st.integers(i + 1, len(text)))
    flips = data.draw(st.lists(st.booleans(), min_size=j - i, max_size=j - i))
    quote = "".join(c.swapcase() if f else c for c, f in zip(text[i:j], flips, strict=True))
    assume(quote.strip())
    raw, needle = text.encode("utf-8"), quote.encode("utf-8")
    match = resolve_quote(Document(raw), quote, mode="insensitive")
    res, span = match.resolution, match.span
    assert span is not None
    exact_hits = naive_occurrences(raw, needle)
    event(f"method={res.method}")
    if exact_hits:
        assert res.method == "exact"
        assert (span.start, res.match_count) == (exact_hits[0], len(exact_hits))
    else:
        hits = naive_occurrences(raw.lower(), needle.lower())
        assert res.method == "case_insensitive"
        assert (span.start, res.match_count) == (hits[0], len(hits))
        # Never resolved/ambiguous: only an exact byte match may be.
        assert res.status == "matched_case_insensitive"
        assert res.reason == (None if len(hits) == 1 else "multiple_matches")
    assert raw[span.start : span.end].lower() == needle.lower()
    assert span.slice_sha256 == sha(raw[span.start : span.end])


# --- evidence lines ------------------------------------------------------------------------

extractors = st.sampled_from(["extract_claims", "extract_entities", "extract_ideas"])
content_ids = st.text(alphabet="0123456789abcdef", min_size=16, max_size=16)
confidences = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)


@SETTINGS
@given(text_and_substring(), texts, content_ids, extractors, confidences, st.booleans())
def test_evidence_line_round_trips_through_jsonl(
    case: tuple[str, str],
    claim: str,
    cid: str,
    extractor: str,
    confidence: float,
    use_substring: bool,
) -> None:
    text, sub = case
    quote = sub if use_substring else claim  # sometimes present, usually not
    doc = Document(text.encode("utf-8"))
    kw = {
        "content_id": cid,
        "claim": claim,
        "quote": quote,
        "confidence": confidence,
        "extractor": extractor,
        "ts": "2026-01-12T10:00:00Z",
    }
    line = evidence_from_match(match=resolve_quote(doc, quote), **kw)  # type: ignore[arg-type]
    encoded = canonjson.dumps_line(line.to_dict())
    assert encoded.endswith("\n") and encoded.count("\n") == 1
    back = EvidenceLine.from_dict(json.loads(encoded))
    assert back == line
    assert canonjson.dumps_line(back.to_dict()) == encoded

    # Deterministic: a fresh document and a second build give the same line and ID.
    fresh = Document(text.encode("utf-8"))
    again = evidence_from_match(match=resolve_quote(fresh, quote), **kw)  # type: ignore[arg-type]
    assert again == line

    quote_sha = sha(quote.encode("utf-8"))
    assert line.quote_sha256 == quote_sha
    key = cid + extractor + quote_sha
    if line.span is not None:
        assert line.status in {"resolved", "ambiguous"}
        key += str(line.span.start) + str(line.span.end)
    else:
        assert line.status == "unresolved"
    assert line.id == hashlib.sha256(key.encode()).hexdigest()[:16]
