"""The two pages of each item: the item page (metadata, summary and wisdom, claims with
status badges, entities, topics, related items) and its transcript page."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from arkai.core.escape import css_token, one_line, safe_url
from arkai.core.grammar import format_page
from arkai.site import links
from arkai.site.collect import ClaimView, ItemData
from arkai.site.html import a, badge, day, esc, h2, page, paragraphs, plural
from arkai.site.links import Urls
from arkai.site.search import ITEM_BOOST
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
    related: Sequence[Sequence[str]] = field(default_factory=list)
    """``(content_id, title, relation)`` of related items (index/related.jsonl)."""

    def to_dict(self) -> dict[str, Any]:
        # Not dataclasses.asdict: its deep copy was a tenth of a one-item rebuild's cost.
        return {"entity_pages": self.entity_pages, "topics": self.topics, "related": self.related}


def is_chat(metadata: dict[str, Any]) -> bool:
    ctype = str(metadata.get("content_type") or "")
    return ctype == "chats" or ctype.startswith("chats/") or bool(metadata.get("platform"))


def claim_href(urls: Urls, src: str, d: ItemData, claim: ClaimView) -> str | None:
    """Link to the claim's quoted words on the transcript page. A stale claim's link goes to
    its notice at the top of that page (same fragment, ``#E<evidence id>``): the recorded
    line now holds other text. An unresolved claim has no link."""
    if claim.start is None and claim.status != "stale":
        return None
    return urls.href(src, links.transcript_page(d.item.id), "E" + links.anchor_id(claim.id))


def _where(claim: ClaimView) -> str:
    if claim.status == "stale":
        return "stale: see notice"
    if claim.line is None:
        return "no span"
    pg = f"{format_page(claim.page)} · " if claim.page else ""
    return f"{pg}L{claim.line}" + (f" · {claim.timestamp}" if claim.timestamp else "")


def claim_cards(urls: Urls, src: str, d: ItemData, claims: list[ClaimView]) -> list[str]:
    """Each claim as a card: the claim, its quote (a link to the highlighted words) and a
    line of status, confidence and where it is."""
    out = ['<ol class="ak-clist">']
    for c in claims:
        href = claim_href(urls, src, d, c)
        status = badge("rejected") if c.rejected else badge(c.status)
        if c.verdict:
            status += " " + badge("verdict-" + c.verdict, c.verdict)
        note = f'<p class="ak-note">{esc(c.review_note)}</p>' if c.review_note else ""
        quote = f'<q class="ak-q">{esc(c.quote)}</q>'
        if c.quote == c.claim:
            quote = '<span class="ak-same">quoted verbatim</span>'
        where = a(href, _where(c), cls="ak-go") if href else esc(_where(c))
        css = f"ak-claim ak-st-{css_token(c.status)}"
        out.append(
            f'<li class="{css}"><p class="ak-ct">{esc(c.claim)}</p>'
            f'<p class="ak-cq">{quote}</p>{note}'
            f'<p class="ak-cm">{status} <span class="ak-conf">{c.confidence:.2f}</span> '
            f"{where}</p></li>"
        )
    out.append("</ol>")
    return out


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
            pg = d.page_at(d.line_starts[line - 1])
            text += " " + a(
                urls.href(src, links.transcript_page(d.item.id), f"L{line}"),
                (f"{format_page(pg)} · " if pg else "") + f"L{line}",
                cls="ak-go",
            )
        return f"<li>{text}</li>"
    return f"<li>{esc(value)}</li>"


def wisdom_sections(d: ItemData) -> list[tuple[str, str, Any]]:
    """(anchor, heading, value) of each wisdom section the item page shows, in order.

    An entry whose text an earlier section already showed is left out (extractive providers
    give the same sentence as a key point, an idea and a fact, and build the summary and the
    one-sentence takeaway from those sentences too — on auto-captions every section repeated
    the summary), and so is a section left empty.
    """
    out: list[tuple[str, str, Any]] = []
    seen: set[str] = set()
    shown: set[str] = set()
    prose = ""
    """The text sections shown so far, normalized: an entry they contain is not repeated."""
    for pattern, key, heading in WISDOM_SECTIONS:
        section = d.wisdom.get(pattern)
        value = section.get(key) if isinstance(section, dict) else None
        if not value or heading in seen or not isinstance(value, str | list):
            continue
        seen.add(heading)
        if isinstance(value, str):
            norm = _norm(value)
            if norm in prose:
                continue
            prose += norm + "\n"
        else:
            fresh = []
            for entry in value:
                norm = _norm(entry_text(entry))
                if norm and (norm in shown or (len(norm) >= MIN_REPEAT and norm in prose)):
                    continue
                shown.add(norm)
                fresh.append(entry)
            if not fresh:
                continue
            value = fresh
        out.append((css_token(heading), heading, value))
    return out


#: Shorter entries ("VC", a name) are kept even when the summary happens to contain them.
MIN_REPEAT = 20


def _norm(text: str) -> str:
    return " ".join(text.split()).casefold().rstrip(".!?…")


def entry_text(value: Any) -> str:
    """The main text of a wisdom entry (what search indexes)."""
    if isinstance(value, dict):
        main = next((str(value[k]) for k in (*_MAIN_KEYS, "quote") if value.get(k)), "")
        extra = next((str(value[k]) for k in _EXTRA_KEYS if value.get(k)), "")
        return f"{main} — {extra}" if extra else main
    return str(value)


#: Characters of the summary shown above the claims (the rest is under "More").
LEAD_CHARS = 600


def _lead(d: ItemData) -> tuple[str, bool]:
    """The short summary that opens the item page, and whether it is the whole summary."""
    for anchor, _, value in wisdom_sections(d):
        if anchor == "summary" and isinstance(value, str):
            text = " ".join(value.split())
            if len(text) <= LEAD_CHARS:
                return text, True
            cut = text[:LEAD_CHARS]
            stop = max(cut.rfind(". "), cut.rfind("? "), cut.rfind("! "))
            return (cut[: stop + 1] if stop > LEAD_CHARS // 3 else cut.rstrip() + " …"), False
    return "", False


def _wisdom(d: ItemData, urls: Urls, src: str, *, skip: str = "") -> list[str]:
    """The wisdom sections, each collapsed (``details`` with the section's anchor)."""
    out: list[str] = []
    for anchor, heading, value in wisdom_sections(d):
        if anchor == skip:
            continue
        count = "" if isinstance(value, str) else f" ({len(value)})"
        out.append(
            f'<details id="{esc(anchor)}" class="ak-more"><summary>{esc(heading)}{count}</summary>'
        )
        if isinstance(value, str):
            out += paragraphs(value)
        else:
            out.append("<ul>")
            out += [_wisdom_entry(v, d, urls, src) for v in value]
            out.append("</ul>")
        out.append("</details>")
    return out


def _facts(d: ItemData, summary: dict[str, Any], urls: Urls, src: str) -> str:
    """One line under the title: type, date, tags, source, the transcript, validation."""
    parts = [a(urls.href(src, links.LIBRARY, links.type_anchor(summary["type"])), summary["type"])]
    when = summary["published"] or summary["created_at"]
    if when:
        parts.append(esc(day(when)))
    if summary["tags"]:
        parts.append(", ".join(a(urls.href(src, links.tag_page(t)), t) for t in summary["tags"]))
    url = safe_url(d.item.metadata.get("url"))
    if url:
        parts.append(a(url, "source", external=True))
    parts.append(
        a(
            urls.href(src, links.transcript_page(d.item.id)),
            f"transcript ({plural(summary['lines'], 'line')})",
        )
    )
    if d.extracted and not d.digest_ok:
        parts.append(badge("stale", "transcript changed since extraction"))
    return f'<p class="ak-sub">{" · ".join(parts)}</p>'


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
    if summary["created_at"]:
        rows.append(["Added", esc(day(summary["created_at"]))])
    if summary["published"]:
        rows.append(["Published", esc(day(summary["published"]))])
    rows += [[label, esc(one_line(str(meta[k])))] for k, label in _META_ROWS if meta.get(k)]
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
    out = [
        '<details id="details" class="ak-more"><summary>Details</summary>',
        '<div class="ak-rt ak-meta"><table>',
        "<tbody>",
    ]
    out += [f"<tr><th>{esc(k)}</th><td>{v}</td></tr>" for k, v in rows]
    out.append("</tbody></table></div></details>")
    return out


def render_item_page(d: ItemData, summary: dict[str, Any], ctx: ItemContext, urls: Urls) -> str:
    """Title and one line of facts, a short summary, the claims, the entities; then topics,
    related items, and the rest (wisdom sections, metadata) collapsed."""
    cid = d.item.id
    src = links.item_page(cid)
    title = summary["title"]
    out = [f"<h1>{esc(title)}</h1>", _facts(d, summary, urls, src)]
    lead, whole = _lead(d)
    if lead:
        out.append(f'<p class="ak-lead">{esc(lead)}</p>')
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
        out.append('<div class="ak-claims">')
        out += claim_cards(urls, src, d, kept)
        out.append("</div>")
    else:
        out.append("<p><em>No claims extracted.</em></p>")
    if rejected:
        out.append(
            f'<details class="ak-more"><summary>Rejected in review ({len(rejected)})</summary>'
        )
        out.append('<div class="ak-claims ak-rejected">')
        out += claim_cards(urls, src, d, rejected)
        out.append("</div></details>")
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
    out.append(h2("more", "More"))
    out += _wisdom(d, urls, src, skip="summary" if whole else "")
    out += _metadata(d, summary, urls, src)
    return page(title, out, kind="item", boost=ITEM_BOOST)


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


def stale_notices(d: ItemData) -> list[str]:
    """A notice for each stale claim, carrying the claim's anchor (``E<evidence id>``): every
    link to a stale claim lands here instead of on a line that now says something else."""
    stale = [c for c in d.claims if c.status == "stale"]
    if not stale:
        return []
    out = [
        '<div class="admonition warning ak-stale">',
        f'<p class="admonition-title">{esc(plural(len(stale), "stale claim"))}: '
        "the transcript changed after extraction</p>",
        "<p>These quotes are no longer where they were recorded; the lines now hold other "
        "text, so they are not highlighted. Repair with "
        f"<code>arkai evidence reanchor {esc(d.item.id)}</code>.</p>",
        "<ul>",
    ]
    for c in stale:
        was = f" (was line {c.line})" if c.line else ""
        out.append(
            f'<li id="E{links.anchor_id(c.id)}" class="ak-stale-claim">{badge("stale")} '
            f'{esc(c.claim)} <q class="ak-q">{esc(c.quote)}</q>{esc(was)}</li>'
        )
    out += ["</ul>", "</div>"]
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
    out += stale_notices(d)
    if d.data:
        html = render_transcript(
            d.data, marks, linker=linker, chat=chat, speakers=None if chat else d.speakers
        )
        out += html.split("\n")
    else:
        out.append("<p><em>No transcript.</em></p>")
    return page(f"{title} — transcript", out, kind="transcript", hide=("navigation", "toc"))
