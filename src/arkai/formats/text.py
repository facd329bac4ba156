"""Plain text and Markdown sources.

Untimed: a paragraph (lines between blank lines) becomes one cue; in Markdown each heading, list
item, quote line, table row and fenced code line stays a cue of its own. A file whose every line
opens with ``[HH:MM:SS]`` (a rendered ``transcript.md``, say) is read as timed instead.
"""

from __future__ import annotations

import re

from arkai.core.grammar import HEADING_RE, TIMESTAMP_RE, speaker_of
from arkai.errors import SourceFormatError
from arkai.formats.cue import Cue, ParsedSource, clean_text

_TITLE_RE = re.compile(r"^#[ \t]+(.+?)(?:[ \t]+#+)?[ \t]*$")
# Lines that open a Markdown block of their own rather than continue a paragraph.
_BLOCK_START_RE = re.compile(
    r"^(?:#{1,6}(?:\s|$)|[-*+][ \t]|\d{1,9}[.)][ \t]|>|\||```|~~~|(?:[-*_][ \t]*){3,}$|[=]{3,}\s*$)"
)
_FENCE_RE = re.compile(r"^(?:```|~~~)")
_SETEXT_RE = re.compile(r"^([=-])\1*[ \t]*$")
_LAZY_START_RE = re.compile(r"^(?:[-*+][ \t]|\d{1,9}[.)][ \t]|>)")
_FRONT_TITLE_RE = re.compile(r"^title:[ \t]*(.+?)[ \t]*$")


def parse_txt(name: str, text: str) -> ParsedSource:
    """Parse plain text: one untimed cue per paragraph (or timed cues, see the module doc)."""
    timed = _parse_timed(text.split("\n"))
    if timed is not None:
        return ParsedSource(format="txt", cues=timed, timed=True, title=None)
    cues = tuple(Cue(None, para) for para in _paragraphs(text.split("\n")) if para)
    if not cues:
        raise SourceFormatError(f"{name}: file is empty")
    return ParsedSource(format="txt", cues=cues, timed=False, title=None)


def parse_md(name: str, text: str) -> ParsedSource:
    """Parse Markdown: paragraphs joined, block lines kept; the first ``# heading`` is the title."""
    lines = text.split("\n")
    front_title, lines = _front_matter(lines)
    timed = _parse_timed([line for line in lines if not HEADING_RE.match(line.strip())])
    if timed is not None:
        title = front_title or _first_title([clean_text(line) for line in lines])
        return ParsedSource(format="md", cues=timed, timed=True, title=title)
    texts = [line for line in _markdown_lines(lines) if line]
    title = front_title or _first_title(texts)
    cues = tuple(Cue(None, line) for line in texts)
    if not cues:
        raise SourceFormatError(f"{name}: file is empty")
    return ParsedSource(format="md", cues=cues, timed=False, title=title)


def _first_title(lines: list[str]) -> str | None:
    for line in lines:
        m = _TITLE_RE.match(line)
        if m is not None:
            return clean_text(m.group(1)) or None
    return None


def _parse_timed(lines: list[str]) -> tuple[Cue, ...] | None:
    """Cues of ``[HH:MM:SS] [Speaker:] text`` lines, or None unless every non-blank line is one."""
    cues: list[Cue] = []
    for line in lines:
        if not line.strip():
            continue
        m = TIMESTAMP_RE.match(line.strip())
        if m is None:
            return None
        hours, minutes, seconds = m.groups()
        rest = line.strip()[m.end() :]
        if int(minutes) >= 60 or int(seconds) >= 60:
            return None
        speaker, body = speaker_of(clean_text(rest))
        start = int(hours) * 3600 + int(minutes) * 60 + int(seconds)
        if body:
            cues.append(Cue(float(start), body, speaker))
    if not cues:
        return None
    cues.sort(key=lambda c: c.start or 0.0)
    return tuple(cues)


def _paragraphs(lines: list[str]) -> list[str]:
    paragraphs: list[str] = []
    current: list[str] = []
    for line in [*lines, ""]:
        if line.strip():
            current.append(line)
        elif current:
            paragraphs.append(clean_text(" ".join(current)))
            current = []
    return paragraphs


def _markdown_lines(lines: list[str]) -> list[str]:
    out: list[list[str]] = []  # the pieces of each output line, joined and cleaned at the end
    # What out[-1] is: "para" (plain text a next plain line continues), "lazy" (a list item or
    # quote, which also takes continuation lines) or None (nothing may continue it).
    open_kind: str | None = None
    in_fence = False
    for raw in lines:
        line = raw.strip()
        if not line:
            open_kind = None
            continue
        if in_fence or _FENCE_RE.match(line):
            in_fence = in_fence != bool(_FENCE_RE.match(line))
            out.append([line])
            open_kind = None
            continue
        underline = _SETEXT_RE.match(line)
        if open_kind == "para" and underline is not None:
            # "Title\n=====" is a heading; written as "# Title" it survives being re-spaced.
            level = "#" if underline.group(1) == "=" else "##"
            out[-1].insert(0, level)
            open_kind = None
            continue
        if open_kind is not None and not _BLOCK_START_RE.match(line):
            out[-1].append(line)
        else:
            out.append([line])
            if _LAZY_START_RE.match(line):
                open_kind = "lazy"
            elif _BLOCK_START_RE.match(line):
                open_kind = None
            else:
                open_kind = "para"
        if raw.endswith(("  ", "\\")):
            open_kind = None  # a hard line break: the next line stays a line of its own
    return [clean_text(" ".join(parts)) for parts in out]


def _front_matter(lines: list[str]) -> tuple[str | None, list[str]]:
    """A YAML front matter block's ``title:`` and the lines after the block."""
    if not lines or lines[0].strip() != "---":
        return None, lines
    for end in range(1, min(len(lines), 200)):
        if lines[end].strip() in ("---", "..."):
            title = None
            for line in lines[1:end]:
                m = _FRONT_TITLE_RE.match(line)
                if m is not None:
                    title = clean_text(m.group(1).strip("'\"")) or None
            return title, lines[end + 1 :]
    return None, lines
