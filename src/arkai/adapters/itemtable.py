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
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from arkai.adapters.fs import write_chunks_if_changed
from arkai.adapters.itemcache import CACHE_DIR, SETTLED_NS

FORMAT = 1


@dataclass(frozen=True, slots=True)
class Row:
    stat: str | None
    key: str
    body: bytes


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
    """The records of pass ``name`` under ``<root>/.arkai/index-cache``, loaded at once."""

    def __init__(self, root: Path, name: str, version: str) -> None:
        self.path = root / CACHE_DIR / f"{name}.tsv"
        self.header = json.dumps({"format": FORMAT, "version": version}, sort_keys=True).encode()
        self.rows: dict[str, Row] = {}
        self.kept: dict[str, Row] = {}
        self.rejected = 0
        """Lines that failed their digest or did not parse (ignored, rebuilt)."""
        self._dirty = False
        """A record kept differs from the one loaded (or is new): :meth:`save` writes."""
        self._load()

    def _load(self) -> None:
        try:
            fh = self.path.open("rb")
        except OSError:
            return
        with fh:  # line by line: the file is never held whole
            if fh.readline().rstrip(b"\n") != self.header:
                self.rejected += 1
                self._dirty = True
                return
            for raw in fh:
                line = raw.rstrip(b"\n")
                digest, _, body = line.partition(b"\t")
                parts = body.split(b"\t", 3)
                if hashlib.sha256(body).hexdigest().encode() != digest or len(parts) != 4:
                    self.rejected += 1
                    self._dirty = True
                    continue
                try:
                    cid, st, key = (p.decode("utf-8") for p in parts[:3])
                except UnicodeDecodeError:
                    self.rejected += 1
                    self._dirty = True
                    continue
                self.rows[cid] = Row(None if st == "-" else st, key, parts[3])

    def by_stat(self, content_id: str, stat_key: str | None) -> Row | None:
        """The item's record when its files' :func:`stat_digest` is the one recorded."""
        row = self.rows.get(content_id)
        if row is None or stat_key is None or row.stat != stat_key:
            return None
        return row

    def by_key(self, content_id: str, key: str) -> Row | None:
        """The item's record when it was derived from files whose digest is ``key``."""
        row = self.rows.get(content_id)
        return row if row is not None and row.key == key else None

    def keep(
        self, content_id: str, stats: tuple[str, int] | None, key: str | None, body: bytes
    ) -> None:
        """Record ``body`` for the item (written by :meth:`save`); ``stats`` (from
        :func:`stat_digest`, taken before the files were read) is recorded only when no file
        changed within :data:`SETTLED_NS`; nothing is recorded without a ``key``."""
        old = self.rows.get(content_id)
        same = old is not None and stats is not None and (old.stat, old.key) == (stats[0], key)
        if same and old is not None and old.body == body:
            # Unchanged (a recorded stat was settled when recorded, so it still is).
            self.kept[content_id] = old
            return
        if key is None or not _clean(content_id) or not _clean(key) or b"\n" in body:
            return
        st = None
        if stats is not None and stats[1] < time.time_ns() - SETTLED_NS:
            st = stats[0]
        if old is None or (old.stat, old.key) != (st, key) or old.body != body:
            self._dirty = True
        self.kept[content_id] = Row(st, key, body)

    def save(self, *, prune: bool) -> bool:
        """Write the table (atomically, streamed, only when a record changed): the records kept
        in this pass, and with ``prune=False`` the other ones loaded too. Whether it was
        written."""
        rows = self.kept if prune else {**self.rows, **self.kept}
        if not self._dirty and (not prune or len(self.kept) == len(self.rows)):
            return False

        def lines() -> Iterator[bytes]:
            yield self.header + b"\n"
            for cid in sorted(rows):
                r = rows[cid]
                body = b"\t".join((cid.encode(), (r.stat or "-").encode(), r.key.encode(), r.body))
                yield seal_row(body) + b"\n"

        # Derived, rebuilt when lost: no fsync (a torn line fails its digest check).
        written = write_chunks_if_changed(self.path, lines(), fsync=False)
        self.rows, self._dirty = dict(rows), False
        return written
