"""Small HTML helpers. Text arguments are escaped here; ``href`` values must come from
:mod:`arkai.site.links` or :func:`arkai.core.escape.safe_url`.

Every page is Markdown holding one raw HTML block: front matter, a marker comment the site
hook recognises (it then skips Markdown conversion), and HTML lines that each start with
``<``, with no blank line inside — so plain ``mkdocs build`` without the hook renders the
same page.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from arkai.core.escape import (
    css_token,
    escape_attr,
    escape_text,
    escape_url,
    one_line,
    yaml_string,
)

#: First line of a page body; the site hook serves such pages without Markdown conversion.
MARKER = "<!-- arkai:html -->"
#: MathJax and KaTeX skip these elements, so ``$…$`` in a transcript is never typeset.
IGNORE_MATH = "tex2jax_ignore mathjax_ignore"


def esc(value: object) -> str:
    return escape_text(str(value))


def a(href: str, text: str, *, cls: str = "", external: bool = False) -> str:
    attrs = f' class="{cls}"' if cls else ""
    if external:
        attrs += ' rel="noopener nofollow noreferrer"'
    return f'<a href="{escape_url(href)}"{attrs}>{esc(text)}</a>'


def badge(status: str, label: str | None = None) -> str:
    return f'<span class="ak-b ak-b-{css_token(status)}">{esc(label or status)}</span>'


def h2(anchor: str, text: str) -> str:
    """A section heading; ``anchor`` must be a safe token (``css_token``, ``slugify``)."""
    return f'<h2 id="{esc(anchor)}">{esc(text)}</h2>'


def table(
    head: Sequence[str], rows: Iterable[Sequence[str]], *, cls: str = "", labels: bool = True
) -> list[str]:
    """A responsive table: cells are HTML already; the header labels are escaped here.

    The table itself has no class (Material styles only those); it sits in a
    ``div.ak-rt`` (plus ``cls``). Each cell carries its column's label (``data-label``), so
    on a narrow screen the stylesheet shows every row as a card of labelled lines instead
    of a table that scrolls sideways; the first column (the title) heads the card.
    ``labels=False``: the stylesheet knows the labels (long item lists, where the attributes
    would repeat on every row).
    """
    names = [escape_attr(one_line(h)) for h in head] if labels else []
    out = [
        f'<div class="ak-rt{" " + cls if cls else ""}"><table>',
        "<thead><tr>" + "".join(f"<th>{esc(h)}</th>" for h in head) + "</tr></thead>",
        "<tbody>",
    ]
    out += [
        "<tr>"
        + "".join(
            f'<td data-label="{names[i]}">{c}</td>' if i < len(names) else f"<td>{c}</td>"
            for i, c in enumerate(row)
        )
        + "</tr>"
        for row in rows
    ]
    out.append("</tbody></table></div>")
    return out


def plural(n: int, word: str, many: str | None = None) -> str:
    """``1 item``, ``2 items`` (``many``: an irregular plural)."""
    return f"{n} {word if n == 1 else many or word + 's'}"


def paragraphs(text: str, cls: str = "") -> list[str]:
    attrs = f' class="{cls}"' if cls else ""
    parts = [p.strip() for p in text.replace("\r", "").split("\n\n")]
    return [f"<p{attrs}>{esc(p)}</p>" for p in parts if p]


def day(stamp: str) -> str:
    """``2026-11-22T10:57:55Z`` → ``2026-11-22``."""
    return stamp[:10]


def page(
    title: str,
    lines: Sequence[str],
    *,
    kind: str,
    hide: Sequence[str] = (),
    boost: float | None = None,
) -> str:
    """A page: front matter, marker, HTML.

    The title is pre-escaped (themes print ``page.meta.title`` unescaped). ``hide`` lists
    Material's sidebars to leave out (``navigation``, ``toc``). Material's search
    plugin is told to skip the page: arkai writes the page's search entries itself
    (:mod:`arkai.site.search`); ``boost`` is recorded for readers of the front matter (the
    entries carry their own).
    """
    front = ["---", f"title: {yaml_string(escape_text(one_line(title)))}"]
    if hide:
        front.append(f"hide: [{', '.join(hide)}]")
    search = "exclude: true" + (f", boost: {boost:g}" if boost is not None else "")
    front += [f"search: {{{search}}}", "---"]
    body = [MARKER, f'<div class="ak-page ak-{css_token(kind)} {IGNORE_MATH}">', *lines, "</div>"]
    for line in body:
        # The raw-HTML invariant: nothing Markdown could read as its own syntax.
        if not line.startswith("<") or "\n" in line:
            raise ValueError(f"page line does not start with a tag: {line[:60]!r}")
    return "\n".join(front + body) + "\n"
