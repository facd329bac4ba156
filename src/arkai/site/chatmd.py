"""Chat messages as Markdown, one transcript line at a time.

Chat transcripts hold the messages' own Markdown (``**bold**``, lists, code fences). The
transcript page keeps one element per line (``id="L<n>"``, the anchors claims and search
results link to), so Markdown is rendered line by line: block syntax from the line's
start (headings, list items, quotes, rules, fenced code — a fence spans lines, so its state
is kept per message), inline syntax by markdown-it-py with raw HTML disabled (it is shown as
text), images disabled (the site asks no third party for anything) and links kept only
for http(s) URLs (:func:`arkai.core.escape.safe_url`).

Claim marks must survive: each mark's bounds are put into the line as noncharacters
(U+FDD0…) before rendering and replaced by the mark's tags after. When that cannot give
well-nested HTML with every bound outside a tag (a mark crossing a link's URL or an
emphasis boundary), :meth:`ChatMarkdown.line` returns None and the caller shows the line as
plain text with its marks, as before.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

from markdown_it import MarkdownIt

from arkai.core.escape import MARKDOWN_SIGNIFICANT, safe_url

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+")
_LIST = re.compile(r"^([ \t]*)([-*+]|\d{1,9}[.)])[ \t]+")
_QUOTE = re.compile(r"^ {0,3}>[ \t]?")
_RULE = re.compile(r"^ {0,3}(?:(?:\*[ \t]*){3,}|(?:-[ \t]*){3,}|(?:_[ \t]*){3,})$")
_SENTINELS = "".join(chr(c) for c in range(0xFDD0, 0xFDF0))
_SENTINEL = re.compile(f"[{_SENTINELS}]")
_TAG = re.compile(r"<(/?)([a-z0-9]+)[^>]*>")
_TEXT_TABLE = {ord(c): f"&#{ord(c)};" for c in MARKDOWN_SIGNIFICANT}


@dataclass(frozen=True, slots=True)
class MarkTag:
    """A claim mark on the line: character offsets (end exclusive) and its tags."""

    start: int
    end: int
    open: str
    close: str


@cache
def _md() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.disable("image")
    md.validateLink = lambda url: safe_url(url) is not None  # type: ignore[method-assign]
    return md


def inline(text: str) -> str:
    """One line's inline Markdown as HTML: raw HTML escaped, http(s) links only (opened
    with ``rel=nofollow``), Markdown-significant characters in the text as references."""
    html = _md().renderInline(text)
    out = []
    pos = 0
    for m in _TAG.finditer(html):
        out.append(html[pos : m.start()].translate(_TEXT_TABLE))
        tag = m.group(0)
        if tag.startswith("<a "):
            tag = '<a rel="noopener nofollow noreferrer" ' + tag[3:]
        out.append(tag)
        pos = m.end()
    out.append(html[pos:].translate(_TEXT_TABLE))
    return "".join(out)


def _well_nested(html: str) -> bool:
    stack: list[str] = []
    for m in _TAG.finditer(html):
        closing, name = m.group(1), m.group(2)
        if name == "br":
            continue
        if not closing:
            stack.append(name)
        elif not stack or stack.pop() != name:
            return False
    return not stack


def with_marks(text: str, marks: Sequence[MarkTag]) -> str | None:
    """``inline(text)`` with each mark around its characters, or None when that is not
    possible (see the module doc)."""
    if not marks:
        return inline(text)
    if len(marks) * 2 > len(_SENTINELS):
        return None
    text = _SENTINEL.sub("\ufffd", text)
    cuts: list[tuple[int, int, str]] = []
    for i, m in enumerate(marks):
        cuts.append((m.start, 1, _SENTINELS[2 * i]))
        cuts.append((m.end, 0, _SENTINELS[2 * i + 1]))
    cuts.sort(key=lambda c: (c[0], c[1]))
    parts, pos = [], 0
    for at, _, ch in cuts:
        parts += [text[pos:at], ch]
        pos = at
    parts.append(text[pos:])
    html = inline("".join(parts))
    tags: dict[str, str] = {}
    for i, m in enumerate(marks):
        tags[_SENTINELS[2 * i]], tags[_SENTINELS[2 * i + 1]] = m.open, m.close
    found = _SENTINEL.findall(html)
    if sorted(found) != sorted(tags):
        return None
    # A bound inside a tag (an attribute) cannot become markup.
    if any(_SENTINEL.search(t.group(0)) for t in _TAG.finditer(html)):
        return None
    out = _SENTINEL.sub(lambda s: tags[s.group(0)], html)
    return out if _well_nested(out) else None


class ChatMarkdown:
    """Renders the lines of one chat transcript, in order (fences span lines)."""

    def __init__(self) -> None:
        self.fence: str | None = None

    def new_message(self) -> None:
        self.fence = None

    def line(self, text: str, marks: Sequence[MarkTag]) -> tuple[str, str | None]:
        """``(css class, inner HTML)``; the HTML is None when the line is to be shown as
        plain text (code, fence lines, or marks that Markdown would break)."""
        fence = _FENCE.match(text)
        if self.fence is not None:
            if (
                fence
                and fence.group(1)[0] == self.fence[0]
                and len(fence.group(1)) >= len(self.fence)
                and not text[fence.end() :].strip()
            ):
                self.fence = None
                return "ak-md-fence", None
            return "ak-md-code", None
        if fence:
            self.fence = fence.group(1)
            return "ak-md-fence", None
        if not text.strip():
            return "", None
        if _RULE.match(text):
            return "ak-md-hr", None if marks else ""
        cls, skip = "ak-md-p", 0
        lead = ""
        if m := _HEADING.match(text):
            cls, skip = f"ak-md-h ak-md-h{len(m.group(1))}", m.end()
        elif m := _LIST.match(text):
            depth = min(len(m.group(1).expandtabs(4)) // 2, 6)
            cls, skip = f"ak-md-li ak-md-d{depth}", m.end()
            marker = m.group(2)
            bullet = "•" if marker in "-*+" else marker
            lead = f'<span class="ak-md-b">{bullet}</span>'
        elif m := _QUOTE.match(text):
            cls, skip = "ak-md-bq", m.end()
        if any(mk.start < skip for mk in marks):
            return cls, None
        shifted = [MarkTag(mk.start - skip, mk.end - skip, mk.open, mk.close) for mk in marks]
        html = with_marks(text[skip:], shifted)
        return cls, None if html is None else lead + html
