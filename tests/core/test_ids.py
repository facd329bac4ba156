"""Content IDs, quote digests and the two-tier evidence ID (seed 000, "Evidence IDs")."""

from __future__ import annotations

import hashlib
import re

import pytest

from arkai.core.document import Document
from arkai.core.evidence import evidence_from_match
from arkai.core.hashing import content_id, digest, evidence_id, text_digest
from arkai.core.resolve import resolve_quote
from arkai.model.evidence import EvidenceLine

HEX16 = re.compile(r"^[0-9a-f]{16}$")
CANONICAL = "url:https://www.youtube.com/watch?v=dQw4w9WgXcQ"
QUOTE = "our revenue grew by forty percent"
TS = "2026-01-12T10:00:00Z"

# Values pinned once with hashlib alone; they must never change between releases, because
# evidence IDs are written to evidence.jsonl files that live in git.
PINNED_CONTENT_ID = "1be304aaab9bb0b0"
PINNED_QUOTE_SHA = "sha256:e45f8e1c731570f9387943fb11cb656685d6c4c6df603bd5a365f9ac7638519c"
PINNED_ID_NO_SPAN = "18575d343ac04e52"
PINNED_ID_SPAN_1234_1267 = "5943b6c8f9c3b5d8"


def _id_without_span(cid: str, extractor: str, quote_sha: str) -> str:
    return hashlib.sha256((cid + extractor + quote_sha).encode()).hexdigest()[:16]


def _id_with_span(cid: str, extractor: str, quote_sha: str, start: int, end: int) -> str:
    key = cid + extractor + quote_sha + str(start) + str(end)
    return hashlib.sha256(key.encode()).hexdigest()[:16]


def _quote_sha(quote: str) -> str:
    return "sha256:" + hashlib.sha256(quote.encode("utf-8")).hexdigest()


# --- content ids and digests -------------------------------------------------------------


def test_content_id_is_first_16_hex_of_sha256_of_canonical() -> None:
    assert content_id(CANONICAL) == hashlib.sha256(CANONICAL.encode()).hexdigest()[:16]
    assert content_id(CANONICAL) == PINNED_CONTENT_ID


@pytest.mark.parametrize(
    "canonical",
    ["url:https://example.com/a", "file:sha256:" + "0" * 64, "url:https://例え.jp/パス"],
)
def test_content_id_shape_and_sensitivity(canonical: str) -> None:
    cid = content_id(canonical)
    assert HEX16.match(cid)
    assert cid == hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]
    assert content_id(canonical + "/") != cid


@pytest.mark.parametrize("quote", [QUOTE, "", "café", "cafe\u0301", "東京 🚀", "a\r\nb"])
def test_quote_sha256_is_prefixed_hex_of_utf8_bytes(quote: str) -> None:
    assert text_digest(quote) == _quote_sha(quote)
    assert digest(quote.encode("utf-8")) == _quote_sha(quote)
    assert re.fullmatch(r"sha256:[0-9a-f]{64}", text_digest(quote))


def test_nfc_and_nfd_quotes_hash_differently() -> None:
    # Digests are of raw bytes: no normalisation sneaks in.
    assert text_digest("caf\u00e9") != text_digest("cafe\u0301")


def test_quote_sha256_pinned() -> None:
    assert text_digest(QUOTE) == PINNED_QUOTE_SHA


# --- evidence_id -------------------------------------------------------------------------


def test_evidence_id_without_span() -> None:
    got = evidence_id(PINNED_CONTENT_ID, "extract_claims", PINNED_QUOTE_SHA, None)
    assert got == _id_without_span(PINNED_CONTENT_ID, "extract_claims", PINNED_QUOTE_SHA)
    assert got == PINNED_ID_NO_SPAN


def test_evidence_id_with_span() -> None:
    got = evidence_id(PINNED_CONTENT_ID, "extract_claims", PINNED_QUOTE_SHA, (1234, 1267))
    assert got == _id_with_span(PINNED_CONTENT_ID, "extract_claims", PINNED_QUOTE_SHA, 1234, 1267)
    assert got == PINNED_ID_SPAN_1234_1267


def test_evidence_id_depends_on_every_input() -> None:
    base = evidence_id("a" * 16, "extract_claims", _quote_sha("q"), (3, 4))
    assert evidence_id("b" * 16, "extract_claims", _quote_sha("q"), (3, 4)) != base
    assert evidence_id("a" * 16, "extract_ideas", _quote_sha("q"), (3, 4)) != base
    assert evidence_id("a" * 16, "extract_claims", _quote_sha("r"), (3, 4)) != base
    assert evidence_id("a" * 16, "extract_claims", _quote_sha("q"), (4, 5)) != base
    assert evidence_id("a" * 16, "extract_claims", _quote_sha("q"), None) != base


def test_span_at_zero_still_changes_the_id() -> None:
    # A span starting at byte 0 must not collapse into the no-span tier.
    cid, ext, qs = "c" * 16, "extract_claims", _quote_sha("x")
    assert evidence_id(cid, ext, qs, (0, 1)) == _id_with_span(cid, ext, qs, 0, 1)
    assert evidence_id(cid, ext, qs, (0, 1)) != evidence_id(cid, ext, qs, None)


# --- an evidence line built from a resolved quote applies the rule ---------------------------


def _build(text: str, quote: str, **kw: object) -> EvidenceLine:
    args: dict[str, object] = {
        "content_id": PINNED_CONTENT_ID,
        "claim": "Revenue grew 40%",
        "quote": quote,
        "confidence": 0.92,
        "extractor": "extract_claims",
        "ts": TS,
    }
    args.update(kw)
    mode = str(args.pop("mode", "exact"))
    match = resolve_quote(Document(text.encode("utf-8")), quote, mode=mode)
    return evidence_from_match(match=match, **args)  # type: ignore[arg-type]


def test_resolved_line_uses_span_tier() -> None:
    text = "x" * 1234 + QUOTE + " year over year."
    line = _build(text, QUOTE)
    assert line.status == "resolved"
    assert line.span is not None
    assert (line.span.start, line.span.end) == (1234, 1267)
    assert line.quote_sha256 == PINNED_QUOTE_SHA
    assert line.id == PINNED_ID_SPAN_1234_1267


def test_ambiguous_line_uses_span_of_first_match() -> None:
    text = "ab ab ab"
    line = _build(text, "ab")
    assert line.status == "ambiguous"
    assert line.id == _id_with_span(PINNED_CONTENT_ID, "extract_claims", _quote_sha("ab"), 0, 2)


def test_unresolved_line_uses_no_span_tier() -> None:
    line = _build("nothing relevant here", QUOTE)
    assert line.status == "unresolved"
    assert line.span is None
    assert line.id == PINNED_ID_NO_SPAN


def test_normalized_hint_line_has_no_span_id() -> None:
    line = _build("alpha beta", "alpha  beta")
    assert line.resolution.method == "normalized_hint"
    assert line.id == _id_without_span(
        PINNED_CONTENT_ID, "extract_claims", _quote_sha("alpha  beta")
    )


def test_multibyte_span_id_uses_byte_offsets() -> None:
    text = "東京 🚀 launch"
    line = _build(text, "launch")
    # 東京 = 6 bytes, space, rocket = 4 bytes, space: "launch" starts at byte 12 (code point 5).
    assert line.id == _id_with_span(
        PINNED_CONTENT_ID, "extract_claims", _quote_sha("launch"), 12, 18
    )


def test_insensitive_span_id_uses_the_span_found() -> None:
    line = _build("Hello World", "world", mode="insensitive")
    assert line.resolution.method == "case_insensitive"
    assert line.id == _id_with_span(PINNED_CONTENT_ID, "extract_claims", _quote_sha("world"), 6, 11)


def test_ids_are_stable_across_runs() -> None:
    text = "[00:00:01] " + QUOTE + "\n[00:00:02] and more"
    first = _build(text, QUOTE)
    second = _build(text, QUOTE)
    assert first.id == second.id
    assert first.to_dict() == second.to_dict()
    # The timestamp of the run is not part of the ID.
    later = _build(text, QUOTE, ts="2030-01-01T00:00:00Z")
    assert later.id == first.id
    # Neither are claim wording nor confidence.
    reworded = _build(text, QUOTE, claim="Different words", confidence=0.1)
    assert reworded.id == first.id


def test_moving_the_quote_changes_the_id() -> None:
    a = _build(QUOTE + " tail", QUOTE)
    b = _build("head " + QUOTE + " tail", QUOTE)
    assert a.id != b.id
    assert a.quote_sha256 == b.quote_sha256
