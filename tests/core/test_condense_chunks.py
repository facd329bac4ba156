"""Condense chunks: messages packed to a token target, never split (ops/condense_chunks.py)."""

from __future__ import annotations

import itertools

import pytest

from arkai.core.tokens import count_tokens
from arkai.search.condense_chunks import chunk_messages, split_messages


def chat(n: int, words: int = 30) -> str:
    """A chat transcript as the chat sources write it: a title, then ``### role · time``."""
    blocks = ["# A long chat\n"]
    for i in range(n):
        role = "user" if i % 2 == 0 else "assistant"
        body = " ".join(f"m{i}w{j}" for j in range(words))
        when = f"2025-03-0{1 + i % 9} 10:{i % 60:02d}:00 UTC"
        blocks.append(f"### {role} · {when}\n{body}\n\nmore {i}\n")
    return "\n".join(blocks)


def test_chat_messages_follow_headers_and_keep_blank_lines_inside() -> None:
    text = chat(3)
    msgs = split_messages(text)
    assert [m.msg for m in msgs] == [1, 2, 3]
    assert [m.role for m in msgs] == ["user", "assistant", "user"]
    assert msgs[1].timestamp == "2025-03-02 10:01:00 UTC"
    data = text.encode()
    for m in msgs:
        body = data[m.start : m.end].decode()
        assert body.startswith("### ") and body.endswith(f"more {m.msg - 1}")
        assert text.splitlines()[m.line - 1].startswith("### ")


def test_chunks_close_at_message_boundaries_and_cover_every_byte() -> None:
    text = chat(40)
    chunks = chunk_messages(text, target=300)
    assert len(chunks) > 3
    data = text.encode()
    assert chunks[0].start == 0 and chunks[-1].end == len(data)
    for a, b in itertools.pairwise(chunks):
        assert a.end == b.start  # no gap, no overlap
        assert data[b.start :].startswith(b"### ")  # a chunk opens on a message header
    starts = {m.start for c in chunks for m in c.messages}
    assert len(starts) == 40  # every message in exactly one chunk
    for c in chunks:
        assert c.text == data[c.start : c.end].decode()
        assert c.tokens == count_tokens(c.text)
        assert not c.oversized
        own = data[c.messages[0].start : c.messages[-1].end].decode()
        assert count_tokens(own) <= 300 or len(c.messages) == 1
    # Messages keep their transcript-wide numbers.
    assert [m.msg for c in chunks for m in c.messages] == list(range(1, 41))


def test_an_oversized_message_is_its_own_chunk_and_flagged() -> None:
    text = chat(2, words=10) + "### user · 2025-03-09 11:00:00 UTC\n" + "word " * 600 + "\n"
    text += "### assistant · 2025-03-09 11:01:00 UTC\nshort answer\n"
    chunks = chunk_messages(text, target=200)
    big = [c for c in chunks if c.oversized]
    assert len(big) == 1 and len(big[0].messages) == 1
    assert big[0].messages[0].msg == 3 and big[0].tokens > 200
    assert [c.oversized for c in chunks] == [False, True, False]


def test_a_short_plain_transcript_is_one_chunk_of_paragraphs() -> None:
    text = "First paragraph line one.\nline two.\n\nSecond paragraph.\n\n\nThird.\n"
    (chunk,) = chunk_messages(text)
    assert (chunk.start, chunk.end) == (0, len(text.encode()))
    assert [text.encode()[m.start : m.end].decode() for m in chunk.messages] == [
        "First paragraph line one.\nline two.", "Second paragraph.", "Third.",
    ]  # fmt: skip


def test_a_long_plain_transcript_is_cut_between_paragraphs() -> None:
    paragraphs = [" ".join(f"p{i}w{j}" for j in range(80)) for i in range(30)]
    text = "\n\n".join(paragraphs) + "\n"
    chunks = chunk_messages(text, target=500)
    assert len(chunks) > 1
    for c in chunks:
        assert c.text.rstrip("\n").split("\n\n")[0] in paragraphs  # opens on a paragraph


def test_timed_lines_are_messages_with_speaker_and_time() -> None:
    text = "[00:00:01] Ana: Hello there.\n[00:00:05] Bo: Hi Ana.\ncontinued line\n"
    msgs = split_messages(text)
    assert [(m.role, m.timestamp, m.line) for m in msgs] == [
        ("Ana", "00:00:01", 1), ("Bo", "00:00:05", 2),
    ]  # fmt: skip
    assert text.encode()[msgs[1].start : msgs[1].end] == b"[00:00:05] Bo: Hi Ana.\ncontinued line"


def test_empty_transcript_has_no_chunk_and_bad_target_is_refused() -> None:
    assert chunk_messages("\n\n") == []
    with pytest.raises(ValueError, match="positive"):
        chunk_messages("x", target=0)


def test_multibyte_text_keeps_byte_offsets() -> None:
    text = "### user · t\nZoë écrit « ça » 🐝\n\n### assistant · t\nDaß ist gut.\n"
    msgs = split_messages(text)
    data = text.encode()
    assert data[msgs[0].start : msgs[0].end].decode() == "### user · t\nZoë écrit « ça » 🐝"
    assert data[msgs[1].start : msgs[1].end].decode() == "### assistant · t\nDaß ist gut."


def test_an_ambiguous_quote_is_placed_inside_its_chunk_and_still_checks() -> None:
    from arkai.core.document import Document
    from arkai.core.receipts import Receipt, check_receipt
    from arkai.core.resolve import prefer_within, resolve_quote

    text = chat(2, words=5) + "### user · t\nWe decided to ship it.\n\n"
    text += "### assistant · t\nfiller\n\n### user · t\nWe decided to ship it.\n"
    data = text.encode()
    doc = Document(data)
    second = data.rindex(b"### user")
    first_hit = resolve_quote(doc, "We decided to ship it.")
    assert first_hit.resolution.status == "ambiguous" and first_hit.span is not None
    assert first_hit.span.start < second
    moved = prefer_within(doc, first_hit, second, len(data))
    assert moved.span is not None and moved.span.start > second
    assert moved.resolution.match_rank == 2 and moved.resolution.match_count == 2
    receipt = Receipt("We decided to ship it.", "ambiguous", moved.resolution, moved.span)
    assert check_receipt(doc, receipt) == []
    # Inside its range already, or unresolved: unchanged.
    assert prefer_within(doc, first_hit, 0, second) is first_hit
    missing = resolve_quote(doc, "never said")
    assert prefer_within(doc, missing, 0, len(data)) is missing
