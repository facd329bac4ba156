"""A transcript's bytes with the lookups that spans need: lines, columns, timestamps, PDF pages,
anchors.

Everything is computed lazily and cached on the instance, so resolving many quotes against one
transcript pays for each index once.
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_right

from arkai.core.fuzzy import FuzzyIndex
from arkai.core.grammar import PAGE_MARKER_BYTES_RE, STAMP, TIMESTAMP_BYTES_RE

# The grammar's timestamp at an explicit position, and preceded by a newline: scanning for
# ``\n[`` lets the regex engine skip ahead on its literal prefix instead of trying every offset.
_TS_AT = TIMESTAMP_BYTES_RE
_TS_AFTER_NL = re.compile(b"\n" + STAMP.encode("ascii"))

ANCHOR_CHARS = 80

#: The ASCII characters ``str.isspace`` accepts, each mapped to a space.
_ASCII_SPACES = bytes.maketrans(b"\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f", b" " * 9)
#: Every other character ``str.isspace`` accepts.
_WIDE_SPACE_RE = re.compile("[\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]")


_E2_SPACES = frozenset(
    [bytes([0x80, b]) for b in (*range(0x80, 0x8B), 0xA8, 0xA9, 0xAF)] + [b"\x81\x9f"]
)


def _maybe_wide_space(data: bytes) -> bool:
    """False when UTF-8 ``data`` surely holds no ``_WIDE_SPACE_RE`` character.

    Their encodings start with byte C2, E1, E2 or E3; single-byte searches are fast, and E2
    (also the lead byte of dashes and curly quotes) is followed up precisely.
    """
    if b"\xc2" in data or b"\xe1" in data or b"\xe3" in data:
        return True
    find = data.find
    i = find(b"\xe2")
    while i >= 0:
        if data[i + 1 : i + 3] in _E2_SPACES:
            return True
        i = find(b"\xe2", i + 1)
    return False


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
        "_norm_bytes",
        "_offset_text",
        "_pages",
        "_text",
        "_ts_lines",
        "data",
    )

    def __init__(self, data: bytes) -> None:
        self.data = data
        self._line_starts: list[int] | None = None
        self._ts_lines: list[int] | None = None
        self._pages: tuple[list[int], list[int]] | None = None
        self._text: str | None = None
        self._norm_bytes: bytes | None = None
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
    def normalized_bytes(self) -> bytes:
        """``normalize_text(self.text)`` as UTF-8, computed once: what the ``normalized_hint``
        search scans.

        A valid UTF-8 needle occurs in valid UTF-8 bytes exactly when its text occurs in their
        text, and a bytes search is faster than one in a string with wide characters.
        """
        if self._norm_bytes is None:
            text = self.text
            if self.is_ascii:
                data = self.data
            else:
                text = unicodedata.normalize("NFC", text)
                # NFC neither makes nor removes spaces, so the raw bytes can rule them out.
                if _maybe_wide_space(self.data) and _WIDE_SPACE_RE.search(text):
                    self._norm_bytes = " ".join(text.split()).encode("utf-8")
                    return self._norm_bytes
                data = text.encode("utf-8")
            # Same result as ``normalize_text`` without one string per word: the only spaces
            # left are ASCII ones, which in UTF-8 are single bytes inside no other character.
            flat = data.translate(_ASCII_SPACES)
            while b"  " in flat:
                flat = flat.replace(b"  ", b" ")
            self._norm_bytes = flat.strip(b" ")
        return self._norm_bytes

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
        head = self.data[start:offset]
        if head.isascii():
            return line, len(head) + 1
        return line, len(head.decode("utf-8", errors="replace")) + 1

    def line_span(self, line: int) -> tuple[int, int]:
        """Byte range of 1-based ``line`` without its newline."""
        starts = self.line_starts()
        start = starts[line - 1]
        end = starts[line] - 1 if line < len(starts) else len(self.data)
        return start, end

    def _timestamp_lines(self) -> list[int]:
        """Byte offsets of the lines that start with a timestamp (:mod:`arkai.core.grammar`)."""
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
        h, mi, s = m.groups()
        # Minutes and seconds are exactly two digits; hours one to three.
        return f"{int(h):02d}:{mi.decode()}:{s.decode()}"

    def _page_markers(self) -> tuple[list[int], list[int]]:
        """Byte offsets of the page marker lines (:mod:`arkai.core.grammar`) and their pages."""
        if self._pages is None:
            found = [(m.start(), int(m.group(1))) for m in PAGE_MARKER_BYTES_RE.finditer(self.data)]
            self._pages = ([at for at, _ in found], [page for _, page in found])
        return self._pages

    def page_at(self, offset: int) -> int | None:
        """The PDF page that byte ``offset`` lies on: the number of the last ``[p. N]`` marker
        line starting at or before it; None before the first marker (the title) and in a
        transcript without markers. The one mapping from transcript bytes to pages."""
        starts, pages = self._page_markers()
        i = bisect_right(starts, offset)
        return pages[i - 1] if i else None

    def first_page(self, start: int, end: int) -> int | None:
        """The first page that bytes ``[start, end)`` lie on: :meth:`page_at` of ``start``, or,
        for a range that starts before the first marker (a title), the first marker inside."""
        page = self.page_at(start)
        if page is None:
            starts, pages = self._page_markers()
            i = bisect_right(starts, start)
            if i < len(starts) and starts[i] < end:
                page = pages[i]
        return page

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
