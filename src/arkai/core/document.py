"""A transcript's bytes with the lookups that spans need: lines, columns, timestamps, anchors.

Everything is computed lazily and cached on the instance, so resolving many quotes against one
transcript pays for each index once.
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_right

from arkai.core.fuzzy import FuzzyIndex

#: A transcript line that starts with ``[HH:MM:SS]`` (optionally ``[H:MM:SS.mmm]``).
TIMESTAMP_RE = re.compile(rb"^\[(\d{1,2}):(\d{2}):(\d{2})(?:[.,]\d+)?\]", re.MULTILINE)
# The same stamp anchored at an explicit position, and preceded by a newline: scanning for
# ``\n[`` lets the regex engine skip ahead on its literal prefix instead of trying every offset.
_TS_AT = re.compile(rb"\[(\d{1,2}):(\d{2}):(\d{2})(?:[.,]\d+)?\]")
_TS_AFTER_NL = re.compile(rb"\n\[\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?\]")

ANCHOR_CHARS = 80


def normalize_text(text: str) -> str:
    """Whitespace collapsed to single spaces and Unicode NFC — the V1 hint normalisation.

    ``str.split()`` with no argument splits on exactly the characters ``\\s`` matches in a
    ``str`` pattern (``str.isspace``), and drops leading and trailing runs, so this equals
    ``re.sub(r"\\s+", " ", text).strip()``, only faster.
    """
    return " ".join(unicodedata.normalize("NFC", text).split())


class Document:
    """Immutable bytes of one artifact plus lazily built indexes."""

    __slots__ = (
        "_ascii",
        "_folded",
        "_fuzzy",
        "_line_starts",
        "_norm",
        "_offset_text",
        "_text",
        "_ts_lines",
        "data",
    )

    def __init__(self, data: bytes) -> None:
        self.data = data
        self._line_starts: list[int] | None = None
        self._ts_lines: list[int] | None = None
        self._text: str | None = None
        self._norm: str | None = None
        self._ascii: bool | None = None
        self._offset_text: str | None = None
        self._folded: str | None = None
        self._fuzzy: FuzzyIndex | None = None

    @property
    def is_ascii(self) -> bool:
        """True when every byte is ASCII: then byte offsets and code point indexes coincide."""
        if self._ascii is None:
            self._ascii = self.data.isascii()
        return self._ascii

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

    @property
    def offset_text(self) -> str:
        """The text with code point indexes that map back onto the bytes.

        ``text`` turns each invalid byte sequence into one U+FFFD (3 bytes), which would shift
        every later offset; here ``surrogateescape`` keeps each invalid byte as one code point.
        """
        if self._offset_text is None:
            text = self.text
            if "\ufffd" in text:
                text = self.data.decode("utf-8", errors="surrogateescape")
            self._offset_text = text
        return self._offset_text

    @property
    def folded(self) -> str:
        """``offset_text.lower()``, computed once (case-insensitive search)."""
        if self._folded is None:
            self._folded = self.offset_text.lower()
        return self._folded

    def char_to_byte(self, index: int) -> int:
        """Byte offset of code point ``index`` of ``offset_text``."""
        if self.is_ascii:
            return index
        return len(self.offset_text[:index].encode("utf-8", errors="surrogateescape"))

    def fuzzy_index(self) -> FuzzyIndex:
        """Word index of ``offset_text`` for fuzzy search, built on first use."""
        if self._fuzzy is None:
            self._fuzzy = FuzzyIndex(self.offset_text)
        return self._fuzzy

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
        starts = self.line_starts()
        line = bisect_right(starts, offset)
        start = starts[line - 1]
        if self.is_ascii:
            return line, offset - start + 1
        col = len(self.data[start:offset].decode("utf-8", errors="replace")) + 1
        return line, col

    def line_span(self, line: int) -> tuple[int, int]:
        """Byte range of 1-based ``line`` without its newline."""
        starts = self.line_starts()
        start = starts[line - 1]
        end = starts[line] - 1 if line < len(starts) else len(self.data)
        return start, end

    def _timestamp_lines(self) -> list[int]:
        """Byte offsets of the lines that start with a timestamp (what ``TIMESTAMP_RE`` finds)."""
        if self._ts_lines is None:
            data = self.data
            lines = [0] if _TS_AT.match(data) else []
            lines.extend(m.start() + 1 for m in _TS_AFTER_NL.finditer(data))
            self._ts_lines = lines
        return self._ts_lines

    def timestamp_at(self, offset: int) -> str | None:
        """Timestamp of the last ``[HH:MM:SS]`` line starting at or before ``offset``."""
        lines = self._timestamp_lines()
        i = bisect_right(lines, offset)
        if not i:
            return None
        m = _TS_AT.match(self.data, lines[i - 1])
        assert m is not None
        h, mi, s = (int(g) for g in m.groups())
        return f"{h:02d}:{mi:02d}:{s:02d}"

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
