"""``arkai site build`` on a real repo: real MkDocs-Material builds, every internal link and
fragment checked, claims' marks equal their quotes, incremental and dirty rebuilds leave the
site as a full build would, and hostile text stays text."""

from __future__ import annotations

import html
import json
import re
import shutil
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import click
import numpy as np
import pytest
import yaml
from click.testing import CliRunner

from arkai.adapters.chunkparts import write_lines
from arkai.adapters.memory import write_state
from arkai.cli.site import site as site_group
from arkai.errors import LibraryError
from arkai.model.belief import Belief
from arkai.ops.init import init_repo
from arkai.site.build import SiteBuildError, SiteReport, build_site, clean
from tests.conftest import ROOT, Runner

HOSTILE_TITLE = "<img src=x onerror=window.__pwned=1> & <script>window.__pwned=1</script>"
HOSTILE_LINES = [
    "[00:00:01] Mallory: <script>window.__pwned=1</script> is a script tag.",
    "[00:00:05] Mallory: <img src=x onerror=window.__pwned=1> and [a link](javascript:alert(1)).",
    "[00:00:09] Mallory: {{ config.site_name }} **bold** --8<-- /etc/passwd",
]


class Page(HTMLParser):
    """Links, ids, element texts by id, and every tag's attributes of one HTML file."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.links: list[str] = []
        self.ids: set[str] = set()
        self.text: dict[str, str] = {}
        self.attrs: list[tuple[str, dict[str, str | None]]] = []
        self._stack: list[str | None] = []
        self.feed(text)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        self.attrs.append((tag, a))
        if tag == "a" and a.get("href"):
            self.links.append(str(a["href"]))
        ident = a.get("id")
        if ident:
            self.ids.add(ident)
            self.text[ident] = ""
        if tag not in ("br", "img", "input", "meta", "link", "hr"):
            self._stack.append(ident)

    def handle_endtag(self, tag: str) -> None:
        if self._stack:
            self._stack.pop()

    def handle_data(self, data: str) -> None:
        for ident in self._stack:
            if ident:
                self.text[ident] += data


#: Items of this repo's sample library (make_repo adds one hostile item to them).
SAMPLE_ITEMS = len(list((ROOT / "library").rglob("metadata.json")))


def make_repo(tmp_path: Path, arkai: Runner) -> Path:
    """A knowledge repo holding the sample library (already extracted) and a hostile item."""
    repo = tmp_path / "kr"
    init_repo(repo, git=False)
    for tree in ("library", "extracted"):
        shutil.rmtree(repo / tree)
        shutil.copytree(ROOT / tree, repo / tree)
    hostile = tmp_path / "hostile.txt"
    hostile.write_text("\n".join(HOSTILE_LINES) + "\n", encoding="utf-8")
    code, _, err = arkai("--repo", repo, "add", "--quiet", "--title", HOSTILE_TITLE, hostile)
    assert code == 0, err
    # `arkai add` strips markup from titles; a hand-edited metadata.json may hold anything.
    meta_path = next(p for p in (repo / "library").rglob("metadata.json") if "hostile" in
                     p.read_text())  # fmt: skip
    meta = json.loads(meta_path.read_text())
    meta.update(title=HOSTILE_TITLE, url="javascript:alert(1)", tags=["<b>x</b>", "ok"])
    meta_path.write_text(json.dumps(meta))
    return repo


def html_files(site: Path) -> Iterator[Path]:
    for path in sorted(site.rglob("*.html")):
        # 404.html is served from any folder, so the theme links it from the root ("/").
        if "assets" not in path.relative_to(site).parts and path.name != "404.html":
            yield path


def check_links(site: Path) -> int:
    """Every relative link resolves to a file, and its fragment to an id there."""
    pages: dict[Path, Page] = {}

    def load(path: Path) -> Page:
        if path not in pages:
            pages[path] = Page(path.read_text(encoding="utf-8"))
        return pages[path]

    checked = 0
    for path in html_files(site):
        for href in load(path).links:
            parts = urlsplit(href)
            if parts.scheme or href.startswith("//"):
                assert parts.scheme in ("http", "https"), f"{path}: unsafe link {href}"
                continue
            target = path if not parts.path else (path.parent / unquote(parts.path)).resolve()
            if target.is_dir():
                target = target / "index.html"
            assert target.is_file(), f"{path.relative_to(site)}: broken link {href}"
            if parts.fragment and target.suffix == ".html":
                assert parts.fragment in load(target).ids, f"{path}: no #{parts.fragment}"
            checked += 1
    return checked


def item_dirs(repo: Path) -> dict[str, Path]:
    out = {}
    for meta in (repo / "library").rglob("metadata.json"):
        out[json.loads(meta.read_text())["id"]] = meta.parent
    return out


def test_build_links_marks_search_and_escaping(tmp_path: Path, arkai: Runner) -> None:
    repo = make_repo(tmp_path, arkai)
    user_config = (repo / "mkdocs.yml").read_bytes()
    report = build_site(repo)
    assert report.mkdocs == "full" and report.items == SAMPLE_ITEMS + 1
    site = repo / "site"
    assert (repo / "mkdocs.yml").read_bytes() == user_config
    assert check_links(site) > 500

    home = Page((site / "index.html").read_text())
    nav = [href for href in home.links]
    for section in ("library/", "tags/", "entities/", "topics/", "validation/"):
        assert section in nav, section

    # Every resolved claim is a mark around exactly its quote, linked from the item page.
    marks = 0
    for cid, folder in item_dirs(repo).items():
        rel = folder.relative_to(repo / "library")
        evidence = repo / "extracted" / rel / "evidence.jsonl"
        transcript = Page((site / "transcripts" / cid / "index.html").read_text())
        item = Page((site / "items" / cid / "index.html").read_text())
        assert "L1" in transcript.ids
        for line in map(json.loads, evidence.read_text().splitlines() if evidence.exists() else []):
            if line["status"] in ("resolved", "ambiguous"):
                assert transcript.text[f"E{line['id']}"] == line["quote"]
                assert f"../../transcripts/{cid}/#E{line['id']}" in item.links
                marks += 1
    assert marks >= 40

    index = json.loads((site / "search" / "search_index.json").read_text())
    locations = {d["location"] for d in index["docs"]}
    some = next(iter(item_dirs(repo)))
    assert {f"items/{some}/", f"transcripts/{some}/", f"transcripts/{some}/#L1"} <= locations
    assert any(d["location"].endswith("#claims") for d in index["docs"])
    assert any("Stockpile" in d["text"] for d in index["docs"] if "transcripts/" in d["location"])

    # The hostile item: title and transcript are text, nowhere markup.
    hostile = next(c for c, f in item_dirs(repo).items() if "hostile" in str(
        json.loads((f / "metadata.json").read_text())["source"]))  # fmt: skip
    for path in html_files(site):
        text = path.read_text(encoding="utf-8")
        assert "window.__pwned=1</script>" not in text, path
        for tag, attrs in Page(text).attrs:
            assert not any(k.startswith("on") for k in attrs), (path, tag, attrs)
            for value in attrs.values():
                assert not (value or "").strip().lower().startswith("javascript:"), path
    item_html = (site / "items" / hostile / "index.html").read_text()
    title = re.search(r"<title>(.*?)</title>", item_html, re.S)
    assert title and html.unescape(title.group(1)) == f"{HOSTILE_TITLE} - arkai library"
    assert HOSTILE_TITLE in html_text(item_html)
    assert "javascript:" not in item_html.lower().replace("<code>javascript:alert(1)</code>", "")
    shown = html_text((site / "transcripts" / hostile / "index.html").read_text())
    for fragment in ("<script>window.__pwned=1</script> is a script tag.",
                     "<img src=x onerror=window.__pwned=1> and [a link](javascript:alert(1)).",
                     "{{ config.site_name }} **bold** --8<-- /etc/passwd"):  # fmt: skip
        assert fragment in shown


def html_text(text: str) -> str:
    class T(HTMLParser):
        out = ""

        def handle_data(self, data: str) -> None:
            self.out += data

    t = T(convert_charrefs=True)
    t.feed(text)
    return t.out


def test_rebuilds_are_incremental_and_complete(tmp_path: Path, arkai: Runner) -> None:
    repo = make_repo(tmp_path, arkai)
    build_site(repo)
    docs = repo / ".site-build" / "docs"
    before = {p: p.stat().st_mtime_ns for p in docs.rglob("*.md")}

    again = build_site(repo)
    assert again.mkdocs == "dirty" and again.pages_written == 0
    assert again.items_regenerated == 0
    assert {p: p.stat().st_mtime_ns for p in docs.rglob("*.md")} == before

    items = item_dirs(repo)
    changed, gone = sorted(items)[:2]
    meta_path = items[changed] / "metadata.json"
    meta = json.loads(meta_path.read_text())
    meta["title"] = "Retitled in review"
    meta_path.write_text(json.dumps(meta, indent=2))
    report = build_site(repo)
    assert report.mkdocs == "dirty" and report.items_regenerated == 1
    for cid in items:
        if cid == changed:
            continue
        for kind in ("items", "transcripts"):
            page = docs / kind / f"{cid}.md"
            assert page.stat().st_mtime_ns == before[page], page
    site = repo / "site"
    assert "Retitled in review" in (site / "items" / changed / "index.html").read_text()
    assert "Retitled in review" in (site / "index.html").read_text()

    # Remove an item: its pages leave the docs, the site and the search index.
    rel = items[gone].relative_to(repo / "library")
    shutil.rmtree(items[gone])
    shutil.rmtree(repo / "extracted" / rel, ignore_errors=True)
    report = build_site(repo)
    assert report.mkdocs == "dirty" and report.pages_removed >= 2
    assert not (docs / "items" / f"{gone}.md").exists()
    assert not (site / "items" / gone).exists() and not (site / "transcripts" / gone).exists()
    index = json.loads((site / "search" / "search_index.json").read_text())
    locations = {d["location"].split("#")[0] for d in index["docs"]}
    assert f"items/{gone}/" not in locations
    assert {f"items/{c}/" for c in items if c != gone} <= locations
    check_links(site)

    # The same site as a full build: same files, same search entries.
    dirty_index = sorted(json.dumps(d, sort_keys=True) for d in index["docs"])
    dirty_files = sorted(p.relative_to(site).as_posix() for p in site.rglob("*") if p.is_file())
    full = build_site(repo, full=True)
    assert full.mkdocs == "full"
    index = json.loads((site / "search" / "search_index.json").read_text())
    assert sorted(json.dumps(d, sort_keys=True) for d in index["docs"]) == dirty_index
    assert sorted(p.relative_to(site).as_posix() for p in site.rglob("*") if p.is_file()) == (
        dirty_files
    )


def test_user_config_is_inherited(tmp_path: Path, arkai: Runner) -> None:
    repo = make_repo(tmp_path, arkai)
    build_site(repo)
    text = (repo / "mkdocs.yml").read_text()
    text = text.replace("site_name: arkai library", "site_name: Bee & compiler notes")
    text += "use_directory_urls: false\n"
    (repo / "mkdocs.yml").write_text(text)
    report = build_site(repo)
    assert report.mkdocs == "full"  # the configuration changed: no dirty build
    site = repo / "site"
    home = (site / "index.html").read_text()
    assert "Bee &amp; compiler notes" in home
    some = next(iter(item_dirs(repo)))
    assert (site / "items" / f"{some}.html").is_file()
    assert check_links(site) > 500
    assert (repo / "mkdocs.yml").read_text() == text


def test_index_files_add_topics_related_and_beliefs(tmp_path: Path, arkai: Runner) -> None:
    repo = make_repo(tmp_path, arkai)
    ids = sorted(item_dirs(repo))
    a, b = ids[0], ids[1]
    evidence = next((repo / "extracted").rglob("evidence.jsonl"))
    first = json.loads(evidence.read_text().splitlines()[0])
    index = repo / "index"
    index.mkdir(exist_ok=True)
    write_lines(index / "chunks", [
        json.dumps({"content_id": a, "start_line": 3, "end_line": 5}).encode() + b"\n",
        json.dumps({"content_id": b, "start_line": 1, "end_line": 2}).encode() + b"\n",
    ])  # fmt: skip
    (index / "topics.json").write_text(json.dumps({
        "version": 1,
        "topics": {"remote cache": {"items": [
            {"content_id": a, "relevance": "high", "chunks": [0]},
            {"content_id": b, "relevance": "low", "chunks": [1]}]}},
        "synonyms": {"remote cache": ["build cache"]},
    }))  # fmt: skip
    # The index stage's per-item lists (an item the site does not know is left out).
    (index / "related.jsonl").write_text(
        json.dumps({"id": a, "related": [["f" * 16, "related", 0.9], [b, "related", 0.5]]})
        + "\n" + json.dumps({"id": b, "related": [[a, "related", 0.5]]}) + "\n"
    )  # fmt: skip
    belief = Belief(
        id="b" * 16, statement="Caches <need> validation", type="fact", confidence=0.8,
        status="active", created="2026-01-01", reinforced="2026-01-01", episodes=(first["id"],),
    )  # fmt: skip
    header = {"format": 1, "as_of": "2026-01-31", "params": {"half_life_days": 30}}
    write_state(repo, header, [belief], [], np.zeros((1, 4), dtype=np.float32))
    build_site(repo)
    site = repo / "site"
    topic = next((site / "topics").glob("remote-cache-*/index.html"))
    assert "build cache" in topic.read_text()
    assert f"../../transcripts/{a}/#L3" in Page(topic.read_text()).links
    related = Page((site / "items" / a / "index.html").read_text())
    assert f"../../items/{b}/" in related.links and "related" in related.ids
    beliefs = (site / "beliefs" / "index.html").read_text()
    assert "Caches &lt;need&gt; validation" in beliefs
    assert ">0.40<" in beliefs  # 0.8 halved after 30 days, as of the latest episode
    assert f"#E{first['id']}" in beliefs
    assert "beliefs/" in Page((site / "index.html").read_text()).links
    check_links(site)

    # The supporting claim goes stale (its words edited away): every page marks it, and its
    # links land on the notice on the transcript page, not on the line that changed.
    item = repo / "library" / evidence.parent.relative_to(repo / "extracted")
    transcript = item / "transcript.md"
    start, end = first["span"]["utf8_byte_offset"]
    data = transcript.read_bytes()
    transcript.write_bytes(data[:start] + b"Other words." + data[end:])
    build_site(repo)
    cid = json.loads((item / "metadata.json").read_text())["id"]
    beliefs = (site / "beliefs" / "index.html").read_text()
    assert re.search(rf'#E{first["id"]}"[^>]*>[^<]*</a> <span class="ak-b ak-b-stale">', beliefs)
    notice = Page((site / "transcripts" / cid / "index.html").read_text())
    assert first["quote"] in notice.text[f"E{first['id']}"]
    card = (site / "items" / cid / "index.html").read_text()
    assert re.search(rf'ak-st-stale">(?:(?!</li>).)*#E{first["id"]}"', card, re.S)
    validation = (site / "validation" / "index.html").read_text()
    assert f"../transcripts/{cid}/#E{first['id']}" in Page(validation).links
    check_links(site)


def test_beliefs_page_caps_its_links_and_is_made_only_when_its_inputs_change(
    tmp_path: Path, arkai: Runner, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A belief reinforced by many claims links its first BELIEF_LINKS quotes and its latest
    BELIEF_HISTORY changes, the rest counted; the page is not made again (its changes not
    even read) while the replayed state, its quotes' places and titles stay the same."""
    from arkai.model.belief import Change
    from arkai.site import build as site_build
    from arkai.site import indexes

    repo = make_repo(tmp_path, arkai)
    eids = [json.loads(line)["id"] for f in sorted((repo / "extracted").rglob("evidence.jsonl"))
            for line in f.read_text().splitlines()]  # fmt: skip
    cap = indexes.BELIEF_LINKS
    assert len(eids) > cap + 2
    ghost = "0" * 16  # an episode no item holds (imported, or its item removed)
    episodes = (*eids[: cap + 2], ghost)
    belief = Belief(
        id="c" * 16, statement="Builds stay hermetic", type="fact", confidence=0.8,
        status="active", created="2026-01-01", reinforced="2026-01-05", episodes=episodes,
    )  # fmt: skip
    changes = [Change(seq=n, kind="reinforced", belief=belief.id, date=f"2026-01-{n + 1:02d}",
                      episode=episodes[n], note=f"change number {n}")
               for n in range(indexes.BELIEF_HISTORY + 3)]  # fmt: skip
    header = {"format": 1, "as_of": "2026-01-31", "params": {"half_life_days": 30}}
    write_state(repo, header, [belief], changes, np.zeros((1, 4), dtype=np.float32))
    reads: list[int] = []
    real = site_build._belief_changes
    monkeypatch.setattr(site_build, "_belief_changes", lambda root: reads.append(1) or real(root))
    build_site(repo)
    page_path = repo / "site" / "beliefs" / "index.html"
    text = page_path.read_text()
    linked = {e for e in eids if f"#E{e}" in text}
    assert linked == set(eids[:cap])  # the first ones, in the belief's order
    assert f"3 more supporting quotes: <code>arkai belief history {belief.id}</code>" in text
    assert "imported or removed" not in text  # the ghost is past the cap: counted as more
    assert "change number 3" in text and "change number 2" not in text  # the latest ones
    assert "3 earlier changes" in text
    assert reads == [1]
    check_links(repo / "site")
    docs = json.loads((repo / "site" / "search" / "search_index.json").read_text())["docs"]
    entry = [d for d in docs if d["location"].split("#")[0] == "beliefs/"]
    assert [d["text"] for d in entry] == ["Builds stay hermetic"]  # searched by statement

    # Nothing it is made from changed: the page is not made again.
    mtime = page_path.stat().st_mtime_ns
    build_site(repo)
    assert reads == [1] and page_path.stat().st_mtime_ns == mtime
    # The replayed state changes (one change more): made again.
    changes.append(Change(seq=99, kind="reinforced", belief=belief.id, date="2026-01-30",
                          note="the newest change"))  # fmt: skip
    write_state(repo, header, [belief], changes, np.zeros((1, 4), dtype=np.float32))
    build_site(repo)
    assert reads == [1, 1] and "the newest change" in page_path.read_text()
    # A linked quote's item is renamed: its title on the page is new.
    first = next(f for f in (repo / "extracted").rglob("evidence.jsonl")
                 if eids[0] in f.read_text())  # fmt: skip
    meta = repo / "library" / first.parent.relative_to(repo / "extracted") / "metadata.json"
    doc = json.loads(meta.read_text())
    doc["title"] = "A renamed talk"
    meta.write_text(json.dumps(doc))
    build_site(repo)
    assert reads == [1, 1, 1]
    assert re.search(rf'#E{eids[0]}"[^>]*>A renamed talk</a>', page_path.read_text())
    # The history comes from the beliefs stage's fold (index/beliefs/history.json), the same
    # as folding the log here; once the log is edited by hand the fold no longer mirrors it
    # and the page folds the log itself: the added change is shown.
    from arkai.adapters import memory

    kept = memory.read_histories(repo)
    assert kept is not None and kept == memory.histories(memory.iter_changes(repo))
    with (repo / "beliefs" / "changes.jsonl").open("a") as fh:
        fh.write(json.dumps({"seq": 100, "kind": "reinforced", "belief": belief.id,
                             "date": "2026-01-31", "note": "added by hand"}) + "\n")  # fmt: skip
    assert memory.read_histories(repo) is None
    build_site(repo)
    assert reads == [1, 1, 1, 1] and "added by hand" in page_path.read_text()
    assert "5 earlier changes" in page_path.read_text()  # 13 + the newest + this one


def test_cli_build_json_and_missing_user_config(tmp_path: Path, arkai: Runner) -> None:
    repo = make_repo(tmp_path, arkai)
    (repo / "mkdocs.yml").unlink()

    @click.group()
    @click.option("--repo")
    @click.pass_context
    def root(ctx: click.Context, repo: str | None) -> None:
        ctx.obj = {"repo": repo}

    root.add_command(site_group)
    result = CliRunner().invoke(root, ["--repo", str(repo), "site", "build", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["mkdocs"] == "full" and report["items"] == SAMPLE_ITEMS + 1
    assert (repo / "site" / "index.html").is_file()
    assert not (repo / "mkdocs.yml").exists()
    result = CliRunner().invoke(root, ["--repo", str(repo), "site", "build", "--no-mkdocs"])
    assert result.exit_code == 0 and re.search(
        rf"{SAMPLE_ITEMS + 1} items \(0 regenerated\)", result.stdout
    )


def test_params_and_mkdocs_errors(tmp_path: Path, arkai: Runner) -> None:
    repo = make_repo(tmp_path, arkai)
    every = build_site(repo, mkdocs=False).pages
    with (repo / "params.yaml").open("a") as fh:
        fh.write("site:\n  entity_min_items: 2\n")
    shared = build_site(repo, mkdocs=False)
    assert shared.pages < every
    (repo / "mkdocs.yml").write_text("site_name: x\ntheme:\n  name: no-such-theme\n")
    with pytest.raises(SiteBuildError, match="mkdocs build failed"):
        build_site(repo)
    (repo / "params.yaml").write_text("site:\n  topic_min_items: 0\n")
    with pytest.raises(LibraryError, match=r"site\.topic_min_items"):
        build_site(repo)


def _entries_bytes(build: Path) -> tuple[int, int]:
    """The sizes of the transcript pages' and the item pages' search entries files."""
    folder = build / "search"
    return tuple(  # type: ignore[return-value]
        sum(p.stat().st_size for p in (folder / kind).glob("*.json"))
        for kind in ("transcripts", "items")
    )


def test_the_search_index_keeps_to_its_budget_and_the_home_page_says_so(
    tmp_path: Path, arkai: Runner
) -> None:
    repo = make_repo(tmp_path, arkai)
    build, site = repo / ".site-build", repo / "site"
    index_path = site / "search" / "search_index.json"
    assert build_site(repo).search_scope == "all"
    full_index = index_path.read_bytes()
    assert "search_index_mb" not in (site / "index.html").read_text()
    transcripts, items = _entries_bytes(build)
    assert transcripts > items > 0

    def with_budget(mb: object) -> SiteReport:
        params = yaml.safe_load((repo / "params.yaml").read_text())
        params["site"]["search_index_mb"] = mb
        (repo / "params.yaml").write_text(yaml.safe_dump(params))
        return build_site(repo)

    def locations() -> list[str]:
        return [d["location"] for d in json.loads(index_path.read_text())["docs"]]

    everything = locations()
    # One byte less than the item and transcript entries: transcripts by their title only.
    report = with_budget((transcripts + items - 1) / 1_000_000)
    assert (report.search_scope, report.mkdocs) == ("no-transcript-text", "dirty")
    found = locations()
    assert not [x for x in found if x.startswith("transcripts/") and "#" in x]
    assert {x for x in found if x.startswith("transcripts/")} == {
        x for x in everything if x.startswith("transcripts/") and "#" not in x
    }
    assert {x for x in found if not x.startswith("transcripts/")} == {
        x for x in everything if not x.startswith("transcripts/")
    }
    home = (site / "index.html").read_text()
    assert "not transcript text" in home and "arkai search" in home
    assert "search_index_mb" in home
    dirty_index = index_path.read_bytes()
    clean(repo)
    assert build_site(repo).mkdocs == "full"
    assert index_path.read_bytes() == dirty_index  # what a clean build in the scope writes

    # Less than the item pages' entries: every page by its first entry, no transcript pages.
    assert with_budget((items - 1) / 1_000_000).search_scope == "titles"
    found = locations()
    assert found and not [x for x in found if x.startswith("transcripts/") or "#" in x]
    item_pages = {x for x in everything if x.startswith("items/") and "#" not in x}
    assert {x for x in found if x.startswith("items/")} == item_pages
    assert "page titles only" in (site / "index.html").read_text()
    code, out, _ = arkai("--repo", repo, "site", "build", "--no-mkdocs")
    assert code == 0 and "its search covers page titles only" in out and "arkai search" in out
    code, out, _ = arkai("--repo", repo, "site", "build", "--no-mkdocs", "--json")
    assert code == 0 and json.loads(out)["search_scope"] == "titles"
    assert len(index_path.read_bytes()) < len(dirty_index) < len(full_index)

    # No limit: the whole index again, byte for byte.
    assert with_budget(None).search_scope == "all"
    assert index_path.read_bytes() == full_index
    assert "search_index_mb" not in (site / "index.html").read_text()
    for bad in (0, -1, "big", True, float("inf"), float("nan")):
        with pytest.raises(LibraryError, match=r"site\.search_index_mb"):
            with_budget(bad)


def test_the_beliefs_history_is_read_in_bounded_memory(tmp_path: Path) -> None:
    """The beliefs page's history keeps, per belief, its count of changes and the latest
    ``BELIEF_HISTORY`` of them while ``changes.jsonl`` is read a line at a time: a 20 MB log
    is read in a few MB (the site stage's peak followed the log's size when every change was
    held), a change naming another belief counts for both, and an unreadable log is no
    history."""
    import tracemalloc

    from arkai.site import build as site_build
    from arkai.site import indexes

    folder = tmp_path / "beliefs"
    folder.mkdir()
    lines = []
    for n in range(150_000):
        day = f"2026-01-{n % 28 + 1:02d}"
        row = {"seq": n, "kind": "reinforced", "belief": "abc"[n % 3] * 16, "date": day,
               "episode": f"{n:040x}", "note": f"change number {n} " + "x" * 40}  # fmt: skip
        if n == 149_999:
            row["other"] = "d" * 16
        lines.append(json.dumps(row))
    (folder / "changes.jsonl").write_text("\n".join(lines) + "\n")
    del lines
    assert (folder / "changes.jsonl").stat().st_size > 20_000_000
    tracemalloc.start()
    try:
        got = site_build._belief_changes(tmp_path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4_000_000, peak
    keep = indexes.BELIEF_HISTORY
    assert {b: h.count for b, h in got.items()} == {
        "a" * 16: 50_000, "b" * 16: 50_000, "c" * 16: 50_000, "d" * 16: 1
    }  # fmt: skip
    assert [c.note.split()[2] for c in got["a" * 16].latest] == [
        str(n) for n in range(150_000 - 3 * keep, 150_000, 3)
    ]
    assert list(got["d" * 16].latest) == list(got["c" * 16].latest)[-1:]  # the last, n = 149,999
    (folder / "changes.jsonl").write_text('{"seq": 1}\n')
    assert site_build._belief_changes(tmp_path) == {}


@pytest.mark.parametrize(
    "content", [b"", b"garbage\n", b'{"pages": 1}'], ids=["empty", "text", "json"]
)
def test_a_damaged_file_of_the_build_folder_gives_the_same_site(
    tmp_path: Path, arkai: Runner, content: bytes
) -> None:
    """Each record the build keeps beside its pages (`.site-build/`: derived, never a person's)
    emptied or replaced: the next build makes the same site. A damaged `pages.json` was an
    "unexpected error: JSONDecodeError" and a damaged `state.json` failed every build until
    someone removed it; either now makes the build a whole one."""
    repo = make_repo(tmp_path, arkai)
    code, _, err = arkai("--repo", repo, "reindex", "--quiet")  # (the topic memo is of it)
    assert code == 0, err
    build_site(repo)
    site, build = repo / "site", repo / ".site-build"

    def files() -> dict[str, bytes]:
        return {p.relative_to(site).as_posix(): p.read_bytes()
                for p in site.rglob("*") if p.is_file()}  # fmt: skip

    good = files()
    records = sorted(p.name for p in build.iterdir() if p.is_file())
    assert {"pages.json", "state.json", "summaries.sqlite", "topics-read.bin"} <= set(records)
    for name in records:
        (build / name).write_bytes(content)
        code, _, err = arkai("--repo", repo, "site", "build", "--quiet")
        assert code == 0, (name, err)
        assert files() == good, name
