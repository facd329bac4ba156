"""Folder manifests: what the pipeline's stages depend on instead of whole folders."""

from __future__ import annotations

import json
import os
import random
from collections import Counter
from pathlib import Path

import pytest

from arkai.adapters import manifest
from arkai.adapters.beside import Beside, Report
from arkai.errors import LibraryError

DEST = Path("index/manifests/library.tsv")


def _tree(root: Path) -> None:
    (root / "library/a").mkdir(parents=True)
    (root / "library/b/deep").mkdir(parents=True)
    (root / "library/a/transcript.md").write_text("hello\n", encoding="utf-8")
    (root / "library/b/deep/x.json").write_text("{}", encoding="utf-8")
    (root / "library/.gitkeep").write_bytes(b"")


def _lines(root: Path) -> list[str]:
    return (root / DEST).read_text(encoding="utf-8").splitlines()


def test_manifest_lists_every_file_sorted_with_size_and_sha256(tmp_path: Path) -> None:
    _tree(tmp_path)
    (tmp_path / "library/a/.DS_Store").write_bytes(b"x")
    (tmp_path / "library/a/.transcript.md.123.tmp").write_bytes(b"half")
    (tmp_path / "library/.adding-1").mkdir()
    (tmp_path / "library/.adding-1/x").write_bytes(b"y")
    assert manifest.write(tmp_path, "library", DEST)
    assert _lines(tmp_path) == [
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\t0\t.gitkeep",
        "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03\t6\ta/transcript.md",
        "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a\t2\tb/deep/x.json",
    ]


def test_manifest_changes_exactly_when_a_file_does(tmp_path: Path) -> None:
    _tree(tmp_path)
    manifest.write(tmp_path, "library", DEST)
    first = (tmp_path / DEST).read_bytes()
    stamp = (tmp_path / DEST).stat().st_mtime_ns
    # Nothing changed: the file is not rewritten (DVC's state entry stays valid).
    assert not manifest.write(tmp_path, "library", DEST)
    assert (tmp_path / DEST).stat().st_mtime_ns == stamp
    # Same size, same mtime restored, different content: the inode changes with a rewrite
    # through rename, so the stat cache does not hide it.
    path = tmp_path / "library/a/transcript.md"
    st = path.stat()
    tmp = path.with_name("new")
    tmp.write_text("HELLO\n", encoding="utf-8")
    os.utime(tmp, ns=(st.st_atime_ns, st.st_mtime_ns))
    tmp.replace(path)
    assert manifest.write(tmp_path, "library", DEST)
    assert (tmp_path / DEST).read_bytes() != first
    # A file removed, a file added.
    path.unlink()
    manifest.write(tmp_path, "library", DEST)
    assert not any("a/transcript.md" in line for line in _lines(tmp_path))
    (tmp_path / "library/c.md").write_text("new", encoding="utf-8")
    manifest.write(tmp_path, "library", DEST)
    assert any(line.endswith("\tc.md") for line in _lines(tmp_path))


def test_the_stat_cache_is_reused_and_a_damaged_one_is_rebuilt(tmp_path: Path) -> None:
    _tree(tmp_path)
    manifest.write(tmp_path, "library", DEST)
    want = (tmp_path / DEST).read_bytes()
    caches = list((tmp_path / manifest.CACHE_DIR).glob("*.stats"))
    quick = list((tmp_path / manifest.CACHE_DIR).glob("*.tsv"))
    assert len(caches) == len(quick) == 1
    # Every file's size, mtime and inode as last time: the manifest then made is used as it
    # is (no file read, no per-file record looked up)...
    mark, _, body = quick[0].read_bytes().partition(b"\n")
    assert body == want
    quick[0].write_bytes(mark + b"\n" + body.replace(b"a/transcript.md", b"a/tampered.md"))
    manifest.write(tmp_path, "library", DEST)
    assert b"a/tampered.md" in (tmp_path / DEST).read_bytes()
    # ... and one file's stat changed: the per-file records are used, whose digest is what
    # is used for an unchanged file (no file is read again)...
    cache = caches[0]
    data = cache.read_bytes()
    good = b"5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03"
    assert data.startswith(manifest.CACHE_HEADER) and good in data
    cache.write_bytes(data.replace(good, b"f" * 64))
    (tmp_path / "library/b/deep/x.json").write_text("[]", encoding="utf-8")
    manifest.write(tmp_path, "library", DEST)
    assert "f" * 64 in (tmp_path / DEST).read_text(encoding="utf-8")
    assert b"tampered" not in (tmp_path / DEST).read_bytes()
    # ... and damaged caches are ignored: every file is hashed again.
    cache.write_bytes(b"{not a cache")
    quick[0].write_bytes(b"garbage")
    (tmp_path / "library/b/deep/x.json").write_text("{}", encoding="utf-8")
    manifest.write(tmp_path, "library", DEST)
    assert (tmp_path / DEST).read_bytes() == want


def test_check_names_pages_missing_edited_and_extra(tmp_path: Path) -> None:
    _tree(tmp_path)
    manifest.write(tmp_path, "library", DEST)
    assert manifest.check(tmp_path, "library", DEST).clean
    (tmp_path / "library/a/transcript.md").write_text("edited\n", encoding="utf-8")
    (tmp_path / "library/b/deep/x.json").unlink()
    (tmp_path / "library/b/new.html").write_text("x", encoding="utf-8")
    diff = manifest.check(tmp_path, "library", DEST)
    assert diff == manifest.Difference(
        missing=("b/deep/x.json",), changed=("a/transcript.md",), extra=("b/new.html",)
    )
    assert not diff.clean


def test_a_missing_or_malformed_manifest_is_a_clear_error(tmp_path: Path) -> None:
    _tree(tmp_path)
    with pytest.raises(LibraryError, match=r"library\.tsv: no manifest"):
        manifest.check(tmp_path, "library", DEST)
    (tmp_path / DEST).parent.mkdir(parents=True)
    (tmp_path / DEST).write_text("abc\t1\tx\n", encoding="utf-8")
    with pytest.raises(LibraryError, match=r"library\.tsv:1: not a manifest line"):
        manifest.check(tmp_path, "library", DEST)


def test_a_snapshot_digest_covers_the_files_and_the_inputs(tmp_path: Path) -> None:
    _tree(tmp_path)
    inputs = {"params": {"a": 1}, "patterns": {"p": "sha256:1"}}
    first = manifest.snapshot(tmp_path, ("library", "extracted"), inputs)
    assert first.manifests["extracted"] == b""  # no folder: no files
    assert manifest.snapshot(tmp_path, ("library", "extracted"), dict(inputs)) == first
    assert manifest.snapshot(tmp_path, ("library", "extracted"), {**inputs, "params": {"a": 2}}
                             ).digest != first.digest  # fmt: skip
    (tmp_path / "extracted").mkdir()
    (tmp_path / "extracted/x.json").write_text("{}", encoding="utf-8")
    second = manifest.snapshot(tmp_path, ("library", "extracted"), inputs)
    assert second.digest != first.digest
    assert second.manifests["library"] == first.manifests["library"]
    # publish writes the manifests named (default all) where their bytes differ
    second.publish(tmp_path, "library")
    assert (tmp_path / manifest.PATHS["library"]).read_bytes() == second.manifests["library"]
    assert not (tmp_path / manifest.PATHS["extracted"]).exists()
    stamp = (tmp_path / manifest.PATHS["library"]).stat().st_mtime_ns
    second.publish(tmp_path)
    assert (tmp_path / manifest.PATHS["library"]).stat().st_mtime_ns == stamp
    assert (tmp_path / manifest.PATHS["extracted"]).read_bytes() == second.manifests["extracted"]


def _sealed_items(root: Path, stage: str, now: manifest.Snapshot) -> int | None:
    sealed = manifest.sealed_run(root, stage, now)
    return sealed.items if sealed is not None else None


def test_a_seal_holds_only_for_the_inputs_it_was_made_with(tmp_path: Path) -> None:
    _tree(tmp_path)
    now = manifest.snapshot(tmp_path, ("library",), {"v": 1})
    assert _sealed_items(tmp_path, "extract", now) is None  # never sealed
    manifest.seal(tmp_path, "extract", now, 7)
    assert _sealed_items(tmp_path, "extract", now) == 7
    assert _sealed_items(tmp_path, "condense", now) is None  # per stage
    other = manifest.snapshot(tmp_path, ("library",), {"v": 2})
    assert _sealed_items(tmp_path, "extract", other) is None
    # Edited files: the seal still holds (it is the base the changes are planned from) and
    # carries the manifests of the sealed run.
    (tmp_path / "library/a/transcript.md").write_text("edited\n", encoding="utf-8")
    edited = manifest.snapshot(tmp_path, ("library",), {"v": 1})
    sealed = manifest.sealed_run(tmp_path, "extract", edited)
    assert sealed is not None and sealed.manifests == now.manifests != edited.manifests
    # A damaged record is no seal; unseal forgets it.
    seal = tmp_path / manifest.CACHE_DIR / "extract.done.json"
    seal.write_text("{not json", encoding="utf-8")
    assert _sealed_items(tmp_path, "extract", now) is None
    manifest.seal(tmp_path, "extract", now, 7)
    manifest.unseal(tmp_path, "extract")
    assert _sealed_items(tmp_path, "extract", now) is None
    assert not list((tmp_path / manifest.CACHE_DIR).glob("extract.done*"))


def test_a_damaged_or_forged_copy_of_the_sealed_manifests_is_not_trusted(tmp_path: Path) -> None:
    _tree(tmp_path)
    now = manifest.snapshot(tmp_path, ("library",), {"v": 1})
    manifest.seal(tmp_path, "extract", now, 1)
    copy = tmp_path / manifest.CACHE_DIR / "extract.done.library.tsv"
    assert copy.read_bytes() == now.manifests["library"]
    # A forged copy (an item's lines dropped, so it would count as changed … or the other
    # way round: a changed item made to look done) does not match the recorded digest.
    copy.write_bytes(now.manifests["library"].replace(b"a/transcript.md", b"a/transcript.mx"))
    # (With nothing changed the copy is not needed: the digest says the files are the seal's.)
    assert manifest.sealed_run(tmp_path, "extract", now) == manifest.Sealed(1, now.manifests)
    (tmp_path / "library/b/deep/x.json").write_text("[]", encoding="utf-8")
    edited = manifest.snapshot(tmp_path, ("library",), {"v": 1})
    assert manifest.sealed_run(tmp_path, "extract", edited) is None
    copy.unlink()
    assert manifest.sealed_run(tmp_path, "extract", edited) is None
    manifest.seal(tmp_path, "extract", now, 1)
    record = tmp_path / manifest.CACHE_DIR / "extract.done.json"
    data = json.loads(record.read_text(encoding="utf-8"))
    record.write_text(json.dumps({**data, "folders": ["library", "extracted"]}), encoding="utf-8")
    assert manifest.sealed_run(tmp_path, "extract", now) is None
    record.write_text(json.dumps({**data, "items": "1"}), encoding="utf-8")
    assert manifest.sealed_run(tmp_path, "extract", now) is None


def _line(path: str, digest: str = "0") -> bytes:
    return f"{digest * 64}\t1\t{path}\n".encode()


def test_changed_items_names_each_item_whose_lines_differ(tmp_path: Path) -> None:
    def library(*folders: str, edited: str = "") -> bytes:
        return b"".join(
            _line(f"{f}/metadata.json") + _line(f"{f}/transcript.md", "1" if f == edited else "0")
            for f in sorted(folders)
        )

    old = {"library": library("t/A (1)", "t/B (2)", "t/C (3)"),
           "extracted": _line("t/A (1)/claims.md") + _line("t/B (2)/claims.md")}  # fmt: skip
    same = dict(old)
    assert manifest.changed_items(old, same) == set()
    edited = {**old, "library": library("t/A (1)", "t/B (2)", "t/C (3)", edited="t/B (2)")}
    assert manifest.changed_items(old, edited) == {"t/B (2)"}
    # added and removed items, an extraction deleted or edited by hand
    moved = {"library": library("t/A (1)", "t/B (2)", "t/D (4)"),
             "extracted": _line("t/A (1)/claims.md", "2")}  # fmt: skip
    assert manifest.changed_items(old, moved) == {"t/A (1)", "t/B (2)", "t/C (3)", "t/D (4)"}
    # a nested metadata.json is no item of its own; hidden folders are no items
    nested = {**old, "library": old["library"] + _line("t/A (1)/sub/metadata.json")
              + _line(".adding-x/t/metadata.json")}  # fmt: skip
    assert manifest.changed_items(old, nested) == {"t/A (1)"}
    assert manifest.item_folders(nested["library"]) == {"t/A (1)", "t/B (2)", "t/C (3)"}
    # a file that belongs to no item: everything is planned
    stray = {**old, "library": old["library"] + _line("stray.txt")}
    assert manifest.changed_items(old, stray) is None
    orphan = {**old, "extracted": old["extracted"] + _line("t/Z (9)/claims.md")}
    assert manifest.changed_items(old, orphan) is None


def test_rebuild_removes_hand_edited_files_before_building(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "a.html").write_text("page a", encoding="utf-8")
    (site / "b.html").write_text("page b", encoding="utf-8")

    def build() -> list[str]:  # an incremental build: writes only what is missing
        seen = sorted(p.name for p in site.iterdir())
        for name in ("a.html", "b.html"):
            if not (site / name).exists():
                (site / name).write_text(f"page {name[0]}", encoding="utf-8")
        return seen

    assert manifest.rebuild(tmp_path, "site", build) == ["a.html", "b.html"]
    want = (tmp_path / manifest.PATHS["site"]).read_bytes()
    (site / "b.html").write_text("edited by hand", encoding="utf-8")
    (site / "extra.html").write_text("someone's", encoding="utf-8")
    assert manifest.rebuild(tmp_path, "site", build) == ["a.html", "extra.html"]
    assert (site / "b.html").read_text(encoding="utf-8") == "page b"
    assert (site / "extra.html").is_file()  # not the build's: left alone, now listed
    assert manifest.check(tmp_path, "site", manifest.PATHS["site"]).clean
    assert (tmp_path / manifest.PATHS["site"]).read_bytes() != want


def test_rebuild_compares_no_file_when_none_changed_since_the_manifest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "a.html").write_text("page a", encoding="utf-8")
    made: list[str] = []

    def build() -> None:
        if not (site / "a.html").exists():
            made.append("a.html")
            (site / "a.html").write_text("page a", encoding="utf-8")

    manifest.rebuild(tmp_path, "site", build)
    reads: list[Path] = []
    real_read = manifest.read
    monkeypatch.setattr(manifest, "read", lambda path: reads.append(path) or real_read(path))
    manifest.rebuild(tmp_path, "site", build)  # nothing changed: not one manifest line read
    assert reads == [] and made == []
    # The manifest itself edited (a.html listed with other bytes): the files are compared
    # one by one again, and the page that differs from it is made again.
    dest = tmp_path / manifest.PATHS["site"]
    dest.write_text(dest.read_text(encoding="utf-8").replace("\t6\t", "\t7\t"), encoding="utf-8")
    manifest.rebuild(tmp_path, "site", build)
    assert reads == [dest] and made == ["a.html"]
    assert manifest.check(tmp_path, "site", manifest.PATHS["site"]).clean


class _Site:
    """A folder an incremental build writes: each page it has not made, and ``fresh`` ones
    again each time (new bytes); what it saw before writing, build after build."""

    def __init__(self, root: Path, pages: tuple[str, ...] = ("a.html", "b.html", "c.html")):
        self.folder = root / "site"
        self.folder.mkdir()
        self.pages, self.fresh, self.builds = pages, set[str](), 0

    def __call__(self) -> list[str]:
        self.builds += 1
        seen = sorted(p.name for p in self.folder.iterdir())
        for name in self.pages:
            if not (self.folder / name).exists() or name in self.fresh:
                text = f"page {name}" + (f" build {self.builds}" if name in self.fresh else "")
                (self.folder / name).write_text(text, encoding="utf-8")
        return seen


def test_rebuild_walks_once_after_its_own_manifest_and_never_takes_its_writes_for_edits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = _Site(tmp_path)
    manifest.rebuild(tmp_path, "site", site)
    walks: list[Path] = []
    real = manifest._walk
    monkeypatch.setattr(
        manifest, "_walk", lambda folder, **kw: walks.append(folder) or real(folder, **kw)
    )
    site.fresh = {"b.html"}  # the build writes it again each time, other bytes each time
    for n in range(2, 5):
        walks.clear()
        manifest.rebuild(tmp_path, "site", site)
        assert site.builds == n and walks == [tmp_path / "site"]
        assert manifest.check(tmp_path, "site", manifest.PATHS["site"]).clean
    assert (site.folder / "b.html").read_text(encoding="utf-8") == "page b.html build 4"


def _wide(root: Path, folders: int) -> Path:
    """A site-like tree: a few sections, each with many folders of one page (some nested)."""
    site = root / "site"
    for n in range(folders):
        page = site / ("items", "entities", "topics")[n % 3] / f"p{n:04d}"
        page.mkdir(parents=True)
        (page / "index.html").write_text(f"page {n}", encoding="utf-8")
        if n % 7 == 0:
            (page / "transcript").mkdir()
            (page / "transcript/index.html").write_text(f"t {n}", encoding="utf-8")
    (site / "sitemap.xml").write_text("<urlset/>", encoding="utf-8")
    return site


def _naive(folder: Path) -> list[str]:
    out = []
    for dirpath, _dirs, files in os.walk(folder):
        for name in files:
            path = Path(dirpath) / name
            st = path.stat()
            rel = path.relative_to(folder).as_posix()
            out.append(f"{rel}\0{st.st_size}\0{st.st_mtime_ns}\0{st.st_ino}")
    return sorted(out)


@pytest.mark.parametrize("folders", [5, 400])
def test_a_walk_split_over_two_processes_finds_the_same_files_in_the_same_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, folders: int
) -> None:
    """Past SPLIT_FOLDERS waiting folders, half the walk runs in a forked child: the files,
    and their order (which the walk's fingerprint digests), are those of the walk in one
    process, and those a plain os.walk finds."""
    site = _wide(tmp_path, folders)
    forks: list[bool] = []

    class Counted(Beside[list[str]]):
        def start(self, report: Report | None = None) -> None:
            super().start(report)
            forks.append(self.forked)

    monkeypatch.setattr(manifest, "Beside", Counted)
    one = manifest._walk(site)
    assert forks == []
    two = manifest._walk(site, split=True)
    assert two == one and sorted(one) == _naive(site)
    assert forks == ([True] if folders > manifest.SPLIT_FOLDERS else [])
    monkeypatch.setenv("ARKAI_BESIDE", "0")  # no fork: the halves one after the other
    assert manifest._walk(site, split=True) == one


def test_a_bad_name_in_the_childs_half_of_a_split_walk_is_the_callers_error(
    tmp_path: Path,
) -> None:
    """A file name the manifest cannot hold, found by the forked child, is raised in the
    caller as the same error, naming the file."""
    site = _wide(tmp_path, 300)
    last = manifest._walk(site)[-1].split("\0")[0]  # the walk ends with the child's half
    bad = os.fsencode(site / last).rsplit(b"/", 1)[0] + b"/caf\xe9.html"
    with open(bad, "wb") as fh:
        fh.write(b"x")
    with pytest.raises(LibraryError, match=r"caf\\xe9\.html.*cannot be listed"):
        manifest._walk(site, split=True)


@pytest.mark.parametrize("split", [False, True])
def test_a_link_back_to_a_folder_above_is_refused_at_once(tmp_path: Path, split: bool) -> None:
    """A link to a folder that holds it would have the walk list the tree again and again (it
    went 40 levels deep, then stopped with a bare OSError): the error names the link."""
    site = _wide(tmp_path, 200)
    (site / "items/p0000/up").symlink_to("../..")
    with pytest.raises(LibraryError, match=r"items/p0000/up: a link to a folder that holds it"):
        manifest._walk(site, split=split)


def test_a_loop_of_two_links_is_an_error_naming_the_link(tmp_path: Path) -> None:
    """Two links that lead to each other's folders: the walk stops where the system does (too
    many levels of links), with an error that names the path, not an unexpected OSError."""
    _tree(tmp_path)
    (tmp_path / "library/a/to-b").symlink_to("../b")
    (tmp_path / "library/b/to-a").symlink_to("../a")
    with pytest.raises(LibraryError, match=r"to-[ab]: cannot read it \(Too many levels"):
        manifest.write(tmp_path, "library", DEST)
    assert not (tmp_path / DEST).exists()


@pytest.mark.parametrize("when", ["now", "past", "future", "same size"])
def test_a_page_edited_by_hand_before_the_build_is_made_again_whatever_its_mtime(
    tmp_path: Path, when: str
) -> None:
    """The edit is told from the build's writes by its ctime (no tool sets it), not its
    mtime: set back, forward or to what it was, the page is still made again."""
    site = _Site(tmp_path)
    manifest.rebuild(tmp_path, "site", site)
    page = site.folder / "b.html"
    before = page.stat()
    page.write_text("edited by hand" if when != "same size" else "page b.htmX", encoding="utf-8")
    if when == "past":
        os.utime(page, ns=(before.st_atime_ns - 10**12, before.st_mtime_ns - 10**12))
    elif when == "future":
        os.utime(page, ns=(before.st_atime_ns + 10**12, before.st_mtime_ns + 10**12))
    elif when == "same size":  # the size as it was, an mtime a second on
        os.utime(page, ns=(before.st_atime_ns, before.st_mtime_ns + 10**9))
    (site.folder / "extra.html").write_text("someone's", encoding="utf-8")
    # The first build saw the edited page; it was removed and the second made it again.
    assert manifest.rebuild(tmp_path, "site", site) == ["a.html", "c.html", "extra.html"]
    assert site.builds == 3
    assert page.read_text(encoding="utf-8") == "page b.html"
    assert (site.folder / "extra.html").is_file()  # not the build's: left alone, now listed
    assert manifest.check(tmp_path, "site", manifest.PATHS["site"]).clean


def test_a_page_touched_or_rewritten_by_the_build_is_not_made_again(tmp_path: Path) -> None:
    site = _Site(tmp_path)
    manifest.rebuild(tmp_path, "site", site)
    os.utime(site.folder / "a.html", ns=(1, 1))  # touched: its bytes are the listed ones
    (site.folder / "b.html").write_text("edited by hand", encoding="utf-8")
    site.fresh = {"b.html"}  # … and written again by the build: the build's bytes stand
    manifest.rebuild(tmp_path, "site", site)
    assert site.builds == 2
    assert (site.folder / "b.html").read_text(encoding="utf-8") == "page b.html build 2"
    assert manifest.check(tmp_path, "site", manifest.PATHS["site"]).clean


@pytest.mark.parametrize("why", ["coarse clock", "manifest edited", "no stat cache copy"])
def test_without_its_own_manifest_or_a_fine_clock_the_files_are_compared_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, why: str
) -> None:
    site = _Site(tmp_path)
    manifest.rebuild(tmp_path, "site", site)
    dest = tmp_path / manifest.PATHS["site"]
    if why == "coarse clock":
        monkeypatch.setattr(manifest, "_clock_mark", lambda root: None)
    elif why == "manifest edited":
        dest.write_bytes(dest.read_bytes().replace(b"\t11\t", b"\t12\t"))
    else:
        manifest._cache_path(tmp_path, manifest._cache_name(manifest.PATHS["site"]),
                             ".tsv").unlink()  # fmt: skip
    (site.folder / "b.html").write_text("edited by hand", encoding="utf-8")
    seen = manifest.rebuild(tmp_path, "site", site)
    assert site.builds == 2 and "b.html" not in seen  # removed before the one build
    assert (site.folder / "b.html").read_text(encoding="utf-8") == "page b.html"
    assert manifest.check(tmp_path, "site", manifest.PATHS["site"]).clean


def test_the_clock_mark_is_after_every_change_before_it(tmp_path: Path) -> None:
    before = tmp_path / "before"
    before.write_text("x", encoding="utf-8")
    mark = manifest._clock_mark(tmp_path)
    assert mark is not None and before.stat().st_ctime_ns < mark
    after = tmp_path / "after"
    after.write_text("y", encoding="utf-8")
    assert after.stat().st_ctime_ns >= mark


def _hashes(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The files read and hashed from now on (relative to library/)."""
    seen: list[str] = []
    real = manifest._sha256

    def counting(path: Path) -> str:
        text = path.as_posix()
        seen.append(text[text.rindex("/library/") + 1 :])
        return real(path)

    monkeypatch.setattr(manifest, "_sha256", counting)
    return seen


def test_only_files_whose_path_or_stat_changed_are_hashed_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The per-file cache is matched by (path, size, mtime, inode) as a whole: a changed
    file, an added one and a renamed one (same size, mtime and inode, another path) are
    read; nothing else is, and the manifest is a scan from nothing's, byte for byte."""
    _tree(tmp_path)
    (tmp_path / "library/c.md").write_text("see", encoding="utf-8")
    manifest.write(tmp_path, "library", DEST)
    seen = _hashes(monkeypatch)
    a = tmp_path / "library/a/transcript.md"
    st = os.stat(a)
    a.write_text("HELLO\n", encoding="utf-8")  # same size
    os.utime(a, ns=(st.st_atime_ns, st.st_mtime_ns + 1))
    (tmp_path / "library/new.md").write_text("new", encoding="utf-8")
    os.rename(tmp_path / "library/c.md", tmp_path / "library/d.md")
    manifest.write(tmp_path, "library", DEST)
    assert sorted(seen) == ["library/a/transcript.md", "library/d.md", "library/new.md"]
    got = (tmp_path / DEST).read_bytes()
    seen.clear()
    assert manifest.render(manifest.scan(tmp_path, "library")) == got  # every file hashed
    assert len(seen) == 5
    seen.clear()
    manifest.write(tmp_path, "library", DEST)  # nothing changed: nothing read
    assert seen == []


def _cached(root: Path) -> tuple[bytes, Path, list[list[bytes]]]:
    """A library manifest written: its bytes, its per-file cache and the cache's records
    (each a list of its five fields: path, size, mtime, inode, SHA-256)."""
    _tree(root)
    manifest.write(root, "library", DEST)
    cache = next((root / manifest.CACHE_DIR).glob("*.stats"))
    data = cache.read_bytes()
    assert data.startswith(manifest.CACHE_HEADER) and data.endswith(b"\0")
    fields = data[len(manifest.CACHE_HEADER) : -1].split(b"\0")
    return (root / DEST).read_bytes(), cache, [fields[i : i + 5] for i in range(0, len(fields), 5)]


def _records(cache: Path, records: list[list[bytes]]) -> None:
    cache.write_bytes(manifest.CACHE_HEADER + b"".join(b"\0".join(r) + b"\0" for r in records))


@pytest.mark.parametrize(
    ("damage", "read"),
    [
        ("duplicate path", ["b/deep/x.json", "a/transcript.md"]),  # which digest is whose?
        ("unfinished record", ["b/deep/x.json"]),
        ("digest not hex", ["b/deep/x.json", "a/transcript.md"]),
        ("short digest", ["b/deep/x.json", "a/transcript.md"]),
        ("size not digits", ["b/deep/x.json", "a/transcript.md"]),
        ("records out of order", ["b/deep/x.json", "a/transcript.md", ".gitkeep"]),
        ("another header", ["b/deep/x.json", "a/transcript.md", ".gitkeep"]),
        ("the older layout", ["b/deep/x.json", "a/transcript.md", ".gitkeep"]),
    ],
)
def test_a_damaged_per_file_cache_costs_only_the_reads_of_its_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, damage: str, read: list[str]
) -> None:
    """A record that cannot be trusted is never used: its file is read and hashed again (and
    only its file, but for a cache whose layout is not this one), and the manifest is what a
    scan from nothing makes."""
    want, cache, records = _cached(tmp_path)
    assert [r[0] for r in records] == [b".gitkeep", b"a/transcript.md", b"b/deep/x.json"]
    if damage == "duplicate path":  # the same key twice, another file's digest under one
        records.insert(2, [*records[1][:4], records[0][4]])
    elif damage == "unfinished record":
        records[-1] = records[-1][:3]
    elif damage == "digest not hex":
        records[1][4] = b"g" * 64
    elif damage == "short digest":
        records[1][4] = records[1][4][:-2]
    elif damage == "size not digits":
        records[1][1] = b"+" + records[1][1]
    elif damage == "records out of order":  # only the first is then met in path order
        records.reverse()
    _records(cache, records)
    if damage == "unfinished record":
        cache.write_bytes(cache.read_bytes()[:-1])  # not even its last field ended
    elif damage == "another header":
        cache.write_bytes(cache.read_bytes().replace(b"cache 3", b"cache 9", 1))
    elif damage == "the older layout":  # a cache of before this one: not read, then removed
        old = cache.with_suffix(".json")
        old.write_text(json.dumps({"format": 2, "paths": [], "sha256": ""}), encoding="utf-8")
        cache.unlink()
    (tmp_path / "library/b/deep/x.json").write_text("{ }", encoding="utf-8")  # not the quick path
    seen = _hashes(monkeypatch)
    manifest.write(tmp_path, "library", DEST)
    assert sorted(seen) == sorted(f"library/{p}" for p in read)
    assert not list((tmp_path / manifest.CACHE_DIR).glob("*.json"))
    seen.clear()
    (tmp_path / "library/b/deep/x.json").write_text("{}", encoding="utf-8")
    manifest.write(tmp_path, "library", DEST)
    assert (tmp_path / DEST).read_bytes() == want
    assert seen == ["library/b/deep/x.json"]  # the cache written then is whole again


def _folders_by_rule(library: bytes) -> set[str]:
    """The item folders of a manifest of library/, by the rule itself, from every line split:
    each folder with a ``metadata.json``, none under a hidden folder nor inside another."""
    found = sorted(
        line.split(b"\t", 2)[-1].decode()[: -len("/metadata.json")]
        for line in library.splitlines()
        if line.endswith(b"/metadata.json")
    )
    out: set[str] = set()
    for folder in found:
        parts = folder.split("/")
        if any(p.startswith(".") for p in parts):
            continue
        if not any("/".join(parts[:i]) in out for i in range(1, len(parts))):
            out.add(folder)
    return out


def _set_reference(old: dict[str, bytes], new: dict[str, bytes]) -> set[str] | None:
    """What :func:`manifest.changed_items` names, by the rule, from the set of every line of
    each side: the item folder of each line one side holds and the other does not; None when
    one belongs to no item and to no hidden folder."""
    folders = _folders_by_rule(old["library"]) | _folders_by_rule(new["library"])
    changed: set[str] = set()
    for name in new:
        for line in set(old.get(name, b"").splitlines()) ^ set(new[name].splitlines()):
            parts = line.split(b"\t", 2)[-1].decode().split("/")
            owner = next(
                (f for i in range(1, len(parts)) if (f := "/".join(parts[:i])) in folders), None
            )
            if owner is not None:
                changed.add(owner)
            elif not any(p.startswith(".") for p in parts[:-1]):
                return None
    return changed


@pytest.mark.parametrize("seed", range(40))
def test_changed_items_in_one_pass_name_what_every_line_compared_names(seed: int) -> None:
    """The two manifests are compared in one pass in path order, not as sets of every line:
    the same items for every kind of change (an item added, removed, a file added, removed,
    edited — another digest or size), and, were a side not in path order, never fewer."""
    rnd = random.Random(seed)

    def library(items: dict[str, dict[str, bytes]]) -> dict[str, bytes]:
        sides: dict[str, list[tuple[str, bytes]]] = {"library": [], "extracted": []}
        for folder, files in items.items():
            for name, line in files.items():
                side = "extracted" if name.startswith("x-") else "library"
                sides[side].append((f"{folder}/{name}", line))
        return {side: b"".join(line for _, line in sorted(rows)) for side, rows in sides.items()}

    def line(path: str) -> bytes:
        return f"{rnd.choice('0123456789abcdef') * 64}\t{rnd.randint(1, 9)}\t{path}\n".encode()

    names = ["metadata.json", "transcript.md", "x-claims.md", "x-evidence.jsonl", "zz.txt"]
    items: dict[str, dict[str, bytes]] = {}
    for n in range(rnd.randint(0, 12)):
        folder = f"t/{rnd.choice(['A', 'a', 'Ä', 'b b', 'B-'])}{n} (c{n})"
        kept = [m for m in names if m == names[0] or rnd.random() < 0.7]
        items[folder] = {m: line(f"{folder}/{m}") for m in kept}
    old = library(items)
    for folder in list(items):
        roll = rnd.random()
        if roll < 0.1:
            del items[folder]
        elif roll < 0.3:
            name = rnd.choice(names[1:])
            items[folder][name] = line(f"{folder}/{name}")  # added or edited
        elif roll < 0.4 and len(items[folder]) > 1:
            del items[folder][rnd.choice([m for m in items[folder] if m != names[0]])]
    if rnd.random() < 0.3:
        items[f"t/new{seed} (n)"] = {names[0]: line(f"t/new{seed} (n)/{names[0]}")}
    new = library(items)
    want = _set_reference(old, new)
    assert manifest.changed_items(old, new) == want
    shuffled = {k: b"".join(rnd.sample(v.splitlines(keepends=True), v.count(b"\n")))
                for k, v in old.items()}  # fmt: skip
    got = manifest.changed_items(shuffled, new)
    assert want is not None and got is not None and got >= want


def test_a_manifest_is_made_without_a_table_of_every_file(tmp_path: Path) -> None:
    """One file changed among 6,000: the manifest is made from the sorted walk and the
    per-file cache read beside it, a block at a time. What it allocates at its peak stays
    within a few hundred bytes a file — the walk's strings, the digests and the manifest —
    where a set and a dict of the cache's records took ≈ 1 KB a file (docs/scale.md,
    "Manifests in bounded memory")."""
    import tracemalloc

    files = 6000
    for n in range(files):
        folder = tmp_path / "library" / "talks" / f"Talk {n // 6:05d} (c{n // 6:010x})"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"part-{n % 6}.json").write_bytes(b"%d" % n)
    manifest.write(tmp_path, "library", DEST)
    changed = tmp_path / "library/talks/Talk 00500 (c00000001f4)/part-3.json"
    changed.write_bytes(b"edited")
    tracemalloc.start()
    try:
        body = manifest.manifest_bytes(tmp_path, "library", manifest._cache_name(DEST))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert body.count(b"\n") == files and b"part-3.json" in body
    assert body == manifest.render(manifest.scan(tmp_path, "library"))
    assert peak / files < 600, f"{peak / files:.0f} bytes a file"


@pytest.mark.parametrize(
    ("name", "shown"),
    [
        (b"bad\xff.md", "bad\\xff.md"),  # not UTF-8
        (b"two\nlines.md", "two\\nlines.md"),  # a manifest line per file
        (b"folder\xfe/in.md", "folder\\xfe"),  # a folder's name
    ],
)
def test_a_name_no_manifest_line_can_hold_is_refused_naming_it(
    tmp_path: Path, name: bytes, shown: str
) -> None:
    """Such a name was an `unexpected error: UnicodeEncodeError` naming no file, or a
    manifest line cut in two (every item then planned, every run). Now the walk stops with
    an error naming the file, its bytes escaped, and writes nothing; renamed, it is listed."""
    _tree(tmp_path)
    manifest.write(tmp_path, "library", DEST)
    before = (tmp_path / DEST).read_bytes()
    path = os.path.join(os.fsencode(tmp_path / "library/a"), name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as fh:
        fh.write(b"x")
    with pytest.raises(LibraryError) as err:
        manifest.write(tmp_path, "library", DEST)
    assert f"library/a/{shown}" in str(err.value) and "rename" in str(err.value)
    assert (tmp_path / DEST).read_bytes() == before
    with pytest.raises(LibraryError):
        manifest.snapshot(tmp_path, ("library",), {})
    top = os.path.join(os.fsencode(tmp_path / "library/a"), name.split(b"/")[0])
    os.rename(top, os.fsencode(tmp_path / "library/a/renamed"))
    assert manifest.write(tmp_path, "library", DEST)
    assert b"a/renamed" in (tmp_path / DEST).read_bytes()


def _full(root: Path, folder: str = "library") -> bytes:
    """The manifest of ``root/folder`` by a whole walk, without any cache."""
    return manifest.render(manifest.scan(root, folder))


@pytest.mark.parametrize("seed", range(6))
def test_a_spliced_manifest_is_the_whole_walks_for_the_folders_written(
    tmp_path: Path, seed: int
) -> None:
    # Issue 17: a stage that wrote only some item folders walks those alone. Names that sort
    # right around a folder's (a sibling "b c", "b-x", "b.x", "bc", "bé", a file "b0") and a
    # hidden folder: the run replaced is exactly the folder's, whatever the other names.
    rng = random.Random(seed)
    names = ["a", "b", "b c", "b-x", "b.x", "bc", "bé", "b/z", "c/d", "ünï", ".hidden"]
    lib = tmp_path / "library"

    def fill(folder: str, count: int) -> None:
        for i in range(count):
            path = lib / folder / rng.choice(["", "sub/", "sub/deeper/"]) / f"f{i}.txt"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(f"{folder} {i} {rng.random()}\n", encoding="utf-8")

    for name in names:
        fill(name, rng.randint(0, 4))
    (lib / "b0").write_text("a file named like a folder's neighbour\n", encoding="utf-8")
    old = _full(tmp_path)
    # Some folders written: files added, edited, removed; one folder removed, one new.
    written = rng.sample(["a", "b", "b c", "bc", "b/z", "c/d", "ünï"], 3)
    for name in written:
        for path in sorted((lib / name).rglob("*")):
            if path.is_file() and rng.random() < 0.4:
                path.unlink()
            elif path.is_file() and rng.random() < 0.5:
                path.write_text("edited\n", encoding="utf-8")
        fill(name, rng.randint(0, 3))
    import shutil

    shutil.rmtree(lib / written[0])
    (lib / "new" / "one").mkdir(parents=True)
    (lib / "new" / "one" / "x.md").write_text("new\n", encoding="utf-8")
    assert manifest.spliced(tmp_path, "library", old, [*written, "new/one", "gone"]) == _full(
        tmp_path
    )
    # Every folder named, nested ones ("b" and "b/z") and their neighbours among them.
    every = manifest.spliced(tmp_path, "library", old, [*names, "new/one", "b/z/", "/a"])
    assert every == _full(tmp_path)
    # Files outside the folders named are not walked: an edit there keeps its old line.
    (lib / "a" / "late.txt").parent.mkdir(parents=True, exist_ok=True)
    (lib / "a" / "late.txt").write_text("late\n", encoding="utf-8")
    again = manifest.spliced(tmp_path, "library", old, [])
    assert again == old
    assert manifest.spliced(tmp_path, "library", b"", ["a"]) == b"".join(
        line + b"\n"
        for line in _full(tmp_path).splitlines()
        if line.split(b"\t")[2].startswith(b"a/")
    )


def test_a_spliced_manifest_refuses_a_name_no_line_can_hold(tmp_path: Path) -> None:
    (tmp_path / "library" / "a").mkdir(parents=True)
    bad = os.fsencode(tmp_path / "library" / "a") + b"/bad\xffname"
    with open(bad, "wb") as fh:
        fh.write(b"x")
    with pytest.raises(LibraryError, match="not UTF-8"):
        manifest.spliced(tmp_path, "library", b"", ["a"])


def test_published_reads_the_manifests_back_or_walks_when_one_is_gone(tmp_path: Path) -> None:
    _tree(tmp_path)
    now = manifest.snapshot(tmp_path, ("library",), {"v": 1})
    now.publish(tmp_path)
    (tmp_path / "library/a/transcript.md").write_text("changed\n", encoding="utf-8")
    (tmp_path / "library/b/deep/x.json").write_text("[]", encoding="utf-8")
    # Only a/ walked again: b/'s line is the one published.
    got = manifest.published(tmp_path, ("library",), {"v": 1}, fresh={"library": ["a"]})
    kept = manifest.published(tmp_path, ("library",), {"v": 1}, fresh={"extracted": ["a"]})
    assert kept.manifests == now.manifests and kept.digest == now.digest
    lines = got.manifests["library"].decode().splitlines()
    assert [line.split("\t")[1:] for line in lines] == [
        ["0", ".gitkeep"],
        ["8", "a/transcript.md"],
        ["2", "b/deep/x.json"],
    ]
    assert got.digest != now.digest
    # The digest is what a snapshot of the same manifests gives (a seal compares the two).
    same = manifest.snapshot(tmp_path, (), {"v": 1}, given={"library": got.manifests["library"]})
    assert same.digest == got.digest
    (tmp_path / manifest.PATHS["library"]).unlink()
    walked = manifest.published(tmp_path, ("library",), {"v": 1}, fresh={"library": ["a"]})
    assert walked.manifests["library"] == _full(tmp_path)


def test_a_plan_from_the_published_manifests_walks_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "library/a").mkdir(parents=True)
    (tmp_path / "library/b").mkdir(parents=True)
    for item in ("a", "b"):
        (tmp_path / f"library/{item}/metadata.json").write_text("{}", encoding="utf-8")
    assert manifest.planned(tmp_path, "s", ("library",), {"v": 1}) is None  # none published
    manifest.write_all(tmp_path, "library")
    first = manifest.planned(tmp_path, "s", ("library",), {"v": 1})
    assert first is not None and first.sealed is None and first.changes is None
    manifest.seal(tmp_path, "s", first.now, 2)
    (tmp_path / "library/b/metadata.json").write_text('{"x": 1}', encoding="utf-8")
    manifest.write_all(tmp_path, "library")

    def no_walk(*_: object) -> None:
        raise AssertionError("walked")

    monkeypatch.setattr(manifest, "_walk", no_walk)
    plan = manifest.planned(tmp_path, "s", ("library",), {"v": 1})
    assert plan is not None and plan.changes is not None
    assert (set(plan.changes.folders), plan.changes.done) == ({"b"}, 1)
    other = manifest.planned(tmp_path, "s", ("library",), {"v": 2})  # other inputs
    assert other is not None and other.sealed is None and other.changes is None


@pytest.mark.parametrize("seed", range(60))
def test_changes_among_many_items_name_what_the_rule_names(seed: int) -> None:
    """A few items changed among many (the daily case, where the lines both manifests begin
    and end with are passed over as bytes): the items and the count of the others are the
    rule's — with nested and hidden folders, stray files, changes in the first and the last
    line, lines that share their ends, and manifests without their last line break."""
    rnd = random.Random(seed)
    folders = [f"t/{rnd.choice(['A', 'a', 'Ä', 'b b', 'B-'])}{n} (c{n})" for n in range(60)]
    folders += [f"{rnd.choice(folders)}/inner{n}" for n in range(3)]  # nested: no items
    folders += [".adding-x/t", f"t/.h{seed}"]  # hidden: no items
    names = ["metadata.json", "transcript.md", "zz.txt"]

    def line(path: str, digest: str = "0", size: int = 1) -> bytes:
        return f"{digest * 64}\t{size}\t{path}\n".encode()

    files = {f"{f}/{n}": line(f"{f}/{n}") for f in folders for n in names}
    extracted = {f"{f}/claims.md": line(f"{f}/claims.md") for f in folders[:60]}

    def manifests(lib: dict[str, bytes], ext: dict[str, bytes]) -> dict[str, bytes]:
        out = {"library": b"".join(v for _, v in sorted(lib.items())),
               "extracted": b"".join(v for _, v in sorted(ext.items()))}  # fmt: skip
        if rnd.random() < 0.2:
            out = {k: v.removesuffix(b"\n") for k, v in out.items()}
        return out

    old = manifests(files, extracted)
    lib, ext = dict(files), dict(extracted)
    for _ in range(rnd.randint(1, 4)):
        roll, path = rnd.random(), rnd.choice(sorted(lib))
        if roll < 0.35:  # edited: another digest, or only the size's last digit
            lib[path] = line(path, rnd.choice("12"), rnd.choice([1, 11, 21]))
        elif roll < 0.5:
            del lib[path]
        elif roll < 0.6:
            first, last = min(lib), max(lib)
            lib[first if rnd.random() < 0.5 else last] = line(first, "3")
        elif roll < 0.7:
            folder = rnd.choice(folders)
            for n in names:
                lib.pop(f"{folder}/{n}", None)  # an item (or a nested one) removed
        elif roll < 0.8:
            added = f"t/new{rnd.randint(0, 9)} (n)"
            lib[f"{added}/metadata.json"] = line(f"{added}/metadata.json")
        elif roll < 0.9:
            ext[rnd.choice(sorted(ext))] = line("x", "4")  # an extraction edited
        elif roll < 0.95:
            lib[".gitkeep"] = line(".gitkeep", "5")  # a stray file: everything planned
        else:
            lib[f"t/.h{seed}/x.txt"] = line(f"t/.h{seed}/x.txt", "6")  # hidden: no item's
    new = manifests(lib, ext)
    want = _set_reference(old, new)
    assert manifest.changed_items(old, new) == want
    sealed = manifest.Sealed(0, old)
    got = manifest.changes(sealed, manifest.Snapshot(new, "digest"))
    if want is None:
        assert got is None
    else:
        assert got is not None and got.folders == want
        assert got.done == len(_folders_by_rule(new["library"]) - want)
    assert manifest.item_folders(new["library"]) == _folders_by_rule(new["library"])


def _split(data: bytes) -> list[bytes]:
    """The lines of ``data`` as a manifest's reader takes them (the last may lack its break)."""
    lines = data.split(b"\n")
    if lines[-1] == b"":
        lines.pop()
    return lines


@pytest.mark.parametrize("seed", range(200))
def test_the_lines_passed_over_are_whole_lines_both_hold_at_both_ends(seed: int) -> None:
    """What is left of two manifests once the bytes they begin and end with are passed over:
    the same whole lines left out of each before and after, so the lines one holds and the
    other lacks are what they were."""
    rnd = random.Random(seed)
    pool = [b"a", b"ab", b"b", b"ba", b"", b"a\tb", b"bb"]

    def text() -> bytes:
        lines = [rnd.choice(pool) for _ in range(rnd.randint(0, 8))]
        return b"\n".join(lines) + (b"\n" if lines and rnd.random() < 0.8 else b"")

    old = text()
    new = old if rnd.random() < 0.2 else text()
    if rnd.random() < 0.5 and old:  # one byte changed among the same others
        cut = rnd.randrange(len(old))
        new = old[:cut] + rnd.choice([b"", b"a", b"\n", b"b\n"]) + old[cut + 1 :]
    a, b = manifest._trimmed(old, new)
    assert len(old) - len(a) == len(new) - len(b)
    cuts = [
        p
        for p in range(len(old) - len(a) + 1)
        if old[:p] == new[:p]
        and old[p : p + len(a)] == a
        and new[p : p + len(b)] == b
        and old[p + len(a) :] == new[p + len(b) :]
    ]

    def whole_lines(p: int) -> bool:
        """The bytes before ``p`` are whole lines, and so are those after what is left."""
        tail = len(old) - p - len(a)
        after = all(
            tail == 0 or not part or whole[p + len(part) - 1] == 0x0A
            for whole, part in ((old, a), (new, b))
        )
        return (p == 0 or old[p - 1] == 0x0A) and after

    assert any(whole_lines(p) for p in cuts), (old, new, a, b)
    Lines = Counter[bytes]
    lost: Lines = Counter(_split(old)) - Counter(_split(new))
    got: Lines = Counter(_split(new)) - Counter(_split(old))
    assert Counter(_split(a)) - Counter(_split(b)) == lost
    assert Counter(_split(b)) - Counter(_split(a)) == got


@pytest.mark.parametrize("seed", range(4))
def test_after_a_splice_of_many_files_the_next_walk_reads_none_of_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    """Issue 17: a stage that wrote many item folders (a first build, an import) spliced their
    lines into the manifest without telling the per-file cache, so the next whole walk — a
    no-op's — read and hashed every one of those files again (6.6 s against 1.7 at 10,000
    items). From :data:`manifest.SPLICE_CACHED_MIN` files the spliced records are merged into
    the cache: the next walk hashes nothing and gives a whole walk's manifest; below it, or
    with no cache of this layout to merge into, the cache is left as it was."""
    rng = random.Random(seed)
    monkeypatch.setattr(manifest, "SPLICE_CACHED_MIN", 3)
    names = ["a", "b", "b c", "b-x", "b.x", "bc", "bé", "b/z", "c/d", "ünï", ".hidden"]
    lib = tmp_path / "library"

    def fill(folder: str, count: int) -> None:
        for i in range(count):
            path = lib / folder / rng.choice(["", "sub/"]) / f"f{i}.txt"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(f"{folder} {i} {rng.random()}\n", encoding="utf-8")

    for name in names:
        fill(name, rng.randint(1, 4))
    manifest.write(tmp_path, "library", DEST)  # the walk that made the cache
    old = (tmp_path / DEST).read_bytes()
    stats = manifest._cache_path(tmp_path, manifest._cache_name(DEST))
    before = stats.read_bytes()
    written = rng.sample(["b", "b c", "bc", "b/z", "c/d", "ünï"], 3)
    for name in written:
        for path in sorted((lib / name).rglob("*")):
            if path.is_file() and rng.random() < 0.3:
                path.unlink()
        fill(name, 4)  # rewritten, and more
    (lib / "new").mkdir()
    (lib / "new" / "x.md").write_text("new\n", encoding="utf-8")
    seen = _hashes(monkeypatch)
    data = manifest.spliced(tmp_path, "library", old, [*written, "new"])
    assert data == _full(tmp_path)
    spliced_files = list(seen)
    assert len(spliced_files) >= 3
    assert stats.read_bytes() != before  # merged
    seen.clear()
    manifest.write(tmp_path, "library", DEST)
    assert seen == []  # nothing read again
    assert (tmp_path / DEST).read_bytes() == data
    # Below the threshold: the cache is left as it is, and the next walk reads those files.
    monkeypatch.setattr(manifest, "SPLICE_CACHED_MIN", len(spliced_files) + 100)
    merged = stats.read_bytes()
    (lib / "new" / "x.md").write_text("newer\n", encoding="utf-8")
    seen.clear()
    assert manifest.spliced(tmp_path, "library", data, ["new"]) == _full(tmp_path)
    assert stats.read_bytes() == merged
    seen.clear()
    manifest.write(tmp_path, "library", DEST)
    assert seen == ["library/new/x.md"]
    # No cache to merge into (removed, or of another layout): none is made by the splice.
    monkeypatch.setattr(manifest, "SPLICE_CACHED_MIN", 1)
    stats.write_bytes(b"an older layout\n")
    (lib / "new" / "x.md").write_text("newest\n", encoding="utf-8")
    assert manifest.spliced(tmp_path, "library", _full(tmp_path), ["new"]) == _full(tmp_path)
    assert stats.read_bytes() == b"an older layout\n"
    stats.unlink()
    assert manifest.spliced(tmp_path, "library", _full(tmp_path), ["new"]) == _full(tmp_path)
    assert not stats.exists()
