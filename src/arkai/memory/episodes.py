"""Episodes: every dated statement the library holds, in the order the replay reads them.

Extracted claims of every item (notes written with ``arkai remember`` are items too), each with
its evidence ID so a belief can show the byte-exact quotes behind it; only claims whose quote
resolved exactly count, and a claim a person rejected in review never does. Imported beliefs
(``memory/imported.jsonl``) are episodes too. The order is (date, item, position, id); an
item's date is its ``published`` date, else its ``created`` date, else when it was added.

The ``beliefs`` stage reads every item's episodes on each run; :func:`library_episodes` keeps
them in a table (:class:`arkai.adapters.itemtable.ItemTable`, ``episodes.tsv``) keyed by the
bytes of the item's evidence and review, its ID and date, so an unchanged item costs a ``lstat``
of its files instead of parsing its evidence (any changed byte, or a damaged row, reads it
again).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path

from arkai import __version__
from arkai.adapters.fs import read_repo_file
from arkai.adapters.itemtable import ItemTable, stat_digest
from arkai.adapters.layout import EVIDENCE, REVIEW, Item
from arkai.adapters.review import apply_review, load_item_review
from arkai.adapters.store import read_evidence
from arkai.core.hashing import sha256_hex
from arkai.core.itemdate import item_date
from arkai.errors import ArkaiError
from arkai.memory.replay import fingerprint
from arkai.model.belief import Episode


def item_episodes(item: Item) -> list[Episode]:
    """The episodes of one item: its exact, not-rejected claims."""
    lines = apply_review(read_evidence(item.extracted / EVIDENCE), load_item_review(item))
    day = _day(item)
    out = []
    for line in lines:
        if not line.verified or line.rejected or line.span is None or not line.claim.strip():
            continue
        out.append(
            Episode(
                id=line.id,
                statement=line.claim.strip(),
                date=day,
                item=item.id,
                position=line.span.start,
                quote=line.quote,
            )
        )
    return out


def ordered(episodes: Iterable[Episode]) -> list[Episode]:
    """Time order: (date, item, position, id), duplicates of one ID dropped."""
    seen: dict[str, Episode] = {}
    for ep in episodes:
        seen.setdefault(ep.id, ep)
    return sorted(seen.values(), key=lambda e: (e.date, e.item or "", e.position, e.id))


def _day(item: Item) -> str:
    return (item_date(item.metadata) or "0000-00-00")[:10]


#: Bump when what :func:`item_episodes` makes of the same files changes.
EPISODES_VERSION = 1

#: An item as a read of the episodes records it: its folder (relative to library/), content
#: ID, date, the key of its files (None when one cannot be read safely) and the digest of its
#: episodes as the replay reads them (:func:`made_digest`; None with no key).
Keyed = tuple[str, str, str, str | None, str | None]


def made_digest(eps: Iterable[Episode]) -> str:
    """The digest of an item's episodes as the replay reads them (each one's
    :func:`~arkai.memory.replay.fingerprint`, in order): equal for a transcript edited around
    claims that stay as they were, though the evidence file (which pins the transcript's
    digest) and so the files' key change."""
    return sha256_hex(b"".join(fingerprint(e) for e in eps))[:32]


TABLE = "episodes"


def _files(item: Item) -> list[Path]:
    return [item.extracted / EVIDENCE, item.path / REVIEW, item.path / "metadata.json"]


def _key(item: Item) -> str | None:
    """The digest of what :func:`item_episodes` reads: the item's ID and date, the bytes of its
    evidence and review; None when a file cannot be read safely."""
    parts = [f"episodes\0{item.id}\0{_day(item)}"]
    try:
        for path in _files(item)[:2]:
            data = read_repo_file(path, item.root, missing_ok=True)
            parts.append("-" if data is None else sha256_hex(data))
    except (ArkaiError, OSError):
        return None
    return "sha256:" + sha256_hex("\n".join(parts).encode("utf-8"))


def _from_row(content_id: str, day: str, body: bytes, quotes: bool) -> list[Episode] | None:
    try:
        rows = json.loads(body)
        return [Episode(id=str(i), statement=str(s), date=day, item=content_id, position=int(p),
                        quote=None if q is None or not quotes else str(q))
                for i, s, p, q in rows]  # fmt: skip
    except (ValueError, TypeError):
        return None


def _to_row(episodes: list[Episode]) -> bytes:
    rows = [[e.id, e.statement, e.position, e.quote] for e in episodes]
    return json.dumps(rows, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def episode_table(root: Path) -> ItemTable:
    """The table of every item's episodes (loaded: where each row is, not its body)."""
    return ItemTable(root, TABLE, f"{EPISODES_VERSION}\0{__version__}")


def _of(table: ItemTable, item: Item, quotes: bool) -> tuple[list[Episode], str | None]:
    """The item's episodes, from the table when its files are unchanged (kept there either
    way), and the key of its files (None when one cannot be read safely)."""
    stats = stat_digest(_files(item))
    row = table.by_stat(item.id, stats[0] if stats is not None else None)
    key = row.key if row is not None else _key(item)
    if row is None and key is not None:
        row = table.by_key(item.id, key)
    got = _from_row(item.id, _day(item), row.body, quotes) if row is not None else None
    eps = item_episodes(item) if got is None else got
    body = row.body if row is not None and got is not None else _to_row(eps)
    table.keep(item.id, stats, key, body)
    return (eps if quotes or got is not None else [replace(e, quote=None) for e in eps]), key


def _keyed(item: Item, key: str | None, eps: list[Episode]) -> Keyed:
    """The item as a read records it (its episodes' digest only with a key)."""
    return (item.rel.as_posix(), item.id, _day(item), key,
            None if key is None else made_digest(eps))  # fmt: skip


def library_episodes(
    root: Path,
    items: Iterable[Item],
    *,
    quotes: bool = True,
    keys: list[Keyed] | None = None,
) -> list[Episode]:
    """:func:`item_episodes` of every item (in the order given), each taken from the table
    when the item's files are unchanged; the table then holds exactly these items. Without
    ``quotes`` the episodes carry none (the replay reads none; a quote is ≈ a third of an
    episode's memory). ``keys``: each item as :data:`Keyed` is appended to it (what
    :func:`planned_episodes` is given next time)."""
    table = episode_table(root)
    out: list[Episode] = []
    for item in items:
        eps, key = _of(table, item, quotes)
        out.extend(eps)
        if keys is not None:
            keys.append(_keyed(item, key, eps))
    table.save(prune=True)
    return out


def planned_keys(
    root: Path,
    items: Iterable[Item],
    kept: Iterable[Keyed],
    keys: list[Keyed],
    table: ItemTable | None = None,
) -> bool:
    """:func:`planned_episodes` without reading ``kept``'s episodes: each is only retained in
    the table under its key (its row copied, unread, when the table is written); ``items``'
    episodes are made or taken as there. Whether the table held every kept item under its key
    (if not, ``keys`` is incomplete and the caller reads the library whole). The episodes are
    then :func:`planned_episodes` of ``keys`` with no items (given the same ``table``, it is
    not loaded again: ≈ 0.1 s at 10,000 items)."""
    table = episode_table(root) if table is None else table
    for row in kept:
        _, content_id, _, key, _ = row
        if key is None or not table.retain(content_id, key):
            return False
        keys.append(row)
    for item in items:
        eps, key = _of(table, item, False)
        keys.append(_keyed(item, key, eps))
    table.save(prune=True)
    return True


def planned_episodes(
    root: Path,
    items: Iterable[Item],
    kept: Iterable[Keyed],
    keys: list[Keyed],
    table: ItemTable | None = None,
) -> list[Episode] | None:
    """The episodes (without quotes) of the library whose items are ``items`` — those whose
    files may have changed, read as :func:`library_episodes` reads them — and ``kept``: the
    items known unchanged since their episodes were last made (as :data:`Keyed` then), taken
    from the table without looking at their files; None when the table does not hold one of
    them under that key (a row damaged, or written by another build for other bytes
    meanwhile: the caller reads the library whole). ``keys`` as for
    :func:`library_episodes`; the table then holds exactly these items. ``table``: the
    episode table as :func:`episode_table` loaded it (and a save since left it), else loaded
    here."""
    table = episode_table(root) if table is None else table
    out: list[Episode] = []
    for keyed in kept:
        _, content_id, day, key, _ = keyed
        row = table.by_key(content_id, key) if key is not None else None
        got = _from_row(content_id, day, row.body, False) if row is not None else None
        if row is None or got is None:
            return None
        table.keep(content_id, (row.stat, 0) if row.stat else None, key, row.body)
        out.extend(got)
        keys.append(keyed)
    for item in items:
        eps, key = _of(table, item, False)
        out.extend(eps)
        keys.append(_keyed(item, key, eps))
    table.save(prune=True)
    return out
