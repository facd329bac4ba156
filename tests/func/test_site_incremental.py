"""Incremental site builds on a real repo with real ``mkdocs build --dirty``: after an item is
changed, added or removed, the pages that list it follow, the others are not made again, the
search index holds the new text, and everything equals what a clean build makes — including
when parsed items are not kept between the generator's two passes (the memory bound). MkDocs
holds no arkai page's HTML between reading the pages and rendering them, and the search index
of a dirty build copies unchanged pages' entries from the previous one."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import sys
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path

import pytest
import yaml

from arkai.site import build as site_build
from arkai.site import indexes
from arkai.site.build import build_site, clean
from arkai.site.collect import sentence_around
from arkai.site.indexes import said_spans
from tests.conftest import Runner, as_stage, sh
from tests.func.test_site_build import check_links, html_text, item_dirs, make_repo

#: A user hook that records, once MkDocs has read every page and before it renders any,
#: how many pages hold their HTML (arkai's pages must hold none: one at a time is rendered).
PROBE = """
import json
from pathlib import Path

def on_env(env, config, files):
    held = [f.src_uri for f in files.documentation_pages() if f.page and f.page.content]
    ours = [f.page for f in files.documentation_pages()
            if f.page and f.page.markdown is not None
            and f.src_uri.startswith(("items/", "transcripts/"))]
    out = Path(config.config_file_path).parent.parent / "probe.json"
    out.write_text(json.dumps({
        "held": held, "pages": len(files.documentation_pages()), "ours": len(ours),
        # What MkDocs keeps of each arkai page until the build ends: no anchor set or link
        # map (it never parses their HTML), one shared object for the common front matter.
        "anchor_sets": sum(p.present_anchor_ids is not None for p in ours),
        "link_maps": sum(p.links_to_anchors is not None for p in ours),
        "search_meta_objects": len({id(p.meta["search"]) for p in ours}),
        "search_meta_values": len({json.dumps(p.meta["search"], sort_keys=True) for p in ours}),
    }))
    return env
"""


def tree(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if
            p.is_file()}  # fmt: skip


def assert_as_clean_build(
    repo: Path, docs: Path, build: Path, site: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pages, search entries and site now are what a clean build of the same inputs makes
    (with ``monkeypatch``'s changes undone first), file for file."""
    pages, entries, built = tree(docs), tree(build / "search"), tree(site)
    monkeypatch.undo()
    clean(repo)
    assert build_site(repo).mkdocs == "full"
    assert tree(docs) == pages
    assert tree(build / "search") == entries
    assert tree(site) == built


def copy_item(repo: Path, source: Path, donor: str, cid: str, title: str) -> list[Path]:
    """A copy of the item in ``source`` (and its extraction) under a new ID and title; returns
    the folders made."""
    rel = source.relative_to(repo / "library")
    new_rel = rel.parent / f"{title} ({cid[:8]})"
    shutil.copytree(source, repo / "library" / new_rel)
    made = [repo / "library" / new_rel]
    if (repo / "extracted" / rel).is_dir():
        shutil.copytree(repo / "extracted" / rel, repo / "extracted" / new_rel)
        made.append(repo / "extracted" / new_rel)
        for path in (repo / "extracted" / new_rel).iterdir():
            path.write_text(path.read_text().replace(donor, cid))
    meta = repo / "library" / new_rel / "metadata.json"
    obj = json.loads(meta.read_text())
    obj.update(id=cid, title=title)
    meta.write_text(json.dumps(obj, indent=2))
    return made


def stored_entities(build: Path, cid: str) -> list[list[str]]:
    """An item's ``[key, name, type, mentions, said]`` rows in the site's summary store."""
    db = sqlite3.connect(build / "summaries.sqlite")
    try:
        rows = db.execute(
            "SELECT key, name, type, mentions, said FROM mentions WHERE cid = ? ORDER BY seq",
            (cid,),
        ).fetchall()
    finally:
        db.close()
    return [list(r) for r in rows]


def entity_pages_listing(docs: Path, cid: str) -> tuple[set[str], set[str]]:
    """Entity pages (source paths) that link to item ``cid``, and those that do not."""
    listing, others = set(), set()
    for page in (docs / "entities").rglob("*.md"):
        rel = page.relative_to(docs).as_posix()
        (listing if f"items/{cid}/" in page.read_text() else others).add(rel)
    return listing, others


def test_incremental_rebuilds_follow_changes_and_equal_a_clean_build(
    tmp_path: Path, arkai: Runner, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_repo(tmp_path, arkai)
    (repo / "probe.py").write_text(PROBE)
    user = yaml.safe_load((repo / "mkdocs.yml").read_text())
    user["hooks"] = ["probe.py"]
    (repo / "mkdocs.yml").write_text(yaml.safe_dump(user))
    # Parsed items are never kept between the two passes: every kept-item path is re-parsed.
    monkeypatch.setattr(site_build, "LOADED_BYTES", 0)
    assert build_site(repo).mkdocs == "full"
    probe = json.loads((repo / "probe.json").read_text())
    assert probe["pages"] > 50 and probe["held"] == []
    assert probe["ours"] > 10 and probe["anchor_sets"] == probe["link_maps"] == 0
    assert probe["search_meta_objects"] == probe["search_meta_values"] < probe["ours"]

    build, site = repo / ".site-build", repo / "site"
    docs = build / "docs"
    items = item_dirs(repo)
    # Nothing changed: no item's files are read again (their sizes and times are unchanged),
    # not even metadata.json to learn its ID.
    reads: list[object] = []
    with monkeypatch.context() as patch:
        real, real_at = site_build.read_inputs, site_build.item_at
        patch.setattr(site_build, "read_inputs", lambda *a: reads.append(a) or real(*a))
        patch.setattr(site_build, "item_at", lambda *a: reads.append(a) or real_at(*a))
        assert build_site(repo).mkdocs == "dirty"
    assert reads == []
    # The changed item: one that shares an entity with another item and has its sentence
    # shown on that entity's page.
    changed = next(
        cid
        for cid in sorted(items)
        if any(e[4] for e in stored_entities(build, cid)) and entity_pages_listing(docs, cid)[0]
    )
    listing, others = entity_pages_listing(docs, changed)
    assert listing and others
    before = {p: p.stat().st_mtime_ns for p in docs.rglob("*.md")}

    # Change: a new title and a new transcript line.
    meta_path = items[changed] / "metadata.json"
    meta = json.loads(meta_path.read_text())
    meta["title"] = "Retitled for the incremental test"
    meta_path.write_text(json.dumps(meta, indent=2))
    transcript = items[changed] / "transcript.md"
    transcript.write_bytes(transcript.read_bytes() + b"[09:59:00] Zqxincremental is new.\n")

    report = build_site(repo)
    assert report.mkdocs == "dirty" and report.items_regenerated == 1
    for page in (f"items/{changed}.md", f"transcripts/{changed}.md", "index.md", *listing):
        assert (docs / page).stat().st_mtime_ns != before[docs / page], page
    # Entity pages that do not list the item are neither made again nor rewritten.
    for page in others:
        assert (docs / page).stat().st_mtime_ns == before[docs / page], page
    for page in listing:
        assert "Retitled for the incremental test" in (site / page[:-3] / "index.html").read_text()
    assert "Retitled for the incremental test" in (site / "index.html").read_text()
    index = json.loads((site / "search" / "search_index.json").read_text())
    hits = {d["location"].split("#")[0] for d in index["docs"] if "Zqxincremental" in d["text"]}
    assert hits == {f"transcripts/{changed}/"}

    # The entries of unchanged pages are copied from the previous index, not read again: an
    # unreadable entries file with its old size and time changes nothing.
    rows = build / "search" / f"{sorted(others)[0]}.json"
    original, st = rows.read_bytes(), rows.stat()
    rows.write_bytes(b"x" * len(original))
    os.utime(rows, ns=(st.st_atime_ns, st.st_mtime_ns))
    before_index = (site / "search" / "search_index.json").read_bytes()
    assert build_site(repo).mkdocs == "dirty"
    assert (site / "search" / "search_index.json").read_bytes() == before_index
    rows.write_bytes(original)
    os.utime(rows, ns=(st.st_atime_ns, st.st_mtime_ns))
    # A record of where entries lie in an earlier format (lists) is not trusted: every page's
    # entries are read from their files, and the index is the same.
    record_path = build / "search-ranges.json"
    record = json.loads(record_path.read_text())
    assert all(isinstance(v, str) for v in record["pages"].values())
    record["pages"] = {url: [0, 0, 0, 0] for url in record["pages"]}
    record_path.write_text(json.dumps(record))
    assert build_site(repo).mkdocs == "dirty"
    assert (site / "search" / "search_index.json").read_bytes() == before_index

    # One letter of a sentence an entity page shows changes case: the same length, so every
    # span stays valid and the entity's own data is unchanged — only the transcript differs.
    data = bytearray(transcript.read_bytes())
    spans = [x for e in stored_entities(build, changed) for x in said_spans(e[4])]
    for _, start, end in spans:
        after = sentence_around(bytes(data), start, end)[2]
        k = next((i for i, ch in enumerate(after) if "a" <= ch <= "z"), None)
        if k is not None:
            at = end + len(after[:k].encode())
            break
    data[at : at + 1] = data[at : at + 1].swapcase()
    transcript.write_bytes(bytes(data))
    shown = "".join(sentence_around(bytes(data), start, end))

    def on_entity_pages() -> bool:
        return any(shown in html_text((site / p[:-3] / "index.html").read_text()) for p in listing)

    assert not on_entity_pages(), shown
    assert build_site(repo).items_regenerated == 1
    assert on_entity_pages(), shown

    # Add an item (a copy of another under a new ID), then remove one.
    donor = next(c for c in sorted(items) if c != changed)
    added = "f00dfeedf00dfeed"
    copy_item(repo, items[donor], donor, added, "Added for the incremental test")
    report = build_site(repo)
    assert report.mkdocs == "dirty" and report.items_regenerated == 1
    assert "Added for the incremental test" in (site / "library" / "index.html").read_text()
    donor_listing, _ = entity_pages_listing(docs, donor)
    for page in donor_listing:
        assert f"items/{added}/" in (docs / page).read_text(), page

    gone = next(c for c in sorted(items) if c not in (changed, donor))
    gone_listing, _ = entity_pages_listing(docs, gone)
    shutil.rmtree(items[gone])
    shutil.rmtree(repo / "extracted" / items[gone].relative_to(repo / "library"), True)
    report = build_site(repo)
    assert report.mkdocs == "dirty" and report.items_regenerated == 0
    assert not (site / "items" / gone).exists() and not (site / "transcripts" / gone).exists()
    for page in gone_listing:
        if (docs / page).exists():  # an entity only the removed item had is gone
            assert f"items/{gone}/" not in (docs / page).read_text(), page
            assert f"items/{gone}/" not in (site / page[:-3] / "index.html").read_text()
    check_links(site)

    # A build that fails after writing an item's pages, then the item goes: its pages go too
    # (the pages the last build left are known only after a build that completed).
    failed = "badcafebadcafeba"
    folders = copy_item(repo, items[donor], donor, failed, "Failed build item")
    with monkeypatch.context() as patch:

        def fail(lib: object) -> str:
            raise site_build.SiteBuildError("a failure after the item pages")

        patch.setattr(site_build.indexes, "home", fail)
        with pytest.raises(site_build.SiteBuildError):
            build_site(repo)
    assert (docs / f"items/{failed}.md").is_file()
    for folder in folders:
        shutil.rmtree(folder)
    build_site(repo)
    assert not list(docs.rglob(f"*{failed}*")) and not list((build / "search").rglob(f"*{failed}*"))

    # An item's folders renamed, its files as they were (same sizes and times): its pages
    # show the new folder, as a clean build's would (checked below).
    moved = items[donor].with_name(items[donor].name + " moved")
    items[donor].rename(moved)
    old_out = repo / "extracted" / items[donor].relative_to(repo / "library")
    if old_out.is_dir():
        old_out.rename(repo / "extracted" / moved.relative_to(repo / "library"))
    build_site(repo)
    assert moved.name in (docs / f"items/{donor}.md").read_text()

    # The summary store is derived data: an unreadable one is made again from the items, and
    # the pages it makes are the ones already there.
    pages = tree(docs)
    (build / "summaries.sqlite").write_bytes(b"not a database" * 100)
    report = build_site(repo)
    assert report.items_regenerated == report.items and report.pages_written == 0
    assert tree(docs) == pages and stored_entities(build, changed)

    # The same pages, search entries and site as a clean build with the default memory bound.
    assert_as_clean_build(repo, docs, build, site, monkeypatch)


def test_slim_records_share_the_values_many_items_have() -> None:
    """A big library holds a slim record per item: equal tag lists, claim counts and types
    are one object each, and every record keeps its own values."""
    from arkai.site.store import pack_slim

    def record(cid: str, tags: list[str], claims: int) -> dict[str, object]:
        counts = {"resolved": claims, "stale": 0, "claims": claims}
        return {"id": cid, "title": f"T {cid}", "type": "".join(["pod", "cast"]),
                "tags": tags, "counts": counts, "url": None}  # fmt: skip

    a, b = pack_slim(record("a", ["ml", "talk"], 3)), pack_slim(record("b", ["ml", "talk"], 3))
    c = pack_slim(record("c", ["ml"], 4))
    assert a["tags"] is b["tags"] and a["counts"] is b["counts"] and a["type"] is b["type"]
    assert c["tags"] is not a["tags"] and c["counts"] is not a["counts"]
    assert (a["id"], a["tags"], a["counts"]) == ("a", ["ml", "talk"], {"resolved": 3, "stale": 0,
                                                                        "claims": 3})  # fmt: skip
    assert (c["tags"], c["counts"]["claims"], b["title"]) == (["ml"], 4, "T b")


def paged_hub(
    tmp_path: Path, arkai: Runner, monkeypatch: pytest.MonkeyPatch
) -> tuple[Path, str, set[str]]:
    """The sample library built with one item shown with sentences on an entity's first page
    and one item listed a page after it (so that it has paged entities); the library, the key
    of the entity the most items mention (the first by key of those) and their content IDs,
    from the site's summary store."""
    monkeypatch.setattr(indexes, "SAID_ITEMS", 1)
    monkeypatch.setattr(indexes, "ENTITY_PAGE_ITEMS", 1)
    repo = make_repo(tmp_path, arkai)
    build_site(repo)
    db = sqlite3.connect(repo / ".site-build" / "summaries.sqlite")
    try:
        rows = db.execute("SELECT key, cid FROM mentions").fetchall()
    finally:
        db.close()
    by_key: dict[str, set[str]] = {}
    for key, cid in rows:
        by_key.setdefault(key, set()).add(cid)
    key = max(sorted(by_key), key=lambda k: len(by_key[k]))
    return repo, key, by_key[key]


def test_an_entity_most_items_mention_continues_on_further_pages(
    tmp_path: Path, arkai: Runner, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No entity page grows with the library: after the first items, an entity's items are
    listed :data:`ENTITY_PAGE_ITEMS` to a page (here 1 after 1, so that the sample library has
    paged entities). Every item is on one of the pages, every link resolves, and after an
    item goes the pages follow — the same as a clean build."""
    from arkai.site import links

    repo, key, cids = paged_hub(tmp_path, arkai, monkeypatch)
    site, docs = repo / "site", repo / ".site-build" / "docs"
    assert len(cids) >= 3
    parts = [links.entity_page_part(key, n) for n in range(1, len(cids))]
    assert all((docs / p).is_file() for p in parts)
    assert not (docs / links.entity_page_part(key, len(cids))).exists()

    def listed(pages: list[str]) -> list[str]:
        text = "".join((docs / p).read_text() for p in pages)
        return [cid for cid in sorted(cids) for _ in range(text.count(f"items/{cid}/"))]

    # Every item once (the link to the item; transcripts are linked apart).
    assert listed(parts) == sorted(cids)
    assert "Pages:" in (site / parts[1][:-3] / "index.html").read_text()
    check_links(site)

    # The last item of the entity goes: its last page goes too, and the rest follow.
    items = item_dirs(repo)
    gone = sorted(cids)[-1]
    shutil.rmtree(items[gone])
    shutil.rmtree(repo / "extracted" / items[gone].relative_to(repo / "library"), True)
    assert build_site(repo).mkdocs == "dirty"
    assert not (docs / parts[-1]).exists() and not (site / parts[-1][:-3]).exists()
    assert listed(parts[:-1]) == sorted(cids - {gone})
    check_links(site)
    pages, dirty_site = tree(docs), tree(site)
    clean(repo)
    assert build_site(repo).mkdocs == "full"
    assert tree(docs) == pages and tree(site) == dirty_site


def test_an_entity_page_is_made_again_only_when_what_it_shows_changed(
    tmp_path: Path, arkai: Runner, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each page of a paged entity has its own key (issue 17): an item listed on a later page
    whose mentions only moved within their lines (an edit before one) makes none of the
    entity's pages again; when its mention lines change, only the page listing it is made —
    and the result is what a clean build makes."""
    from arkai.site import links

    repo, key, cids = paged_hub(tmp_path, arkai, monkeypatch)
    build, site, docs = repo / ".site-build", repo / "site", repo / ".site-build" / "docs"
    parts = [links.entity_page_part(key, n) for n in range(1, len(cids))]
    assert len(parts) >= 2
    last = (docs / parts[-1]).read_text()
    cid = next(c for c in sorted(cids) if f"items/{c}/" in last)
    name = next(row[1] for row in stored_entities(build, cid) if row[0] == key)
    folder = item_dirs(repo)[cid]
    transcript = folder / "transcript.md"
    entities = repo / "extracted" / folder.relative_to(repo / "library") / "entities.json"
    made: list[tuple[str, set[int]]] = []
    real = indexes._entity_page

    def spy(lib: object, ent: indexes.Entity, found: object, ranked: object, parts: list[str],
            wanted: set[int]) -> list[str | None]:  # fmt: skip
        made.append((ent.key, set(wanted)))
        return real(lib, ent, found, ranked, parts, wanted)  # type: ignore[arg-type]

    monkeypatch.setattr(indexes, "_entity_page", spy)

    def insert(text: bytes) -> None:
        """``text`` put into the transcript just before the item's first mention of the
        entity, its mentions' spans moved to match (as a new extraction would)."""
        obj = json.loads(entities.read_text())
        ent = next(e for e in obj["entities"] if e["name"] == name)
        at = min(m["span"]["utf8_byte_offset"][0] for m in ent["mentions"] if m.get("span"))
        data = transcript.read_bytes()
        transcript.write_bytes(data[:at] + text + data[at:])
        for e in obj["entities"]:
            for m in e["mentions"]:
                offsets = (m.get("span") or {}).get("utf8_byte_offset")
                if offsets and offsets[0] >= at:
                    m["span"]["utf8_byte_offset"] = [o + len(text) for o in offsets]
        entities.write_text(json.dumps(obj, indent=2))

    insert(b"really ")  # the same lines, the spans moved
    build_site(repo)
    assert [w for k, w in made if k == key] == []
    insert(b"\n")  # its mention now on a line of its own
    build_site(repo)
    assert [w for k, w in made if k == key] == [{len(parts) - 1}]
    assert f"items/{cid}/" in (docs / parts[-1]).read_text()
    check_links(site)
    pages, entries, built = tree(docs), tree(build / "search"), tree(site)
    clean(repo)
    assert build_site(repo).mkdocs == "full"  # (the same limits)
    assert (tree(docs), tree(build / "search"), tree(site)) == (pages, entries, built)


def test_an_item_is_known_by_its_folder_only_while_its_files_are_unchanged(
    tmp_path: Path, arkai: Runner
) -> None:
    """An unchanged folder is taken to hold the item last built there without its metadata
    being read; a metadata.json swapped for a link to the very file (moved, so its size and
    time are those stored) is not unchanged: the item is left out as a clean build leaves it,
    and a folder copied under another name (the same ID) is a duplicate again."""
    repo = make_repo(tmp_path, arkai)
    build_site(repo)
    items = item_dirs(repo)
    cid, folder = sorted(items.items())[0]
    docs = repo / ".site-build" / "docs"
    assert (docs / f"items/{cid}.md").is_file()
    moved = tmp_path / "outside-metadata.json"
    os.rename(folder / "metadata.json", moved)
    (folder / "metadata.json").symlink_to(moved)
    report = build_site(repo)
    assert report.items == len(items) - 1
    assert not (docs / f"items/{cid}.md").exists()
    os.unlink(folder / "metadata.json")
    os.rename(moved, folder / "metadata.json")
    assert build_site(repo).items == len(items)
    shutil.copytree(folder, folder.with_name("0 " + folder.name))
    report = build_site(repo)
    assert report.items == len(items)
    assert any(f"duplicate content ID {cid}" in w for w in report.warnings)


def test_a_page_or_search_entry_gone_from_the_build_folder_is_made_again(
    tmp_path: Path, arkai: Runner
) -> None:
    """The build knows which pages and search entries are on disk from one listing of each
    folder: one deleted since the last build (or a folder of them) is made again, the same
    bytes as before, and nothing else is."""
    from arkai.site import links

    repo = make_repo(tmp_path, arkai)
    build_site(repo)
    docs, search = repo / ".site-build" / "docs", repo / ".site-build" / "search"
    cid = sorted(item_dirs(repo))[0]
    page, entries = docs / links.transcript_page(cid), search / f"{links.item_page(cid)}.json"
    want = (page.read_bytes(), entries.read_bytes())
    page.unlink()
    entries.unlink()
    report = build_site(repo)
    assert (page.read_bytes(), entries.read_bytes()) == want
    assert report.pages_written == 1  # the transcript page; the item page's bytes held
    shutil.rmtree(docs / "transcripts")
    build_site(repo)
    assert page.read_bytes() == want[0]
    assert len(list((docs / "transcripts").glob("*.md"))) == len(item_dirs(repo))


KILLED_BUILD = """
import os, signal, sys
from pathlib import Path
from arkai.site import build, indexes

def topic_pages(*_):
    os.kill(os.getpid(), signal.SIGKILL)  # after the entity pages, before the store commits
    yield

indexes.topic_pages = topic_pages
build.build_site(Path(sys.argv[1]))
"""


@pytest.mark.parametrize("stop", ["error", "sigkill"])
def test_pages_an_unfinished_build_wrote_are_made_again_when_the_inputs_go_back(
    tmp_path: Path, arkai: Runner, monkeypatch: pytest.MonkeyPatch, stop: str
) -> None:
    """A build that stops after writing library-wide pages (an error, or the process killed)
    leaves those pages made from inputs the summary store never recorded (its transaction is
    rolled back or never committed): when the inputs then return to what the store holds,
    the pages must not pass as unchanged."""
    repo = make_repo(tmp_path, arkai)
    build_site(repo)
    build, site = repo / ".site-build", repo / "site"
    docs = build / "docs"
    items = item_dirs(repo)
    donor = sorted(items)[0]
    ghost = "feedfacefeedface"
    folders = copy_item(repo, items[donor], donor, ghost, "Ghost of an unfinished build")
    if stop == "sigkill":
        (tmp_path / "killed.py").write_text(KILLED_BUILD)
        done = sh(tmp_path, sys.executable, tmp_path / "killed.py", repo, check=False)
        assert done.returncode == -signal.SIGKILL, done.stderr
    else:
        with monkeypatch.context() as patch:

            def fail(*_: object) -> Iterator[indexes.PageOut]:
                raise site_build.SiteBuildError("a failure after the entity pages")
                yield  # a generator: it fails when the topic pages are made, not before

            patch.setattr(site_build.indexes, "topic_pages", fail)
            with pytest.raises(site_build.SiteBuildError):
                build_site(repo)
    # The unfinished build did write entity pages that list the copy.
    assert [p for p in (docs / "entities").rglob("*.md") if ghost in p.read_text()]
    assert (build / site_build.JOURNAL).is_file()
    for folder in folders:
        shutil.rmtree(folder)
    build_site(repo)
    assert not [p for p in docs.rglob("*.md") if ghost in p.read_text()]
    assert not [p for p in site.rglob("*.html") if ghost in p.read_text()]
    assert not (build / site_build.JOURNAL).exists()
    assert_as_clean_build(repo, docs, build, site, monkeypatch)


def test_an_unfinished_builds_journal_removes_only_pages_inside_the_build_folder(
    tmp_path: Path,
) -> None:
    build = tmp_path / ".site-build"
    docs, entries = build / "docs", build / "search"
    (docs / "entities").mkdir(parents=True)
    (entries / "entities").mkdir(parents=True)
    page, rows = docs / "entities" / "a.md", entries / "entities" / "a.md.json"
    page.write_text("stale")
    rows.write_text("[]")
    kept = docs / "entities" / "b.md"
    kept.write_text("not in the journal")
    outside = tmp_path / "outside.md"
    outside.write_text("someone's file")
    (docs / "link.md").symlink_to(outside)
    (tmp_path / "elsewhere").mkdir()
    far = tmp_path / "elsewhere" / "x.md"
    far.write_text("through a linked folder")
    (docs / "linked").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    journal = build / site_build.JOURNAL
    journal.write_text(
        "\n".join([
            json.dumps("entities/a.md"), json.dumps("../../outside.md"), json.dumps("/etc/x"),
            json.dumps("link.md"), json.dumps("linked/x.md"), json.dumps("entities/./b.md"),
            json.dumps(["entities/b.md"]),
            "{not json", json.dumps("entities\\b.md"), "",
        ]) + "\n"
    )  # fmt: skip
    site_build._undo_unfinished(build, journal)
    assert not page.exists() and not rows.exists() and not journal.exists()
    assert kept.read_text() == "not in the journal"
    assert outside.read_text() == "someone's file" and (docs / "link.md").is_symlink()
    assert far.read_text() == "through a linked folder"
    site_build._undo_unfinished(build, journal)  # no journal: nothing to do


# -- the stage: its items planned from the manifests the stages before it wrote (issue 17) ----


def stage_site(repo: Path, *, manifests: bool = True) -> site_build.SiteReport:
    """The ``site`` stage as ``dvc repro`` runs it, after the extract stage wrote the manifests
    of library/ and extracted/ (``manifests``)."""
    return as_stage(repo, site_build.STAGE_FOLDERS, lambda: build_site(repo, stage=True),
                    manifests=manifests)  # fmt: skip


@pytest.fixture
def stats_taken(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The item folders whose input files the site looks at (``input_stats``)."""
    seen: list[str] = []
    real = site_build.input_stats

    def spy(item: object) -> object:
        seen.append(item.path.name)  # type: ignore[attr-defined]
        return real(item)  # type: ignore[arg-type]

    monkeypatch.setattr(site_build, "input_stats", spy)
    return seen


def test_the_stage_looks_only_at_the_changed_items_files_and_equals_a_clean_build(
    tmp_path: Path, arkai: Runner, stats_taken: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_repo(tmp_path, arkai)
    items = item_dirs(repo)
    stage_site(repo)
    assert len(stats_taken) == len(items)  # no complete run yet: every item looked at
    stats_taken.clear()
    stage_site(repo)
    assert stats_taken == []
    cid, folder = sorted(items.items())[0]
    transcript = folder / "transcript.md"
    transcript.write_bytes(transcript.read_bytes() + b"\nA line added by an editor today.\n")
    stage_site(repo)
    assert stats_taken == [folder.name]
    docs = repo / ".site-build" / "docs"
    assert "A line added by an editor today." in (docs / f"transcripts/{cid}.md").read_text()
    # An edit after the manifests were written: not seen by that run, seen by the next.
    transcript.write_bytes(transcript.read_bytes() + b"\nA second line, added late.\n")
    stats_taken.clear()
    stage_site(repo, manifests=False)
    assert stats_taken == []
    assert "A second line" not in (docs / f"transcripts/{cid}.md").read_text()
    stage_site(repo)
    assert stats_taken == [folder.name]
    assert "A second line" in (docs / f"transcripts/{cid}.md").read_text()
    assert_as_clean_build(repo, docs, repo / ".site-build", repo / "site", monkeypatch)


def test_a_summary_another_build_made_for_other_bytes_is_not_taken(
    tmp_path: Path, arkai: Runner, stats_taken: list[str]
) -> None:
    """The stage sealed an item's input digest; ``arkai site`` (which looks at every item's
    files) then made its summary for an edit that is undone, so the item's manifest lines are
    the sealed ones again — and the summary is not for these bytes: the item's files are
    looked at rather than the summary taken."""
    repo = make_repo(tmp_path, arkai)
    stage_site(repo)
    cid, folder = sorted(item_dirs(repo).items())[0]
    transcript = folder / "transcript.md"
    good = transcript.read_bytes()
    transcript.write_bytes(good + b"\nA line that will be taken back.\n")
    build_site(repo)  # not the stage: every item's files looked at
    transcript.write_bytes(good)
    stats_taken.clear()
    stage_site(repo)
    assert stats_taken == [folder.name]
    page = (repo / ".site-build" / "docs" / f"transcripts/{cid}.md").read_text()
    assert "taken back" not in page


def test_a_damaged_or_forged_site_seal_is_not_taken(
    tmp_path: Path, arkai: Runner, stats_taken: list[str]
) -> None:
    from arkai.adapters import manifest

    repo = make_repo(tmp_path, arkai)
    items = item_dirs(repo)
    stage_site(repo)
    result = repo / manifest.CACHE_DIR / f"{site_build.STAGE}.done.result"
    result.write_bytes(result.read_bytes().replace(b'"version":1', b'"version":1 '))
    stats_taken.clear()
    stage_site(repo)
    assert len(stats_taken) == len(items)  # the digest: every item looked at
    seal = repo / manifest.CACHE_DIR / f"{site_build.STAGE}.done.json"
    doc = json.loads(result.read_bytes())
    doc["items"] = {k: "0" * 64 for k in doc["items"]}  # sealed right, for other bytes
    data = json.dumps(doc).encode()
    result.write_bytes(data)
    record = json.loads(seal.read_bytes())
    record["result"] = __import__("hashlib").sha256(data).hexdigest()
    seal.write_bytes(json.dumps(record).encode())
    stats_taken.clear()
    stage_site(repo)
    assert len(stats_taken) == len(items)  # no summary holds those digests


def test_manifests_written_again_while_the_site_builds_leave_it_unsealed(
    tmp_path: Path, arkai: Runner, stats_taken: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The run is sealed with the manifests it planned from, read again when it ends: an edit
    (and the manifests written again) while it built leaves it unsealed, so the next run looks
    at every item's files — the edit included."""
    from arkai.adapters import manifest

    repo = make_repo(tmp_path, arkai)
    items = item_dirs(repo)
    stage_site(repo)
    cid, folder = sorted(items.items())[0]
    real = site_build.run_mkdocs

    def meanwhile(*args: object, **kwargs: object) -> None:
        transcript = folder / "transcript.md"
        transcript.write_bytes(transcript.read_bytes() + b"\nWritten while the site built.\n")
        manifest.write_all(repo, *site_build.STAGE_FOLDERS)
        real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(site_build, "run_mkdocs", meanwhile)
    stage_site(repo)
    monkeypatch.setattr(site_build, "run_mkdocs", real)
    stats_taken.clear()
    stage_site(repo, manifests=False)
    assert len(stats_taken) == len(items)
    page = (repo / ".site-build" / "docs" / f"transcripts/{cid}.md").read_text()
    assert "Written while the site built." in page


#: A user hook that adds a Markdown page (rendered on every build: MkDocs made it) with a link
#: to an item page, before arkai's hook sees the files.
NOTES_HOOK = """
from mkdocs.structure.files import File

def on_files(files, config):
    files.append(File.generated(config, "notes.md", content="See [the talk](items/CID.md)."))
    return files
"""


def test_a_dirty_build_sets_aside_unchanged_pages_outside_the_nav_and_equals_a_clean_build(
    tmp_path: Path,
    arkai: Runner,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """On a dirty build MkDocs is not asked about a page outside the navigation whose HTML is
    newer than its Markdown (it would ask twice, three ``stat`` calls each, and skip it); a
    navigation page is asked once. A changed item's pages, a page whose HTML was deleted and a
    page whose Markdown is newer than its HTML are made again; a page's link to a page set
    aside is made as before, without MkDocs' note that its target is excluded; the sitemap
    lists every page (with a ``site_url``), as does a rendered page's template; and the site
    equals a clean build's."""
    from mkdocs.structure.files import File

    repo = make_repo(tmp_path, arkai)
    items = sorted(item_dirs(repo).items())
    (cid, folder), (deleted, _), (touched, _) = items[0], items[1], items[2]
    (repo / "notes_hook.py").write_text(NOTES_HOOK.replace("CID", items[3][0]))
    # A theme override that shows, on every page, how many pages its template was given.
    (repo / "overrides").mkdir()
    (repo / "overrides" / "main.html").write_text(
        '{% extends "base.html" %}\n'
        '{% block extrahead %}<meta name="pages" content="{{ pages|length }}">{% endblock %}\n'
    )
    user = yaml.safe_load((repo / "mkdocs.yml").read_text())
    user.update(site_url="https://example.org/kb/", hooks=["notes_hook.py"])
    user["theme"]["custom_dir"] = "overrides"
    (repo / "mkdocs.yml").write_text(yaml.safe_dump(user))
    build_site(repo)
    asked: dict[str, int] = {}
    real = File.is_modified

    def counted(self: File) -> bool:
        asked[self.src_uri] = asked.get(self.src_uri, 0) + 1
        return real(self)

    monkeypatch.setattr(File, "is_modified", counted)
    transcript = folder / "transcript.md"
    transcript.write_bytes(transcript.read_bytes() + b"\nA changed line for the dirty build.\n")
    site, docs = repo / "site", repo / ".site-build" / "docs"
    (site / "items" / deleted / "index.html").unlink()
    html = site / "transcripts" / touched / "index.html"
    os.utime(docs / "transcripts" / f"{touched}.md", ns=(html.stat().st_mtime_ns + 10**9,) * 2)
    before = {p: p.stat().st_mtime_ns for p in site.rglob("*.html")}
    capsys.readouterr()
    assert build_site(repo, verbose=True).mkdocs == "dirty"
    err = capsys.readouterr().err
    assert "excluded" not in err
    nav = {"index.md", "library/index.md", "library/dates.md", "tags/index.md",
           "entities/index.md", "topics/index.md", "validation.md"}  # fmt: skip
    pages = {u for u in asked if u.endswith(".md")}
    assert nav <= pages and max(asked[u] for u in pages) == 1
    outside = pages - nav - {"notes.md"}
    assert outside == {f"items/{cid}.md", f"transcripts/{cid}.md", f"items/{deleted}.md",
                       f"transcripts/{touched}.md"}  # fmt: skip
    changed = {p for p, t in before.items() if p.exists() and p.stat().st_mtime_ns != t}
    page = site / "transcripts" / cid / "index.html"
    assert page in changed and "A changed line for the dirty build." in html_text(page.read_text())
    assert (site / "items" / deleted / "index.html").is_file() and html in changed
    assert f'href="../items/{items[3][0]}/"' in (site / "notes" / "index.html").read_text()
    shown = f'<meta name="pages" content="{len(list(docs.rglob("*.md"))) + 1}">'
    assert shown in page.read_text() and shown in (site / "notes" / "index.html").read_text()
    sitemap = (site / "sitemap.xml").read_text()
    assert sitemap.count("<loc>") == len(list(docs.rglob("*.md"))) + 1  # and notes.md
    assert f"https://example.org/kb/items/{items[4][0]}/" in sitemap
    assert_as_clean_build(repo, docs, repo / ".site-build", site, monkeypatch)


def test_the_stage_plans_items_in_the_order_of_their_paths() -> None:
    """The stage's item folders come in the order ``Path`` gives them (their parts), which a
    plain string sort of the relative paths does not: ``-`` sorts before ``/``."""
    from pathlib import Path

    from arkai.site.build import in_path_order

    rels = ["talks/a", "talks-old/z", "talks/a-b", "talks/a b/c", "notes/ä", "notes/z",
            "talks/a.b", "talks/A", "x/y/z", "x-y/z", "x/y-z"]  # fmt: skip
    base = Path("/lib")
    assert in_path_order(base, rels) == sorted(base / r for r in rels)
    assert sorted(rels) != [p.relative_to(base).as_posix() for p in in_path_order(base, rels)]


LISTINGS = ("home", "library_by_type", "library_by_date", "validation")


def test_the_library_listings_show_only_what_their_key_covers(
    tmp_path: Path, arkai: Runner
) -> None:
    """The library-wide listings are made again only when a field of some item's slim summary
    in ``indexes.LISTING_FIELDS`` (or its issues) changed: rendered from the real summaries
    with every other field changed (and one more added), they are the same."""
    repo = make_repo(tmp_path, arkai)
    build_site(repo)
    db = sqlite3.connect(repo / ".site-build" / "summaries.sqlite")
    try:
        slims = [json.loads(r[0]) for r in db.execute("SELECT slim FROM items ORDER BY id")]
    finally:
        db.close()
    assert len(slims) > 3 and all(set(indexes.LISTING_FIELDS) <= set(s) for s in slims)
    others = sorted({k for s in slims for k in s} - set(indexes.LISTING_FIELDS))
    assert {"lines", "path", "url", "subtype", "edited"} <= set(others)

    def pages(summaries: list[dict[str, object]]) -> list[str]:
        lib = indexes.Library(summaries, "Site", site_build.Urls(True))
        return [getattr(indexes, name)(lib) for name in LISTINGS]

    shown = pages(slims)
    odd = [{**s, **{k: f"changed {k}" for k in others}, "unheard_of": 7} for s in slims]
    assert pages(odd) == shown

    # What the home page shows of the search's size, when the search leaves something out,
    # is the size the key holds (:func:`indexes.search_size`), not its bytes.
    def home(size: int) -> tuple[str, str]:
        lib = indexes.Library(slims, "Site", site_build.Urls(True), search_scope="titles",
                              search_bytes=size, search_index_mb=0.5)  # fmt: skip
        return indexes.home(lib), indexes.search_size(lib)

    assert home(1_234_000) == home(1_234_400) and home(1_234_000)[1] == "1.23"
    assert home(1_234_000)[0] != home(1_244_000)[0]
    assert home(1_234_000)[1] != home(1_244_000)[1]
    # Each listed field is shown by some listing (the key covers no more than it must);
    # ``extracted`` shows where the transcript no longer has its extraction's digest.
    for field in set(indexes.LISTING_FIELDS) - {"id", "counts"}:
        base = [dict(s, digest_ok=False) if field == "extracted" else s for s in slims]
        shown = pages(base)
        changed = [dict(s) for s in base]
        value = changed[0][field]
        changed[0][field] = (
            (not value) if isinstance(value, bool)
            else value + 5 if isinstance(value, int)
            else ["another tag"] if isinstance(value, list)
            else "2001-02-03 another value"
        )  # fmt: skip
        assert pages(changed) != shown, field


def test_the_library_listings_are_made_again_only_when_what_they_show_changed(
    tmp_path: Path, arkai: Runner, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_repo(tmp_path, arkai)
    assert build_site(repo).mkdocs == "full"
    made: list[str] = []

    def spy(name: str, real: Callable[[indexes.Library], str], lib: indexes.Library) -> str:
        made.append(name)
        return real(lib)

    for name in LISTINGS:
        monkeypatch.setattr(indexes, name, partial(spy, name, getattr(indexes, name)))
    build, site = repo / ".site-build", repo / "site"
    docs = build / "docs"
    items = item_dirs(repo)
    cid = sorted(items)[0]
    assert build_site(repo).mkdocs == "dirty" and made == []

    # A comment added to an item's review file: its pages are made again (their inputs'
    # digest changed), the listings (which show nothing of it) are not.
    owner = sorted(items)[1]
    review = items[owner] / "review.yaml"
    with open(review, "a", encoding="utf-8") as fh:
        fh.write("\n# looked at again; nothing to change\n")
    report = build_site(repo)
    assert report.items_regenerated == 1 and made == []

    # A title changed: every listing is made again, and shows it.
    meta_path = items[owner] / "metadata.json"
    meta = json.loads(meta_path.read_text())
    meta["title"] = "Retitled for the listings"
    meta_path.write_text(json.dumps(meta, indent=2))
    build_site(repo)
    assert sorted(made) == sorted(LISTINGS)
    for page in ("index.md", "library/index.md", "library/dates.md"):
        assert "Retitled for the listings" in (docs / page).read_text(encoding="utf-8"), page
    made.clear()

    # A transcript changed after extraction: the validation page says so (its digest no
    # longer matches), and the other listings count it.
    transcript = items[cid] / "transcript.md"
    transcript.write_bytes(transcript.read_bytes() + b"[09:59:00] A line after extraction.\n")
    build_site(repo)
    assert sorted(made) == sorted(LISTINGS)
    made.clear()

    # A listing's page gone from the build folder is made again, alone; an item removed:
    # every listing.
    (docs / "library" / "dates.md").unlink()
    build_site(repo)
    assert made == ["library_by_date"]
    made.clear()
    # The site's name is on the home page only.
    user = yaml.safe_load((repo / "mkdocs.yml").read_text())
    user["site_name"] = "Renamed library"
    (repo / "mkdocs.yml").write_text(yaml.safe_dump(user))
    build_site(repo)
    assert made == ["home"] and "Renamed library" in (docs / "index.md").read_text()
    made.clear()
    cid_removed = sorted(items)[-1]
    shutil.rmtree(items[cid_removed])
    build_site(repo)
    assert sorted(made) == sorted(LISTINGS)
    assert_as_clean_build(repo, docs, build, site, monkeypatch)
