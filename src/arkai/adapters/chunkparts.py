"""The search chunks on disk: ``index/chunks/``, one sequence of chunk lines kept in
part files (docs/index-format.md, "Chunks in parts").

The lines are the items' search chunks in catalog order, one JSON object a line; a chunk's
position in that sequence is its BM25 document number and what ``topics.json`` and the site
link to. They are stored as consecutive runs of items, each run a file named by the SHA-256 of
its bytes, and ``parts.json`` (written last) lists the files in order with their line and
byte counts. A run ends after an item whose content ID hashes to a multiple of
:data:`PART_ITEMS` (:func:`ends_part`), so the runs are a function of the items alone —
the same files whoever builds them, in any order of runs — and adding, removing or changing
an item touches only its own run: a daily run writes one part of ≈ 1 MB at 10,000 items, and
DVC caches and pushes that part only, where the whole sequence in one file (155 MB at 10,000
items) was copied into its cache on every run.

This module owns the folder's layout: :class:`ChunkParts` reads the listing and the lines
(every file through :func:`arkai.adapters.fs.open_repo_file`: a link or anything but a regular
file inside the repo is refused, a part whose size is not the listed one names itself);
:func:`write_part` and :func:`write_listing` are the index stage's writers. The digest of the
whole sequence (:attr:`ChunkParts.digest`) is the SHA-256 of the listing's bytes: the listing
names every part by its content's digest, so it changes exactly when a line does.
"""

from __future__ import annotations

import bisect
import hashlib
import json
import os
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from arkai.adapters.fs import atomic_write, open_repo_file, same_bytes, write_if_changed
from arkai.core import canonjson
from arkai.errors import LibraryError

__all__ = [
    "FOLDER",
    "LISTING",
    "PART_ITEMS",
    "ChunkParts",
    "Part",
    "ends_part",
    "is_part_name",
    "real_folder",
    "write_lines",
    "write_listing",
    "write_part",
]

#: The folder under ``index/``.
FOLDER = "chunks"
#: The listing of the parts, in order.
LISTING = "parts.json"
LISTING_VERSION = 1
#: The mean number of items in a part: a run ends after an item with probability
#: ``1 / PART_ITEMS``. 64 items are ≈ 1 MB of lines (≈ 15 KB an item at 10,000 items), ≈ 160
#: parts at 10,000 items and ≈ 1,600 at 100,000.
PART_ITEMS = 64
#: What a part file is called: the hex SHA-256 of its bytes.
_NAME = re.compile(r"[0-9a-f]{64}\.jsonl")
_HINT = "run `arkai reindex` to write index/chunks/ again"


def is_part_name(name: str) -> bool:
    """Whether ``name`` is a part file's name (``<sha256 hex>.jsonl``: no folder in it)."""
    return _NAME.fullmatch(name) is not None


def real_folder(folder: Path) -> None:
    """Make ``folder`` a real folder of its own before anything is written or removed in it:
    a link in its place (to a folder outside the repo, say) or a file is removed, never
    followed — the writers remove every file the listing does not name."""
    if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
        folder.unlink()
    folder.mkdir(parents=True, exist_ok=True)


def ends_part(content_id: str) -> bool:
    """Whether a run of items ends after the item ``content_id`` (a function of the ID alone,
    so the runs of a library do not depend on how it was built)."""
    h = hashlib.blake2b(content_id.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(h, "big") % PART_ITEMS == 0


@dataclass(frozen=True)
class Part:
    """One part file as the listing names it."""

    name: str
    """``<sha256 hex>.jsonl``: the digest of its bytes."""
    lines: int
    size: int

    @property
    def sha256(self) -> str:
        return "sha256:" + self.name.removesuffix(".jsonl")


def part_name(digest_hex: str) -> str:
    """The file name of a part whose bytes have this SHA-256 (hex)."""
    return f"{digest_hex}.jsonl"


@dataclass(frozen=True)
class ChunkParts:
    """``index/chunks/`` as its listing gives it."""

    folder: Path
    parts: tuple[Part, ...]
    digest: str
    """``sha256:`` of the listing's bytes: the digest of the whole sequence of lines."""

    @classmethod
    def load(cls, folder: Path) -> ChunkParts | None:
        """The listing of ``folder``; None when there is none. A listing that is not one (not
        JSON, another version, a name that is not a digest's, a negative count) is a
        :class:`LibraryError` naming the file."""
        path = folder / LISTING
        try:
            with open_repo_file(path, folder.parent) as fh:
                data = fh.read()
        except FileNotFoundError:
            return None
        try:
            doc = json.loads(data)
            if doc["version"] != LISTING_VERSION:
                raise ValueError(f"version {doc['version']!r}, this arkai reads {LISTING_VERSION}")
            parts = tuple(Part(str(p["name"]), int(p["lines"]), int(p["size"]))
                          for p in doc["parts"])  # fmt: skip
        except (ValueError, KeyError, TypeError, UnicodeDecodeError) as exc:
            raise LibraryError(f"{path}: not a chunk listing ({exc})", hint=_HINT) from None
        for p in parts:
            if not is_part_name(p.name) or p.lines < 0 or p.size < 0:
                raise LibraryError(f"{path}: not a chunk part: {p.name!r}", hint=_HINT)
        return cls(folder, parts, "sha256:" + hashlib.sha256(data).hexdigest())

    def open(self, part: Part) -> BinaryIO:
        """The part's file, opened for reading after :func:`open_repo_file`'s checks; one of
        another size than listed (edited, cut short) or missing is a :class:`LibraryError`
        naming it."""
        path = self.folder / part.name
        try:
            fh = open_repo_file(path, self.folder.parent)
        except FileNotFoundError:
            raise LibraryError(f"{path}: missing (listed in {LISTING})", hint=_HINT) from None
        size = os.fstat(fh.fileno()).st_size
        if size != part.size:
            fh.close()
            raise LibraryError(
                f"{path}: {size} bytes where {LISTING} lists {part.size}", hint=_HINT
            )
        return fh

    def iter_lines(self) -> Iterator[bytes]:
        """Every line, in order (each with its ``\\n``)."""
        for part in self.parts:
            with self.open(part) as fh:
                yield from _checked_lines(fh, part, self.folder)

    def lines_at(self, wanted: Iterable[int]) -> Iterator[tuple[int, bytes]]:
        """``(position, line)`` of each position in ``wanted`` (0-based) that exists, in
        order; only the parts that hold one are read."""
        todo = sorted(p for p in set(wanted) if p >= 0)
        j, first = 0, 0
        for part in self.parts:
            if j == len(todo):
                return
            end = first + part.lines
            if todo[j] < end:
                with self.open(part) as fh:
                    for pos, line in enumerate(_checked_lines(fh, part, self.folder), first):
                        if pos == todo[j]:
                            yield pos, line
                            j += 1
                            if j == len(todo) or todo[j] >= end:
                                break
            first = end

    def read_at(self, offsets: Iterable[int]) -> Iterator[tuple[int, bytes]]:
        """``(offset, line)`` of the line starting at each byte offset of the whole sequence
        (a part's start plus the line's offset in it), in the order given."""
        sizes = [0]
        for p in self.parts:
            sizes.append(sizes[-1] + p.size)
        open_part: tuple[int, BinaryIO] | None = None
        try:
            for at in offsets:
                k = bisect.bisect_right(sizes, at) - 1
                if not 0 <= k < len(self.parts):
                    raise LibraryError(f"{self.folder}: no chunk at byte {at}", hint=_HINT)
                if open_part is None or open_part[0] != k:
                    if open_part is not None:
                        open_part[1].close()
                    open_part = (k, self.open(self.parts[k]))
                fh = open_part[1]
                fh.seek(at - sizes[k])
                yield at, fh.readline()
        finally:
            if open_part is not None:
                open_part[1].close()


def _checked_lines(fh: BinaryIO, part: Part, folder: Path) -> Iterator[bytes]:
    """The part's lines; a part with another number of lines than listed, or whose last line
    has no line end, names itself."""
    n = 0
    for n, line in enumerate(fh, 1):  # noqa: B007 (n read after the loop)
        if not line.endswith(b"\n"):
            break
        yield line
    else:
        if n == part.lines:
            return
    raise LibraryError(
        f"{folder / part.name}: not the {part.lines} lines {LISTING} lists", hint=_HINT
    )


def write_part(folder: Path, write: Callable[[BinaryIO], None]) -> Part:
    """Write one part: ``write`` is given a file to write its lines to (each ending with
    ``\\n``); the file is named by its digest once written (atomically: a temp file renamed),
    or the temp file dropped when a regular file of that name already holds those bytes.
    Returns the part."""
    real_folder(folder)
    counted = _Counting()

    def body(fh: BinaryIO) -> None:
        counted.fh = fh
        write(counted)  # type: ignore[arg-type]

    def named() -> Path:
        return folder / part_name(counted.sha.hexdigest())

    atomic_write(folder / ".part", body, unless=lambda tmp: same_bytes(tmp, named()),
                 rename_to=named)  # fmt: skip
    return Part(named().name, counted.lines, counted.size)


class _Counting:
    """A file wrapper that counts and hashes what is written through it."""

    def __init__(self) -> None:
        self.fh: BinaryIO | None = None
        self.sha = hashlib.sha256()
        self.lines = 0
        self.size = 0

    def write(self, data: bytes | memoryview) -> int:
        assert self.fh is not None
        self.sha.update(data)
        self.lines += (bytes(data) if isinstance(data, memoryview) else data).count(b"\n")
        self.size += len(data)
        return self.fh.write(data)


def write_listing(folder: Path, parts: Iterable[Part]) -> tuple[str, bool]:
    """Write ``parts.json`` (atomically, only when its bytes change), then remove every file
    of the folder it does not list (parts of earlier runs, a temp file a stopped run left).
    Returns the sequence's digest and whether the listing was written."""
    listed = [{"lines": p.lines, "name": p.name, "size": p.size} for p in parts]
    data = canonjson.dumps({"parts": listed, "version": LISTING_VERSION}).encode("utf-8")
    real_folder(folder)
    written = write_if_changed(folder / LISTING, data)
    keep = {str(p["name"]) for p in listed} | {LISTING}
    for entry in os.scandir(folder):
        if entry.name not in keep:
            if entry.is_dir(follow_symlinks=False):
                continue  # not ours to remove: nothing the stage writes is a folder
            os.unlink(entry.path)
    return "sha256:" + hashlib.sha256(data).hexdigest(), written


def write_lines(folder: Path, lines: Iterable[bytes]) -> str:
    """``lines`` (each ending with ``\\n``) as one part and its listing: an index made
    outside the stage (a benchmark's, a test's), which cuts the lines by item instead
    (:func:`ends_part`). Returns the sequence's digest."""

    def write(fh: BinaryIO) -> None:
        for line in lines:
            fh.write(line)

    return write_listing(folder, [write_part(folder, write)])[0]
