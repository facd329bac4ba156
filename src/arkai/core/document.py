"""A transcript's bytes with the lookups that spans need: lines, columns, timestamps, anchors.

Everything is computed lazily and cached on the instance, so resolving many quotes against one
transcript pays for each index once.
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_right

#: A transcript line that starts with ``[HH:MM:SS]`` (optionally ``[H:MM:SS.mmm]``).
TIMESTAMP_RE = re.compile(rb"^\[(\d{1,2}):(\d{2}):(\d{2})(?:[.,]\d+)?\]", re.MULTILINE)
_WS_RE = re.compile(r"\s+")

ANCHOR_CHARS = 80


def normalize_text(text: str) -> str:
    """Whitespace collapsed to single spaces and Unicode NFC — the V1 hint normalisation."""
    return _WS_RE.sub(" ", unicodedata.normalize("NFC", text)).strip()


class Document:
    """Immutable bytes of one artifact plus lazily built indexes."""

    __slots__ = ("_line_starts", "_norm", "_text", "_ts_lines", "_ts_values", "data")

    def __init__(self, data: bytes) -> None:
        self.data = data
        self._line_starts: list[int] | None = None
        self._ts_lines: list[int] | None = None
        self._ts_values: list[str] | None = None
        self._text: str | None = None
        self._norm: str | None = None

    @property
    def text(self) -> str:
        """The bytes decoded as UTF-8 (invalid bytes replaced)."""
        if self._text is None:
            self._text = self.data.decode("utf-8", errors="replace")
        return self._text

    @property
    def normalized(self) -> str:
        if self._norm is None:
            self._norm = normalize_text(self.text)
        return self._norm

    def line_starts(self) -> list[int]:
        if self._line_starts is None:
            starts = [0]
            data = self.data
            find = data.find
            i = find(b"\n")
            while i >= 0:
                starts.append(i + 1)
                i = find(b"\n", i + 1)
            self._line_starts = starts
        return self._line_starts

    def line_of(self, offset: int) -> int:
        """1-based line number containing byte ``offset``."""
        return bisect_right(self.line_starts(), offset)

    def line_col(self, offset: int) -> tuple[int, int]:
        """1-based (line, column); the column counts code points from the line start."""
        line = self.line_of(offset)
        start = self.line_starts()[line - 1]
        col = len(self.data[start:offset].decode("utf-8", errors="replace")) + 1
        return line, col

    def line_span(self, line: int) -> tuple[int, int]:
        """Byte range of 1-based ``line`` without its newline."""
        starts = self.line_starts()
        start = starts[line - 1]
        end = starts[line] - 1 if line < len(starts) else len(self.data)
        return start, end

    def _build_timestamps(self) -> None:
        lines: list[int] = []
        values: list[str] = []
        for m in TIMESTAMP_RE.finditer(self.data):
            h, mi, s = (int(g) for g in m.groups())
            lines.append(m.start())
            values.append(f"{h:02d}:{mi:02d}:{s:02d}")
        self._ts_lines = lines
        self._ts_values = values

    def timestamp_at(self, offset: int) -> str | None:
        """Timestamp of the last ``[HH:MM:SS]`` line starting at or before ``offset``."""
        if self._ts_lines is None:
            self._build_timestamps()
        assert self._ts_lines is not None and self._ts_values is not None
        i = bisect_right(self._ts_lines, offset)
        return self._ts_values[i - 1] if i else None

    def anchor(self, start: int, end: int, width: int = ANCHOR_CHARS) -> str:
        """About ``width`` characters centred on the span (its first ``width`` if longer)."""
        data = self.data
        inner = data[start : min(end, start + 4 * width)].decode("utf-8", errors="ignore")
        if len(inner) >= width:
            return inner[:width]
        room = width - len(inner)
        before_n = room // 2
        lo = max(0, start - 4 * before_n)
        while lo < start and (data[lo] & 0xC0) == 0x80:
            lo += 1
        before = data[lo:start].decode("utf-8", errors="ignore")
        after = data[end : end + 4 * room].decode("utf-8", errors="ignore")
        before = before[-before_n:] if before_n else ""
        after = after[: room - len(before)]
        if len(before) + len(inner) + len(after) < width and len(before) < room:
            # Near the end of the document: give the unused room to the left side.
            extra = width - len(inner) - len(after)
            lo = max(0, start - 4 * extra)
            while lo < start and (data[lo] & 0xC0) == 0x80:
                lo += 1
            before = data[lo:start].decode("utf-8", errors="ignore")[-extra:] if extra else ""
        return before + inner + after
