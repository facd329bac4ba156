"""Search chunks: transcript windows cover every line once; claim chunks skip what they must."""

from __future__ import annotations

import hashlib
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from arkai.adapters.review import apply_review
from arkai.core.grammar import is_chat_header
from arkai.model.evidence import EvidenceLine
from arkai.search.chunks import (
    MAX_WORDS,
    chunk_key,
    chunk_transcript,
    claim_chunks,
    split_lines,
)

CID = "0123456789abcdef"


def check_cover(text: str, chunks: list[Any], max_words: int = MAX_WORDS) -> None:
    """Transcript chunks tile the lines 1..n in order, and their bytes are the lines' bytes."""
    lines = split_lines(text)
    data = text.encode("utf-8")
    expected = 1
    for c in chunks:
        assert c.kind == "transcript"
        assert c.start_line == expected and c.end_line >= c.start_line
        expected = c.end_line + 1
        first, last = lines[c.start_line - 1], lines[c.end_line - 1]
        assert c.byte_range == (first.start, last.end)
        assert c.text == data[first.start : last.end].decode("utf-8").strip()
        assert c.key == chunk_key(CID, c.text)
        worded = [ln for ln in lines[c.start_line - 1 : c.end_line] if ln.words]
        if len(worded) > 1:  # only a line alone may be longer than a window
            assert len(c.text.split()) <= max_words
    if any(ln.words for ln in lines):
        assert expected == len(lines) + 1


def test_windows_cover_every_line_once() -> None:
    text = "".join(
        f"[00:{i // 60:02d}:{i % 60:02d}] Speaker: " + "word " * 18 + "\n" for i in range(100)
    )
    chunks = chunk_transcript(CID, text)
    check_cover(text, chunks)
    assert len(chunks) > 5
    # 20 words a line: windows close at 160 words, i.e. 8 lines.
    assert chunks[0].start_line == 1 and chunks[0].end_line == 8
    assert chunks[0].timestamp == "00:00:00" and chunks[1].timestamp == "00:00:08"
    assert all(120 <= len(c.text.split()) <= 200 for c in chunks)


def test_long_line_is_its_own_chunk() -> None:
    text = "short line one\n" + ("long " * 450).strip() + "\nshort line two\nand three\n"
    chunks = chunk_transcript(CID, text)
    check_cover(text, chunks)
    long = [c for c in chunks if len(c.text.split()) == 450]
    assert len(long) == 1 and long[0].start_line == long[0].end_line == 2


def test_no_trailing_newline_and_unicode_bytes() -> None:
    text = "Olá, café ciência — ünïcode\nsecond line without newline"
    chunks = chunk_transcript(CID, text)
    check_cover(text, chunks)
    assert chunks[0].byte_range == (0, len(text.encode("utf-8")))


def test_empty_transcript_has_no_chunks() -> None:
    assert chunk_transcript(CID, "") == []
    assert chunk_transcript(CID, "\n\n  \n") == []


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.just(""),
            st.integers(min_value=1, max_value=260).map(lambda n: " ".join(["w"] * n)),
            st.text(alphabet="aé 日\t", max_size=30),
        ),
        max_size=60,
    ),
    st.booleans(),
)
def test_cover_property(lines: list[str], trailing: bool) -> None:
    text = "\n".join(lines) + ("\n" if trailing and lines else "")
    check_cover(text, chunk_transcript(CID, text))


def chat_text() -> str:
    msgs = [("user", 30), ("assistant", 150), ("user", 10), ("assistant", 260), ("user", 40)]
    out = ["# A chat", ""]
    for n, (role, words) in enumerate(msgs):
        out.append(f"### {role} · 2024-05-01 10:0{n} UTC")
        # A long message is several lines of 40 words.
        for k in range(0, words, 40):
            out.append(" ".join(["talk"] * min(40, words - k)))
        out.append("")
    return "\n".join(out) + "\n"


def test_chat_chunks_at_message_boundaries() -> None:
    text = chat_text()
    assert any(is_chat_header(line) for line in text.split("\n"))
    chunks = chunk_transcript(CID, text)
    check_cover(text, chunks)
    lines = split_lines(text)
    headers = {ln.number for ln in lines if ln.text.startswith("### ")}
    long_msg = sorted(headers)[3]  # the 260-word message: split inside, by lines
    long_end = sorted(headers)[4] - 1
    for c in chunks:
        inside_long = long_msg < c.start_line <= long_end
        assert c.start_line in headers or c.start_line == 1 or inside_long
        nxt = c.end_line + 1
        assert nxt in headers or nxt > len(lines) or long_msg <= c.end_line < long_end
    # A message that fits is never split.
    second = sorted(headers)[1]
    assert any(c.start_line <= second and c.end_line >= second + 4 for c in chunks)


def line(
    eid: str,
    text: str,
    quote: str,
    *,
    status: str = "resolved",
    conf: float = 0.9,
    review: str | None = None,
    claim: str | None = None,
) -> EvidenceLine:
    data = text.encode("utf-8")
    start = data.find(quote.encode("utf-8"))
    span = None
    if status != "unresolved":
        span = {
            "artifact": "transcript.md",
            "utf8_byte_offset": [start, start + len(quote.encode("utf-8"))],
            "slice_sha256": "sha256:" + hashlib.sha256(quote.encode()).hexdigest(),
        }
    d: dict[str, Any] = {
        "id": eid,
        "content_id": CID,
        "claim": claim if claim is not None else quote,
        "quote": quote,
        "quote_sha256": "sha256:" + hashlib.sha256(quote.encode()).hexdigest(),
        "status": status,
        "resolution": {
            "method": "exact" if span else "none",
            "match_count": 1 if span else 0,
            "match_rank": 1 if span else None,
            "reason": None,
        },
        "span": span,
        "confidence": conf,
        "extractor": "extract_claims",
        "ts": "2026-01-01T00:00:00Z",
    }
    if review:
        d["review"] = {"status": review}
    return EvidenceLine.from_dict(d)


TRANSCRIPT = (
    "[00:00:01] A: Bees forage within three kilometres.\n"
    "[00:00:09] B: Varroa mites spread between hives.\n"
    "[00:00:15] A: The winter loss was 31 percent\n"
    "and it spread over two lines.\n"
)


def test_claim_chunks_skip_rejected_and_unresolved() -> None:
    lines = [
        line("a" * 16, TRANSCRIPT, "Varroa mites spread between hives.", claim="Mites spread."),
        line("b" * 16, TRANSCRIPT, "Bees forage within three kilometres.", review="rejected"),
        line("c" * 16, TRANSCRIPT, "nothing like this", status="unresolved"),
        line("d" * 16, TRANSCRIPT, "31 percent\nand it spread", status="ambiguous"),
        # Spans that are not exact matches are never indexed as claims (issue 10).
        line("e" * 16, TRANSCRIPT, "Bees forage", status="matched_case_insensitive"),
        line("f" * 16, TRANSCRIPT, "Varroa mites", status="matched_fuzzy"),
        line("0" * 16, TRANSCRIPT, "winter loss", status="reanchored_fuzzy"),
    ]
    chunks = claim_chunks(CID, TRANSCRIPT, lines)
    assert [c.evidence_id for c in chunks] == ["a" * 16, "d" * 16]
    first, second = chunks
    assert (first.start_line, first.end_line) == (2, 2)
    assert first.text == "Mites spread.\nVarroa mites spread between hives."
    assert first.timestamp == "00:00:09" and first.kind == "claim"
    assert (second.start_line, second.end_line) == (3, 4)
    start = TRANSCRIPT.encode().find(b"31 percent")
    assert second.byte_range == (start, start + len(b"31 percent\nand it spread"))
    assert second.to_dict()["evidence_id"] == "d" * 16


def test_review_yaml_rejection_applies() -> None:
    lines = [line("a" * 16, TRANSCRIPT, "Varroa mites spread between hives.")]
    reviewed = apply_review(lines, {"aaaaaaaa": {"status": "rejected"}})
    assert claim_chunks(CID, TRANSCRIPT, reviewed) == []


def test_chunk_order_and_keys() -> None:
    lines = [line("a" * 16, TRANSCRIPT, "Varroa mites spread between hives.")]
    chunks = sorted(
        chunk_transcript(CID, TRANSCRIPT) + claim_chunks(CID, TRANSCRIPT, lines),
        key=lambda c: c.sort_key,
    )
    assert [c.kind for c in chunks] == ["claim", "transcript"]
    assert chunks[0].key != chunks[1].key
    assert chunks[1].to_dict()["byte_range"] == [0, len(TRANSCRIPT.encode())]
    assert "evidence_id" not in chunks[1].to_dict()
    # The key is the text plus the content ID.
    assert (
        chunks[0].key
        == "sha256:" + hashlib.sha256((chunks[0].text + CID).encode("utf-8")).hexdigest()
    )
    assert chunk_transcript("f" * 16, TRANSCRIPT)[0].key != chunks[1].key
