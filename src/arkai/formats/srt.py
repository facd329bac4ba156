"""SubRip (``.srt``) subtitles."""

from __future__ import annotations

import html
import re

from arkai.core.grammar import speaker_of
from arkai.errors import SourceFormatError
from arkai.formats.cue import Cue, ParsedSource, clean_text, parse_timing

# Formatting SubRip players understand: <i>, <b>, <u>, <s>, <font ...> and {\an8}-style codes.
_FORMAT_RE = re.compile(r"</?(?:i|b|u|s|font)(?:\s[^>]*)?>|\{\\[^}]*\}", re.IGNORECASE)


def parse_srt(name: str, text: str) -> ParsedSource:
    """Parse SubRip text (newlines already ``\\n``) into cues.

    A cue's lines are joined into one cue; a line opening with ``Name:`` starts a new cue with
    that speaker. Blank lines inside a cue's text and a missing index line are tolerated.
    """
    raw: list[tuple[float, list[str]]] = []
    lines = text.split("\n")
    for number, line in enumerate(lines, start=1):
        if "-->" in line and line.lstrip()[:1].isdigit():
            start = parse_timing(name, number, line, "subtitle")
            if raw and raw[-1][1] and number >= 2 and lines[number - 2].strip().isdigit():
                raw[-1][1].pop()  # the index line of this cue, read as the last cue's text
            raw.append((start, []))
        elif raw:
            raw[-1][1].append(line)
    cues: list[Cue] = []
    for start, cue_lines in raw:
        cues.extend(_cue_texts(start, cue_lines))
    if not cues:
        raise SourceFormatError(f"{name}: no subtitle cues found")
    cues.sort(key=lambda c: c.start or 0.0)
    return ParsedSource(format="srt", cues=tuple(cues), timed=True, title=None)


def _cue_texts(start: float, lines: list[str]) -> list[Cue]:
    cues: list[Cue] = []
    for line in lines:
        text = clean_text(html.unescape(_FORMAT_RE.sub("", line)))
        speaker, text = speaker_of(text)
        if speaker is not None and not text:
            cues.append(Cue(start, "", speaker))  # a label alone on its line: text follows
        elif not text:
            continue
        elif speaker is None and cues:
            last = cues[-1]
            cues[-1] = Cue(start, f"{last.text} {text}".lstrip(), last.speaker)
        else:
            cues.append(Cue(start, text, speaker))
    return [cue for cue in cues if cue.text]
