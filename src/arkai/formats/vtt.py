"""WebVTT captions, including YouTube's "rolling" auto-captions."""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field

from arkai.core.grammar import speaker_of
from arkai.errors import SourceFormatError
from arkai.formats.cue import Cue, ParsedSource, clean_text, parse_timing

_SKIPPED_BLOCKS = ("NOTE", "STYLE", "REGION")
_VOICE_RE = re.compile(r"<v(?:\.[^\s>]*)?[ \t]+([^>]*)>")
_RUBY_TEXT_RE = re.compile(r"<rt>.*?(?:</rt>|$)")
_TAG_RE = re.compile(r"<[^>]*>")

# Rolling captions are assumed when at least this share of cues (and two) open with the previous
# cue's last line (YouTube auto-captions: nearly all of them; edited captions: almost none).
_ROLLING_SHARE = 0.5
# How many emitted lines a rolling cue may repeat.
_ROLLING_DEPTH = 3


@dataclass(slots=True)
class _RawCue:
    start: float
    lines: list[str] = field(default_factory=list)


def parse_vtt(name: str, text: str) -> ParsedSource:
    """Parse WebVTT text (newlines already ``\\n``) into cues, one per caption and speaker."""
    raw = _read_cues(name, text)
    captions = [_caption_lines(cue.lines) for cue in raw]
    if _is_rolling(captions):
        captions = _drop_rolling_repeats(captions)
    cues: list[Cue] = []
    for cue, lines in zip(raw, captions, strict=True):
        cues.extend(_join_by_speaker(cue.start, lines))
    if not cues:
        raise SourceFormatError(f"{name}: no subtitle cues found")
    cues.sort(key=lambda c: c.start or 0.0)
    return ParsedSource(format="vtt", cues=tuple(cues), timed=True, title=None)


def _read_cues(name: str, text: str) -> list[_RawCue]:
    """The cues' start times and raw text lines; header, NOTE, STYLE and REGION blocks skipped."""
    lines = text.split("\n")
    i = 0
    while i < len(lines) and not lines[i].strip():
        i += 1
    if i < len(lines) and _is_header(lines[i]):
        # The header runs to the first blank line (or, sloppily, to the first cue timing).
        i += 1
        while i < len(lines) and lines[i] != "" and "-->" not in lines[i]:
            i += 1
    cues: list[_RawCue] = []
    current: _RawCue | None = None
    pending: list[str] = []  # lines of a block seen before its timing line (a cue identifier)
    skipping = False
    for number, line in enumerate(lines[i:], start=i + 1):
        if line == "" or (not line.strip() and current is None):
            # A block without a timing line is text that a blank line cut off from its cue.
            if pending and cues:
                cues[-1].lines.extend(pending)
            pending = []
            current = None
            skipping = False
            continue
        if skipping:
            continue
        if "-->" in line and line.lstrip()[:1].isdigit():
            start = parse_timing(name, number, line, "cue")
            current = _RawCue(start)
            cues.append(current)
            pending = []
        elif current is not None:
            current.lines.append(line)
        elif not pending and line.lstrip().startswith(_SKIPPED_BLOCKS):
            word = line.split(maxsplit=1)[0]
            skipping = word in _SKIPPED_BLOCKS
            if not skipping:
                pending.append(line)
        else:
            pending.append(line)
    if pending and cues:
        cues[-1].lines.extend(pending)
    return cues


def _is_header(line: str) -> bool:
    return line == "WEBVTT" or (line.startswith("WEBVTT") and line[6].isspace())


def _caption_lines(lines: list[str]) -> list[tuple[str | None, str]]:
    """``(speaker, text)`` for each non-empty line of one cue, tags and entities resolved."""
    out: list[tuple[str | None, str]] = []
    voice: str | None = None
    for line in lines:
        m = _VOICE_RE.search(line)
        if m is not None:
            voice = clean_text(html.unescape(m.group(1))) or None
        text = clean_text(html.unescape(_TAG_RE.sub("", _RUBY_TEXT_RE.sub("", line))))
        speaker = voice
        if speaker is None:
            speaker, text = speaker_of(text)
        if text:
            out.append((speaker, text))
        if "</v>" in line:
            voice = None
    return out


def _is_rolling(captions: list[list[tuple[str | None, str]]]) -> bool:
    repeats = pairs = 0
    previous: str | None = None
    for lines in captions:
        if not lines:
            continue
        if previous is not None:
            pairs += 1
            first = lines[0][1]
            if first == previous or first.startswith(previous + " "):
                repeats += 1
        previous = lines[-1][1]
    return repeats >= 2 and repeats >= _ROLLING_SHARE * pairs


def _drop_rolling_repeats(
    captions: list[list[tuple[str | None, str]]],
) -> list[list[tuple[str | None, str]]]:
    """Remove the lines each cue repeats from the cues before it, keeping every word once.

    A cue's leading lines that equal the last lines already kept are dropped (YouTube repeats
    the previous line above the new one, and adds 10 ms cues that only repeat); a first line
    that extends the last kept line keeps only its new words ("growing" captions).
    """
    kept: list[str] = []
    out: list[list[tuple[str | None, str]]] = []
    for lines in captions:
        texts = [text for _, text in lines]
        skip = 0
        for k in range(min(len(texts), len(kept), _ROLLING_DEPTH), 0, -1):
            if texts[:k] == kept[-k:]:
                skip = k
                break
        new = lines[skip:]
        if skip == 0 and new and kept and new[0][1].startswith(kept[-1] + " "):
            speaker, text = new[0]
            new = [(speaker, text[len(kept[-1]) + 1 :]), *new[1:]]
            kept[-1] = text
            new_texts = [t for _, t in new[1:]]
        else:
            new_texts = [t for _, t in new]
        kept.extend(new_texts)
        del kept[:-_ROLLING_DEPTH]
        out.append(new)
    return out


def _join_by_speaker(start: float, lines: list[tuple[str | None, str]]) -> list[Cue]:
    cues: list[Cue] = []
    for speaker, text in lines:
        if cues and (speaker is None or speaker == cues[-1].speaker):
            cues[-1] = Cue(start, f"{cues[-1].text} {text}", cues[-1].speaker)
        else:
            cues.append(Cue(start, text, speaker))
    return cues
