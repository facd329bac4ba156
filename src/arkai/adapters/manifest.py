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

import bisect
import hashlib
import json
import os
import re
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import BinaryIO, TypeVar

from arkai.adapters.beside import Beside
from arkai.adapters.fs import (
    atomic_write,
    atomic_write_bytes,
    printable_path,
    sweep_temp,
    write_if_changed,
)
from arkai.core.hashing import DIGEST_PREFIX, file_digest
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


#: One file as the walk found it: ``path\0size\0mtime_ns\0inode``, its path relative to the
#: folder and ``/``-separated (``\0`` is the one character no path holds). One string a file,
#: not a tuple of four objects (half the memory), that sorts by path; its lines (``\n`` after
#: each, in walk order) are what :func:`_fingerprint` digests.
Key = str


def _walk(folder: Path, *, split: bool = False) -> list[Key]:
    """Every regular file under ``folder`` (links followed, as DVC does; a link to a folder
    that holds it is refused) as its :data:`Key`, unsorted but always in the same order for
    the same tree.

    One ``scandir`` per folder and one ``stat`` per file, with plain strings: at 10,000 items
    (about 100,000 files) this walk is most of what a stage with nothing to do costs. The
    folders are listed level by level until :data:`SPLIT_FOLDERS` are waiting; the waiting
    ones are then walked depth first in two halves (alternate folders, so that siblings of
    one kind share out evenly), one after the other — or, with ``split``, the second half in
    a forked child (:class:`~arkai.adapters.beside.Beside`, which runs it in this process
    where it cannot fork) while this process walks the first (site/ at 10,000 items is
    ≈ 21,000 folders of one page each). The files come out in the same order either way."""
    found: list[Key] = []
    level = [(str(folder), "")]
    while level and len(level) < SPLIT_FOLDERS:
        below: list[tuple[str, str]] = []
        for path, prefix in level:
            _list(path, prefix, found, below)
        level = below
    mine, theirs = level[1::2], level[0::2]
    if split and len(level) >= SPLIT_FOLDERS:  # (Beside runs it here where it cannot fork)
        with Beside("walk", lambda _report: _walk_from(theirs, [])) as other:
            other.start()
            _walk_from(mine, found)
            found += other.join()
        return found
    _walk_from(mine, found)
    return _walk_from(theirs, found)


#: How many folders :func:`_walk` lists level by level before it walks the rest in halves.
SPLIT_FOLDERS = 64


def _walk_from(todo: list[tuple[str, str]], found: list[Key]) -> list[Key]:
    """Walk the folders ``todo`` (``(path, prefix)``) depth first, their files appended to
    ``found`` (returned)."""
    todo = todo[::-1]  # (popped from the end: the first folder first)
    while todo:
        below: list[tuple[str, str]] = []
        path, prefix = todo.pop()
        _list(path, prefix, found, below)
        todo += below[::-1]
    return found


def _list(path: str, prefix: str, found: list[Key], folders: list[tuple[str, str]]) -> None:
    """One folder: its files appended to ``found``, its folders to ``folders``."""
    try:
        with os.scandir(path) as listing:
            entries = list(listing)
    except FileNotFoundError:
        return  # no folder (yet), or one removed while walking
    except OSError as exc:
        raise LibraryError(
            f"{printable_path(path)}: cannot list the folder ({exc.strerror})"
        ) from exc
    for entry in entries:
        name = entry.name
        if name[0] == "." and _ignored(name):
            if name.endswith(".tmp"):
                sweep_temp(entry)  # one a killed writer left (not if its writer runs)
            continue
        if not name.isascii() or "\n" in name:
            _check_name(entry.path)
        try:
            if entry.is_dir():
                if entry.is_symlink() and _leads_back(entry.path):
                    raise LibraryError(
                        f"{printable_path(entry.path)}: a link to a folder that holds it (the "
                        "folder would be listed without end)",
                        hint="remove the link, or make it point elsewhere",
                    )
                folders.append((entry.path, f"{prefix}{name}/"))
            elif entry.is_file():
                st = entry.stat()
                found.append(f"{prefix}{name}\0{st.st_size}\0{st.st_mtime_ns}\0{st.st_ino}")
        except FileNotFoundError:
            continue  # removed while walking
        except OSError as exc:  # a link that cannot be followed (a loop of links), no access
            raise LibraryError(
                f"{printable_path(entry.path)}: cannot read it ({exc.strerror})"
            ) from exc


def _leads_back(path: str) -> bool:
    """Whether the link to a folder at ``path`` points at the folder it is in or one above."""
    target = os.path.realpath(path)
    here = os.path.realpath(os.path.dirname(path))
    return here == target or here.startswith(target.rstrip(os.sep) + os.sep)


def _check_name(path: str) -> None:
    """Refuse a name a manifest line cannot hold: one with a line break (the manifest is one
    line a file) or bytes that are not UTF-8 (its lines are UTF-8 text). The error names the
    file, those bytes escaped; nothing is written."""
    shown = printable_path(path)  # the same string when every byte is UTF-8
    if shown == path and "\n" not in path:
        return
    shown = shown.replace("\n", "\\n")
    raise LibraryError(
        f"{shown}: a file name with a line break or bytes that are not UTF-8 cannot be listed "
        "in the folder's manifest",
        hint="rename or move it",
    )


def _sha256(path: Path) -> str:
    with open(path, "rb") as fh:
        return file_digest(fh, _CHUNK).removeprefix(DIGEST_PREFIX)


def _cache_path(root: Path, name: str, suffix: str = ".stats") -> Path:
    return root / CACHE_DIR / f"{name}{suffix}"


def _cache_name(dest: Path) -> str:
    return dest.as_posix().replace("/", "__")


#: The per-file cache (``<name>.stats``): this line, then one record per file of the last
#: scan, in path order: ``path\0size\0mtime\0inode\0sha256\0`` (every field ends with ``\0``,
#: which no path holds). It is read a block at a time beside the sorted walk, never whole:
#: holding the last scan's records as a set and a dict took about 600 bytes a file, and the
#: extract stage at 100,000 items walks about 900,000 (docs/scale.md, "Manifests in bounded
#: memory"). Caches of the earlier layouts (``<name>.json``) are not read: the first scan after
#: the upgrade hashes every file once.
CACHE_HEADER = b"arkai manifest stat cache 3\n"
_HEX = re.compile(rb"[0-9a-f]{64}")
_FIELDS = 5
_CACHE_BLOCK = 1 << 16  # ≈ 700 records: a block's fields are a list while it is read
_BATCH = 4096
#: A cache record after its key: ``\0``, the SHA-256 in hex, ``\0`` (:func:`_record`).
_RECORD_TAIL = 66


def _record(key: Key, sha: str) -> str:
    """A file's record in the per-file cache: its key and SHA-256 (hex), each ended by NUL."""
    return f"{key}\0{sha}\0"


def _cached(path: Path) -> Iterator[tuple[Key, str]]:
    """Each record of the per-file cache at ``path`` (:data:`CACHE_HEADER`) as its key and
    SHA-256, in file order; nothing when the file is missing or of another layout, and no
    more once it cannot be read. A record whose numbers are not digits or whose digest is not
    64 hex digits is skipped, and so is an unfinished one at the end: a damaged cache costs
    only the reads of its files."""
    try:
        with open(path, "rb") as fh:
            if fh.readline() == CACHE_HEADER:
                yield from _records(fh)
    except OSError:
        return


def _records(fh: BinaryIO) -> Iterator[tuple[Key, str]]:
    pending: list[bytes] = []
    tail = b""
    while block := fh.read(_CACHE_BLOCK):
        fields = (tail + block).split(b"\0")
        tail = fields.pop()
        pending += fields
        full = len(pending) - len(pending) % _FIELDS
        for i in range(0, full, _FIELDS):
            rel, size, mtime, ino, sha = pending[i : i + _FIELDS]
            if size.isdigit() and mtime.isdigit() and ino.isdigit() and _HEX.fullmatch(sha):
                key = b"\0".join((rel, size, mtime, ino)).decode("utf-8", "surrogateescape")
                yield key, sha.decode("ascii")
        del pending[:full]


def _digests(
    base: Path, keys: list[Key], cache_file: Path | None, fresh: list[int] | None = None
) -> tuple[bytearray, bool]:
    """The SHA-256 of each file of ``keys`` (sorted), 32 raw bytes each in their order, and
    whether the cache holds exactly these files. A file's digest is the cache's when a record
    has its key (path, size, mtime and inode all equal: one pass over both, in path order, no
    lookup table), else the file is read and hashed (its place appended to ``fresh``); a key
    recorded twice (whose digest is which is unknown) is read too."""
    out = bytearray(32 * len(keys))
    records = _cached(cache_file) if cache_file else iter(())
    rec = next(records, None)
    passed = 0  # records read and passed over
    hashed = False
    for i, key in enumerate(keys):
        while rec is not None and rec[0] < key:
            rec, passed = next(records, None), passed + 1
        sha = None
        if rec is not None and rec[0] == key:
            sha, rec, passed = rec[1], next(records, None), passed + 1
            if rec is not None and rec[0] == key:  # the key twice: whose digest is which?
                sha = None
        if sha is None:
            sha = _sha256(base / key.split("\0", 1)[0])
            hashed = True
            if fresh is not None:
                fresh.append(i)
        out[32 * i : 32 * i + 32] = bytes.fromhex(sha)
    held = passed + (rec is not None) + sum(1 for _ in records)
    return out, not hashed and held == len(keys)


def _rows(keys: list[Key], digests: bytearray) -> Iterator[tuple[str, str, str]]:
    """(SHA-256 hex, size, path) of each file of ``keys`` with its digest (:func:`_digests`)."""
    for i, key in enumerate(keys):
        rel, size, _ = key.split("\0", 2)
        yield digests[32 * i : 32 * i + 32].hex(), size, rel


def _save_cache(cache_file: Path, keys: list[Key], digests: bytearray) -> None:
    """Write the per-file cache (:data:`CACHE_HEADER`) of ``keys`` a batch at a time; the
    cache of an earlier layout is removed."""

    def write(fh: BinaryIO) -> None:
        fh.write(CACHE_HEADER)
        for start in range(0, len(keys), _BATCH):
            part = keys[start : start + _BATCH]
            fh.write("".join(
                _record(key, digests[32 * i : 32 * i + 32].hex())
                for i, key in enumerate(part, start)
            ).encode("utf-8", "surrogateescape"))  # fmt: skip

    atomic_write(cache_file, write, fsync=False)
    cache_file.with_suffix(".json").unlink(missing_ok=True)


def _hashed(
    base: Path, files: list[Key], cache_file: Path | None, vet: Vet | None = None
) -> bytearray:
    """Sort ``files`` (from :func:`_walk`) by path, in place, and return each one's SHA-256
    (:func:`_digests`): reused from the cache file for a file whose path, size, mtime and inode
    are those it records, read and hashed otherwise; the cache is saved when it changed —
    after ``vet`` has seen the files read and hashed (it raises to stop: nothing is saved)."""
    files.sort()
    fresh: list[int] = []
    digests, same = _digests(base, files, cache_file, fresh)
    if vet is not None:
        vet(files, digests, fresh)
    if cache_file and not same:
        _save_cache(cache_file, files, digests)
    return digests


#: What :func:`_hashed` is given to look at the files hashed afresh before anything is saved:
#: the sorted walk, every file's digest, the places of those read and hashed.
Vet = Callable[[list[Key], bytearray, list[int]], None]


def scan(root: Path, folder: str, *, cache_name: str | None = None) -> list[Entry]:
    """Every file of ``root/folder`` with its size and SHA-256, sorted by path.

    With ``cache_name``, hashes are reused for files whose size, mtime and inode are those
    recorded by the previous scan of that name, and the new records are saved.
    """
    cache_file = _cache_path(root, cache_name) if cache_name else None
    files = _walk(root / folder)
    digests = _hashed(root / folder, files, cache_file)
    return [Entry(rel, int(size), sha) for sha, size, rel in _rows(files, digests)]


def _fingerprint(files: list[Key]) -> bytes:
    """One digest of every walked file's path, size, mtime and inode, in walk order."""
    h = hashlib.sha256()
    for start in range(0, len(files), _BATCH):
        text = "\n".join(files[start : start + _BATCH]) + "\n"
        h.update(text.encode("utf-8", "surrogateescape"))
    return h.hexdigest().encode("ascii")


def manifest_bytes(
    root: Path, folder: str, cache_name: str, *, vet: Vet | None = None, split: bool = False
) -> bytes:
    """The manifest of ``root/folder`` (:func:`render` of :func:`scan`), cheaply when nothing
    changed: when every file has the size, mtime and inode of the last call (one digest of
    all of them, in walk order), the manifest then made is returned as it is — no per-file
    record is looked up; otherwise the walk is sorted and matched with the per-file cache.
    ``vet`` sees the files read and hashed afresh before the caches are saved (it raises to
    stop: nothing is saved then); ``split``: the walk over two processes (:func:`_walk`)."""
    files = _walk(root / folder, split=split)
    mark = _fingerprint(files)
    quick = _cache_path(root, cache_name, ".tsv")
    try:
        with open(quick, "rb") as fh:
            if fh.readline() == mark + b"\n":
                return fh.read()
    except OSError:
        pass  # no record yet
    digests = _hashed(root / folder, files, _cache_path(root, cache_name), vet)
    pieces = _pieces(_rows(files, digests))  # no Entry per file
    del files, digests  # (the walk's strings go before the manifest is joined)
    body = b"".join(pieces)
    del pieces

    def write(fh: BinaryIO) -> None:
        fh.write(mark + b"\n")
        fh.write(body)

    atomic_write(quick, write, fsync=False)
    return body


def _path_bytes(line: bytes) -> bytes:
    return line.split(b"\t", 2)[-1]


def _first_at(data: bytes, key: bytes) -> int:
    """Where in ``data`` (manifest lines, each ended by ``\\n``, in path order) the first line
    whose path is not before ``key`` starts (``len(data)`` when none is): a binary search over
    the bytes, no list of lines made."""
    lo, hi = 0, len(data)  # lo: a line's start, every line before it before the key
    while lo < hi:
        mid = (lo + hi) // 2
        start = data.rfind(b"\n", lo, mid) + 1 or lo
        end = data.find(b"\n", start)
        end = len(data) if end == -1 else end
        if _path_bytes(data[start:end]) < key:
            lo = end + 1
        else:
            hi = start
    return min(lo, len(data))


def spliced(root: Path, folder: str, data: bytes, under: Iterable[str]) -> bytes:
    """``data``, a manifest of ``root/folder``, with the lines of the files under each of
    ``under`` (folders relative to ``root/folder``, ``/``-separated: the item folders a stage
    has just written or removed) replaced by the files there now, walked and hashed as
    :func:`manifest_bytes` walks them; every other line kept as it is. For a stage that knows
    which folders it wrote, the manifest a whole walk would give when nothing else changed,
    for the cost of walking those folders (issue 17: the walk after the extract stage's work
    was ≈ 0.7 s at 10,000 items).

    A manifest's lines are in path order, and a name is UTF-8 (:func:`_check_name`), whose
    byte order is its code points' order: the lines under a folder are one run of lines, found
    by binary search (``0xff``, in no UTF-8 text, ends it) — the manifest is never split into
    lines (at 100,000 items extracted/'s is ≈ 80 MB)."""
    # In the order of their lines: by the folder's path with its slash ("b c/" before "b/").
    folders = sorted({rel.strip("/") for rel in under}, key=lambda rel: rel + "/")
    if "" in folders:  # the whole folder
        return manifest_bytes(root, folder, _cache_name(PATHS.get(folder, Path(folder))))
    if data and not data.endswith(b"\n"):
        data += b"\n"
    pieces: list[bytes] = []
    at = 0
    outer: str | None = None
    walked: list[str] = []
    hashed: list[str] = []  # each file's stat cache record (one string: ≈ 130 bytes a file)
    for rel in folders:
        if outer is not None and rel.startswith(outer + "/"):
            continue  # inside the folder walked just before (its lines are among that one's)
        outer = rel
        walked.append(rel + "/")
        prefix = rel.encode("utf-8", "surrogateescape") + b"/"
        lo = _first_at(data, prefix)
        hi = _first_at(data, prefix + b"\xff")
        files = [f"{rel}/{key}" for key in _walk(root / folder / rel)]
        files.sort()
        pieces.append(data[at:lo])
        for key in files:
            path, size, _ = key.split("\0", 2)
            sha = _sha256(root / folder / path)
            hashed.append(_record(key, sha))
            pieces.append(f"{sha}\t{size}\t{path}\n".encode("utf-8", "surrogateescape"))
        at = max(at, hi)
    pieces.append(data[at:])
    if len(hashed) >= SPLICE_CACHED_MIN:
        hashed.sort()  # by key: a key ends with digits and the record goes on with a NUL
        cache = _cache_path(root, _cache_name(PATHS.get(folder, Path(folder))))
        _merge_cache(cache, walked, hashed)
    return b"".join(pieces)


#: Files :func:`spliced` hashed from which their records go into the folder's stat cache, so
#: that the next whole walk (a no-op's) reads none of them again — after a first build or an
#: import, every file the run wrote: ≈ 60,000 at 10,000 items, a first no-op of 6.6 s where
#: the next took 1.7 (issue 17). Rewriting the cache costs about what hashing this many small
#: files does, so the daily loop's few files are left to the next walk (milliseconds).
SPLICE_CACHED_MIN = 2048


def _merge_cache(cache_file: Path, under: list[str], fresh: list[str]) -> None:
    """The per-file cache at ``cache_file`` (:data:`CACHE_HEADER`) with its records of files
    under the folders ``under`` (paths with their slash, none inside another) replaced by
    ``fresh`` (records as the cache holds them, ``key\\0sha256\\0``, sorted): the old records
    streamed and merged, never held whole. No cache there (or not of this layout): nothing is
    written — the next walk makes it."""
    try:
        with open(cache_file, "rb") as fh:
            if fh.readline() != CACHE_HEADER:
                return
    except OSError:
        return
    starts = sorted(under)

    def inside(path: str) -> bool:
        i = bisect.bisect_right(starts, path) - 1
        return i >= 0 and path.startswith(starts[i])

    def write(fh: BinaryIO) -> None:
        fh.write(CACHE_HEADER)
        at = 0
        out: list[str] = []
        for key, sha in _cached(cache_file):
            if inside(key.split("\0", 1)[0]):
                continue  # replaced by the files there now
            while at < len(fresh) and fresh[at][:-_RECORD_TAIL] < key:
                out.append(fresh[at])
                at += 1
            out.append(_record(key, sha))
            if len(out) >= _BATCH:
                fh.write("".join(out).encode("utf-8", "surrogateescape"))
                out.clear()
        out.extend(fresh[at:])
        fh.write("".join(out).encode("utf-8", "surrogateescape"))

    atomic_write(cache_file, write, fsync=False)


def render(entries: list[Entry]) -> bytes:
    """The manifest's bytes: one ``sha256\\tsize\\tpath`` line per file, sorted by path."""
    return _rendered((e.sha256, e.size, e.path) for e in entries)


def _rendered(rows: Iterable[tuple[str, int | str, str]]) -> bytes:
    """The manifest lines of ``(sha256, size, path)`` rows, in their order."""
    return b"".join(_pieces(rows))


def _pieces(rows: Iterable[tuple[str, int | str, str]]) -> list[bytes]:
    """:func:`_rendered`'s bytes in pieces of a batch of lines each (never a string per line
    of the whole manifest)."""
    pieces: list[bytes] = []
    batch: list[str] = []
    for digest, size, path in rows:
        batch.append(f"{digest}\t{size}\t{path}\n")
        if len(batch) == _BATCH:
            pieces.append("".join(batch).encode())
            batch.clear()
    pieces.append("".join(batch).encode())
    return pieces


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


def published(
    root: Path,
    folders: tuple[str, ...],
    inputs: object,
    *,
    given: dict[str, bytes] | None = None,
    fresh: Mapping[str, Iterable[str]] | None = None,
) -> Snapshot:
    """The :class:`Snapshot` of ``folders`` as their manifests were last published
    (:meth:`Snapshot.publish`, :data:`PATHS`); in the manifest of each folder ``fresh`` has,
    the lines of the files under the (item) folders it names walked again (:func:`spliced`);
    with ``given`` and ``inputs`` as for :func:`snapshot`. What a stage that planned from a
    snapshot, published it and then wrote only those item folders makes of its outputs — the
    other manifests stay as planned (a folder the stage read, walked again, would record a
    change made after it read the files). A manifest gone or unreadable meanwhile is made by
    a whole walk."""
    manifests: dict[str, bytes] = {}
    for folder in folders:
        try:
            data = (root / PATHS[folder]).read_bytes()
        except OSError:
            manifests[folder] = manifest_bytes(root, folder, _cache_name(PATHS[folder]))
            continue
        wanted = (fresh or {}).get(folder)
        manifests[folder] = data if wanted is None else spliced(root, folder, data, wanted)
    manifests.update(given or {})
    blob = json.dumps(inputs, sort_keys=True, default=str).encode("utf-8")
    return Snapshot(manifests, _digest(blob, manifests), blob)


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


def _result_path(root: Path, stage: str) -> Path:
    return root / CACHE_DIR / f"{stage}.done.result"


def seal(root: Path, stage: str, now: Snapshot, items: int, result: bytes | None = None) -> None:
    """Record that ``stage`` ran completely (every item done, none failed) ending with ``now``:
    its digest, and a copy of each manifest (what :func:`sealed_run` compares the next run's
    with, item by item) — and ``result``, what the stage made of them when its outputs are not
    files of its own (``validate``'s verdicts), with its digest. The record is written last,
    so a torn seal is no seal."""
    for folder, data in now.manifests.items():
        write_if_changed(_copy_path(root, stage, folder), data, fsync=False)
    record: dict[str, object] = {"digest": now.digest, "items": items,
                                 "folders": list(now.manifests)}  # fmt: skip
    if result is not None:
        write_if_changed(_result_path(root, stage), result, fsync=False)
        record["result"] = hashlib.sha256(result).hexdigest()
    atomic_write_bytes(_seal_path(root, stage), json.dumps(record).encode("utf-8"), fsync=False)


def seal_as_planned(
    root: Path, stage: str, folders: tuple[str, ...], inputs: object, planned: str, items: int,
    result: bytes | None = None,
) -> bool:  # fmt: skip
    """:func:`seal` a run that planned from the published manifests of ``folders`` (its
    :class:`Plan`'s snapshot digest ``planned``) without holding them through its work: they
    are read again, and the run is sealed only when their digest with ``inputs`` is still
    ``planned`` — else (written again meanwhile) the last seal is forgotten, so the next run
    looks at every item. Whether it sealed."""
    now = published_snapshot(root, folders, inputs)
    if now is None or now.digest != planned:
        unseal(root, stage)
        return False
    seal(root, stage, now, items, result)
    return True


def unseal(root: Path, stage: str) -> None:
    """Forget ``stage``'s last complete run (its next run works through every item)."""
    _seal_path(root, stage).unlink(missing_ok=True)
    for copy in (root / CACHE_DIR).glob(f"{stage}.done.*.tsv"):
        copy.unlink(missing_ok=True)
    _result_path(root, stage).unlink(missing_ok=True)


@dataclass(frozen=True)
class Sealed:
    """``stage``'s last complete run: how many items it saw and the manifests it ended with."""

    items: int
    manifests: dict[str, bytes]
    result: bytes | None = None
    """What :func:`seal` was given as the run's result (its digest checked); None without."""


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
        result = None
        if "result" in data:
            result = _result_path(root, stage).read_bytes()
            if hashlib.sha256(result).hexdigest() != data["result"]:
                return None
        if data.get("digest") == now.digest:  # nothing changed: the copies are these bytes
            return Sealed(items, now.manifests, result)
        copies = {str(f): _copy_path(root, stage, str(f)).read_bytes() for f in folders}
    except (OSError, ValueError, KeyError, TypeError):
        return None  # no record (a fresh clone) or a damaged one
    if _digest(now.inputs, copies) != data.get("digest"):
        return None
    return Sealed(items, copies, result)


def _each_line(data: bytes) -> Iterator[bytes]:
    """The lines of a manifest (ended by ``\\n``, as :func:`read` splits them), one at a time:
    never a list or set of every line (≈ 900,000 of them at 100,000 items)."""
    start, find = 0, data.find
    while (end := find(b"\n", start)) != -1:
        yield data[start:end]
        start = end + 1
    if start < len(data):
        yield data[start:]


def _differing(old: bytes, new: bytes) -> Iterator[bytes]:
    """The lines of one manifest that the other does not hold, in one pass over both in path
    order (both are sorted by path): a line is compared with the other's line of its path,
    and a path is decoded only where the two lines differ. The whole lines both begin with
    and both end with are passed over first, compared as bytes (:func:`_trimmed`): for a few
    changed items, the pass is over the few lines between. Never misses a line: a line that
    only one holds never equals a line of the other; were either not in path order, lines
    both hold might be yielded too (more items planned, none missed)."""
    old, new = _trimmed(old, new)
    a, b = _each_line(old), _each_line(new)
    x, y = next(a, None), next(b, None)
    while x is not None and y is not None:
        if x == y:
            x, y = next(a, None), next(b, None)
            continue
        px, py = _path(x), _path(y)
        if px <= py:
            yield x
            x = next(a, None)
        if py <= px:
            yield y
            y = next(b, None)
    if x is not None:
        yield x
        yield from a
    if y is not None:
        yield y
        yield from b


_BLOCK = 1 << 16


def _trimmed(old: bytes, new: bytes) -> tuple[bytes, bytes]:
    """``old`` and ``new`` without the whole lines both begin with and the whole lines both
    end with: the same lines left out of each (as many, in the same order), so what one holds
    and the other does not is what it was. A block of bytes at a time, then halving the
    block that differs: a few milliseconds for two manifests of 10 MB."""
    n = min(len(old), len(new))
    start = _same_for(old, new, n, 1)
    start = old.rfind(b"\n", 0, start) + 1  # back to the start of its line (0: none)
    tail = _same_for(old, new, n - start, -1)
    if tail:
        a, b = len(old) - tail, len(new) - tail
        if not ((a == start or old[a - 1] == 0x0A) and (b == start or new[b - 1] == 0x0A)):
            # Not a line's start in both: from the first line break inside it (the same
            # bytes in both, so at the same place in each).
            cut = old.find(b"\n", a)
            tail = len(old) - cut - 1 if cut != -1 else 0
    return old[start : len(old) - tail], new[start : len(new) - tail]


def _same_for(old: bytes, new: bytes, limit: int, way: int) -> int:
    """How many bytes (at most ``limit``) ``old`` and ``new`` share from their start (``way``
    1) or from their end (``way`` -1)."""

    def span(x: bytes, lo: int, hi: int) -> bytes:  # slices: compared as memory is
        return x[lo:hi] if way == 1 else x[len(x) - hi : len(x) - lo]

    lo = 0
    while lo < limit:
        hi = min(limit, lo + _BLOCK)
        if span(old, lo, hi) != span(new, lo, hi):
            break
        lo = hi
    else:
        return limit
    # The first ``lo`` bytes agree, the first ``hi`` do not: halve the block between.
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if span(old, lo, mid) == span(new, lo, mid):
            lo = mid
        else:
            hi = mid
    return lo


def _path(line: bytes) -> str:
    return line.split(b"\t", 2)[-1].decode("utf-8", "surrogateescape")


_METADATA = b"/metadata.json"


def _item_paths(library: bytes) -> set[bytes]:
    """:func:`item_folders` as the manifest's bytes (UTF-8, not decoded): each
    ``…/metadata.json`` line found by searching the bytes, not by splitting every line
    (≈ 8 ms for a manifest of 10,000 items where the lines one at a time took ≈ 25)."""
    found: list[bytes] = []
    find, rfind = library.find, library.rfind
    key = _METADATA + b"\n"
    at = 0
    while (end := find(key, at)) != -1:
        found.append(_path_bytes(library[rfind(b"\n", 0, end) + 1 : end]))
        at = end + len(key)
    if library.endswith(_METADATA):  # the last line, without its line break
        found.append(_path_bytes(library[rfind(b"\n") + 1 : -len(_METADATA)]))
    found.sort()  # UTF-8's byte order is its code points': a folder before those inside it
    out: set[bytes] = set()
    for folder in found:
        if folder.startswith(b".") or b"/." in folder:
            continue  # under a hidden folder
        cut = folder.find(b"/")
        while cut != -1 and folder[:cut] not in out:
            cut = folder.find(b"/", cut + 1)
        if cut == -1:  # inside no other item's folder
            out.add(folder)
    return out


def item_folders(library: bytes) -> set[str]:
    """The item folders (relative to library/) of a manifest of library/: each folder holding a
    ``metadata.json``, as :func:`arkai.adapters.layout.scan_items` finds them — not inside
    another item's folder, none under a hidden folder."""
    return {p.decode("utf-8", "surrogateescape") for p in _item_paths(library)}


def changed_items(old: dict[str, bytes], new: dict[str, bytes]) -> set[str] | None:
    """The item folders (relative to library/, ``/``-separated) with a line of any of the
    manifests (``library``, and ``extracted`` or ``condensed``: the same relative paths) added,
    removed or changed from ``old`` to ``new`` — items added and removed included. None when a
    changed line belongs to no item folder of either (a stray file): then plan everything.
    Lines under hidden folders, which no item reader enters, are not items' files."""
    every = _item_paths(old["library"]) | _item_paths(new["library"])
    found = _changed(old, new, every)
    return None if found is None else {p.decode("utf-8", "surrogateescape") for p in found}


def _changed(
    old: dict[str, bytes], new: dict[str, bytes], folders: set[bytes]
) -> set[bytes] | None:
    lines = (line for name in new for line in _differing(old.get(name, b""), new[name]))
    return _owners(lines, folders)


def _owners(lines: Iterable[bytes], folders: set[bytes]) -> set[bytes] | None:
    """The item folders (of ``folders``, :func:`_item_paths`) that hold the files of manifest
    ``lines``; None as soon as one belongs to none (:func:`changed_items`)."""
    changed: set[bytes] = set()
    for line in lines:
        path = _path_bytes(line)
        cut = path.find(b"/")
        while cut != -1 and path[:cut] not in folders:
            cut = path.find(b"/", cut + 1)
        if cut != -1:
            changed.add(path[:cut])
            continue
        folder = path[: path.rfind(b"/") + 1]  # its folders, each with its slash
        if not (folder.startswith(b".") or b"/." in folder):
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
    before, library = sealed.manifests["library"], now.manifests["library"]
    present = _item_paths(library)
    every = present if before == library else _item_paths(before) | present
    folders = _changed(sealed.manifests, now.manifests, every)
    if folders is None:
        return None
    decoded = frozenset(p.decode("utf-8", "surrogateescape") for p in folders)
    return Changes(decoded, len(present - folders))


@dataclass(frozen=True)
class Plan:
    """A stage's plan from the manifests the stages before it published (:func:`planned`):
    the manifests now with the stage's inputs, its last complete run with the same inputs
    (or None) and the items that may have changed since (None: plan every item)."""

    now: Snapshot
    sealed: Sealed | None
    changes: Changes | None


def planned(root: Path, stage: str, folders: tuple[str, ...], inputs: object) -> Plan | None:
    """The plan of a stage that depends on the manifests of ``folders`` as the stages before
    it published them (:data:`PATHS`, DVC's dependencies of the stage — not walked again):
    :func:`sealed_run` and :func:`changes` of their snapshot with ``inputs``. None when one of
    them is missing (the stage then looks at every item)."""
    now = published_snapshot(root, folders, inputs)
    if now is None:
        return None
    sealed = sealed_run(root, stage, now)
    return Plan(now, sealed, changes(sealed, now))


def published_snapshot(root: Path, folders: tuple[str, ...], inputs: object) -> Snapshot | None:
    """The snapshot of the manifests of ``folders`` as the stages before a stage published
    them (read, not walked) with ``inputs``; None when one is missing. A stage that plans
    from them may read them again when it ends, to seal its run without holding them: the
    same digest as its plan's means the same bytes."""
    given: dict[str, bytes] = {}
    for folder in folders:
        try:
            given[folder] = (root / PATHS[folder]).read_bytes()
        except OSError:
            return None
    return snapshot(root, (), inputs, given=given)


def rebuild(root: Path, folder: str, build: Callable[[], T]) -> T:
    """Run ``build`` (which writes ``root/folder``) so that its manifest can be trusted: a
    derived folder's files edited by hand since its manifest was written are removed, so that
    an incremental build, which re-renders only what is missing or whose inputs changed,
    writes them again; then the manifest is written. Unchanged files are not read (the stat
    cache). Returns what the (last) build returned.

    When the manifest is the one the last run wrote, the folder is walked once, after the
    build: a file changed since that run (its size, mtime or inode) whose ctime — which no
    tool sets back — is before the build began (:func:`_clock_mark`) was changed by someone
    else, and when its bytes are not the ones listed it is removed and the build run again
    (issue 17: the walk before the build was ≈ 0.3 s of the site stage at 10,000 items).
    Otherwise — no manifest, one edited or not this folder's last, or a clock too coarse to
    tell the build's writes from earlier ones — the files are compared with the manifest
    before the build (:func:`_rebuild_compared_first`)."""
    dest = PATHS[folder]
    listed = _last_written(root, dest)
    began = _clock_mark(root) if listed is not None else None
    if listed is None or began is None:
        return _rebuild_compared_first(root, folder, build)
    for _ in range(_ROUNDS):
        result = build()
        try:
            data = manifest_bytes(root, folder, _cache_name(dest), split=True,
                                  vet=partial(_vet, root / folder, listed, began))  # fmt: skip
        except _Edited as edited:
            for rel in edited.paths:
                (root / folder / rel).unlink(missing_ok=True)
            continue  # built again: those files are made afresh (their ctime after it)
        write_if_changed(root / dest, data, fsync=False)
        return result
    return _rebuild_compared_first(root, folder, build)


#: Builds :func:`rebuild` runs before it compares every file first: the files a first build
#: found edited are removed and made by the second, so a third is never needed.
_ROUNDS = 3


class _Edited(Exception):
    """Files a build did not write that differ from the manifest (:func:`_vet`)."""

    def __init__(self, paths: list[str]) -> None:
        super().__init__(paths)
        self.paths = paths


def _vet(base: Path, listed: bytes, began: int, files: list[Key], digests: bytearray,
         fresh: list[int]) -> None:  # fmt: skip
    """Raise :class:`_Edited` naming the files hashed afresh (changed since the last manifest)
    that changed before ``began`` (their ctime) and whose bytes are not those ``listed``."""
    edited: list[str] = []
    for i in fresh:
        rel = files[i].split("\0", 1)[0]
        try:
            changed = os.stat(base / rel).st_ctime_ns
        except OSError:
            continue  # gone since the walk: not listed now
        if changed >= began:
            continue  # written since the build began
        was = _listed_digest(listed, rel)
        if was is not None and was != digests[32 * i : 32 * i + 32].hex():
            edited.append(rel)
    if edited:
        raise _Edited(edited)


def _listed_digest(manifest: bytes, rel: str) -> str | None:
    """The SHA-256 (hex) ``manifest`` lists for the file ``rel``; None when it lists none."""
    key = rel.encode("utf-8", "surrogateescape")
    at = _first_at(manifest, key)
    end = manifest.find(b"\n", at)
    line = manifest[at : len(manifest) if end == -1 else end]
    if line and _path_bytes(line) == key:
        return line[:64].decode("ascii", "replace")
    return None


def _last_written(root: Path, dest: Path) -> bytes | None:
    """The manifest at ``root/dest`` when it is the one :func:`manifest_bytes` last made for
    it (the stat cache's copy); None otherwise (missing, edited, written by another means)."""
    try:
        data = (root / dest).read_bytes()
        with open(_cache_path(root, _cache_name(dest), ".tsv"), "rb") as fh:
            fh.readline()
            kept = fh.read()
    except OSError:
        return None
    return data if kept == data else None


def _clock_mark(root: Path, wait_s: float = 0.1) -> int | None:
    """A ctime (ns) that every change to a file from now on bears or passes, and no change
    before now reaches: the ctime of a file touched once the file system's clock has moved
    past the ctime of one touched before (a few milliseconds). None when it does not move
    within ``wait_s`` (a coarse clock) or the file cannot be written."""
    path = root / CACHE_DIR / "clock"
    deadline = time.monotonic() + wait_s
    first: int | None = None
    try:
        if not path.is_file():
            atomic_write_bytes(path, b"", fsync=False)
        while True:
            os.utime(path)  # its times set to now: its ctime too
            now = os.stat(path).st_ctime_ns
            if first is None:
                first = now
            elif now > first:
                return now
            if time.monotonic() > deadline:
                return None
            time.sleep(0.0005)
    except OSError:
        return None


def _rebuild_compared_first(root: Path, folder: str, build: Callable[[], T]) -> T:
    """:func:`rebuild` with the files compared with the manifest before the build: those that
    differ are removed; then the build, then the manifest written."""
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
