"""Small per-item records of a whole-library pass, kept in one file per pass.

A stage that looks at every item (``validate``'s verdicts, the ``beliefs`` stage's episodes,
the index stage's topic rankings) keeps what it derived from each item's files, so an
unchanged item costs a ``lstat`` of those files (or a key lookup) instead of reading them.
:class:`arkai.adapters.itemcache.ItemCache` keeps one file per item and part, right for the
index's large parts; a record of a few hundred bytes is cheaper in one table (opening
10,000 files costs more than the records: docs/scale.md). Local and derived, like the rest
of ``.arkai/``: git-ignored, rebuilt when absent or damaged.

``.arkai/index-cache/<name>.tsv``: a header line (JSON: the format and the caller's
``version``), then one line per item::

    <sha256 hex of the rest of the line>\\t<content id>\\t<stat digest or ->\\t<key>\\t<body>

``key`` is the caller's digest of the bytes of the item's files (what the record was derived
from); ``stat digest`` is :func:`stat_digest` of those files when they were hashed for ``key``,
``-`` when one of them had changed too recently to trust its ``lstat`` (git's "racy" entries:
it is hashed again next time). ``body`` is one line of JSON. A line whose digest does not
match, or a table of another format or version, is ignored (:attr:`ItemTable.rejected`), never
used: the item's files are read and hashed again.

A loaded table holds where each row's line is, not its body (issue 17: the index stage's
topic rankings were 48 MB of bodies at 10,000 items, ≈ 480 MB at 100,000): a row asked for
is read from the file (kept open) and its digest checked again.

A save appends (issue 17: the tables were written whole on every run — 52 MB of rankings, 20
MB of episodes at 10,000 items — for the few rows an edit changes). The file is a base, the
rows as last written whole (sorted, one line each), then batches, one per save since: a
batch's first line holds how many lines follow and their SHA-256 (its content ID empty, its
stat field ``+``); its lines are the rows new or changed in that save and one per item it
dropped (stat field ``!``, key and body empty). A batch is applied whole or not at all, and
the first that fails its count or digest ends the file: its rows, and every later batch's,
are not used (a row's body may depend on the other rows of the same save, as the graph's
neighbour lists do, so a save is undone whole — the table is then as the save before left
it). A save cut short leaves such a torn batch. In the base a damaged line loses its row
alone, as before. The file is written whole again (atomically) when the lines no row uses
would outweigh the ones it does, after a damaged line or torn batch, and when it is not the
file that was loaded (another process replaced or grew it: the file is locked, ``flock``,
while it is checked and appended to).

Beside the file, ``<name>.idx`` holds each row's place as the file holds it, with the file's
``fstat`` (size, modification and change times, inode, device) when it was written: a load
takes the places from there instead of reading the file — which at 10,000 items was most of a
table's load (55 MB of rankings read and their lines' digests checked: ≈ 0.2 s) — when the
file open is still that file, unchanged (any write changes its ``ctime``, which no tool can
set back). Otherwise, and when the index is missing, torn or not of this table, the file is
read whole as before, and the index written again. A row's digest is then checked when its
body is read, as always; a line damaged without the file's ``fstat`` changing (the disk
itself) is found when it is read, not at the load.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
import time
import weakref
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arkai.adapters.fs import append_to_loaded, atomic_write_bytes, write_chunks_if_changed
from arkai.adapters.itemcache import CACHE_DIR, SETTLED_NS
from arkai.core.hashing import file_digest

FORMAT = 1
#: The format of a table's index (``<name>.idx``, :meth:`ItemTable._save_index`).
INDEX_FORMAT = 1

_DROPPED = "!"
"""The stat field of a batch's line that drops its item (never a :func:`stat_digest` or ``-``)."""

_BATCH = "+"
"""The stat field of a batch's first line (its content ID empty: no row's is)."""


@dataclass(frozen=True, slots=True)
class Row:
    stat: str | None
    key: str
    body: bytes


@dataclass(frozen=True, slots=True)
class _Line:
    """A row of the table's file: where its line is (its body read when asked for)."""

    stat: str | None
    key: str
    at: int
    size: int
    """The line's length, without its line break."""


def stat_digest(paths: Iterable[str | os.PathLike[str]]) -> tuple[str, int] | None:
    """A digest of the files' paths and ``lstat`` (size, mtime, ctime, inode — a write changes
    the ctime, which no tool can set back; a missing file counts as such) and the newest of
    those times; None when one is not a regular file or cannot be looked at."""
    parts = []
    newest = 0
    for path in paths:
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            parts.append(f"{path}\0-")
            continue
        except OSError:
            return None
        if not stat.S_ISREG(st.st_mode):
            return None
        newest = max(newest, st.st_mtime_ns, st.st_ctime_ns)
        parts.append(f"{path}\0{st.st_size}\0{st.st_mtime_ns}\0{st.st_ctime_ns}\0{st.st_ino}")
    text = "\n".join(parts).encode("utf-8", "surrogateescape")
    return "sha256:" + hashlib.sha256(text).hexdigest(), newest


def seal_row(body: bytes) -> bytes:
    """A row as stored: the SHA-256 of its body, a tab, the body (what :meth:`ItemTable._load`
    checks)."""
    return hashlib.sha256(body).hexdigest().encode() + b"\t" + body


def _clean(text: str) -> bool:
    """Whether ``text`` can be a field of a row: no tab or line break, and UTF-8 (a file
    name that is not — a lone surrogate from ``surrogateescape`` — is kept in no row)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return not any(c in text for c in "\t\n\r")


class ItemTable:
    """The records of pass ``name`` under ``<root>/.arkai/index-cache``: every row's place
    loaded at once, its body read when asked for."""

    def __init__(self, root: Path, name: str, version: str) -> None:
        self.path = root / CACHE_DIR / f"{name}.tsv"
        self.header = json.dumps({"format": FORMAT, "version": version}, sort_keys=True).encode()
        self.rows: dict[str, Row | _Line] = {}
        self.kept: dict[str, Row | _Line] = {}
        self.rejected = 0
        """Lines that failed their digest or did not parse (ignored, rebuilt)."""
        self._dirty = False
        """A record kept differs from the one loaded (or is new): :meth:`save` writes."""
        self._fd: int | None = None
        self._closer: weakref.finalize[Any, Any] | None = None
        self._last: tuple[str, Row] | None = None
        """The row last read (``keep`` of the same body then reads nothing)."""
        self._file: dict[str, _Line] = {}
        """Each item's line as the file has it (last line wins; a dropped item's removes it),
        the ones found damaged when read included."""
        self._size = 0
        """The file's size as loaded, or as this table last wrote it (0: none to append to)."""
        self._live = 0
        """The bytes of :attr:`_file`'s lines, line breaks included."""
        self._damaged = False
        """A line failed its digest, or a batch its count or digest: the next save writes the
        file whole (without them)."""
        self._load()

    def _open(self) -> bool:
        """Open the table's file for reading (whether it could be); its descriptor is kept
        for the rows' bodies (closed with the table, or when :meth:`save` replaces the
        file)."""
        self._close()
        try:
            fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        except OSError:
            return False
        self._fd = fd
        self._closer = weakref.finalize(self, os.close, fd)
        return True

    def _close(self) -> None:
        if self._closer is not None:
            self._closer()
        self._fd = self._closer = None

    def _load(self) -> None:
        if not self._open() or self._fd is None:
            return
        if self._load_index():
            return
        self._scan()
        self._save_index()

    def _scan(self) -> None:
        """Every line of the file read (each row's digest checked), its rows placed."""
        assert self._fd is not None
        # Line by line: the file is never held whole (a batch's places, not its bodies).
        with open(self._fd, "rb", closefd=False) as fh:
            first = fh.readline()
            if first.rstrip(b"\n") != self.header:
                self.rejected += 1
                self._dirty = True
                return
            at = len(first)
            began = False  # (every line from the first batch's on is in a batch)
            batch: list[tuple[str, Row, int, int]] | None = None
            want, want_digest, digest = 0, "", hashlib.sha256()
            ok = True
            for raw in fh:
                size = len(raw) - 1  # the line without its line break
                # Its body is not kept (read again when asked for): not copied out either.
                parsed = _parse(raw, size, body=False) if raw.endswith(b"\n") else None
                if batch is not None:
                    digest.update(raw)
                    if parsed is None or parsed[0] == "":
                        ok = False
                        break
                    batch.append((*parsed, at, size))
                    if len(batch) == want:
                        if digest.hexdigest() != want_digest:
                            ok = False
                            break
                        for cid, row, where, size in batch:
                            self._place(cid, row, where, size)
                        batch = None
                elif parsed is not None and parsed[0] == "":
                    head = parsed[1]
                    if head.stat != _BATCH or not head.key.isdigit() or int(head.key) < 1:
                        ok = False
                        break
                    began, batch, want = True, [], int(head.key)
                    want_digest, digest = head.body.decode("ascii", "replace"), hashlib.sha256()
                elif began:
                    ok = False  # a line after the batches began that is in none
                    break
                elif parsed is None:
                    self.rejected += 1  # a damaged line of the base: its row alone is lost
                    self._dirty = self._damaged = True
                else:
                    self._place(*parsed, at, size)
                at += len(raw)
            if not ok or batch is not None:
                self.rejected += 1  # a torn or damaged batch: it and what follows are unused
                self._dirty = self._damaged = True
            self._size = at
        self.rows = dict(self._file)

    @property
    def _index_path(self) -> Path:
        return self.path.with_suffix(".idx")

    def _load_index(self) -> bool:
        """Take the rows' places from the table's index (:meth:`_save_index`) instead of
        reading the file, when the index was written for the file open now, as it is now:
        the same size, times, inode and device (``fstat``); whether it was taken. A file
        that changed since — appended to or replaced by another process, edited, damaged on
        purpose — has another ``ctime`` at least (the kernel sets it on every write; no tool
        can set it back), so it is read whole as before."""
        assert self._fd is not None
        try:
            doc = json.loads(self._index_path.read_bytes())
        except (OSError, ValueError):
            return False
        now = _fstat_key(self._fd)
        size = now[0]
        if not (isinstance(doc, dict) and doc.get("format") == INDEX_FORMAT
                and doc.get("header") == self.header.decode("utf-8", "replace")
                and doc.get("stat") == now
                and isinstance(lines := doc.get("lines"), list)):  # fmt: skip
            return False
        found: dict[str, _Line] = {}
        live = 0
        for row in lines:
            if not (isinstance(row, list) and len(row) == 5):
                return False
            cid, st, key, at, n = row
            if not (type(cid) is str and (st is None or type(st) is str) and type(key) is str
                    and type(at) is int and type(n) is int and len(self.header) < at
                    and n > 0 and at + n < size and cid not in found):  # fmt: skip
                return False
            found[cid] = _Line(st, key, at, n)
            live += n + 1
        self._file, self._live, self._size = found, live, size
        self.rows = dict(found)
        return True

    def _save_index(self) -> None:
        """Write the places of the rows as the file open now holds them beside it
        (``<name>.idx``: the file's ``fstat`` and each row's content ID, stat, key, place and
        length, JSON), for the next load to take instead of reading the file (≈ 0.2 s for the
        index stage's 55 MB of rankings at 10,000 items); removed when the file was found
        damaged or is not what this table holds."""
        path = self._index_path
        now = None if self._fd is None else _fstat_key(self._fd)
        if now is None or self._damaged or now[0] != self._size:
            with contextlib.suppress(OSError):
                path.unlink()
            return
        doc = {
            "format": INDEX_FORMAT,
            "header": self.header.decode("utf-8", "replace"),
            "stat": now,
            "lines": [[cid, r.stat, r.key, r.at, r.size] for cid, r in self._file.items()],
        }
        with contextlib.suppress(OSError):  # (derived: a lost index costs one read)
            atomic_write_bytes(path, json.dumps(doc, separators=(",", ":")).encode(), fsync=False)

    def _place(self, cid: str, row: Row, at: int, size: int) -> None:
        """A line of the file, read in order: the item's row from now on (or none)."""
        gone = self._file.pop(cid, None)
        if gone is not None:
            self._live -= gone.size + 1
        if row.stat == _DROPPED:
            return
        self._file[cid] = _Line(row.stat, row.key, at, size)
        self._live += size + 1

    def _read(self, content_id: str, row: Row | _Line) -> Row | None:
        """The row with its body (read from the file and checked again); None when the line
        is no longer what was loaded (the row is dropped)."""
        if isinstance(row, Row):
            return row
        if self._last is not None and self._last[0] == content_id:
            return self._last[1]
        line = b""
        with contextlib.suppress(OSError):
            if self._fd is not None:
                line = os.pread(self._fd, row.size, row.at)
        parsed = _parse(line) if len(line) == row.size else None
        if parsed is None or parsed[0] != content_id:
            self.rejected += 1
            self._dirty = self._damaged = True
            self.rows.pop(content_id, None)
            self.kept.pop(content_id, None)
            return None
        self._last = (content_id, parsed[1])
        return parsed[1]

    def by_stat(self, content_id: str, stat_key: str | None) -> Row | None:
        """The item's record when its files' :func:`stat_digest` is the one recorded."""
        row = self.rows.get(content_id)
        if row is None or stat_key is None or row.stat != stat_key:
            return None
        return self._read(content_id, row)

    def digest(self) -> str | None:
        """``sha256:<hex>`` of the table's file as this table holds it open (loaded, or as it
        last wrote it); None when there is none."""
        if self._fd is None:
            return None
        with open(self._fd, "rb", closefd=False) as fh:
            fh.seek(0)
            return file_digest(fh)

    def by_key(self, content_id: str, key: str) -> Row | None:
        """The item's record when it was derived from files whose digest is ``key``."""
        row = self.rows.get(content_id)
        return self._read(content_id, row) if row is not None and row.key == key else None

    def retain(self, content_id: str, key: str) -> bool:
        """Keep the item's loaded row, unread, when it was derived under ``key`` (its line is
        copied when the table is written); whether it was."""
        row = self.rows.get(content_id)
        if row is None or row.key != key:
            return False
        self.kept[content_id] = row
        return True

    def keep(
        self, content_id: str, stats: tuple[str, int] | None, key: str | None, body: bytes
    ) -> None:
        """Record ``body`` for the item (written by :meth:`save`); ``stats`` (from
        :func:`stat_digest`, taken before the files were read) is recorded only when no file
        changed within :data:`SETTLED_NS`; nothing is recorded without a ``key``."""
        old = self.rows.get(content_id)
        same = old is not None and stats is not None and (old.stat, old.key) == (stats[0], key)
        if same and old is not None and self._same_body(content_id, old, body):
            # Unchanged (a recorded stat was settled when recorded, so it still is).
            self.kept[content_id] = old
            return
        # (No row's content ID is empty: a batch's first line's is.)
        if key is None or not content_id or not _clean(content_id) or not _clean(key):
            return
        if b"\n" in body:
            return
        st = None
        if stats is not None and stats[1] < time.time_ns() - SETTLED_NS:
            st = stats[0]
        if (
            old is not None
            and (old.stat, old.key) == (st, key)
            and self._same_body(content_id, old, body)
        ):
            self.kept[content_id] = old  # (its place in the file, not its bytes)
            return
        self._dirty = True
        self.kept[content_id] = Row(st, key, body)

    def _same_body(self, content_id: str, old: Row | _Line, body: bytes) -> bool:
        got = self._read(content_id, old)
        return got is not None and got.body == body

    def save(self, *, prune: bool) -> bool:
        """Write the table (atomically, streamed, only when a record changed): the records kept
        in this pass, and with ``prune=False`` the other ones loaded too (an unchanged row's
        line copied from the file loaded). Whether it was written."""
        rows = self.kept if prune else {**self.rows, **self.kept}
        if not self._dirty and (not prune or len(self.kept) == len(self.rows)):
            return False
        if self._append(rows):
            return True
        placed: dict[str, Row | _Line] = {}

        def lines() -> Iterator[bytes]:
            at = len(self.header) + 1
            yield self.header + b"\n"
            for cid in sorted(rows):
                r = rows[cid]
                if isinstance(r, _Line):
                    got = self._read(cid, r)
                    if got is None:
                        continue  # changed under us since it was loaded: made again next time
                    r = got
                line = seal_row(_row_body(cid, r))
                placed[cid] = _Line(r.stat, r.key, at, len(line))
                at += len(line) + 1
                yield line + b"\n"

        # Derived, rebuilt when lost: no fsync (a torn line fails its digest check).
        written = write_chunks_if_changed(self.path, lines(), fsync=False)
        self._last = None
        if not self._open():
            placed = {}  # (the file is gone: nothing can be read from it)
        self.rows, self._dirty = placed, False
        self.kept = {cid: placed[cid] for cid in self.kept if cid in placed}
        self._file = {cid: r for cid, r in placed.items() if isinstance(r, _Line)}
        self._live = sum(r.size + 1 for r in self._file.values())
        self._size = os.fstat(self._fd).st_size if self._fd is not None else 0
        self._damaged = False
        self._save_index()
        return written

    def _append(self, rows: dict[str, Row | _Line]) -> bool:
        """Bring the file to ``rows`` by appending a batch (see the module docstring): the lines
        of the rows that are new or changed and of the items dropped; False, having written
        nothing, when the file must be written whole instead."""
        if self._fd is None or self._size == 0 or self._damaged:
            return False
        if any(isinstance(r, _Line) and self._file.get(cid) != r for cid, r in rows.items()):
            return False  # (a row not where the file has it: nothing to append to)
        placed = dict(self._file)
        live = self._live
        out: list[tuple[str, bytes, Row | None]] = [
            (cid, b"\t".join((cid.encode(), _DROPPED.encode(), b"", b"")), None)
            for cid in sorted(set(self._file) - set(rows))
        ]
        for cid in sorted(cid for cid, r in rows.items() if not isinstance(r, _Line)):
            row = rows[cid]
            assert isinstance(row, Row)
            out.append((cid, _row_body(cid, row), row))
        if not out:
            return False
        lines = [seal_row(body) for _, body, _ in out]
        data = b"".join(line + b"\n" for line in lines)
        head = seal_row(b"\t".join((b"", _BATCH.encode(), b"%d" % len(lines),
                                     hashlib.sha256(data).hexdigest().encode())))  # fmt: skip
        at = self._size + len(head) + 1
        for (cid, _, made), line in zip(out, lines, strict=True):
            old = placed.pop(cid, None)
            live -= 0 if old is None else old.size + 1
            if made is not None:
                placed[cid] = _Line(made.stat, made.key, at, len(line))
                live += len(line) + 1
            at += len(line) + 1
        if at - len(self.header) - 1 > 2 * live:
            return False  # mostly lines no row uses: written whole
        if not append_to_loaded(self.path, self._fd, self._size, head + b"\n" + data):
            return False  # not the file loaded (replaced, or grown by another process)
        self._file, self._size, self._live = placed, at, live
        self._last = None
        self.rows, self._dirty = {cid: placed[cid] for cid in rows}, False
        self.kept = {cid: placed[cid] for cid in self.kept if cid in placed}
        self._save_index()
        return True


def _fstat_key(fd: int) -> list[int]:
    """What a table's index is checked against: the open file's size, modification and change
    times, inode and device."""
    st = os.fstat(fd)
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev]


def _row_body(content_id: str, row: Row) -> bytes:
    """A row's line as :func:`seal_row` seals it: its content ID, stat, key and body."""
    return b"\t".join((content_id.encode(), (row.stat or "-").encode(), row.key.encode(), row.body))


def _parse(line: bytes, end: int | None = None, *, body: bool = True) -> tuple[str, Row] | None:
    """A stored line's content ID and row (the line: ``line[:end]``); None when its digest does
    not match or it does not parse. Without ``body``, a row's body is left out (``b""``; a
    batch's first line keeps its own): the digest is checked over the line's bytes in place
    and nothing of the body copied (a table's load, which keeps where each line is, not its
    body: ≈ 90 MB of rankings at 10,000 items)."""
    end = len(line) if end is None else end
    tab = line.find(b"\t", 0, end)
    if (
        tab < 0
        or hashlib.sha256(memoryview(line)[tab + 1 : end]).hexdigest().encode() != (line[:tab])
    ):
        return None
    a = line.find(b"\t", tab + 1, end)
    b = line.find(b"\t", a + 1, end) if a >= 0 else -1
    c = line.find(b"\t", b + 1, end) if b >= 0 else -1
    if c < 0:
        return None
    try:
        cid, st, key = (line[x + 1 : y].decode("utf-8") for x, y in ((tab, a), (a, b), (b, c)))
    except UnicodeDecodeError:
        return None
    kept = line[c + 1 : end] if body or not cid else b""
    return cid, Row(None if st == "-" else st, key, kept)
