"""Search chunks of an item (``index/chunks/``, docs/index-format.md). Pure functions.

Two kinds of chunk:

- ``transcript`` — consecutive lines of ``transcript.md`` grouped into windows of about
  120–200 words. A window never splits a line (a line longer than the window is a chunk of
  its own), and together the windows cover every line exactly once, so each hit maps back to
  ``transcript.md#L<start_line>``. Chat transcripts (``### role · time`` message headers) are
  cut at message boundaries; only a message longer than a window is split, at line boundaries.
- ``claim`` — one per grounded, non-rejected claim: its claim text plus its quote, pointing at
  the lines (and bytes) of its span.

A chunk's ``key`` is ``sha256:<hex>`` of its text's UTF-8 followed by the content ID: the
vector store is keyed by it, so an unchanged chunk is never embedded twice.
"""

from __future__ import annotations

import hashlib
from bisect import bisect_right
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from arkai.adapters.review import is_rejected
from arkai.core.document import Document
from arkai.core.grammar import TIMESTAMP_RE, is_chat_header
from arkai.model.evidence import EvidenceLine

TRANSCRIPT_KIND = "transcript"
CLAIM_KIND = "claim"
#: A window is closed once it holds this many words …
TARGET_WORDS = 160
#: … and never grows past this many (unless one line alone is longer).
MAX_WORDS = 200
#: A last window shorter than this is folded into the one before when both fit ``MAX_WORDS``.
MIN_WORDS = 120


@dataclass(frozen=True, slots=True)
class Chunk:
    """One line of ``index/chunks/``."""

    key: str
    content_id: str
    kind: str
    """``transcript`` | ``claim``."""
    start_line: int
    """1-based, inclusive."""
    end_line: int
    """1-based, inclusive."""
    byte_range: tuple[int, int]
    """UTF-8 byte offsets in ``transcript.md``: ``[start, end)``."""
    text: str
    evidence_id: str | None = None
    timestamp: str | None = None
    page: int | None = None
    """The PDF page the chunk starts on (absent, not null, in the file for other items)."""

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "key": self.key,
            "content_id": self.content_id,
            "kind": self.kind,
            "start_line": self.start_line,
            "end_line": self.end_line,
            "byte_range": [self.byte_range[0], self.byte_range[1]],
            "text": self.text,
            "timestamp": self.timestamp,
        }
        if self.kind == CLAIM_KIND:
            d["evidence_id"] = self.evidence_id
        if self.page is not None:
            d["page"] = self.page
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Chunk:
        start, end = d["byte_range"]
        return cls(
            key=str(d["key"]),
            content_id=str(d["content_id"]),
            kind=str(d["kind"]),
            start_line=int(d["start_line"]),
            end_line=int(d["end_line"]),
            byte_range=(int(start), int(end)),
            text=str(d["text"]),
            evidence_id=d.get("evidence_id"),
            timestamp=d.get("timestamp"),
            page=d.get("page"),
        )

    @property
    def sort_key(self) -> tuple[str, int, int, str]:
        """Order inside one item: kind, start line, end line, evidence ID."""
        return (self.kind, self.start_line, self.end_line, self.evidence_id or "")


def chunk_key(content_id: str, text: str) -> str:
    """``sha256:<hex>`` of the text's UTF-8 followed by the content ID."""
    h = hashlib.sha256(text.encode("utf-8"))
    h.update(content_id.encode("utf-8"))
    return "sha256:" + h.hexdigest()


@dataclass(frozen=True, slots=True)
class _Line:
    number: int  # 1-based
    start: int  # byte offset
    end: int  # byte offset one past the line's newline
    text: str  # without the newline
    words: int
    timestamp: str | None  # of this line, or the last one before it


def _stamp(line: str) -> str | None:
    m = TIMESTAMP_RE.match(line)
    if m is None:
        return None
    h, mi, s = m.groups()
    return f"{int(h):02d}:{mi}:{s}"


def split_lines(text: str) -> list[_Line]:
    """The lines of ``text`` as ``transcript.md`` numbers them (split on ``\\n`` only)."""
    parts = text.split("\n")
    if parts and parts[-1] == "":
        parts.pop()  # the text ends with a newline: no empty last line
    out: list[_Line] = []
    offset = 0
    last: str | None = None
    for n, raw in enumerate(parts, 1):
        size = len(raw.encode("utf-8")) + 1
        last = _stamp(raw) or last
        out.append(_Line(n, offset, offset + size, raw, len(raw.split()), last))
        offset += size
    if out and not text.endswith("\n"):
        tail = out[-1]
        out[-1] = _Line(
            tail.number, tail.start, tail.end - 1, tail.text, tail.words, tail.timestamp
        )
    return out


def _units(lines: list[_Line], chat: bool) -> list[list[_Line]]:
    """Indivisible runs of lines: single lines, or whole chat messages."""
    if not chat:
        return [[ln] for ln in lines]
    units: list[list[_Line]] = []
    for ln in lines:
        if not units or is_chat_header(ln.text):
            units.append([ln])
        else:
            units[-1].append(ln)
    return units


def _words(units: list[list[_Line]]) -> int:
    return sum(ln.words for unit in units for ln in unit)


def _pack(units: list[list[_Line]], target: int, max_words: int) -> list[list[_Line]]:
    """Group units into windows: closed at ``target`` words, at most ``max_words`` (a unit
    longer than that alone; a multi-line unit that long is split by lines)."""
    windows: list[list[list[_Line]]] = []
    cur: list[list[_Line]] = []
    words = 0
    for unit in units:
        w = sum(ln.words for ln in unit)
        if w > max_words and len(unit) > 1:
            # A message too long for one window: close the current one, split it by lines.
            if cur:
                windows.append(cur)
                cur, words = [], 0
            windows.extend(
                [[ln] for ln in win] for win in _pack([[ln] for ln in unit], target, max_words)
            )
            continue
        if cur and words + w > max_words and words > 0:
            windows.append(cur)
            cur, words = [], 0
        cur.append(unit)
        words += w
        if words >= target:
            windows.append(cur)
            cur, words = [], 0
    if cur:
        tail = _words(cur)
        if not windows or tail >= MIN_WORDS:
            windows.append(cur)
        elif tail == 0 or _words(windows[-1]) + tail <= max_words:
            windows[-1] = windows[-1] + cur
        else:
            # Too short alone, too long together: split the two windows' units evenly.
            both = windows.pop() + cur
            total = _words(both)
            best, best_gap = len(both) - len(cur), total
            left = 0
            for k in range(1, len(both)):
                left += sum(ln.words for ln in both[k - 1])
                if (
                    left <= max_words
                    and total - left <= max_words
                    and abs(2 * left - total) < (best_gap)
                ):
                    best, best_gap = k, abs(2 * left - total)
            windows.extend([both[:best], both[best:]])
    return [[ln for unit in win for ln in unit] for win in windows]


def chunk_transcript(
    content_id: str,
    text: str,
    *,
    target_words: int = TARGET_WORDS,
    max_words: int = MAX_WORDS,
    chat: bool | None = None,
) -> list[Chunk]:
    """Transcript chunks of ``text`` (the whole ``transcript.md``), in line order.

    ``chat`` forces or disables message-boundary chunking (default: detected from headers).
    A transcript without any word gives no chunk.
    """
    lines = split_lines(text)
    if chat is None:
        chat = any(is_chat_header(ln.text) for ln in lines)
    data = text.encode("utf-8")
    doc = Document(data)
    out: list[Chunk] = []
    for window in _pack(_units(lines, chat), target_words, max_words):
        first, last = window[0], window[-1]
        body = data[first.start : last.end].decode("utf-8").strip()
        if not body:
            continue
        out.append(
            Chunk(
                key=chunk_key(content_id, body),
                content_id=content_id,
                kind=TRANSCRIPT_KIND,
                start_line=first.number,
                end_line=last.number,
                byte_range=(first.start, last.end),
                text=body,
                timestamp=first.timestamp,
                page=doc.first_page(first.start, last.end),
            )
        )
    return out


def claim_text(line: EvidenceLine) -> str:
    """The claim, then its quote on the next line (once, when the two are the same)."""
    claim, quote = line.claim.strip(), line.quote.strip()
    if not quote or quote == claim:
        return claim
    if not claim:
        return quote
    return f"{claim}\n{quote}"


def claim_chunks(
    content_id: str, text: str, evidence: Iterable[EvidenceLine], *, artifact: str = "transcript.md"
) -> list[Chunk]:
    """One chunk per claim with an exact-match span (``resolved`` / ``ambiguous``) in
    ``artifact`` that is not rejected, pointing at the lines of its span; sorted by start
    line, then evidence ID."""
    data = text.encode("utf-8")
    doc = Document(data)
    starts = [ln.start for ln in split_lines(text)] or [0]
    stamps = [ln.timestamp for ln in split_lines(text)]
    out: list[Chunk] = []
    for ev in evidence:
        span = ev.span
        if (
            span is None
            or not ev.verified
            or is_rejected(ev)
            or span.artifact != artifact
            or not 0 <= span.start <= span.end <= len(data)
        ):
            continue
        body = claim_text(ev)
        if not body:
            continue
        first = bisect_right(starts, span.start)
        last = bisect_right(starts, max(span.start, span.end - 1))
        stamp = span.video_timestamp or (stamps[first - 1] if stamps else None)
        out.append(
            Chunk(
                key=chunk_key(content_id, body),
                content_id=content_id,
                kind=CLAIM_KIND,
                start_line=first,
                end_line=last,
                byte_range=(span.start, span.end),
                text=body,
                evidence_id=ev.id,
                timestamp=stamp,
                page=doc.page_at(span.start),
            )
        )
    out.sort(key=lambda c: c.sort_key)
    return out
