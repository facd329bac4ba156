"""youtube-transcript-api JSON: a list of ``{"text", "start", "duration"}`` objects."""

from __future__ import annotations

import html
import json
import math
from typing import Any

from arkai.core.canonjson import kind_of
from arkai.errors import SourceFormatError
from arkai.formats.cue import Cue, ParsedSource, clean_text

_SHAPE = "not a youtube-transcript-api list of {text,start,duration}"


def looks_like_ytjson(value: Any) -> bool:
    """True when ``value`` (parsed JSON) is a non-empty list of transcript entries."""
    return (
        isinstance(value, list)
        and bool(value)
        and all(_entry_problem(entry) is None for entry in value[:20])
    )


def parse_ytjson(name: str, text: str) -> ParsedSource:
    """Parse youtube-transcript-api JSON into cues.

    ``duration`` is not used (real files carry bogus ones); entities such as ``&#39;`` are
    decoded and newlines inside an entry's text become spaces.
    """
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise SourceFormatError(f"{name}: not valid JSON ({_json_reason(exc)})") from None
    except RecursionError:
        raise SourceFormatError(f"{name}: not valid JSON (nested too deeply)") from None
    if not isinstance(value, list):
        raise SourceFormatError(f"{name}: {_SHAPE} (top level is {kind_of(value)})")
    if not value:
        raise SourceFormatError(f"{name}: no transcript entries")
    cues: list[Cue] = []
    for index, entry in enumerate(value):
        problem = _entry_problem(entry)
        if problem is not None:
            raise SourceFormatError(f"{name}: {_SHAPE} (entry {index}: {problem})")
        text_value = clean_text(html.unescape(entry["text"]))
        if text_value:
            cues.append(Cue(float(entry["start"]), text_value))
    if not cues:
        raise SourceFormatError(f"{name}: no transcript entries with text")
    cues.sort(key=lambda c: c.start or 0.0)
    return ParsedSource(format="ytjson", cues=tuple(cues), timed=True, title=None)


def _entry_problem(entry: Any) -> str | None:
    if not isinstance(entry, dict):
        return f"{kind_of(entry)}, not an object"
    if not isinstance(entry.get("text"), str):
        return "'text' is missing or not a string"
    start = entry.get("start")
    if isinstance(start, bool) or not isinstance(start, int | float):
        return "'start' is missing or not a number"
    if not math.isfinite(start) or start < 0:
        return f"'start' is {start!r}"
    duration = entry.get("duration", 0)
    if isinstance(duration, bool) or not isinstance(duration, int | float):
        return "'duration' is not a number"
    return None


def _json_reason(exc: ValueError) -> str:
    if isinstance(exc, json.JSONDecodeError):
        return f"line {exc.lineno} column {exc.colno}: {exc.msg}"
    return str(exc).splitlines()[0]
