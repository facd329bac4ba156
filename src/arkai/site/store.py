"""The site generator's cache of item summaries, on disk (``.site-build/summaries.sqlite``).

A big library's summaries do not fit in memory (the entity mentions of every item are most of
them), so the generator keeps in memory only a slim record per item — what the listing pages
show — and reads the rest from here when a page needs it:

- ``items``: per item, its cache entry (input stats and digest, the keys its pages were made
  from), its slim summary and its validation issues;
- ``mentions``: one row per entity of each item (``[key, name, type, mentions, said]`` of
  :func:`arkai.site.collect.summarize_item`), read per entity when an entity page is made;
- ``claims``: each evidence ID of each item and whether its quote has a valid span (the
  beliefs page links to them);
- ``entities``: each entity's totals (type, first item, items, mentions, names), recounted
  only for the entities of the items that changed;
- ``pages``: the key each library-wide page was last made from;
- ``meta``: the generator setting the cache was made with (another setting empties it), and
  the files the last build left in the docs folder (so that pages no longer made are removed
  without walking the folder).

Only the rows of items that changed are written, in one transaction per build: a build that
fails leaves the previous cache as it was. The store is derived data (``arkai site clean``
removes it); an unreadable one is started again.
"""

from __future__ import annotations

import json
import sqlite3
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

FILE = "summaries.sqlite"
#: Summary fields kept out of the in-memory record (read from the store when needed).
HEAVY = ("entities", "issues", "evidence", "marked")
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS items (
    id TEXT PRIMARY KEY, entry TEXT NOT NULL, slim TEXT NOT NULL, issues TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS mentions (
    cid TEXT NOT NULL, seq INTEGER NOT NULL, key TEXT NOT NULL, name TEXT NOT NULL,
    type TEXT NOT NULL, mentions TEXT NOT NULL, said TEXT NOT NULL, n INTEGER NOT NULL,
    PRIMARY KEY (cid, seq));
CREATE INDEX IF NOT EXISTS mentions_key ON mentions (key);
CREATE TABLE IF NOT EXISTS claims (
    eid TEXT NOT NULL, cid TEXT NOT NULL, marked INTEGER NOT NULL, seq INTEGER NOT NULL,
    PRIMARY KEY (cid, seq));
CREATE INDEX IF NOT EXISTS claims_eid ON claims (eid);
CREATE TABLE IF NOT EXISTS pages (src TEXT PRIMARY KEY, key TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS entities (
    key TEXT PRIMARY KEY, type TEXT NOT NULL, first TEXT NOT NULL, count INTEGER NOT NULL,
    mentions INTEGER NOT NULL, names TEXT NOT NULL);
"""


def _dump(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def stats_key(stats: Any) -> str:
    """An item's input stats (``[[size, mtime_ns] | None, …]``) as the one string that
    :meth:`SummaryStore.entries` gives for them."""
    return _dump(stats)


def mention_count(text: str) -> int:
    """Mentions in ``"12 40 0 …"`` (one line number per mention)."""
    return text.count(" ") + 1 if text else 0


class SummaryStore:
    """The summaries of one build folder (see the module doc); use as a context manager."""

    def __init__(self, folder: Path, setting: dict[str, Any]) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.path = folder / FILE
        try:
            self._db = self._open(setting)
        except sqlite3.DatabaseError:  # not a database, or a broken one: derived data
            self.path.unlink(missing_ok=True)
            self._db = self._open(setting)

    def _open(self, setting: dict[str, Any]) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, isolation_level=None)
        try:
            db.execute("PRAGMA journal_mode=DELETE")
            db.execute("PRAGMA synchronous=OFF")  # derived data: a crash costs a rebuild
            db.executescript(_SCHEMA)
            db.execute("BEGIN")
            row = db.execute("SELECT value FROM meta WHERE name = 'setting'").fetchone()
            if row is None or json.loads(row[0]) != setting:
                for table in ("meta", "items", "mentions", "claims", "pages", "entities"):
                    db.execute(f"DELETE FROM {table}")
                db.execute("INSERT OR REPLACE INTO meta VALUES ('setting', ?)", (_dump(setting),))
        except BaseException:
            db.close()
            raise
        return db

    def __enter__(self) -> SummaryStore:
        return self

    def __exit__(self, kind: object, value: object, tb: object) -> None:
        self.close(commit=kind is None)

    def close(self, *, commit: bool) -> None:
        if self._db.in_transaction:
            self._db.execute("COMMIT" if commit else "ROLLBACK")
        self._db.close()

    # ---------------------------------------------------------------- items

    def entries(self) -> Iterator[tuple[str, dict[str, Any], dict[str, Any]]]:
        """``(content id, cache entry, slim summary)`` of every stored item; the entry's
        ``stats`` are given as :func:`stats_key` makes them."""
        for cid, text, slim in self._db.execute("SELECT id, entry, slim FROM items"):
            entry = _keyed(json.loads(text))
            if "stats" in entry:  # compared as one string (its lists were a third of an item)
                entry["stats"] = stats_key(entry["stats"])
            yield cid, entry, pack_slim(json.loads(slim))

    def put(self, cid: str, entry: dict[str, Any], summary: dict[str, Any] | None) -> None:
        """Store an item's entry, and its summary when given (a new one)."""
        if summary is None:
            self._db.execute("UPDATE items SET entry = ? WHERE id = ?", (_dump(entry), cid))
            return
        self.remove(cid)
        slim = slim_summary(summary)
        self._db.execute(
            "INSERT INTO items VALUES (?, ?, ?, ?)",
            (cid, _dump(entry), _dump(slim), _dump(summary["issues"])),
        )
        self._db.executemany(
            "INSERT INTO mentions VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                (cid, seq, key, name, etype, mentions, said, mention_count(mentions))
                for seq, (key, name, etype, mentions, said) in enumerate(summary["entities"])
            ),
        )
        marked = set(summary["marked"])
        self._db.executemany(
            "INSERT INTO claims VALUES (?, ?, ?, ?)",
            ((eid, cid, int(eid in marked), seq) for seq, eid in enumerate(summary["evidence"])),
        )

    def remove(self, cid: str) -> None:
        for table, column in (("items", "id"), ("mentions", "cid"), ("claims", "cid")):
            self._db.execute(f"DELETE FROM {table} WHERE {column} = ?", (cid,))

    def summary(self, cid: str) -> dict[str, Any]:
        """An item's whole summary, as :func:`arkai.site.collect.summarize_item` made it."""
        row = self._db.execute("SELECT slim, issues FROM items WHERE id = ?", (cid,)).fetchone()
        if row is None:
            raise KeyError(cid)
        out: dict[str, Any] = json.loads(row[0])
        out.pop("entity_count", None)
        out["issues"] = json.loads(row[1])
        out["entities"] = [
            list(r)
            for r in self._db.execute(
                "SELECT key, name, type, mentions, said FROM mentions WHERE cid = ? ORDER BY seq",
                (cid,),
            )
        ]
        rows = self._db.execute(
            "SELECT eid, marked FROM claims WHERE cid = ? ORDER BY seq", (cid,)
        ).fetchall()
        out["evidence"] = [eid for eid, _ in rows]
        out["marked"] = [eid for eid, m in rows if m]
        return out

    def issues(self) -> Iterator[tuple[str, list[dict[str, Any]]]]:
        """``(content id, issues)`` of the items with validation issues."""
        for cid, text in self._db.execute("SELECT id, issues FROM items WHERE issues != '[]'"):
            yield cid, json.loads(text)

    # ---------------------------------------------------------------- entities

    def entity_totals(self) -> Iterator[tuple[str, str, str, int, int, dict[str, int]]]:
        """``(key, type, first item, items, mentions, names)`` of every entity, by key."""
        for key, etype, first, count, mentions, names in self._db.execute(
            "SELECT key, type, first, count, mentions, names FROM entities ORDER BY key"
        ):
            yield key, etype, first, count, mentions, json.loads(names)

    def update_entities(self, keys: Iterable[str], pos: dict[str, int]) -> None:
        """Recount the totals of the entities ``keys`` (those of the items that are new,
        changed or gone) from their rows; ``pos``: each item's place in library order."""
        for key in sorted(set(keys)):
            rows = [
                r
                for r in self._db.execute(
                    "SELECT cid, seq, type, name, n FROM mentions WHERE key = ?", (key,)
                )
                if r[0] in pos
            ]
            if not rows:
                self._db.execute("DELETE FROM entities WHERE key = ?", (key,))
                continue
            rows.sort(key=lambda r: (pos[r[0]], r[1]))
            names: dict[str, int] = {}
            for r in rows:
                names[r[3]] = names.get(r[3], 0) + 1
            self._db.execute(
                "INSERT OR REPLACE INTO entities VALUES (?, ?, ?, ?, ?, ?)",
                (
                    key,
                    rows[0][2],
                    rows[0][0],
                    len({r[0] for r in rows}),
                    sum(r[4] for r in rows),
                    _dump(dict(sorted(names.items()))),
                ),
            )

    def item_entity_keys(self, cid: str) -> list[str]:
        """The entity keys of one item."""
        return [k for (k,) in self._db.execute("SELECT key FROM mentions WHERE cid = ?", (cid,))]

    def entity_items(self, key: str) -> list[tuple[str, int, str, str]]:
        """``(content id, seq, mentions, said)`` of one entity's rows."""
        return self._db.execute(
            "SELECT cid, seq, mentions, said FROM mentions WHERE key = ?", (key,)
        ).fetchall()

    # ---------------------------------------------------------------- claims

    def claim_owners(self, eids: Iterable[str]) -> dict[str, tuple[str, bool]]:
        """Evidence ID → (the content id of the item holding it, whether it is marked)."""
        wanted = set(eids)
        first: dict[str, tuple[str, int, bool]] = {}
        # One pass over the table, the row with the least (cid, seq) of each ID kept: the
        # beliefs page asks for every claim of the library (one query each took 0.6 s at
        # 80,000 claims).
        for eid, cid, seq, marked in self._db.execute("SELECT eid, cid, seq, marked FROM claims"):
            if eid in wanted:
                had = first.get(eid)
                if had is None or (cid, seq) < had[:2]:
                    first[eid] = (cid, seq, bool(marked))
        return {eid: (cid, marked) for eid, (cid, _, marked) in first.items()}

    # ---------------------------------------------------------------- pages

    def take_files(self) -> set[str] | None:
        """The files the last build left in the docs folder (None when unknown), forgotten at
        once (committed): a build that fails after writing pages leaves it unknown, and the
        next build walks the folder."""
        row = self._db.execute("SELECT value FROM meta WHERE name = 'files'").fetchone()
        self._db.execute("DELETE FROM meta WHERE name = 'files'")
        self._db.execute("COMMIT")
        self._db.execute("BEGIN")
        return None if row is None else set(json.loads(row[0]))

    def set_files(self, files: set[str]) -> None:
        self._db.execute("INSERT OR REPLACE INTO meta VALUES ('files', ?)", (_dump(sorted(files)),))

    def page_keys(self) -> dict[str, str]:
        return dict(self._db.execute("SELECT src, key FROM pages").fetchall())

    def set_page_keys(self, keys: dict[str, str]) -> None:
        old = self.page_keys()
        self._db.executemany(
            "DELETE FROM pages WHERE src = ?", ((src,) for src in old if src not in keys)
        )
        self._db.executemany(
            "INSERT OR REPLACE INTO pages VALUES (?, ?)",
            ((src, key) for src, key in keys.items() if old.get(src) != key),
        )


#: Values that many items share (claim counts, tag lists), one object each; cleared when it
#: holds :data:`_SHARED_MAX` (a long-lived process builds many libraries).
_shared: dict[Any, Any] = {}
_SHARED_MAX = 50_000
#: Slim summary fields whose value is the same for many items.
_SHARED_FIELDS = ("type", "subtype", "published", "url", "tags", "counts")


def pack_slim(slim: dict[str, Any]) -> dict[str, Any]:
    """The slim record with the values many items have in common shared: one tag list, one
    claim-counts dict, one type string for all the items that have them (a big library holds
    a slim record per item; the shared values were a third of one), its keys interned (a new
    dictionary). Shared values must not be changed: nothing changes a slim record once it is
    made."""
    if len(_shared) >= _SHARED_MAX:
        _shared.clear()
    slim = _keyed(slim)
    for name in _SHARED_FIELDS:
        value = slim.get(name)
        if isinstance(value, list):
            key: Any = ("list", *value)
        elif isinstance(value, dict):
            key = ("dict", *value.items())
        else:
            key = ("value", value)
        try:
            slim[name] = _shared.setdefault(key, value)
        except TypeError:  # unhashable contents: kept as they are
            continue
    return slim


def _keyed(record: dict[str, Any]) -> dict[str, Any]:
    """``record`` with its keys interned: each ``json.loads`` makes its own copy of every key,
    which for a slim record was more than half of it (1.7 → 0.75 KB an item, measured on the
    20,000-item library; issue 17)."""
    return {sys.intern(k): v for k, v in record.items()}


def slim_summary(summary: dict[str, Any]) -> dict[str, Any]:
    """The summary without its heavy fields (:data:`HEAVY`), with its entity count."""
    out = {k: v for k, v in summary.items() if k not in HEAVY}
    out["entity_count"] = len(summary["entities"])
    return out
