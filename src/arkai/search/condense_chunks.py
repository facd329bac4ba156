"""Condense chunks of one transcript: messages packed into chunks of about
``condense.chunk_tokens`` tokens (seed 001, "Stage 3: Chunk"). Pure functions.

A **message** is, in a chat transcript, one ``### role · time`` header and the lines up to the
next header; in a timed transcript (``[HH:MM:SS]`` lines) one timed line with any untimed lines
after it; elsewhere one paragraph (a run of non-blank lines). Lines come from
:func:`arkai.search.chunks.split_lines` and are read with :mod:`arkai.core.grammar`, the same as
search chunks, so both agree on line numbers and byte offsets.

Messages are packed in order: a chunk is closed before the message that would take it past the
target, never inside a message. A message longer than the target on its own is a chunk of its
own, flagged ``oversized`` (reported, never split). Whatever comes before the first message
(a chat's ``# title`` line, blank lines) belongs to the first chunk, and blank lines between
messages to the chunk before them, so the chunks cover the transcript's bytes exactly once.
Token counts use :func:`arkai.core.tokens.count_tokens`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from arkai.adapters.params import whole_number
from arkai.core.grammar import parse_line
from arkai.core.tokens import count_tokens, tokens_for_chars
from arkai.model.shard import Message
from arkai.search.chunks import split_lines

#: ``condense.chunk_tokens`` when params leave it out (seed 001: ~4000-token chunks).
CHUNK_TOKENS = 4000
#: ``condense.shard_tokens`` when params leave it out (seed 001: 800K tokens per shard).
SHARD_TOKENS = 800_000


@dataclass(frozen=True, slots=True)
class TextChunk:
    """One chunk of a transcript before condensing."""

    chunk: int
    """1-based number within the item."""
    start: int
    """UTF-8 byte offset (inclusive)."""
    end: int
    """UTF-8 byte offset one past the end."""
    text: str
    tokens: int
    messages: tuple[Message, ...]
    oversized: bool = False


def condense_params(params: dict[str, Any]) -> tuple[int, int]:
    """``(chunk_tokens, shard_tokens)`` from params; a bad value names its key."""
    cp = params.get("condense")
    return (
        whole_number(cp, "condense.chunk_tokens", CHUNK_TOKENS),
        whole_number(cp, "condense.shard_tokens", SHARD_TOKENS),
    )


def split_messages(text: str) -> list[Message]:
    """The messages of ``text`` (see the module doc), numbered from 1, with byte ranges that
    end at the message's last non-blank line."""
    lines = split_lines(text)
    chat = any(parse_line(ln.text).kind == "chat_header" for ln in lines)
    timed = not chat and any(parse_line(ln.text).kind == "timed" for ln in lines)
    out: list[Message] = []
    cur: dict[str, object] | None = None
    last_end = 0

    def close() -> None:
        nonlocal cur
        if cur is not None:
            out.append(
                Message(
                    msg=len(out) + 1,
                    start=int(str(cur["start"])),
                    end=last_end,
                    line=int(str(cur["line"])),
                    role=cur["role"] if isinstance(cur["role"], str) else None,
                    timestamp=cur["when"] if isinstance(cur["when"], str) else None,
                )
            )
        cur = None

    for ln in lines:
        parsed = parse_line(ln.text)
        if chat:
            opens = parsed.kind == "chat_header"
        elif timed:
            opens = parsed.kind == "timed" or (cur is None and parsed.kind != "blank")
        else:
            opens = cur is None and parsed.kind != "blank"
        if opens:
            close()
            role = parsed.role if chat else parsed.speaker
            when = parsed.when if chat else (ln.timestamp if parsed.kind == "timed" else None)
            cur = {"start": ln.start, "line": ln.number, "role": role, "when": when}
        if parsed.kind == "blank":
            if not chat and not timed:
                close()
            continue
        if cur is not None:
            last_end = ln.start + len(ln.text.encode("utf-8"))
    close()
    return out


def chunk_messages(text: str, target: int = CHUNK_TOKENS) -> list[TextChunk]:
    """The chunks of ``text`` for a target of ``target`` tokens; none when it has no message."""
    if target < 1:
        raise ValueError(f"chunk target must be a positive number of tokens, not {target}")
    messages = split_messages(text)
    if not messages:
        return []
    data = text.encode("utf-8")
    groups: list[list[Message]] = []
    cur: list[Message] = []
    chars = 0  # characters from the current chunk's first message to the last one's end
    for m in messages:
        gap = len(data[cur[-1].end : m.end].decode("utf-8")) if cur else 0
        if cur and tokens_for_chars(chars + gap) > target:
            groups.append(cur)
            cur, gap = [], 0
        chars = chars + gap if cur else len(data[m.start : m.end].decode("utf-8"))
        cur.append(m)
    groups.append(cur)
    out: list[TextChunk] = []
    for n, group in enumerate(groups):
        start = 0 if n == 0 else group[0].start
        end = len(data) if n == len(groups) - 1 else groups[n + 1][0].start
        body = data[start:end].decode("utf-8")
        own = data[group[0].start : group[-1].end].decode("utf-8")
        out.append(
            TextChunk(
                chunk=n + 1,
                start=start,
                end=end,
                text=body,
                tokens=count_tokens(body),
                messages=tuple(group),
                oversized=len(group) == 1 and count_tokens(own) > target,
            )
        )
    return out
