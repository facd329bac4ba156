"""Text and Markdown renderings of ``arkai diff`` and ``arkai log`` results (the operations in
:mod:`arkai.ops.diff` and :mod:`arkai.ops.history` only compute them)."""

from __future__ import annotations

import html
import json
from typing import Any
from urllib.parse import quote as url_quote

from arkai.core.escape import md_code, md_escape
from arkai.ops.diff import (
    VALIDATION_REPORT,
    ClaimState,
    ItemDiff,
    LibraryDiff,
    clip,
    describe_changes,
    short,
)
from arkai.ops.history import History

FORMATS = ("text", "json", "markdown")
#: Markdown stops adding item blocks past this size (GitHub caps a job summary at 1 MiB and a
#: comment at 65,536 characters; pass --limit to shorten each block instead).
MARKDOWN_MAX_CHARS = 900_000


def _claim_bits(c: ClaimState) -> str:
    bits = [c.status]
    if c.valid is False:
        bits.append("STALE")
    if c.review:
        bits.append(c.review.get("status", ""))
    return ", ".join(bits)


def _line(c: ClaimState) -> str:
    return f"L{c.line}" if c.line is not None else "L–"


def _more(items: list[Any], limit: int) -> tuple[list[Any], int]:
    if limit <= 0 or len(items) <= limit:
        return items, 0
    return items[:limit], len(items) - limit


def summary_line(counts: dict[str, dict[str, int]]) -> list[str]:
    i, c, e = counts["items"], counts["claims"], counts["entities"]
    return [
        f"items     {i['added']} added, {i['removed']} removed, {i['changed']} changed, "
        f"{i['unchanged']} unchanged",
        f"claims    +{c['added']} -{c['removed']} ~{c['changed']} ({c['moved']} moved)",
        f"entities  +{e['added']} -{e['removed']} ~{e['changed']}",
    ]


def _validation_text(d: ItemDiff) -> str | None:
    if d.left is None or d.right is None or not d.validation_changed:
        return None
    a, b = d.left.validation(), d.right.validation()
    parts = [f"{k} {a[k]} → {b[k]}" for k in ("valid", "stale", "unresolved") if a[k] != b[k]]
    if a["digest_ok"] != b["digest_ok"]:
        parts.append(
            "transcript " + ("matches" if b["digest_ok"] else "changed since") + " extraction"
        )
    return ", ".join(parts) or None


def render_text(diff: LibraryDiff, *, limit: int = 0) -> str:
    """The diff for a terminal: counts, validation changes, then one block per item."""
    out = [
        f"arkai diff {diff.left.rev} ({diff.left.label}) → {diff.right.rev} ({diff.right.label})"
    ]
    out += summary_line(diff.counts())
    vchanges = diff.validation_changes()
    if vchanges:
        out.append(f"validation ({VALIDATION_REPORT}):")
        out += [f"  {k}: {_fmt_plain(a)} → {_fmt_plain(b)}" for k, a, b in vchanges]
    if diff.empty:
        out.append("no changes")
    for d in diff.items:
        mark = {"added": "A", "removed": "D", "changed": "M"}[d.state]
        out.append("")
        out.append(f"{mark} {d.content_id}  {d.title}")
        if d.renamed and d.left and d.right:
            out.append(f"    path: {d.left.path} → {d.right.path}")
        else:
            out.append(f"    {d.path}")
        if d.state == "changed" and d.files:
            out.append("    files: " + ", ".join(_file_name(f) for f in d.files))
        if d.current.extracted is False:
            out.append("    not extracted")
        v = _validation_text(d)
        if v:
            out.append(f"    validation: {v}")
        shown, more = _more(d.claims.added, limit)
        out += [f"    + {c.id}  {_line(c)}  [{_claim_bits(c)}]  {clip(c.claim)}" for c in shown]
        out += [f"    + … {more} more added claims"] if more else []
        shown, more = _more(d.claims.removed, limit)
        out += [f"    - {c.id}  {_line(c)}  [{_claim_bits(c)}]  {clip(c.claim)}" for c in shown]
        out += [f"    - … {more} more removed claims"] if more else []
        shown3, more = _more(d.claims.changed, limit)
        for _a, b, ch in shown3:
            out.append(f"    ~ {b.id}  {_line(b)}  {describe_changes(ch)}  {clip(b.claim, 60)}")
        out += [f"    ~ … {more} more changed claims"] if more else []
        shown3, more = _more(d.claims.moved, limit)
        for a, b, ch in shown3:
            extra = f"; {describe_changes(ch)}" if ch else ""
            out.append(
                f"    > {a.id} → {b.id}  {_line(a)} → {_line(b)}{extra}  {clip(b.claim, 60)}"
            )
        out += [f"    > … {more} more moved claims"] if more else []
        for n, t, m in d.entities.added:
            out.append(f"    + entity {n} ({t}), {m} mention{'s' if m != 1 else ''}")
        for n, t, m in d.entities.removed:
            out.append(f"    - entity {n} ({t}), {m} mention{'s' if m != 1 else ''}")
        for n, t, a_count, b_count in d.entities.changed:
            out.append(f"    ~ entity {n} ({t}), mentions {a_count} → {b_count}")
        for w in d.warnings():
            out.append(f"    warning: {w}")
    return "\n".join(out) + "\n"


def _file_name(f: dict[str, str]) -> str:
    name = f["path"] if f["tree"] == "library" else f"{f['tree']}/{f['path']}"
    return name if f["change"] == "modified" else f"{name} ({f['change']})"


def _fmt_plain(v: Any) -> str:
    if v is None:
        return "–"
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def _html_text(text: str) -> str:
    return html.escape(" ".join(text.split()), quote=True)


class Links:
    """Turns a file and line into a link: ``<base><path>?plain=1#L<line>`` with a base (a
    GitHub blob URL: ``?plain=1`` shows Markdown as text, where line anchors work), else the
    relative ``<path>#L<line>``.

    ``base`` may contain ``{rev}``, replaced by the side's commit ID (so links to removed
    claims point into the old revision); the working tree side has no commit and gets ``HEAD``.
    Without a base, links are relative to the knowledge repo root.
    """

    def __init__(self, base: str, prefix: str, left: str | None, right: str | None) -> None:
        self.base = base
        self.prefix = f"{prefix}/" if prefix and base else ""
        self.revs = {"left": left or "HEAD", "right": right or "HEAD"}

    def __call__(self, path: str, line: int | None, side: str) -> str:
        base = self.base.replace("{rev}", self.revs[side])
        url = base + url_quote(self.prefix + path)
        if line is None:
            return url
        return f"{url}?plain=1#L{line}" if self.base else f"{url}#L{line}"


def _md_claim(c: ClaimState, item_path: str, side: str, links: Links) -> str:
    url = links(f"{item_path}/{c.artifact}", c.line, side)
    where = f"[{_line(c)}]({url})"
    review = f" · {md_escape(c.review.get('status', ''))}" if c.review else ""
    stale = " · **STALE**" if c.valid is False else ""
    return f"`{short(c.id)}` {where} {c.status}{stale}{review} — {md_escape(clip(c.claim, 160))}"


def render_markdown(diff: LibraryDiff, *, limit: int = 50, link_base: str = "") -> str:
    """The diff as a pull-request comment: counts on top, one collapsible block per item."""
    links = Links(link_base, diff.prefix, diff.left.commit, diff.right.commit)
    counts = diff.counts()
    i, c, e = counts["items"], counts["claims"], counts["entities"]
    out = [f"### arkai diff {md_code(diff.left.label)} → {md_code(diff.right.label)}", ""]
    out.append(
        f"**Items** {i['added']} added · {i['removed']} removed · {i['changed']} changed · "
        f"{i['unchanged']} unchanged  "
    )
    out.append(
        f"**Claims** +{c['added']} −{c['removed']} ~{c['changed']} ({c['moved']} moved) · "
        f"**Entities** +{e['added']} −{e['removed']} ~{e['changed']}"
    )
    vchanges = diff.validation_changes()
    if vchanges:
        out += ["", f"| {md_code(VALIDATION_REPORT)} | before | after |", "|---|---:|---:|"]
        out += [f"| {md_escape(k)} | {_fmt_plain(a)} | {_fmt_plain(b)} |" for k, a, b in vchanges]
    if diff.empty:
        out += ["", "No changes to the library."]
    size = sum(len(x) + 1 for x in out)
    for n, d in enumerate(diff.items):
        if size > MARKDOWN_MAX_CHARS:
            rest = len(diff.items) - n
            out += [
                "",
                f"… {rest} more item{'s' if rest != 1 else ''} not shown: the summary is full "
                "(`arkai diff --format text` lists everything).",
            ]
            break
        start = len(out)
        lp = d.left.path if d.left else ""
        rp = d.right.path if d.right else ""
        bits = [d.state]
        cl = d.claims
        if cl:
            bits.append(
                f"claims +{len(cl.added)} −{len(cl.removed)} ~{len(cl.changed)}"
                + (f" →{len(cl.moved)}" if cl.moved else "")
            )
        if d.entities:
            en = d.entities
            bits.append(f"entities +{len(en.added)} −{len(en.removed)} ~{len(en.changed)}")
        stale = d.right.counts()["stale"] if d.right else 0
        if stale:
            bits.append(f"⚠️ {stale} stale")
        out += ["", "<details>"]
        out.append(
            f"<summary><b>{_html_text(d.title)}</b> <code>{short(d.content_id)}</code> — "
            f"{_html_text(' · '.join(bits))}</summary>"
        )
        out.append("")
        if d.renamed and d.left and d.right:
            out.append(f"Moved {md_code(d.left.path)} → {md_code(d.right.path)}")
        else:
            out.append(md_code(d.path))
        if d.state == "changed" and d.files:
            out += ["", "Files: " + ", ".join(md_code(_file_name(f)) for f in d.files)]
        v = _validation_text(d)
        if v:
            out += ["", f"Validation: {md_escape(v)}"]
        rows: list[str] = []
        shown, more = _more(cl.added, limit)
        rows += [f"- **+** {_md_claim(x, rp, 'right', links)}" for x in shown]
        rows += [f"- **+** … {more} more"] if more else []
        shown, more = _more(cl.removed, limit)
        rows += [f"- **−** {_md_claim(x, lp, 'left', links)}" for x in shown]
        rows += [f"- **−** … {more} more"] if more else []
        shown3, more = _more(cl.changed, limit)
        rows += [
            f"- **~** {_md_claim(b, rp, 'right', links)}  \n  {md_escape(describe_changes(ch))}"
            for _a, b, ch in shown3
        ]
        rows += [f"- **~** … {more} more"] if more else []
        shown3, more = _more(cl.moved, limit)
        for a, b, ch in shown3:
            url = links(f"{rp}/{b.artifact}", b.line, "right")
            extra = f"; {md_escape(describe_changes(ch))}" if ch else ""
            rows.append(
                f"- **→** `{short(a.id)}` → `{short(b.id)}` {_line(a)} → [{_line(b)}]({url})"
                f"{extra} — {md_escape(clip(b.claim, 160))}"
            )
        rows += [f"- **→** … {more} more"] if more else []
        if rows:
            out += ["", "**Claims**", "", *rows]
        erows = [f"- **+** {md_escape(n)} ({t}, {m})" for n, t, m in d.entities.added]
        erows += [f"- **−** {md_escape(n)} ({t}, {m})" for n, t, m in d.entities.removed]
        erows += [
            f"- **~** {md_escape(n)} ({t}), mentions {a} → {b}" for n, t, a, b in d.entities.changed
        ]
        if erows:
            shown_e, more = _more(erows, limit)
            out += ["", "**Entities** (mentions)", "", *shown_e]
            out += [f"- … {more} more"] if more else []
        out += ["", "</details>"]
        size += sum(len(x) + 1 for x in out[start:])
    return "\n".join(out) + "\n"


def render(diff: LibraryDiff, fmt: str, *, limit: int = 0, link_base: str = "") -> str:
    """``text`` | ``json`` | ``markdown``."""
    if fmt == "json":
        return json.dumps(diff.to_dict(), sort_keys=True, ensure_ascii=False, indent=2) + "\n"
    if fmt == "markdown":
        return render_markdown(diff, limit=limit, link_base=link_base)
    return render_text(diff, limit=limit)


def render_history(h: History, *, limit: int = 0) -> str:
    t = h.target
    if t.kind == "claim":
        head = [f"claim {t.evidence_id}  in item {t.content_id}  {t.title}", t.path]
    else:
        head = [f"item {t.content_id}  {t.title}", t.path]
    out = head
    entries = h.entries[:limit] if limit > 0 else h.entries
    if not entries:
        out.append("")
        out.append("no history: nothing committed touches it")
    for e in entries:
        out.append("")
        if e.commit is None:
            out.append("working tree  (uncommitted)")
        else:
            c = e.commit
            merge = "  (merge)" if len(c.parents) > 1 else ""
            out.append(
                f"{c.short}  {c.date.strftime('%Y-%m-%d %H:%M')}  {c.author}  {c.subject}{merge}"
            )
        out += [f"    {ch['text']}" for ch in e.changes]
    if limit > 0 and len(h.entries) > limit:
        out.append("")
        out.append(f"… {len(h.entries) - limit} older entries (--limit 0 shows all)")
    return "\n".join(out) + "\n"
