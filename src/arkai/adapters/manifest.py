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
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

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


def _walk(folder: Path, prefix: str = "") -> Iterator[tuple[str, os.stat_result]]:
    """Every regular file under ``folder`` (symlinks followed, as DVC does), unsorted."""
    try:
        entries = list(os.scandir(folder))
    except FileNotFoundError:
        return
    except OSError as exc:
        raise LibraryError(f"{folder}: cannot list the folder ({exc.strerror})") from exc
    for entry in entries:
        if _ignored(entry.name):
            continue
        rel = f"{prefix}{entry.name}"
        if entry.is_dir():
            yield from _walk(Path(entry.path), rel + "/")
        elif entry.is_file():
            yield rel, entry.stat()


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(_CHUNK):
            h.update(chunk)
    return h.hexdigest()


def _cache_path(root: Path, name: str) -> Path:
    return root / CACHE_DIR / f"{name}.json"


def _cache_name(dest: Path) -> str:
    return dest.as_posix().replace("/", "__")


def _load_cache(path: Path) -> dict[str, list[int | str]]:
    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return {}  # a cache: missing or damaged means every file is hashed again
    return data if isinstance(data, dict) else {}


def scan(root: Path, folder: str, *, cache_name: str | None = None) -> list[Entry]:
    """Every file of ``root/folder`` with its size and SHA-256, sorted by path.

    With ``cache_name``, hashes are reused for files whose size, mtime and inode are those
    recorded by the previous scan of that name, and the new records are saved.
    """
    base = root / folder
    cache_file = _cache_path(root, cache_name) if cache_name else None
    old = _load_cache(cache_file) if cache_file else {}
    new: dict[str, list[int | str]] = {}
    entries = []
    for rel, st in sorted(_walk(base)):
        key: list[int | str] = [st.st_size, st.st_mtime_ns, st.st_ino]
        known = old.get(rel)
        if isinstance(known, list) and len(known) == 4 and known[:3] == key:
            digest = str(known[3])
        else:
            digest = _sha256(base / rel)
        new[rel] = [*key, digest]
        entries.append(Entry(rel, st.st_size, digest))
    if cache_file and new != old:
        atomic_write_bytes(cache_file, json.dumps(new, separators=(",", ":")).encode(), fsync=False)
    return entries


def render(entries: list[Entry]) -> bytes:
    """The manifest's bytes: one ``sha256\\tsize\\tpath`` line per file, sorted by path."""
    return "".join(f"{e.sha256}\t{e.size}\t{e.path}\n" for e in entries).encode("utf-8")


def write(root: Path, folder: str, dest: Path) -> bool:
    """Write the manifest of ``root/folder`` to ``dest`` (relative to ``root``) atomically.

    The file is left untouched when its content is the same, so DVC sees no change and its
    state entry stays valid. Returns True when it was written.
    """
    entries = scan(root, folder, cache_name=_cache_name(dest))
    return write_if_changed(root / dest, render(entries), fsync=False)


def read(path: Path) -> list[Entry]:
    """The entries of a manifest file; a clear error naming it when a line is malformed."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise LibraryError(f"{path}: no manifest (run `dvc repro` to write it)") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise LibraryError(f"{path}: cannot read the manifest ({exc})") from exc
    entries = []
    for number, line in enumerate(text.splitlines(), 1):
        parts = line.split("\t")
        if len(parts) != 3 or len(parts[0]) != 64 or not parts[1].isdigit():
            raise LibraryError(f"{path}:{number}: not a manifest line (sha256, bytes, path)")
        entries.append(Entry(parts[2], int(parts[1]), parts[0]))
    return entries


def check(root: Path, folder: str, manifest: Path) -> Difference:
    """Compare ``root/folder`` with the manifest at ``root/manifest``, hashing every file."""
    listed = {e.path: e for e in read(root / manifest)}
    present = {e.path: e for e in scan(root, folder)}
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


def then_write(result: T, root: Path, *folders: str) -> T:
    """``result``, once the manifests of ``folders`` are written: a stage script's operation
    is ``lambda repo, bar: then_write(op(repo, …), repo.root, "folder")``."""
    write_all(root, *folders)
    return result


def rebuild(root: Path, folder: str, build: Callable[[], T]) -> T:
    """Run ``build`` (which writes ``root/folder``) so that its manifest can be trusted.

    A derived folder's files edited by hand since its manifest was written are removed first,
    so an incremental build, which re-renders only what is missing or whose inputs changed,
    writes them again; then the manifest is written. Unchanged files are not read (the stat
    cache). Returns what ``build`` returned.
    """
    dest = PATHS[folder]
    if (root / dest).is_file():
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
