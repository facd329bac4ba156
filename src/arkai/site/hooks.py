"""MkDocs hooks, loaded by the generated ``.site-build/mkdocs.yml`` (``hooks:``).

1. Pages arkai generated (they start with :data:`arkai.site.html.MARKER`) are raw HTML
   already: their Markdown conversion is skipped and the HTML is used as is — faster, and no
   Markdown extension ever sees transcript text. MkDocs reads every page before it renders
   any; arkai's pages keep no content in between (their HTML is read again from the page's
   file just before its template is rendered and dropped right after), so one page's HTML is
   in memory at a time, not the whole site's. A right-hand table of contents is rebuilt from
   the page's ``<h2 id>`` headings, and the theme's indentation is dropped.
2. Search: arkai's pages are excluded from Material's search plugin, which would parse all
   their HTML; after the build their entries, written by the generator next to each page
   (:mod:`arkai.site.search`), are added to ``search/search_index.json``. The index is
   therefore complete after ``mkdocs build --dirty`` too, which renders only changed pages.
   On such a build the previous index is set aside before MkDocs writes its own, and the
   entries of every page whose entries file is unchanged are copied from it as bytes (where
   they lie is kept in ``search-ranges.json``): only changed pages' entries are parsed and
   serialised again. What the index covers is the scope the generator wrote in
   ``search-scope.json`` (:func:`arkai.site.search.search_scope`: every entry, or less when
   the index would outgrow ``site.search_index_mb``); another scope than the last build's
   reads every page's entries again.
3. After a dirty build the HTML of pages that no longer exist is removed, so the site is
   what a full build would leave.
4. On a dirty build, a page outside the navigation whose HTML is not older than its Markdown
   is left out of MkDocs' work (its inclusion set to excluded): MkDocs would only ask it twice
   whether it changed, make a page object for it and skip it, ≈ 21,000 times at 10,000 items
   (issue 17). Its HTML stays; links to it are made as before (MkDocs still finds the file,
   and its note that the target is excluded is dropped); templates that list the pages (the
   sitemap, each rendered page's) get every page, as on a full build.

MkDocs imports this file by path, so it keeps no state beyond one build.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import re
import shutil
import stat
from array import array
from collections.abc import Callable, Sequence
from contextlib import nullcontext, suppress
from pathlib import Path
from typing import Any, BinaryIO

from jinja2 import FileSystemBytecodeCache
from mkdocs.structure.files import InclusionLevel
from mkdocs.structure.pages import Page
from mkdocs.structure.toc import get_toc
from mkdocs.utils.meta import get_data

from arkai.adapters.fs import atomic_write, atomic_write_text
from arkai.site.html import MARKER
from arkai.site.links import is_transcript
from arkai.site.search import ALL, SCOPES, scoped_rows

SEARCH_INDEX = "search/search_index.json"
#: Folder of the search entries of each page (``<page>.md.json``), in the build folder.
SEARCH_DIR = "search"
PAGES = "pages.json"
#: Where each page's entries lie in the last search index written (see the module doc).
SEARCH_RANGES = "search-ranges.json"
PREVIOUS_INDEX = "search_index.previous.json"
#: What the search index covers (``{"scope": …}``), written by the generator before the build.
SEARCH_SCOPE = "search-scope.json"
#: Compiled theme templates (see :func:`on_env`).
JINJA_CACHE = "jinja"
_H2 = re.compile(r'<h2 id="([^"<>]+)">([^<]*)</h2>')
# Whitespace-sensitive elements, left exactly as they are by ``_squeeze``.
_VERBATIM = re.compile(r"(<(pre|script|style|textarea)\b.*?</\2\s*>)", re.S | re.I)
_INDENT = re.compile(r"\n\s+")
_ENTITY_SEPARATOR = "&(?:lt|gt|amp|quot);"

_state: dict[str, Any] = {
    "command": None,
    "dirty": False,
    "ours": set(),
    "files": [],
    "set_aside": set(),
    "pages": None,
}
_EMPTY_TOC = get_toc([])


class _DropDirtyWarning(logging.Filter):
    """MkDocs warns on every ``--dirty`` build that navigation may be off; with arkai's fixed
    navigation and these hooks a dirty build is complete, so the warning would only mislead
    (and abort a build in strict mode)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "'dirty' build" not in record.getMessage()


class _DropSetAsideNote(logging.Filter):
    """MkDocs notes (at INFO) each link of a rendered page to a page excluded from the build;
    a page set aside by :func:`on_files` is in the site, so the note would be wrong."""

    _NOTE = re.compile(r"contains a link to '([^']*)' which is excluded from the built site")

    def filter(self, record: logging.LogRecord) -> bool:
        found = self._NOTE.search(record.getMessage())
        return found is None or found[1] not in _state["set_aside"]


def _add_filter(logger: str, kind: type[logging.Filter]) -> None:
    log = logging.getLogger(logger)
    if not any(isinstance(f, kind) for f in log.filters):
        log.addFilter(kind())


def on_startup(command: str, dirty: bool) -> None:
    _state.update(command=command, dirty=dirty, ours=set(), files=[], shared={},
                  set_aside=set(), pages=None)  # fmt: skip
    _add_filter("mkdocs.commands.build", _DropDirtyWarning)
    _add_filter("mkdocs.structure.pages", _DropSetAsideNote)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    if markdown.startswith(MARKER):
        _state["ours"].add(page.file.src_uri)
        # MkDocs holds every page's object until the build ends: the front matter values
        # arkai's pages have in common (search, hide) are one object each, not one per page.
        shared = _state.setdefault("shared", {})
        page.meta = {
            k: v if k == "title" else shared.setdefault(json.dumps(v, sort_keys=True), v)
            for k, v in page.meta.items()
        }
        return ""
    return markdown


def on_page_content(html: str, page: Any, config: Any, files: Any) -> str:
    """arkai's pages are raw HTML that MkDocs does not parse: it knows none of their anchors
    and links (None: not looked at, where an empty set and dict per page were kept until
    the build ends)."""
    if page.file.src_uri in _state["ours"]:
        page.present_anchor_ids = None
        page.links_to_anchors = None
        page.toc = _EMPTY_TOC
    return html


def on_page_context(context: Any, page: Any, config: Any, nav: Any) -> Any:
    """Load an arkai page's HTML just before its template is rendered (see the module doc);
    every page's template gets every page (:func:`_every_page`)."""
    pages = _every_page(config)
    if pages is not None:
        context["pages"] = pages
    if page.file.src_uri not in _state["ours"]:
        return context
    body, _ = get_data(page.file.content_string)
    # Heading text is escaped already, as the theme expects of TOC titles.
    page.toc = get_toc(
        [{"level": 2, "id": m[1], "name": m[2], "children": []} for m in _H2.finditer(body)]
    )
    page.content = body
    return context


def on_post_page(output: str, page: Any, config: Any) -> str:
    """Drop the theme's indentation from arkai's pages (a third of a small page's bytes).

    Only runs of whitespace that start with a line break are touched, and never inside
    ``pre``/``script``/``style``/``textarea``: in normal flow such a run renders as one
    space, as a single line break does; arkai's own text never holds a raw line break.
    """
    if page.file.src_uri not in _state["ours"]:
        return output
    # MkDocs keeps every page's HTML until the build ends; arkai's pages need it no longer
    # (they carry no Markdown links to validate), and on a big library it is most of the
    # build's memory.
    page.content = ""
    page.toc = _EMPTY_TOC
    return _squeeze(output)


def _squeeze(text: str) -> str:
    parts = _VERBATIM.split(text)
    # split() yields text, whole element, tag name, text, …
    out = []
    for i, part in enumerate(parts):
        kind = i % 3
        if kind == 0:
            out.append(_INDENT.sub("\n", part))
        elif kind == 1:
            out.append(part)
    return "".join(out)


def on_env(env: Any, config: Any, files: Any) -> Any:
    """Keep the theme's compiled templates between builds (compiling them was a third of a
    no-change rebuild). Jinja checks each template's source against its cached code; the
    folder is named after the versions that make the environment, so another MkDocs, theme
    or Jinja starts a new one."""
    from importlib.metadata import PackageNotFoundError, version

    def ver(dist: str) -> str:
        try:
            return version(dist)
        except PackageNotFoundError:
            return "-"

    name = "-".join(ver(d) for d in ("mkdocs", "mkdocs-material", "jinja2"))
    base = Path(config.config_file_path).parent / JINJA_CACHE
    for other in base.glob("*"):
        if other.name != name:
            shutil.rmtree(other, ignore_errors=True)
    (base / name).mkdir(parents=True, exist_ok=True)
    env.bytecode_cache = FileSystemBytecodeCache(str(base / name))
    return env


def on_pre_build(config: Any) -> None:
    """On a dirty build, set the previous search index aside (MkDocs is about to replace it):
    the entries of unchanged pages are copied from it."""
    build_dir = Path(config.config_file_path).parent
    previous = build_dir / PREVIOUS_INDEX
    previous.unlink(missing_ok=True)
    if _state["command"] == "build" and _state["dirty"]:
        # None yet, or on another file system: every page's entries are dumped.
        with suppress(OSError):
            os.replace(Path(config.site_dir) / SEARCH_INDEX, previous)


def on_post_build(config: Any) -> None:
    build_dir = Path(config.config_file_path).parent
    site = Path(config.site_dir)
    _add_search_entries(site, build_dir)
    (build_dir / PREVIOUS_INDEX).unlink(missing_ok=True)
    if _state["command"] == "build":
        _remove_deleted_pages(site, build_dir, sorted(f.dest_uri for f in _state["files"]))


def on_files(files: Any, config: Any) -> Any:
    _state["files"] = [f for f in files if f.is_documentation_page()]
    set_aside: set[str] = _state["set_aside"]
    if _state["command"] == "build" and _state["dirty"]:
        in_nav = _nav_paths(config.nav)
        for f in _state["files"]:
            if (
                f.inclusion == InclusionLevel.NOT_IN_NAV
                and f.src_uri not in in_nav
                and f.generated_by is None
                and f.src_dir is not None
                and _html_up_to_date(f.src_dir, f.src_uri, f.dest_dir, f.dest_uri)
            ):
                f.inclusion = InclusionLevel.EXCLUDED
                set_aside.add(f.src_uri)
    # Each other page's `is_modified` answered once per build: a dirty build asks it twice a
    # page (before reading the page and before rendering it), three `stat` calls each time.
    # Nothing between the two asks writes the page's source or output.
    for f in _state["files"]:
        if f.src_uri not in set_aside:
            f.is_modified = functools.cache(f.is_modified)
    return files


def _nav_paths(nav: Any) -> set[str]:
    """Every path the navigation names (``nav`` as MkDocs' config holds it), also without a
    leading slash: such a page is never set aside (MkDocs would then warn of it)."""
    out: set[str] = set()
    stack = [nav]
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            out.update((node, node.lstrip("/")))
        elif isinstance(node, dict):
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return out


def _html_up_to_date(src_dir: str, src_uri: str, dest_dir: str, dest_uri: str) -> bool:
    """Not ``File.is_modified`` (the HTML is a regular file, not older than the Markdown), in
    two ``stat`` calls on the paths joined, not normalised; False when either cannot be read."""
    try:
        html = os.stat(os.path.join(dest_dir, dest_uri))
        markdown = os.stat(os.path.join(src_dir, src_uri))
        return stat.S_ISREG(html.st_mode) and not html.st_mtime < markdown.st_mtime
    except (OSError, ValueError):
        return False


def on_template_context(context: Any, template_name: str, config: Any) -> Any:
    """A theme's template (the sitemap) gets every page (:func:`_every_page`)."""
    pages = _every_page(config)
    if pages is not None:
        context["pages"] = pages
    return context


def _every_page(config: Any) -> list[Any] | None:
    """The pages a template lists when :func:`on_files` set some aside (None when it set none
    aside): every page, as on a full build, those set aside in their place. With a
    ``site_url`` each gets the page object a dirty build would have made for it, which holds
    the URLs the sitemap lists (without one the sitemap lists no page; making the objects
    costs ≈ 0.1 s at 10,000 items, for the build date each asks). Made once a build."""
    set_aside = _state["set_aside"]
    if not set_aside:
        return None
    if _state["pages"] is None:
        pages = []
        for f in _state["files"]:  # every documentation page, in MkDocs' order
            if f.inclusion.is_included() or f.src_uri in set_aside:
                if f.page is None and config.site_url:
                    Page(None, f, config)
                pages.append(f)
        _state["pages"] = pages
    found: list[Any] = _state["pages"]
    return found


def _add_search_entries(site: Path, build_dir: Path) -> None:
    """Append arkai's entries to Material's index, streamed: one page's entries in memory at a
    time (on a big library the whole index as Python objects was the build's peak memory)."""
    index = site / SEARCH_INDEX
    if not index.is_file():
        return  # the search plugin is off
    data = json.loads(index.read_text(encoding="utf-8"))
    rows_dir = str(build_dir / SEARCH_DIR)
    # Each page that has an entries file, and the file's size and mtime (one `stat` a page)
    # as two numbers in an array: a big library has hundreds of thousands of pages (a list of
    # them was a fifth of the hook's memory; a stat object or tuple a page would be more).
    ours: list[Any] = []
    stamps = array("q")
    for f in _state["files"]:
        seen = _regular_stat(f"{rows_dir}/{f.src_uri}.json")
        if seen is not None:
            ours.append(f)
            stamps.extend(seen)
    pages = {f.url for f in ours}
    data["docs"] = [d for d in data.get("docs", []) if d["location"].split("#", 1)[0] not in pages]
    config = data.get("config")
    if isinstance(config, dict) and isinstance(config.get("separator"), str):
        config["separator"] = with_entity_separator(config["separator"])

    scope = read_scope(build_dir)
    reuse = _previous_ranges(build_dir, scope)
    ranges: dict[str, str] = {}

    def dump(obj: Any) -> bytes:
        return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8")

    def write(fh: BinaryIO, old: BinaryIO | None) -> None:
        # Byte for byte what json.dumps of the whole index would give.
        fh.write(b"{")
        for n, (key, value) in enumerate(data.items()):
            fh.write(b"," if n else b"")
            fh.write(dump(key) + b":")
            if key != "docs":
                fh.write(dump(value))
                continue
            fh.write(b"[")
            if value:
                fh.write(dump(value)[1:-1])  # Material's entries, then each page's
            _page_entries(fh, old, not value, ours, stamps, reuse, ranges, rows_dir, scope, dump)
            fh.write(b"]")
        fh.write(b"}")

    previous = build_dir / PREVIOUS_INDEX
    with previous.open("rb") if reuse and previous.is_file() else nullcontext() as old:
        atomic_write(index, lambda fh: write(fh, old), fsync=False)
    st = index.stat()
    record = {"index": [st.st_size, st.st_mtime_ns], "scope": scope, "pages": ranges}
    atomic_write_text(build_dir / SEARCH_RANGES, json.dumps(record), fsync=False)


def _regular_stat(path: str) -> tuple[int, int] | None:
    """The size and mtime (ns) of a regular file at ``path`` (followed through a link, as
    ``isfile``), or None. (Two numbers, not the stat object: one per page is held.)"""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return (st.st_size, st.st_mtime_ns) if stat.S_ISREG(st.st_mode) else None


def _page_entries(
    fh: BinaryIO,
    old: BinaryIO | None,
    first: bool,
    ours: list[Any],
    stamps: Sequence[int],
    reuse: dict[str, str],
    ranges: dict[str, str],
    rows_dir: str,
    scope: str,
    dump: Callable[[Any], bytes],
) -> None:
    """Each page's entries into the index's ``docs`` at ``fh`` (``first``: none written
    before them), its place recorded in ``ranges``; ``stamps``: the size and mtime of each
    page's entries file, two numbers a page. A page whose entries file has the size
    and time recorded with its place in the last index (``old``, ``reuse``) is copied from
    there, and pages that lay one after another there — each body, then a comma — are copied
    as one read (at 10,000 items ≈ 21,000 pages, nearly all unchanged, were as many reads)."""
    run: list[tuple[str, tuple[int, int], int, int]] = []  # (url, stat, old place, length)
    # Pages with no entries met inside the run: placed after the run's entry before them.
    empty: list[tuple[str, tuple[int, int], int]] = []

    def flush() -> None:
        nonlocal first
        if not run or old is None:
            return
        start = run[0][2]
        old.seek(start)
        block = old.read(run[-1][2] + run[-1][3] - start)
        fh.write(b"" if first else b",")
        first = False
        base = fh.tell()
        for url, st, at, length in run:
            ranges[url] = f"{st[0]} {st[1]} {base + at - start} {length}"
        for url, st, after in empty:
            _, _, at, length = run[after]
            ranges[url] = f"{st[0]} {st[1]} {base + at + length - start} 0"
        fh.write(block)
        run.clear()
        empty.clear()

    for n, f in enumerate(ours):
        url, st = f.url, (stamps[2 * n], stamps[2 * n + 1])
        known = _range(reuse.get(url))
        if old is not None and known and (known[0], known[1]) == st:
            if not known[3]:
                if run:
                    empty.append((url, st, len(run) - 1))
                else:
                    ranges[url] = f"{st[0]} {st[1]} {fh.tell()} 0"
                continue
            if run and run[-1][2] + run[-1][3] + 1 != known[2]:
                flush()
            run.append((url, st, known[2], known[3]))
            continue
        flush()
        rows_file = Path(f"{rows_dir}/{f.src_uri}.json")
        body = dump(_entries(url, rows_file, is_transcript(f.src_uri), scope))[1:-1]
        if body:
            fh.write(b"" if first else b",")
            first = False
        # One short string per page, not a list of four numbers (a third the size).
        ranges[url] = f"{st[0]} {st[1]} {fh.tell()} {len(body)}"
        fh.write(body)
    flush()


def _range(text: object) -> list[int] | None:
    """``"size mtime_ns offset length"`` (a page's place in the index) → its numbers (None
    for anything else, such as the lists of an earlier version)."""
    if not isinstance(text, str):
        return None
    try:
        found = [int(n) for n in text.split()]
    except ValueError:
        return None
    return found if len(found) == 4 else None


def read_scope(build_dir: Path) -> str:
    """The scope in ``search-scope.json`` (every entry when the file is missing or holds no
    known scope)."""
    try:
        scope = json.loads((build_dir / SEARCH_SCOPE).read_bytes()).get("scope")
    except (OSError, ValueError, AttributeError):
        return ALL
    return scope if scope in SCOPES else ALL


def _previous_ranges(build_dir: Path, scope: str) -> dict[str, str]:
    """Where each page's entries lie in the index set aside by :func:`on_pre_build` (empty
    when there is none, it is not the index the record describes, or it was written in
    another scope; a record from before scopes was written with every entry)."""
    try:
        record = json.loads((build_dir / SEARCH_RANGES).read_bytes())
        st = (build_dir / PREVIOUS_INDEX).stat()
    except (OSError, ValueError):
        return {}
    if not isinstance(record, dict) or record.get("index") != [st.st_size, st.st_mtime_ns]:
        return {}
    if record.get("scope", ALL) != scope:
        return {}
    pages = record.get("pages")
    return pages if isinstance(pages, dict) else {}


def _entries(url: str, rows_file: Path, transcript: bool, scope: str) -> list[dict[str, Any]]:
    """The search entries of one page in ``scope``: its rows (``search/<page>.json``) with
    locations."""
    out = []
    for anchor, title, text, *boost in scoped_rows(json.loads(rows_file.read_bytes()),
                                                   transcript, scope):  # fmt: skip
        entry: dict[str, Any] = {
            "location": f"{url}#{anchor}" if anchor else url,
            "title": title,
            "text": text,
        }
        if boost:
            entry["boost"] = boost[0]
        out.append(entry)
    return out


def with_entity_separator(separator: str) -> str:
    """The search separator, extended so that character references split words.

    Index text is HTML-escaped (``&lt;`` ``&gt;`` ``&amp;``, as Material's own indexer writes
    it), and Material's default separator (``[\\s\\-]+``) would keep ``&gt;`` inside tokens
    ("script&gt;window"): the search suggestion then offers, and fills the box with, the
    literal ``&gt;``. Material's documentation suggests splitting on ``&[lg]t;``; ``&amp;``
    and ``&quot;`` are added too.
    """
    if _ENTITY_SEPARATOR in separator:
        return separator
    return f"{separator}|{_ENTITY_SEPARATOR}" if separator else _ENTITY_SEPARATOR


def read_pages(build_dir: Path) -> list[str] | None:
    """The pages the last build wrote (``pages.json``), or None when there is no such record
    or it is damaged (not a JSON list of names): a dirty build cannot tell which pages it
    must remove then (:func:`arkai.site.build.build_site` builds whole instead)."""
    try:
        pages = json.loads((build_dir / PAGES).read_bytes())
    except (OSError, ValueError):
        return None
    if not isinstance(pages, list) or not all(isinstance(p, str) for p in pages):
        return None
    return pages


def _remove_deleted_pages(site: Path, build_dir: Path, pages: list[str]) -> None:
    record = build_dir / PAGES
    previous = read_pages(build_dir) if _state["dirty"] else None
    if previous is not None:
        for dest in sorted(set(previous) - set(pages)):
            path = site / dest
            if path.is_file():
                path.unlink()
                parent = path.parent
                while parent != site and parent.is_dir() and not any(parent.iterdir()):
                    parent.rmdir()
                    parent = parent.parent
    atomic_write_text(record, json.dumps(pages), fsync=False)
