"""Readable Markdown beside the machine files: ``claims.md`` and ``wisdom.md``."""

from __future__ import annotations

from typing import Any

from arkai.adapters.layout import Item
from arkai.core.document import Document
from arkai.core.resolve import resolve_quote
from arkai.model.evidence import EvidenceLine

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


def transcript_link(item: Item, line: int) -> str:
    rel = f"../../../library/{item.rel.as_posix()}/transcript.md"
    return f"[L{line}](<{rel}#L{line}>)"


def _where(item: Item, doc: Document, quote: str) -> str:
    m = resolve_quote(doc, quote)
    if m.span is None or m.span.line is None:
        return " _(quote not found verbatim)_"
    stamp = f" `{m.span.video_timestamp}`" if m.span.video_timestamp else ""
    return f"{stamp} {transcript_link(item, m.span.line)}"


def _entry(item: Item, doc: Document, value: Any) -> str:
    if isinstance(value, str):
        return f"- {value}"
    if not isinstance(value, dict):
        return f"- {value}"
    main = next(
        (str(value[k]) for k in ("text", "decision", "discovery", "name", "claim") if value.get(k)),
        "",
    )
    extra = next((str(value[k]) for k in ("rationale", "implication") if value.get(k)), "")
    out = f"- {main}" + (f" — {extra}" if extra else "")
    if isinstance(value.get("steps"), list):
        out += "".join(f"\n  {n}. {s}" for n, s in enumerate(value["steps"], 1))
    if isinstance(value.get("quote"), str) and value["quote"]:
        out += f"\n  > {value['quote']}{_where(item, doc, value['quote'])}"
    return out


def render_wisdom_md(item: Item, doc: Document, results: dict[str, Any]) -> str:
    """The extract_wisdom / summarize / condense_chat outputs as sections with line links."""
    out = [f"# Wisdom — {item.title}", ""]
    seen: set[str] = set()
    for pattern, key, heading in _SECTIONS:
        value = (
            (results.get(pattern) or {}).get(key)
            if isinstance(results.get(pattern), dict)
            else None
        )
        if not value or heading in seen:
            continue
        seen.add(heading)
        out += [f"## {heading}", ""]
        if isinstance(value, str):
            out.append(value)
        elif key == "quotes":
            out += [
                f"> {q}{_where(item, doc, q)}\n" if isinstance(q, str) else _entry(item, doc, q)
                for q in value
            ]
        else:
            out += [_entry(item, doc, v) for v in value]
        out.append("")
    if len(out) == 2:
        out.append("_Nothing extracted._")
    return "\n".join(out).rstrip() + "\n"


def render_claims_md(item: Item, lines: list[EvidenceLine]) -> str:
    """A readable list: claim, status badge, quote, link to the transcript line."""
    out = [f"# Claims — {item.title}", ""]
    if not lines:
        out.append("_No claims extracted._")
    for line in sorted(
        lines, key=lambda ln: (ln.span is None, ln.span.start if ln.span else 0, ln.id)
    ):
        where = (
            f" — {transcript_link(item, line.span.line)}" if line.span and line.span.line else ""
        )
        stamp = f" `{line.span.video_timestamp}`" if line.span and line.span.video_timestamp else ""
        review = line.review.status if line.review else None
        badge = f"`[{line.status}]`" + (f" `[{review}]`" if review else "")
        verdict = line.verdict.verdict if line.verdict else None
        badge += f" `[{verdict}]`" if verdict else ""
        out.append(f"- **{line.claim}** {badge} `{line.id}`{stamp}{where}")
        out.append(f"  > {line.quote}")
    return "\n".join(out) + "\n"
