"""Readable Markdown beside the machine files: ``claims.md`` and ``wisdom.md``.

Both files are rendered by GitHub, editors and MkDocs, and everything in them but arkai's own
markup comes from a transcript or a model. So every such text goes through :func:`md_text`: HTML
and Markdown syntax are escaped (``arkai.core.escape.escape_text``), and a Markdown link
``[label](url)`` is kept only when ``url`` is an absolute http(s) URL — any other link (e.g.
``javascript:``) is dropped, its label kept as text.

Spans come from the stored records (``evidence.jsonl``, ``wisdom.json``), never re-resolved
here, so the files show what validation checks. Only an exact match (``resolved`` /
``ambiguous``) is shown as a plain receipt; other spans carry their status, and a model's
verdict is shown only for a claim whose quote resolved exactly.
"""

from __future__ import annotations

import os
import re
from typing import Any

from arkai.adapters.layout import Item
from arkai.core.escape import escape_text, safe_url
from arkai.core.grammar import format_page
from arkai.model.evidence import EvidenceLine, Span
from arkai.model.status import REANCHORED_FUZZY, UNRESOLVED, is_verified

_SECTIONS = (
    ("summarize", "summary", "Summary"),
    ("extract_wisdom", "summary", "Summary"),
    ("extract_wisdom", "one_sentence_takeaway", "One-sentence takeaway"),
    ("extract_wisdom", "ideas", "Ideas"),
    ("extract_wisdom", "insights", "Insights"),
    ("extract_wisdom", "quotes", "Quotes"),
    ("extract_wisdom", "facts", "Facts"),
    ("extract_wisdom", "references", "References"),
    ("summarize", "points", "Key points"),
    ("condense_chat", "summary", "Conversation summary"),
    ("condense_chat", "decisions", "Decisions"),
    ("condense_chat", "discoveries", "Discoveries"),
    ("condense_chat", "procedures", "Procedures"),
)

#: A Markdown inline link ``[label](url "title")``; the URL may hold balanced parentheses.
_LINK = re.compile(
    r"\[([^\[\]\n]{0,500})\]\(\s*<?((?:[^()<>\s]|\([^()<>\s]*\)){0,4096})>?"
    r"(?:\s+\"[^\"]*\")?\s*\)"
)


def md_text(value: object) -> str:
    """``value`` as inert Markdown text; only http(s) Markdown links survive as links."""
    text = str(value)
    out: list[str] = []
    pos = 0
    for m in _LINK.finditer(text):
        out.append(escape_text(text[pos : m.start()]))
        label = escape_text(m.group(1))
        url = safe_url(m.group(2))
        out.append(f"[{label}](<{url}>)" if url is not None else label)
        pos = m.end()
    out.append(escape_text(text[pos:]))
    return "".join(out)


def transcript_href(item: Item) -> str:
    """Relative link from the item's ``extracted/`` folder to its ``transcript.md``."""
    return os.path.relpath(item.transcript, item.extracted).replace(os.sep, "/")


def transcript_link(item: Item, line: int) -> str:
    href = transcript_href(item)
    return f"[L{line}](<{href}#L{line}>)"


def _span_note(item: Item, status: str, span: Span | None) -> str:
    """`` `HH:MM:SS` [Ln](link)`` for a span, with the status when it is not an exact match."""
    if span is None or span.line is None:
        return " _(quote not found verbatim)_"
    stamp = f" `{span.video_timestamp}`" if span.video_timestamp else ""
    page = f" {format_page(span.page)}," if span.page else ""
    label = "" if is_verified(status) else f" `[{status}: unverified]`"
    return f"{label}{stamp}{page} {transcript_link(item, span.line)}"


def _record_note(item: Item, record: dict[str, Any]) -> str:
    raw = record.get("span")
    try:
        span = Span.from_dict(raw) if isinstance(raw, dict) else None
    except (KeyError, TypeError, ValueError):
        span = None
    return _span_note(item, str(record.get("status", UNRESOLVED)), span)


def _entry(item: Item, value: Any) -> str:
    if not isinstance(value, dict):
        return f"- {md_text(value)}"
    main = next(
        (str(value[k]) for k in ("text", "decision", "discovery", "name", "claim") if value.get(k)),
        "",
    )
    extra = next((str(value[k]) for k in ("rationale", "implication") if value.get(k)), "")
    out = f"- {md_text(main)}" + (f" — {md_text(extra)}" if extra else "")
    if isinstance(value.get("steps"), list):
        out += "".join(f"\n  {n}. {md_text(s)}" for n, s in enumerate(value["steps"], 1))
    if isinstance(value.get("quote"), str) and value["quote"]:
        out += f"\n  > {md_text(value['quote'])}{_record_note(item, value)}"
    return out


def _quote(item: Item, value: Any) -> str:
    if isinstance(value, dict) and set(value) <= {"quote", "quote_sha256", "status", "resolution",
                                                   "span"}:  # fmt: skip
        return f"> {md_text(value.get('quote', ''))}{_record_note(item, value)}\n"
    return _entry(item, value)


def render_wisdom_md(item: Item, sections: dict[str, Any]) -> str:
    """The extract_wisdom / summarize / condense_chat outputs as sections with line links.

    ``sections`` is the content of ``wisdom.json``: every quote already a record with its
    status and span (``arkai.ops.extract.resolve_sections``)."""
    out = [f"# Wisdom — {md_text(item.title)}", ""]
    seen: set[str] = set()
    for pattern, key, heading in _SECTIONS:
        section = sections.get(pattern)
        value = section.get(key) if isinstance(section, dict) else None
        if not value or heading in seen:
            continue
        seen.add(heading)
        out += [f"## {heading}", ""]
        if isinstance(value, str) or not isinstance(value, list):
            out.append(md_text(value))
        elif key == "quotes":
            out += [_quote(item, q) for q in value]
        else:
            out += [_entry(item, v) for v in value]
        out.append("")
    if len(out) == 2:
        out.append("_Nothing extracted._")
    return "\n".join(out).rstrip() + "\n"


def _suggestion(line: EvidenceLine, data: bytes | None) -> list[str]:
    """The old and new text of a re-anchor suggestion, and how to accept it."""
    span = line.span
    if line.status != REANCHORED_FUZZY or span is None or data is None:
        return []
    new = data[span.start : span.end].decode("utf-8", errors="replace")
    score = line.resolution.score
    return [
        f"  - re-anchor suggestion (similarity {score}): the transcript now reads",
        f"    > {md_text(new)}",
        f"    accept after checking: `arkai evidence reanchor --accept {line.id}`",
    ]


_TAG = re.compile(r"[A-Za-z0-9_ :-]{1,60}")


def _tag(value: object) -> str:
    """A status word as a code badge; anything else as escaped text."""
    text = str(value)
    return f"`[{text}]`" if _TAG.fullmatch(text) else f"({md_text(text)})"


def render_claims_md(item: Item, lines: list[EvidenceLine], data: bytes | None = None) -> str:
    """A readable list: claim, status badge, quote, link to the transcript line.

    ``data`` (the transcript bytes) lets re-anchor suggestions show the text they point at."""
    out = [f"# Claims — {md_text(item.title)}", ""]
    if not lines:
        out.append("_No claims extracted._")
    for line in sorted(
        lines, key=lambda ln: (ln.span is None, ln.span.start if ln.span else 0, ln.id)
    ):
        span = line.span
        page = f"{format_page(span.page)}, " if span and span.page else ""
        where = f" — {page}{transcript_link(item, span.line)}" if span and span.line else ""
        stamp = f" `{span.video_timestamp}`" if span and span.video_timestamp else ""
        review = line.review.status if line.review else None
        state = (
            line.status
            if line.verified or line.status == UNRESOLVED
            else (f"{line.status}: unverified")
        )
        badge = _tag(state) + (f" {_tag(review)}" if review else "")
        # A model's verdict means nothing unless the quote is really in the transcript.
        verdict = line.verdict.verdict if line.verdict and line.verified else None
        badge += f" {_tag(verdict)}" if verdict else ""
        out.append(f"- **{md_text(line.claim)}** {badge} `{line.id}`{stamp}{where}")
        for other in merged_claims(line):
            out.append(f"  - same quote, also claimed: **{md_text(other)}**")
        out.append(f"  > {md_text(line.quote)}")
        out += _suggestion(line, data)
    return "\n".join(out) + "\n"


def merged_claims(line: EvidenceLine) -> list[str]:
    """Other claims an extractor made with the same quote (kept on the line, see
    ``arkai.ops.extract``)."""
    raw = line.extra.get("merged_claims")
    return [str(c) for c in raw] if isinstance(raw, list) else []
