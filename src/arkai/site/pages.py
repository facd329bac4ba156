"""The two pages of each item: the item page (metadata, summary and wisdom, claims with
status badges, entities, topics, related items) and its transcript page."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from arkai.site import links
from arkai.site.collect import ClaimView, ItemData
from arkai.site.escape import css_token, one_line, safe_url
from arkai.site.html import a, badge, day, esc, h2, page, paragraphs, table
from arkai.site.links import Urls
from arkai.site.transcript import Mark, render_transcript

#: (pattern, key, heading) of ``wisdom.json`` in page order; the first of equal headings wins.
WISDOM_SECTIONS = (
    ("summarize", "summary", "Summary"),
    ("extract_wisdom", "summary", "Summary"),
    ("condense_chat", "summary", "Summary"),
    ("extract_wisdom", "one_sentence_takeaway", "One-sentence takeaway"),
    ("summarize", "points", "Key points"),
    ("extract_wisdom", "ideas", "Ideas"),
    ("extract_wisdom", "insights", "Insights"),
    ("extract_wisdom", "quotes", "Quotes"),
    ("extract_wisdom", "facts", "Facts"),
    ("extract_wisdom", "references", "References"),
    ("condense_chat", "decisions", "Decisions"),
    ("condense_chat", "discoveries", "Discoveries"),
    ("condense_chat", "procedures", "Procedures"),
)
_MAIN_KEYS = ("text", "decision", "discovery", "name", "claim", "title")
_EXTRA_KEYS = ("rationale", "implication")
_META_ROWS = (
    ("channel", "Channel"),
    ("author", "Author"),
    ("platform", "Platform"),
    ("language", "Language"),
    ("duration_s", "Duration (s)"),
    ("message_count", "Messages"),
)


@dataclass
class ItemContext:
    """What an item page shows from outside the item's own files (part of its cache key)."""

    entity_pages: list[str] = field(default_factory=list)
    """Keys of this item's entities that have a page."""
    topics: list[list[str]] = field(default_factory=list)
    """``[term, relevance, has_page ("1"/"")]`` for the item, best first."""
    related: list[list[str]] = field(default_factory=list)
    """``[content_id, title, relation]`` of related items (graph.json)."""

    def to_dict(self) -> dict[str, Any]:
        return {"entity_pages": self.entity_pages, "topics": self.topics, "related": self.related}


def is_chat(metadata: dict[str, Any]) -> bool:
    ctype = str(metadata.get("content_type") or "")
    return ctype == "chats" or ctype.startswith("chats/") or bool(metadata.get("platform"))


def claim_href(urls: Urls, src: str, d: ItemData, claim: ClaimView) -> str | None:
    """Link to the claim's quoted words (or, when stale, to its recorded line if the
    transcript still has that line)."""
    target = links.transcript_page(d.item.id)
    if claim.start is not None:
        return urls.href(src, target, "E" + links.anchor_id(claim.id))
    if isinstance(claim.line, int) and 1 <= claim.line <= d.lines:
        return urls.href(src, target, f"L{claim.line}")
    return None


def _where(claim: ClaimView) -> str:
    if claim.line is None:
        return "—"
    return f"L{claim.line}" + (f" · {claim.timestamp}" if claim.timestamp else "")


def _claim_rows(urls: Urls, src: str, d: ItemData, claims: list[ClaimView]) -> list[list[str]]:
    rows = []
    for c in claims:
        href = claim_href(urls, src, d, c)
        status = badge("rejected") if c.rejected else badge(c.status)
        if c.verdict:
            status += " " + badge("verdict-" + c.verdict, c.verdict)
        note = f'<br><small class="ak-note">{esc(c.review_note)}</small>' if c.review_note else ""
        where = a(href, _where(c), cls="ak-go") if href else esc(_where(c))
        quote = (
            '<span class="ak-same">verbatim</span>'
            if c.quote == c.claim
            else f'<q class="ak-q">{esc(c.quote)}</q>'
        )
        rows.append(
            [
                esc(c.claim) + note,
                status,
                f"{c.confidence:.2f}",
                quote,
                where,
            ]
        )
    return rows


def _wisdom_entry(value: Any, d: ItemData, urls: Urls, src: str) -> str:
    if isinstance(value, dict):
        main = next((str(value[k]) for k in _MAIN_KEYS if value.get(k)), "")
        extra = next((str(value[k]) for k in _EXTRA_KEYS if value.get(k)), "")
        text = esc(main) + (f" — {esc(extra)}" if extra else "")
        steps = value.get("steps")
        if isinstance(steps, list) and steps:
            text += "<ol>" + "".join(f"<li>{esc(s)}</li>" for s in steps) + "</ol>"
        quote = value.get("quote")
        if isinstance(quote, str) and quote and quote != main:
            text += f' <q class="ak-q">{esc(quote)}</q>'
        line = d.span_line(value.get("span"))
        if line is not None:
            text += " " + a(
                urls.href(src, links.transcript_page(d.item.id), f"L{line}"),
                f"L{line}",
                cls="ak-go",
            )
        return f"<li>{text}</li>"
    return f"<li>{esc(value)}</li>"


def wisdom_sections(d: ItemData) -> list[tuple[str, str, Any]]:
    """(anchor, heading, value) of each wisdom section the item page shows, in order.

    An entry whose text an earlier section already showed is left out (extractive providers
    give the same sentence as a key point, an idea and a fact), and so is a section left empty.
    """
    out: list[tuple[str, str, Any]] = []
    seen: set[str] = set()
    shown: set[str] = set()
    for pattern, key, heading in WISDOM_SECTIONS:
        section = d.wisdom.get(pattern)
        value = section.get(key) if isinstance(section, dict) else None
        if not value or heading in seen or not isinstance(value, str | list):
            continue
        seen.add(heading)
        if isinstance(value, list):
            fresh = []
            for entry in value:
                norm = " ".join(entry_text(entry).split()).casefold()
                if norm and norm in shown:
                    continue
                shown.add(norm)
                fresh.append(entry)
            if not fresh:
                continue
            value = fresh
        out.append((css_token(heading), heading, value))
    return out


def entry_text(value: Any) -> str:
    """The main text of a wisdom entry (what search indexes)."""
    if isinstance(value, dict):
        main = next((str(value[k]) for k in (*_MAIN_KEYS, "quote") if value.get(k)), "")
        extra = next((str(value[k]) for k in _EXTRA_KEYS if value.get(k)), "")
        return f"{main} — {extra}" if extra else main
    return str(value)


def _wisdom(d: ItemData, urls: Urls, src: str) -> list[str]:
    out: list[str] = []
    for anchor, heading, value in wisdom_sections(d):
        out.append(h2(anchor, heading))
        if isinstance(value, str):
            out += paragraphs(value)
        else:
            out.append("<ul>")
            out += [_wisdom_entry(v, d, urls, src) for v in value]
            out.append("</ul>")
    return out


def _metadata(d: ItemData, summary: dict[str, Any], urls: Urls, src: str) -> list[str]:
    meta = d.item.metadata
    rows: list[list[str]] = []
    url = safe_url(meta.get("url"))
    if url:
        rows.append(["Source", a(url, url, external=True)])
    elif meta.get("url") or meta.get("ref"):
        rows.append(
            ["Source", f"<code>{esc(one_line(str(meta.get('url') or meta.get('ref'))))}</code>"]
        )
    rows.append(
        [
            "Type",
            a(urls.href(src, links.LIBRARY, links.type_anchor(summary["type"])), summary["type"]),
        ]
    )
    if summary["tags"]:
        rows.append(
            ["Tags", ", ".join(a(urls.href(src, links.tag_page(t)), t) for t in summary["tags"])]
        )
    if summary["created_at"]:
        rows.append(["Added", esc(day(summary["created_at"]))])
    if summary["published"]:
        rows.append(["Published", esc(day(summary["published"]))])
    rows += [[label, esc(one_line(str(meta[k])))] for k, label in _META_ROWS if meta.get(k)]
    rows.append(
        [
            "Transcript",
            a(urls.href(src, links.transcript_page(d.item.id)), f"{summary['lines']} lines"),
        ]
    )
    rows.append(["Content ID", f"<code>{esc(d.item.id)}</code>"])
    rows.append(["Folder", f"<code>{esc(summary['path'])}</code>"])
    state = []
    if not d.extracted:
        state.append(badge("unresolved", "not extracted"))
    elif not d.digest_ok:
        state.append(badge("stale", "transcript changed since extraction"))
    else:
        state.append(badge("resolved", "transcript matches extraction"))
    counts = summary["counts"]
    if counts["stale"]:
        state.append(badge("stale", f"{counts['stale']} stale"))
    if summary["mentions_stale"]:
        state.append(badge("stale", f"{summary['mentions_stale']} stale mentions"))
    rows.append(["Validation", " ".join(state)])
    out = ["<table>", "<tbody>"]
    out += [f"<tr><th>{esc(k)}</th><td>{v}</td></tr>" for k, v in rows]
    out.append("</tbody></table>")
    return out


def render_item_page(d: ItemData, summary: dict[str, Any], ctx: ItemContext, urls: Urls) -> str:
    cid = d.item.id
    src = links.item_page(cid)
    title = summary["title"]
    out = [f"<h1>{esc(title)}</h1>"]
    out += _metadata(d, summary, urls, src)
    out += _wisdom(d, urls, src)
    kept = [c for c in d.claims if not c.rejected]
    rejected = [c for c in d.claims if c.rejected]
    counts = summary["counts"]
    out.append(h2("claims", f"Claims ({len(kept)})"))
    if kept:
        legend = " ".join(
            badge(s, f"{counts[s]} {s}")
            for s in ("resolved", "ambiguous", "unresolved", "stale")
            if counts[s]
        )
        out.append(f'<p class="ak-legend">{legend}</p>')
        head = ("Claim", "Status", "Confidence", "Quote", "Where")
        out += table(head, _claim_rows(urls, src, d, kept), cls="ak-claims")
    else:
        out.append("<p><em>No claims extracted.</em></p>")
    if rejected:
        out.append(f"<details><summary>Rejected in review ({len(rejected)})</summary>")
        out += table(
            ("Claim", "Status", "Confidence", "Quote", "Where"),
            _claim_rows(urls, src, d, rejected),
            cls="ak-claims",
        )
        out.append("</details>")
    out += _entities(d, ctx, urls, src)
    if ctx.topics:
        out.append(h2("topics", "Topics"))
        chips = [
            (a(urls.href(src, links.topic_page(term)), term) if has_page else esc(term))
            + " "
            + badge("rel-" + rel, rel)
            for term, rel, has_page in ctx.topics
        ]
        out.append('<p class="ak-chips">' + " · ".join(chips) + "</p>")
    if ctx.related:
        out.append(h2("related", "Related items"))
        out.append("<ul>")
        out += [
            f"<li>{a(urls.href(src, links.item_page(rid)), rtitle)} {badge('rel', rel)}</li>"
            for rid, rtitle, rel in ctx.related
        ]
        out.append("</ul>")
    return page(title, out, kind="item")


def _entities(d: ItemData, ctx: ItemContext, urls: Urls, src: str) -> list[str]:
    if not d.entities:
        return []
    with_page = set(ctx.entity_pages)
    out = [h2("entities", f"Entities ({len(d.entities)})"), '<dl class="ak-ents">']
    by_type: dict[str, list[str]] = {}
    for e in sorted(d.entities, key=lambda e: (-len(e.mentions), e.name.casefold())):
        label = (
            a(urls.href(src, links.entity_page(e.key)), e.name)
            if e.key in with_page
            else esc(e.name)
        )
        by_type.setdefault(e.type, []).append(
            f'{label}&#160;<span class="ak-count">{len(e.mentions)}</span>'
        )
    for etype in sorted(by_type):
        out.append(f"<dt>{esc(etype)}</dt><dd>{' · '.join(by_type[etype])}</dd>")
    out.append("</dl>")
    return out


def render_transcript_page(d: ItemData, summary: dict[str, Any], urls: Urls) -> str:
    cid = d.item.id
    src = links.transcript_page(cid)
    marks = [
        Mark(c.start, c.end, "E" + links.anchor_id(c.id), "ak-rej" if c.rejected else "")
        for c in d.claims
        if c.start is not None and c.end is not None
    ]
    meta = d.item.metadata
    chat = is_chat(meta)
    linker = None if chat else links.media_linker(meta)
    title = summary["title"]
    sub = [a(urls.href(src, links.item_page(cid)), "Item page"), esc(f"{summary['lines']} lines")]
    if summary["url"]:
        sub.append(a(summary["url"], "Source", external=True))
    if linker is not None:
        sub.append(esc("timestamps open the media at that second"))
    out = [f"<h1>{esc(title)}</h1>", f'<p class="ak-sub">{" · ".join(sub)}</p>']
    if d.data:
        html = render_transcript(
            d.data, marks, linker=linker, chat=chat, speakers=None if chat else d.speakers
        )
        out += html.split("\n")
    else:
        out.append("<p><em>No transcript.</em></p>")
    return page(f"{title} — transcript", out, kind="transcript", hide=("navigation", "toc"))
