"""A transcript as HTML: one element per line with a stable ``id="L<n>"``, timestamps linked
to the media, speaker labels styled, and each claim's exact byte span wrapped in
``<mark id="E<evidence id>">`` — so ``transcript/#E…`` lands on the quoted words, highlighted
by CSS ``:target`` without any script.

Spans may overlap each other or the line's timestamp and speaker label; elements must nest.
Each line is cut at every boundary; between two cuts the set of covering elements is fixed,
and elements are kept open across cuts while they stay the outermost ones. An element that
has to close early (a crossing span, a span running over a line end) is reopened as a
continuation ``<mark data-e="E…">`` without the id, so the id is unique and always on the
first piece; for a span that crosses nothing (the usual case) the marked text is exactly
the quote.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import pairwise
from zlib import crc32

from arkai.core.document import Document
from arkai.core.escape import css_token, escape_attr, escape_text, escape_url
from arkai.core.grammar import TIMESTAMP_BYTES_RE, chat_header, speaker_of
from arkai.site.chatmd import ChatMarkdown, MarkTag

SPEAKER_COLORS = 8


@dataclass(frozen=True, slots=True)
class Mark:
    """A span to highlight: UTF-8 byte offsets into the transcript, end exclusive."""

    start: int
    end: int
    anchor: str
    """The element id (``E<evidence id>``), already a safe token."""
    css: str = ""
    """A class name (a safe token) or ""."""


@dataclass(slots=True)
class _Iv:
    start: int
    end: int
    rank: tuple[int, int, int, int]
    first: str
    """Opening tag of the first piece."""
    cont: str
    """Opening tag of a continuation piece."""
    close: str
    key: str
    replace: bool = False
    """The opening tag is the whole element: the bytes it covers are not written."""


def speaker_labels(lines: list[bytes]) -> set[str]:
    """Labels that open at least two lines (a one-off ``Note:`` is not a speaker)."""
    counts: Counter[str] = Counter()
    for raw in lines:
        m = TIMESTAMP_BYTES_RE.match(raw)
        rest = raw[m.end() :].lstrip(b" ") if m else raw
        if b": " not in rest[:80]:
            continue
        label, _ = speaker_of(rest[:80].decode("utf-8", "replace"))
        if label:
            counts[label] += 1
    return {label for label, n in counts.items() if n >= 2}


def _render_line(raw: bytes, ivs: list[_Iv], opened: set[str]) -> str:
    if not ivs:
        return escape_text(raw.decode("utf-8", "replace"))
    cuts = sorted({0, len(raw), *(iv.start for iv in ivs), *(iv.end for iv in ivs)})
    out: list[str] = []
    stack: list[_Iv] = []
    for a, b in pairwise(cuts):
        active = sorted((iv for iv in ivs if iv.start <= a and iv.end >= b), key=lambda i: i.rank)
        keep = 0
        while keep < len(stack) and keep < len(active) and stack[keep] is active[keep]:
            keep += 1
        out.extend(iv.close for iv in reversed(stack[keep:]))
        del stack[keep:]
        for iv in active[keep:]:
            out.append(iv.cont if iv.key in opened else iv.first)
            opened.add(iv.key)
            stack.append(iv)
        if not any(iv.replace for iv in stack):
            out.append(escape_text(raw[a:b].decode("utf-8", "replace")))
    out.extend(iv.close for iv in reversed(stack))
    return "".join(out)


def _mark_iv(m: Mark, rank: int, ls: int, le: int) -> _Iv:
    """The part of ``m`` on the line ``[ls, le)``, as an interval relative to the line."""
    anchor = escape_attr(m.anchor)
    cls = css_token(m.css) if m.css else ""
    first = f'<mark id="{anchor}" class="{cls}">' if cls else f'<mark id="{anchor}">'
    cont = f'<mark class="ak-cont{" " + cls if cls else ""}" data-e="{anchor}">'
    start, end = max(m.start, ls) - ls, min(m.end, le) - ls
    return _Iv(start, end, (2, m.start, -m.end, rank), first, cont, "</mark>", m.anchor)


def _chat_line(n: int, raw: bytes, ivs: list[_Iv], opened: set[str], md: ChatMarkdown) -> str:
    """A line of a chat message as Markdown (:mod:`arkai.site.chatmd`), its claim marks kept;
    plain text when Markdown would break a mark."""
    text = raw.decode("utf-8", "replace")
    marks = []
    keys = []
    for iv in sorted(ivs, key=lambda i: i.rank):
        start = len(raw[: iv.start].decode("utf-8", "replace"))
        end = len(raw[: iv.end].decode("utf-8", "replace"))
        marks.append(MarkTag(start, end, iv.cont if iv.key in opened else iv.first, iv.close))
        keys.append(iv.key)
    cls, html = md.line(text, marks)
    if html is None:
        html = _render_line(raw, ivs, opened)
    else:
        opened.update(keys)
    return f'<div id=L{n} class="{cls}">{html}</div>' if cls else f"<div id=L{n}>{html}</div>"


def render_transcript(
    data: bytes,
    marks: Sequence[Mark] = (),
    *,
    linker: Callable[[int], str] | None = None,
    chat: bool = False,
    speakers: set[str] | None = None,
) -> str:
    """The transcript as lines of HTML (every line starts with ``<``; no blank lines).

    ``speakers``: the labels to style (default: :func:`speaker_labels` of the lines).
    """
    starts = Document(data).line_starts()
    if data.endswith(b"\n"):
        starts.pop()  # no line after the final newline
    ends = [s - 1 for s in starts[1:]] + [len(data) - (1 if data.endswith(b"\n") else 0)]
    lines = [data[s:e] for s, e in zip(starts, ends, strict=True)]
    if chat:
        speakers = set()
    elif speakers is None:
        speakers = speaker_labels(lines)
    pending = sorted((m for m in marks if m.end > m.start), key=lambda m: (m.start, -m.end))
    active: list[tuple[Mark, int]] = []
    nxt = 0
    opened: set[str] = set()
    chat_md = ChatMarkdown()
    out = [f'<div class="ak-t{" ak-chat" if chat else ""}">']
    in_message = False
    for n, (ls, le) in enumerate(zip(starts, ends, strict=True), 1):
        raw = lines[n - 1]
        while nxt < len(pending) and pending[nxt].start <= le:
            active.append((pending[nxt], nxt))
            nxt += 1
        if active:
            active = [(m, i) for m, i in active if m.end > ls]
        ivs = [_mark_iv(m, i, ls, le) for m, i in active if m.start < le or m.start == ls == le]
        css = ""
        if chat:
            header = None
            if raw.startswith(b"### "):
                header = chat_header(raw.decode("utf-8", "replace"))
            if header is not None:
                chat_md.new_message()
                if in_message:
                    out.append("</div>")
                out.append(f'<div class="ak-msg ak-r-{css_token(header[0])}">')
                in_message = True
                if not ivs:
                    when = header[1]
                    time = f' <span class="ak-when">{escape_text(when)}</span>' if when else ""
                    out.append(
                        f'<div id=L{n} class="ak-mh"><span class="ak-role">'
                        f"{escape_text(header[0])}</span>{time}</div>"
                    )
                    continue
                css = ' class="ak-mh"'
            elif n == 1 and raw.startswith(b"# "):
                if not ivs:  # the title, without its Markdown "# "
                    title = escape_text(raw[2:].decode("utf-8", "replace"))
                    out.append(f'<div id=L{n} class="ak-ctitle">{title}</div>')
                    continue
                css = ' class="ak-ctitle"'
            else:
                out.append(_chat_line(n, raw, ivs, opened, chat_md))
                continue
            out.append(f"<div id=L{n}{css}>{_render_line(raw, ivs, opened)}</div>")
            continue
        ts = TIMESTAMP_BYTES_RE.match(raw) if raw[:1] == b"[" else None
        pos = ts.end() if ts is not None else 0
        stamp_open = stamp_tag = ""
        if ts is not None:
            h, mi, s = (int(g) for g in ts.groups())
            stamp_tag, stamp_open = "i", "<i>"
            if linker is not None:
                href = escape_url(linker(h * 3600 + mi * 60 + s))
                stamp_tag, stamp_open = "a", f'<a href="{href}">'
            stamp = f"{stamp_open}{h:02d}:{mi:02d}:{s:02d}</{stamp_tag}>"
        speaker: tuple[int, int, str, str] | None = None  # start, end, tag, label
        if speakers:
            off = pos
            while off < len(raw) and raw[off] == 0x20:
                off += 1
            head = raw[off : off + 80].decode("utf-8", "replace")
            label, _ = speaker_of(head)
            if label and label in speakers:
                end = off + len(head[: len(label) + 1].encode("utf-8"))
                tag = f"<b class=s{crc32(label.encode('utf-8')) % SPEAKER_COLORS}>"
                speaker = (off, end, tag, label)
        if not ivs:
            # The common case, no claim on the line: no interval bookkeeping.
            parts = [stamp] if ts is not None else []
            if speaker is not None:
                off, end, tag, label = speaker
                parts += [escape_text(raw[pos:off].decode("utf-8", "replace")), tag,
                          escape_text(label), ":</b>"]  # fmt: skip
                pos = end
            parts.append(escape_text(raw[pos:].decode("utf-8", "replace")))
            out.append(f"<div id=L{n}>{''.join(parts)}</div>")
            continue
        if ts is not None:
            if any(iv.start < ts.end() for iv in ivs):
                # A claim's span covers part of the stamp: its bytes are marked up as text.
                close = f"</{stamp_tag}>"
                ivs.append(_Iv(0, ts.end(), (0, 0, 0, 0), stamp_open, stamp_open, close, "t"))
            else:
                # Shown as generated digits; the bytes it stands for are not written.
                ivs.append(_Iv(0, ts.end(), (0, 0, 0, 0), stamp, stamp, "", "t", True))
        if speaker is not None:
            off, end, tag, _ = speaker
            ivs.append(_Iv(off, end, (1, 0, 0, 0), tag, tag, "</b>", "s"))
        out.append(f"<div id=L{n}>{_render_line(raw, ivs, opened)}</div>")
    if in_message:
        out.append("</div>")
    out.append("</div>")
    return "\n".join(out)
