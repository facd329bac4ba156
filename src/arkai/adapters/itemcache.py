"""The index stage's per-item cache: what it derives from one item's files (chunks, phrase
counts, graph contributions), keyed by a digest of those files, so an unchanged item is not
read, chunked or analysed again (docs/index-format.md, "Incremental builds").

Canonical JSON files per item and part, ``.arkai/index-cache/<2 chars>/<content id>.<part>.json``
(local and derived like the rest of ``.arkai/``: git-ignored, not a DVC output, rebuilt when
absent): a header line, then the data, each one line of canonical JSON::

    {"digest": "sha256:…", "key": "sha256:…", "version": 1}
    {…}

``key`` is the caller's digest of the item's inputs; ``digest`` is the SHA-256 of the bytes
after the header line (checked before they are parsed). An entry is used only when it parses,
has this version, the expected key and a matching digest — anything else (a truncated file, an
edited one, a stale one) is a miss that the caller rebuilds and :attr:`ItemCache.rejected`
counts; it is never used.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, BinaryIO, TypeVar

from arkai.adapters.fs import atomic_write, atomic_write_bytes, atomic_write_text
from arkai.core import canonjson
from arkai.core.hashing import file_digest

CACHE_DIR = Path(".arkai") / "index-cache"

T = TypeVar("T")
CACHE_VERSION = 1


def _digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _safe(content_id: str) -> str:
    """The content id as the entries' file names hold it."""
    return "".join(c for c in content_id if c.isalnum() or c in "-_") or "_"


class ItemCache:
    """Digest-checked per-item entries under ``<root>/.arkai/index-cache``."""

    def __init__(self, root: Path) -> None:
        self.folder = root / CACHE_DIR
        self.hits = 0
        self.misses = 0
        self.rejected = 0
        """Entries that existed but failed a check (damaged or stale): rebuilt, not used."""

    def path(self, content_id: str, part: str) -> Path:
        safe = _safe(content_id)
        return self.folder / safe[:2] / f"{safe}.{part}.json"

    def get(self, content_id: str, key: str, part: str) -> dict[str, Any] | None:
        """The entry's data when it is intact and made from inputs with this ``key``."""
        body = self.get_bytes(content_id, key, part)
        if body is None:
            return None
        try:
            data = json.loads(body.decode("utf-8"))
        except (ValueError, UnicodeDecodeError):
            data = None
        if not isinstance(data, dict):
            self.hits -= 1  # intact bytes, but not a record: counted as a rejected entry
            self._reject()
            return None
        return data

    def get_bytes(self, content_id: str, key: str, part: str) -> bytes | None:
        """The entry's body, unparsed (a part stored with :meth:`put_bytes`), when it is
        intact and made from inputs with this ``key``."""
        path = self.path(content_id, part)
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            self.misses += 1
            return None
        header, _, body = raw.partition(b"\n")
        try:
            entry = json.loads(header.decode("utf-8"))
            ok = (
                isinstance(entry, dict)
                and entry.get("version") == CACHE_VERSION
                and entry.get("key") == key
                and entry.get("digest") == _digest(body)
            )
        except (ValueError, UnicodeDecodeError):
            ok = False
        if not ok:
            self._reject()
            return None
        self.hits += 1
        return body

    def _reject(self) -> None:
        self.rejected += 1
        self.misses += 1

    def put(self, content_id: str, key: str, part: str, data: dict[str, Any]) -> None:
        self.put_bytes(content_id, key, part, canonjson.dumps_line(data).encode("utf-8"))

    def put_bytes(self, content_id: str, key: str, part: str, body: bytes) -> None:
        """Store ``body`` as it is (read back with :meth:`get_bytes`)."""
        header = {"digest": _digest(body), "key": key, "version": CACHE_VERSION}
        # Derived data, rebuilt when lost: no fsync (a torn entry fails its digest check).
        atomic_write_bytes(
            self.path(content_id, part),
            canonjson.dumps_line(header).encode("utf-8") + body,
            fsync=False,
        )

    def prune(self, keep: set[str], parts: Sequence[str] | None = None) -> int:
        """Remove the entries of items not in ``keep`` (content IDs) and, when ``parts`` names
        every part the caller keeps, the entries of any other part (one an older version
        wrote, which nothing reads again); how many went. Other files in the folder (the
        records beside the entries, :func:`write_checked`) are not entries and stay, and so
        do folders not named as the entries' are (:meth:`path`: the first two characters of
        the ID), whatever a later version keeps in one."""
        if not self.folder.is_dir():
            return 0
        wanted = {_safe(cid) for cid in keep}
        known = None if parts is None else {f"{part}.json" for part in parts}
        removed = 0
        # Names, not Path objects: ≈ 70,000 entries at 10,000 items are looked at every run.
        with os.scandir(self.folder) as subs:
            folders = [e.path for e in subs
                       if e.is_dir(follow_symlinks=False) and len(e.name) <= 2]  # fmt: skip
        for sub in folders:
            with os.scandir(sub) as names:
                for e in names:
                    stem, _, rest = e.name.partition(".")
                    if stem not in wanted or (known is not None and rest not in known):
                        os.unlink(e.path)
                        removed += 1
        return removed


def write_checked(path: Path, *body: bytes | memoryview) -> None:
    """``body`` (given in parts, written one after the other: a large record is not joined
    into one copy first) after a header line holding its digest, for the records kept beside
    the entries (derived: no fsync — a torn or edited record fails :func:`read_checked`)."""

    def fill(put: Callable[[bytes | memoryview], None]) -> None:
        for part in body:
            put(part)

    write_checked_parts(path, fill)


def _checked_header(digest: str) -> bytes:
    return canonjson.dumps_line({"digest": digest}).encode("utf-8")


def write_checked_parts(
    path: Path, fill: Callable[[Callable[[bytes | memoryview], None]], None]
) -> None:
    """What :func:`write_checked` writes, the body given by ``fill``, which calls the function
    it is passed with each part in turn — parts made while writing, so a body larger than
    memory is never held: the header line's digest is filled in once the body is written
    (a header of the same length is written first)."""
    h = hashlib.sha256()

    def write(fh: BinaryIO) -> None:
        fh.write(_checked_header("sha256:" + "0" * 64))

        def put(part: bytes | memoryview) -> None:
            h.update(part)
            fh.write(part)

        fill(put)
        fh.seek(0)
        fh.write(_checked_header("sha256:" + h.hexdigest()))

    atomic_write(path, write, fsync=False)


def open_checked(path: Path, check: Callable[[BinaryIO], T | None]) -> T | None:
    """``check`` of ``path`` opened for reading (a reader of a record kept beside the
    entries, checked a piece at a time), which keeps the file open in what it returns; the
    file is closed when it returns None or fails to read or parse (then None)."""
    try:
        fh = open(path, "rb")  # noqa: SIM115 (kept open by what `check` returns)
    except OSError:
        return None
    try:
        got = check(fh)
    except (OSError, ValueError, TypeError, KeyError, UnicodeDecodeError):
        got = None
    if got is None:
        fh.close()
    return got


def checked_head(fh: BinaryIO, format_: int) -> tuple[str, Any, dict[str, Any]] | None:
    """The start of a record :func:`write_checked` wrote whose body starts with a JSON line —
    an object whose ``format`` is ``format_`` — read from ``fh`` a piece at a time: (the
    digest its header names, a SHA-256 that has taken that line, the object); ``fh`` is then
    at the bytes after the line, which the caller hashes as it reads them. None when it is
    not such a record."""
    digest = checked_digest(fh)
    if digest is None:
        return None
    line = fh.readline()
    doc = _head_object(line, format_)
    return None if doc is None else (digest, hashlib.sha256(line), doc)


def _head_object(line: bytes, format_: int) -> dict[str, Any] | None:
    """The JSON object a checked record's body starts with, when its ``format`` is
    ``format_``."""
    try:
        doc = json.loads(line)
    except ValueError:
        return None
    return doc if isinstance(doc, dict) and doc.get("format") == format_ else None


def checked_digest(fh: BinaryIO) -> str | None:
    """The digest the header line of a record :func:`write_checked` wrote names, read from
    ``fh`` at its start (then positioned at the body), for a reader that checks the body a
    piece at a time; None when the first line is not such a header."""
    line = fh.readline(200)
    try:
        doc = json.loads(line)
    except ValueError:
        return None
    digest = doc.get("digest") if isinstance(doc, dict) and len(doc) == 1 else None
    return digest if isinstance(digest, str) and line == _checked_header(digest) else None


def read_checked(path: Path) -> bytes | None:
    """The body :func:`write_checked` wrote; None when the file is missing or its body does not
    have the digest of its header."""
    try:
        header, _, body = path.read_bytes().partition(b"\n")
        return body if json.loads(header) == {"digest": _digest(body)} else None
    except (OSError, ValueError):
        return None


def read_checked_head(path: Path, format_: int) -> tuple[dict[str, Any], bytes] | None:
    """A record :func:`write_checked` wrote whose body starts with a JSON line — an object
    whose ``format`` is ``format_`` — then raw bytes: (that object, the bytes after its line).
    None when the file is missing, damaged (its digest) or not such a record."""
    body = read_checked(path)
    if body is None:
        return None
    head, _, rest = body.partition(b"\n")
    doc = _head_object(head, format_)
    return None if doc is None else (doc, rest)


def text_lines(data: bytes, size: object) -> list[str] | None:
    """The strings kept one a line in the first ``size`` bytes of ``data`` (each ended by a
    line break; none contains one); None when ``size`` is not such a length or the bytes are
    not UTF-8."""
    if type(size) is not int or not 0 <= size <= len(data):
        return None
    if size and data[size - 1 : size] != b"\n":
        return None
    try:
        return data[:size].decode("utf-8").split("\n")[:-1] if size else []
    except UnicodeDecodeError:
        return None


#: A remembered value is trusted only for files unchanged this long before it was recorded
#: (a write in the same timestamp tick as the recording could otherwise go unnoticed).
SETTLED_NS = 2_000_000_000

Stamp = list[int] | None


def stamp(path: str | os.PathLike[str]) -> Stamp:
    """``[size, mtime_ns, inode]`` of a file (by ``lstat``: a symbolic link is not followed;
    anything but a regular file gets a stamp that no recorded one equals); None when there
    is none."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return [-1, -1, -1]
    return [st.st_size, st.st_mtime_ns, st.st_ino]


class StatMemo:
    """Values (digests) remembered by name with the stamps (:func:`stamp`) of the files they
    were computed from, in one JSON file of the cache folder: a value is returned only while
    every stamp is unchanged, its files had settled (:data:`SETTLED_NS`) when it was recorded,
    and the memo's ``salt`` (what else the values depend on) is the same.

    The "racy timestamp" rule git applies: a file rewritten within one timestamp tick of its
    recording keeps its size and mtime, so it is never trusted from the memo.
    """

    def __init__(self, path: Path, salt: str = "") -> None:
        self.path = path
        self.salt = salt
        self.known: dict[str, tuple[str, str]] = {}
        """Name → (its stamps as compact JSON, its value): text, not lists of numbers (≈ 1 KB
        an item as parsed; the index stage holds every item's for the whole run)."""
        self.seen: dict[str, tuple[str, str]] = {}
        try:
            raw = json.loads(path.read_bytes())
        except (OSError, ValueError):
            return
        if not isinstance(raw, dict) or raw.get("salt") != salt:
            return
        saved, entries = raw.get("saved_ns"), raw.get("entries")
        if not isinstance(saved, int) or not isinstance(entries, dict):
            return
        while entries:
            name, entry = entries.popitem()  # the parsed file let go as it is taken in
            if (
                isinstance(entry, list)
                and len(entry) == 2
                and isinstance(entry[0], list)
                and isinstance(entry[1], str)
                and all(_settled(s, saved) for s in entry[0])
            ):
                self.known[name] = (canonjson.dumps_compact(entry[0]), entry[1])

    def get(self, name: str, stamps: Sequence[Stamp]) -> str | None:
        entry = self.known.get(name)
        if entry is not None and entry[0] == canonjson.dumps_compact(list(stamps)):
            self.seen[name] = entry
            return entry[1]
        return None

    def put(self, name: str, stamps: Sequence[Stamp], value: str) -> None:
        self.seen[name] = (canonjson.dumps_compact(list(stamps)), value)

    def save(self) -> None:
        """Write the entries used or put since this memo was opened (no others): the bytes
        :func:`canonjson.dumps_line` gives the document, made an entry at a time."""
        text = canonjson.dumps_compact
        entries = ",".join(f"{text(name)}:[{stamps},{text(value)}]"
                           for name, (stamps, value) in sorted(self.seen.items()))  # fmt: skip
        doc = (f'{{"entries":{{{entries}}},"salt":{text(self.salt)},'
               f'"saved_ns":{time.time_ns()}}}\n')  # fmt: skip
        atomic_write_text(self.path, doc, fsync=False)


def _settled(s: Any, saved: int) -> bool:
    if s is None:
        return True
    return (
        isinstance(s, list)
        and len(s) == 3
        and isinstance(s[1], int)
        and s[0] >= 0
        and s[1] + SETTLED_NS < saved
    )


class FileDigests:
    """The SHA-256 of each file under a folder (``index/``), remembered in a :class:`StatMemo`:
    a file whose size, mtime and inode are unchanged is not read again."""

    def __init__(self, path: Path) -> None:
        self.memo = StatMemo(path)

    def of(self, path: Path, rel: str) -> str:
        stamps = [stamp(path)]
        digest = self.memo.get(rel, stamps)
        if digest is None:
            with path.open("rb") as fh:
                digest = file_digest(fh)
            self.memo.put(rel, stamps, digest)
        return digest

    def record(self, path: Path, rel: str, digest: str) -> None:
        """Remember ``digest`` for the file this run just wrote with those bytes (trusted in
        this run; in a later one only once it has settled, like any other entry)."""
        self.memo.put(rel, [stamp(path)], digest)
        self.memo.known[rel] = self.memo.seen[rel]

    def scan(
        self, out: Path, skip: tuple[str, ...] = (), name_skip: str = "", under: str = ""
    ) -> dict[str, str]:
        """``{path under out: digest}`` of the files under ``out`` (only those in its folder
        ``under`` when given), but dotfiles, paths starting with one of ``skip`` and the file
        ``name_skip``."""
        digests: dict[str, str] = {}
        for p in sorted((out / under if under else out).rglob("*")):
            rel = p.relative_to(out).as_posix()
            if rel.startswith(skip) or rel == name_skip or p.name.startswith("."):
                continue
            if p.is_file():
                digests[rel] = self.of(p, rel)
        return digests

    def entries(self, names: Iterable[str]) -> dict[str, tuple[str, str]]:
        """The memo's entries of ``names`` asked this run (:meth:`of`), for another process's
        memo of the same folder (:meth:`take`)."""
        return {n: self.memo.seen[n] for n in names if n in self.memo.seen}

    def take(self, entries: Mapping[str, tuple[str, str]]) -> None:
        """Trust, in this run, ``entries`` that another process made (:meth:`entries`) as if
        made here: a file is read again only when its stamp is not the one it was hashed
        with (so one written again after that is hashed again)."""
        self.memo.known.update(entries)

    def save(self) -> None:
        self.memo.save()
