"""Folder manifests: one small file that names every file of a folder with its hash.

DVC decides what to rerun by hashing every dependency and output of every stage on each
``dvc repro``; a folder costs a walk and a state-database lookup per file and per directory,
for each stage that lists it. So the pipeline hashes each big folder once: the stage that
writes (or first reads) a folder writes its manifest, a DVC output of a few bytes per file, and
the stages downstream depend on that file instead of the folder (docs/scale.md). A manifest
changes exactly when a file of the folder is added, removed or changed, so DVC reruns what it
reran before.

A manifest is text, one line per file, sorted by path::

    <sha256 hex>\\t<bytes>\\t<path relative to the folder, with />

Files are hashed again only when their size, modification time or inode changed since the last
manifest of the folder (the cache in ``.arkai/manifests/``, as DVC's own state database does),
so writing the manifest of an unchanged folder reads no file. :func:`check` compares a folder
with its manifest (a page deleted or edited by hand).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from arkai.adapters.fs import atomic_write_bytes, write_if_changed
from arkai.errors import LibraryError

#: Where the stat cache of each manifest lives, relative to the repo root (gitignored).
CACHE_DIR = Path(".arkai") / "manifests"
_CHUNK = 1 << 20
T = TypeVar("T")


@dataclass(frozen=True)
class Entry:
    path: str
    size: int
    sha256: str


@dataclass(frozen=True)
class Difference:
    """How a folder differs from its manifest (paths relative to the folder)."""

    missing: tuple[str, ...]
    changed: tuple[str, ...]
    extra: tuple[str, ...]

    @property
    def clean(self) -> bool:
        return not (self.missing or self.changed or self.extra)


def _ignored(name: str) -> bool:
    """What the repo's .dvcignore leaves out: OS litter and unfinished temp files."""
    return (
        name == ".DS_Store"
        or name.startswith(".adding-")
        or (name.startswith(".") and name.endswith(".tmp"))
    )


#: One file as the walk found it: path relative to the folder, size, mtime (ns), inode.
Stat = tuple[str, int, int, int]


def _walk(folder: Path) -> list[Stat]:
    """Every regular file under ``folder`` (symlinks followed, as DVC does), unsorted.

    One ``scandir`` per folder and one ``stat`` per file, with plain strings: at 10,000 items
    (about 100,000 files) this walk is most of what a stage with nothing to do costs."""
    found: list[Stat] = []
    todo = [(str(folder), "")]
    while todo:
        path, prefix = todo.pop()
        try:
            with os.scandir(path) as listing:
                entries = list(listing)
        except FileNotFoundError:
            continue  # no folder (yet), or one removed while walking
        except OSError as exc:
            raise LibraryError(f"{path}: cannot list the folder ({exc.strerror})") from exc
        for entry in entries:
            name = entry.name
            if name[0] == "." and _ignored(name):
                continue
            if entry.is_dir():
                todo.append((entry.path, f"{prefix}{name}/"))
            elif entry.is_file():
                st = entry.stat()
                found.append((prefix + name, st.st_size, st.st_mtime_ns, st.st_ino))
    return found


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(_CHUNK):
            h.update(chunk)
    return h.hexdigest()


def _cache_path(root: Path, name: str, suffix: str = ".json") -> Path:
    return root / CACHE_DIR / f"{name}{suffix}"


def _cache_name(dest: Path) -> str:
    return dest.as_posix().replace("/", "__")


#: The per-file cache's layout: the files of the last scan as columns (paths sorted; their
#: SHA-256s one string of 64 hex digits each).
CACHE_FORMAT = 2


def _load_cache(path: Path) -> tuple[set[Stat], dict[str, str]]:
    """The files of the last scan of a folder (as :func:`_walk` gives them) and their
    digests; nothing when the cache is missing or damaged (every file is then hashed again).
    Reads the columns of :data:`CACHE_FORMAT` and the older one record per path."""
    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError, RecursionError):
        return set(), {}
    if not isinstance(data, dict):
        return set(), {}
    if data.get("format") == CACHE_FORMAT:
        cols: list[Any] = [data.get(k) for k in ("paths", "sizes", "mtimes", "inodes")]
        joined = data.get("sha256")
        if not all(isinstance(c, list) and len(c) == len(cols[0]) for c in cols):
            return set(), {}
        if not isinstance(joined, str) or len(joined) != 64 * len(cols[0]):
            return set(), {}
        paths, sizes, mtimes, inodes = cols
        digests = [joined[i : i + 64] for i in range(0, len(joined), 64)]
        # A value of another type in the other columns only never equals a walked file's.
        try:
            stats = set(zip(paths, sizes, mtimes, inodes, strict=True))
            found = dict(zip(paths, digests, strict=True))
        except TypeError:  # an unhashable value
            return set(), {}
        if len(found) != len(paths):  # a path twice: which digest is whose is unknown
            return set(), {}
        return stats, found
    stats, found = set(), {}
    for rel, rec in data.items():  # format 1: path → [size, mtime, inode, sha256]
        if (isinstance(rec, list) and len(rec) == 4 and all(type(v) is int for v in rec[:3])
                and isinstance(rec[3], str)):  # fmt: skip
            stats.add((rel, rec[0], rec[1], rec[2]))
            found[rel] = rec[3]
    return stats, found


def _hashed(
    base: Path, files: list[Stat], cache_file: Path | None
) -> tuple[list[Stat], dict[str, str]]:
    """``files`` (from :func:`_walk`) sorted by path, and each one's SHA-256: reused from the
    cache file for a file whose path, size, mtime and inode are those it records (found with
    set operations, not a lookup per file), read and hashed otherwise; the cache is saved
    when a file changed."""
    old, known = _load_cache(cache_file) if cache_file else (set(), {})
    fresh = set(files) - old  # added or changed since the last scan
    digests = known
    for rel, *_ in fresh:
        digests[rel] = _sha256(base / rel)
    ordered = sorted(files)
    if cache_file and (fresh or len(old) != len(files)):
        paths = [f[0] for f in ordered]
        doc = {
            "format": CACHE_FORMAT,
            "paths": paths,
            "sizes": [f[1] for f in ordered],
            "mtimes": [f[2] for f in ordered],
            "inodes": [f[3] for f in ordered],
            # One string (each digest is 64 hex digits): parsed at once, not 60,000 times.
            "sha256": "".join([digests[p] for p in paths]),
        }
        atomic_write_bytes(cache_file, json.dumps(doc, separators=(",", ":")).encode(), fsync=False)
    return ordered, digests


def _hash(base: Path, files: list[Stat], cache_file: Path | None) -> list[Entry]:
    """``files`` (from :func:`_walk`) with their SHA-256, sorted by path (:func:`_hashed`)."""
    ordered, digests = _hashed(base, files, cache_file)
    return [Entry(rel, size, digests[rel]) for rel, size, _, _ in ordered]


def scan(root: Path, folder: str, *, cache_name: str | None = None) -> list[Entry]:
    """Every file of ``root/folder`` with its size and SHA-256, sorted by path.

    With ``cache_name``, hashes are reused for files whose size, mtime and inode are those
    recorded by the previous scan of that name, and the new records are saved.
    """
    cache_file = _cache_path(root, cache_name) if cache_name else None
    return _hash(root / folder, _walk(root / folder), cache_file)


def _fingerprint(files: list[Stat]) -> bytes:
    h = hashlib.sha256()
    for rel, size, mtime, ino in files:
        h.update(f"{rel}\0{size}\0{mtime}\0{ino}\n".encode("utf-8", "surrogateescape"))
    return h.hexdigest().encode("ascii")


def manifest_bytes(root: Path, folder: str, cache_name: str) -> bytes:
    """The manifest of ``root/folder`` (:func:`render` of :func:`scan`), cheaply when nothing
    changed: when every file has the size, mtime and inode of the last call (one digest of
    all of them, in walk order), the manifest then made is returned as it is — no per-file
    record is looked up; otherwise :func:`scan` with its per-file cache."""
    files = _walk(root / folder)
    mark = _fingerprint(files)
    quick = _cache_path(root, cache_name, ".tsv")
    try:
        head, _, body = quick.read_bytes().partition(b"\n")
        if head == mark:
            return body
    except OSError:
        pass  # no record yet
    ordered, digests = _hashed(root / folder, files, _cache_path(root, cache_name))
    body = _rendered((digests[rel], size, rel) for rel, size, _, _ in ordered)  # no Entry per file
    atomic_write_bytes(quick, mark + b"\n" + body, fsync=False)
    return body


def render(entries: list[Entry]) -> bytes:
    """The manifest's bytes: one ``sha256\\tsize\\tpath`` line per file, sorted by path."""
    return _rendered((e.sha256, e.size, e.path) for e in entries)


def _rendered(rows: Iterable[tuple[str, int, str]]) -> bytes:
    """The manifest lines of ``(sha256, size, path)`` rows, in their order."""
    return "".join(f"{digest}\t{size}\t{path}\n" for digest, size, path in rows).encode()


def write(root: Path, folder: str, dest: Path) -> bool:
    """Write the manifest of ``root/folder`` to ``dest`` (relative to ``root``) atomically.

    The file is left untouched when its content is the same, so DVC sees no change and its
    state entry stays valid. Returns True when it was written.
    """
    data = manifest_bytes(root, folder, _cache_name(dest))
    return write_if_changed(root / dest, data, fsync=False)


def read(path: Path) -> list[Entry]:
    """The entries of a manifest file; a clear error naming it when a line is malformed."""
    try:
        text = path.read_bytes().decode("utf-8")
    except FileNotFoundError as exc:
        raise LibraryError(f"{path}: no manifest (run `dvc repro` to write it)") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise LibraryError(f"{path}: cannot read the manifest ({exc})") from exc
    entries = []
    # Lines end at \n only: a file name may hold U+2028, which str.splitlines splits at.
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    for number, line in enumerate(lines, 1):
        parts = line.split("\t")
        if len(parts) != 3 or len(parts[0]) != 64 or not parts[1].isdigit():
            raise LibraryError(f"{path}:{number}: not a manifest line (sha256, bytes, path)")
        entries.append(Entry(parts[2], int(parts[1]), parts[0]))
    return entries


def up_to_date(root: Path, folder: str) -> bool:
    """Whether ``root/folder`` is what its manifest (:data:`PATHS`) lists — False when there
    is none. Unchanged files are not read (the stat cache)."""
    dest = PATHS[folder]
    try:
        written = (root / dest).read_bytes()
    except OSError:
        return False
    return manifest_bytes(root, folder, _cache_name(dest)) == written


def check(root: Path, folder: str, manifest: Path, *, cached: bool = False) -> Difference:
    """Compare ``root/folder`` with the manifest at ``root/manifest``, hashing every file — or,
    with ``cached``, only those whose size, mtime or inode changed (the stat cache)."""
    listed = {e.path: e for e in read(root / manifest)}
    name = _cache_name(manifest) if cached else None
    present = {e.path: e for e in scan(root, folder, cache_name=name)}
    return Difference(
        missing=tuple(sorted(listed.keys() - present.keys())),
        changed=tuple(sorted(p for p in listed.keys() & present.keys() if listed[p] != present[p])),
        extra=tuple(sorted(present.keys() - listed.keys())),
    )


#: The manifest of each folder that the pipeline hashes once, relative to the repo root: the
#: stage named in dvc.yaml writes it as a DVC output, the stages downstream depend on it.
PATHS = {
    folder: Path("index") / "manifests" / f"{folder}.tsv"
    for folder in ("library", "extracted", "condensed", "site")
}


def write_all(root: Path, *folders: str) -> None:
    """Write the manifest (:data:`PATHS`) of each of ``folders`` under ``root``."""
    for folder in folders:
        write(root, folder, PATHS[folder])


@dataclass(frozen=True)
class Snapshot:
    """The manifests of some folders as the files are now (:func:`snapshot`), and their
    digest together with a stage's other inputs (its params, the digests of its patterns)."""

    manifests: dict[str, bytes]
    digest: str
    inputs: bytes = b""
    """The stage's other inputs as JSON (keys sorted): what :func:`sealed_run` compares."""

    def publish(self, root: Path, *folders: str) -> None:
        """Write the manifest of each of ``folders`` (default: all) to its place
        (:data:`PATHS`), only where its bytes changed: a deleted one is written again, an
        unchanged one keeps DVC's state entry."""
        for folder in folders or tuple(self.manifests):
            write_if_changed(root / PATHS[folder], self.manifests[folder], fsync=False)


def _digest(inputs: bytes, manifests: dict[str, bytes]) -> str:
    h = hashlib.sha256(inputs)
    for folder, data in manifests.items():
        h.update(b"\0" + folder.encode("utf-8") + b"\0" + data)
    return h.hexdigest()


def snapshot(
    root: Path, folders: tuple[str, ...], inputs: object, *, given: dict[str, bytes] | None = None
) -> Snapshot:
    """The manifests of ``folders`` (stat cache: unchanged files are not read) and one digest of
    them with ``inputs`` (anything JSON can write; keys sorted). ``given`` adds manifests read
    elsewhere (condense takes library/'s from the file extract wrote), digested after them."""
    manifests = {f: manifest_bytes(root, f, _cache_name(PATHS[f])) for f in folders}
    manifests.update(given or {})
    blob = json.dumps(inputs, sort_keys=True, default=str).encode("utf-8")
    return Snapshot(manifests, _digest(blob, manifests), blob)


def _seal_path(root: Path, stage: str) -> Path:
    return root / CACHE_DIR / f"{stage}.done.json"


def _copy_path(root: Path, stage: str, folder: str) -> Path:
    return root / CACHE_DIR / f"{stage}.done.{folder}.tsv"


def seal(root: Path, stage: str, now: Snapshot, items: int) -> None:
    """Record that ``stage`` ran completely (every item done, none failed) ending with ``now``:
    its digest, and a copy of each manifest (what :func:`sealed_run` compares the next run's
    with, item by item). The record is written last, so a torn seal is no seal."""
    for folder, data in now.manifests.items():
        write_if_changed(_copy_path(root, stage, folder), data, fsync=False)
    record = {"digest": now.digest, "items": items, "folders": list(now.manifests)}
    atomic_write_bytes(_seal_path(root, stage), json.dumps(record).encode("utf-8"), fsync=False)


def unseal(root: Path, stage: str) -> None:
    """Forget ``stage``'s last complete run (its next run works through every item)."""
    _seal_path(root, stage).unlink(missing_ok=True)
    for copy in (root / CACHE_DIR).glob(f"{stage}.done.*.tsv"):
        copy.unlink(missing_ok=True)


@dataclass(frozen=True)
class Sealed:
    """``stage``'s last complete run: how many items it saw and the manifests it ended with."""

    items: int
    manifests: dict[str, bytes]


def sealed_run(root: Path, stage: str, now: Snapshot) -> Sealed | None:
    """``stage``'s last complete run (:func:`seal`) when it ran with the inputs of ``now`` —
    then every item whose files are what that run left needs no work; None otherwise (no such
    run, other inputs, or a record or copy that does not match its digest: damaged or forged
    copies are never trusted, the stage then works through every item)."""
    try:
        data = json.loads(_seal_path(root, stage).read_bytes())
        folders = data["folders"]
        items = data["items"]
        if not (isinstance(folders, list) and isinstance(items, int)) or isinstance(items, bool):
            return None
        if sorted(map(str, folders)) != sorted(now.manifests):
            return None
        if data.get("digest") == now.digest:  # nothing changed: the copies are these bytes
            return Sealed(items, now.manifests)
        copies = {str(f): _copy_path(root, stage, str(f)).read_bytes() for f in folders}
    except (OSError, ValueError, KeyError, TypeError):
        return None  # no record (a fresh clone) or a damaged one
    if _digest(now.inputs, copies) != data.get("digest"):
        return None
    return Sealed(items, copies)


def _lines(data: bytes) -> set[bytes]:
    return set(data.splitlines())


def _path(line: bytes) -> str:
    return line.split(b"\t", 2)[-1].decode("utf-8", "surrogateescape")


def item_folders(library: bytes) -> set[str]:
    """The item folders (relative to library/) of a manifest of library/: each folder holding a
    ``metadata.json``, as :func:`arkai.adapters.layout.scan_items` finds them — not inside
    another item's folder, none under a hidden folder."""
    found = sorted(
        _path(line)[: -len("/metadata.json")]
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


def changed_items(
    old: dict[str, bytes], new: dict[str, bytes], folders: set[str] | None = None
) -> set[str] | None:
    """The item folders (relative to library/, ``/``-separated) with a line of any of the
    manifests (``library``, and ``extracted`` or ``condensed``: the same relative paths) added,
    removed or changed from ``old`` to ``new`` — items added and removed included. None when a
    changed line belongs to no item folder of either (a stray file): then plan everything.
    Lines under hidden folders, which no item reader enters, are not items' files.
    ``folders``: the item folders of both libraries, when the caller has them already."""
    if folders is None:
        folders = item_folders(old["library"]) | item_folders(new["library"])
    changed: set[str] = set()
    for name in new:
        for line in _lines(old.get(name, b"")) ^ _lines(new[name]):
            parts = _path(line).split("/")
            owner = next(
                (f for i in range(1, len(parts)) if (f := "/".join(parts[:i])) in folders), None
            )
            if owner is not None:
                changed.add(owner)
            elif not any(p.startswith(".") for p in parts[:-1]):
                return None
    return changed


@dataclass(frozen=True)
class Changes:
    """What a stage plans after its last complete run: the item folders (relative to library/)
    that may have changed since; the ``done`` other items are known to need no work."""

    folders: frozenset[str]
    done: int


def changes(sealed: Sealed | None, now: Snapshot) -> Changes | None:
    """The items that differ between ``sealed`` (:func:`sealed_run`) and ``now``, whose
    manifests must include ``library``; None (plan everything) without a sealed run or when a
    change belongs to no item (:func:`changed_items`)."""
    if sealed is None:
        return None
    if sealed.manifests == now.manifests:
        return Changes(frozenset(), sealed.items)
    present = item_folders(now.manifests["library"])
    every = item_folders(sealed.manifests["library"]) | present
    folders = changed_items(sealed.manifests, now.manifests, every)
    if folders is None:
        return None
    return Changes(frozenset(folders), len(present - folders))


def rebuild(root: Path, folder: str, build: Callable[[], T]) -> T:
    """Run ``build`` (which writes ``root/folder``) so that its manifest can be trusted.

    A derived folder's files edited by hand since its manifest was written are removed first,
    so an incremental build, which re-renders only what is missing or whose inputs changed,
    writes them again; then the manifest is written. Unchanged files are not read (the stat
    cache). Returns what ``build`` returned.
    """
    dest = PATHS[folder]
    # Nothing changed since the manifest was written (the usual case): no file to compare.
    if (root / dest).is_file() and not up_to_date(root, folder):
        listed = {e.path: e for e in read(root / dest)}
        for entry in scan(root, folder, cache_name=_cache_name(dest)):
            known = listed.get(entry.path)
            if known is not None and known != entry:
                (root / folder / entry.path).unlink(missing_ok=True)
    result = build()
    write(root, folder, dest)
    return result


if __name__ == "__main__":
    # The CI scripts (scripts/ci/): `python -m arkai.adapters.manifest library extracted …`
    # writes the manifests of the folders that exist, as the stages do, so that `dvc status`
    # and `dvc repro --single-item` in a fresh clone compare them instead of missing files.
    import sys

    here = Path.cwd()
    write_all(here, *(f for f in sys.argv[1:] if (here / f).is_dir()))
