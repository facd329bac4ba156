"""Source formats: captions and text files in, the canonical ``transcript.md`` text out.

``parse_source`` reads WebVTT, SubRip, youtube-transcript-api JSON, plain text and Markdown into
:class:`ParsedSource` (a tuple of :class:`Cue`); ``render_transcript`` turns that into the
grounding text that evidence spans point into. Malformed input raises
:class:`arkai.errors.SourceFormatError` with a one-line message that starts with the file name.
"""

from __future__ import annotations

from arkai.core.grammar import format_timestamp
from arkai.formats.cue import FORMATS, Cue, ParsedSource
from arkai.formats.decode import MAX_SOURCE_BYTES, decode_text, detect_format, parse_source
from arkai.formats.render import render_transcript, transcript_bytes

__all__ = [
    "FORMATS",
    "MAX_SOURCE_BYTES",
    "Cue",
    "ParsedSource",
    "decode_text",
    "detect_format",
    "format_timestamp",
    "parse_source",
    "render_transcript",
    "transcript_bytes",
]
