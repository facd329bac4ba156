"""Bytes to text, format detection, and the dispatch from a format to its parser."""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Callable
from pathlib import PurePath

from arkai.errors import ResourceLimitError, SourceFormatError
from arkai.formats.cue import FORMATS, ParsedSource
from arkai.formats.srt import parse_srt
from arkai.formats.text import parse_md, parse_txt
from arkai.formats.vtt import parse_vtt
from arkai.formats.ytjson import looks_like_ytjson, parse_ytjson

# A ceiling for the pure parsers (memory safety); `add.max_file_mb` in params is the limit
# users set, checked before a file is even read.
MAX_SOURCE_BYTES = 1024 * 1024 * 1024

_EXTENSIONS = {
    ".vtt": "vtt",
    ".webvtt": "vtt",
    ".srt": "srt",
    ".json": "ytjson",
    ".txt": "txt",
    ".text": "txt",
    ".md": "md",
    ".markdown": "md",
}

_ALIASES = {"webvtt": "vtt", "json": "ytjson", "text": "txt", "markdown": "md"}

_PARSERS: dict[str, Callable[[str, str], ParsedSource]] = {
    "vtt": parse_vtt,
    "srt": parse_srt,
    "ytjson": parse_ytjson,
    "txt": parse_txt,
    "md": parse_md,
}

_SRT_SNIFF_RE = re.compile(r"\A(?:\d+[ \t]*\n)?[ \t]*(?:\d+:)?\d{1,2}:\d{2}[,.]\d{1,3}[ \t]*-->")


def decode_text(name: str, data: bytes) -> str:
    """``data`` as text: UTF-8 (a BOM is dropped) or UTF-16 with a BOM.

    Line ends are left as they are. Raises :class:`SourceFormatError` naming ``name`` for bytes
    that are not UTF-8, binary data and empty files, and :class:`ResourceLimitError` above
    :data:`MAX_SOURCE_BYTES`.
    """
    if len(data) > MAX_SOURCE_BYTES:
        raise ResourceLimitError(
            f"{name}: {len(data)} bytes is over the {MAX_SOURCE_BYTES}-byte limit for a source"
        )
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        try:
            text = data.decode("utf-16")
        except UnicodeDecodeError as exc:
            raise SourceFormatError(
                f"{name}: not valid UTF-16 (byte offset {exc.start}: {exc.reason})"
            ) from None
    else:
        skip = len(codecs.BOM_UTF8) if data.startswith(codecs.BOM_UTF8) else 0
        try:
            text = data[skip:].decode("utf-8")
        except UnicodeDecodeError as exc:
            offset = exc.start + skip
            raise SourceFormatError(
                f"{name}: not valid UTF-8 (byte 0x{data[offset]:02x} at offset {offset})",
                hint="convert it to UTF-8 first, e.g. `iconv -f latin1 -t utf-8`",
            ) from None
    text = text.removeprefix("\ufeff")
    nul = text.find("\x00")
    if nul >= 0:
        raise SourceFormatError(f"{name}: binary data, not text (NUL character at offset {nul})")
    if not text.strip():
        raise SourceFormatError(f"{name}: file is empty")
    return text


def detect_format(name: str, data: bytes) -> str:
    """The format of a source: by file extension, else by sniffing the content.

    Sniffing knows a ``WEBVTT`` header, an SRT opening (``1`` then ``00:00:01,000 -->``) and a
    youtube-transcript-api JSON list. Raises :class:`SourceFormatError` naming ``name``.
    """
    suffix = PurePath(name).suffix.lower()
    if suffix in _EXTENSIONS:
        return _EXTENSIONS[suffix]
    text = _normalize_newlines(decode_text(name, data)).lstrip()
    if text.startswith("WEBVTT"):
        return "vtt"
    if _SRT_SNIFF_RE.match(text):
        return "srt"
    if text.startswith("["):
        try:
            value = json.loads(text)
        except (ValueError, RecursionError):
            value = None
        if looks_like_ytjson(value):
            return "ytjson"
    raise SourceFormatError(
        f"{name}: cannot tell the source format",
        hint="use a .vtt, .srt, .json (youtube-transcript-api), .txt or .md file name",
    )


def parse_source(name: str, data: bytes, fmt: str | None = None) -> ParsedSource:
    """Parse a source file's bytes; ``fmt`` (one of :data:`FORMATS`) skips detection.

    Raises :class:`SourceFormatError` with a one-line message that starts with ``name``.
    """
    if fmt is None:
        fmt = detect_format(name, data)
    fmt = _ALIASES.get(fmt.lower(), fmt.lower())
    parser = _PARSERS.get(fmt)
    if parser is None:
        raise SourceFormatError(
            f"{name}: unknown source format {fmt!r} (expected one of {', '.join(FORMATS)})"
        )
    return parser(name, _normalize_newlines(decode_text(name, data)))


def _normalize_newlines(text: str) -> str:
    if "\r" not in text:
        return text
    return text.replace("\r\n", "\n").replace("\r", "\n")
