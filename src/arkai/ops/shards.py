"""Shards: the library's condensed chunks in chronological files of at most
``condense.shard_tokens`` tokens (seed 001, "Stage 6: Archive to Shards"; docs/answers.md).

Order: the item's date (``created`` of a chat, else ``published``, else ``created_at``; items
without one come first), then the content ID, then the chunk number. A shard's tokens are the
tokens (:func:`arkai.core.tokens.count_tokens`) of its lines; a shard is closed before the chunk
that would take it past the limit (a chunk bigger than the limit alone is a shard of its own).

**Append-only.** Shards are static historical slices; only the newest one grows:

- new items are appended to the newest shard, in chronological order among themselves, and
  spill into new shards when it is full — *even when their date is older than the newest
  shard's content* (the manifest's first/last dates show the overlap);
- an item whose condensed chunks changed (its transcript was edited, it was re-condensed) or
  that was removed rebuilds the shards from the first one that holds it: the shards before it
  stay byte-identical, the rest are packed again (their unchanged chunks in their old order,
  then the changed and new items chronologically);
- a shard file that is missing or whose bytes no longer match the manifest's digest is
  rebuilt the same way, from that shard on;
- changing ``shard_tokens`` (or the token counter) reshards everything, and says so (a
  ``ShardsResharded`` event and the summary's ``resharded`` reason).

Chunk numbers (``shard-NNN:chunk-M``) count through the library in shard order, so chunks in
unchanged shards keep their IDs.

Given each item's key (:func:`update_shards`; the index stage's item keys), a build reads only
the items whose key changed since the last such build and the old shards it needs; the files
are those :func:`build_shards` makes from every item.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from arkai.adapters import events
from arkai.adapters.fs import read_repo_file
from arkai.adapters.layout import Item
from arkai.adapters.repo import Repo
from arkai.adapters.shards import (
    CONDENSED_FILE,
    ShardRecord,
    clear_staged,
    commit_staged,
    forget_record,
    manifest_digest,
    read_condensed,
    read_manifest,
    read_record,
    read_shard,
    read_shard_objects,
    remove_shard,
    shard_file_name,
    shards_dir,
    stage_shard_text,
    write_manifest,
    write_record,
)
from arkai.core.canonjson import dumps_line
from arkai.core.hashing import digest
from arkai.core.tokens import CHARS_PER_TOKEN, count_tokens
from arkai.errors import ArkaiError, LibraryError
from arkai.model.record import AsDict
from arkai.model.shard import CondensedChunk, ShardInfo, ShardManifest
from arkai.search.condense_chunks import SHARD_TOKENS, condense_params

#: The token counter's name in the manifest: a change of rule reshards like a change of size.
TOKEN_COUNTER = f"chars/{CHARS_PER_TOKEN}"


@dataclass
class ShardSummary(AsDict):
    """What one shard build did."""

    shards: int = 0
    chunks: int = 0
    tokens: int = 0
    written: list[str] = field(default_factory=list)
    """Shard files whose bytes changed (or were created)."""
    kept: list[str] = field(default_factory=list)
    """Shard files left byte-identical."""
    removed: list[str] = field(default_factory=list)
    rebuilt_from: str | None = None
    """The first shard packed again, when any was."""
    resharded: str | None = None
    """Why every shard was rebuilt (a new ``shard_tokens``, a new token counter), if so."""
    items_read: int | None = None
    """How many items' condensed chunks were read (every item's unless only the changed ones
    needed reading: :func:`update_shards`); None when the caller gave the chunks."""


def order_key(c: CondensedChunk) -> tuple[str, str, int]:
    """Chronological order: date (undated first), content ID, chunk number."""
    return (c.date or "", c.item, c.chunk)


def _bare(c: CondensedChunk) -> CondensedChunk:
    return replace(c, shard=None, number=None)


#: A chunk as its shard line's object, without placement (``shard`` and ``number``): what
#: :meth:`CondensedChunk.to_dict` gives for a bare chunk. Chunks packed again are moved as these,
#: so an unchanged chunk is not turned into a record and back.
Raw = dict[str, Any]
_PLACEMENT = ("shard", "number")


def _raw(c: CondensedChunk) -> Raw:
    return _bare(c).to_dict()


def _chunk(d: Raw, file: str) -> CondensedChunk:
    """The bare record of a shard line's object (``file``: the shard, for the message)."""
    try:
        return _bare(CondensedChunk.from_dict(d))
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise LibraryError(f"index/shards/{file}: not a condensed chunk ({exc})") from None


def _pack(
    records: Iterable[Raw], first_shard: int, first_number: int, limit: int
) -> Iterator[tuple[str, list[Raw], list[str], int]]:
    """Place ``records`` in shards numbered from ``first_shard``, one shard at a time: (file,
    chunks, their lines, tokens)."""
    number, shard = first_number, first_shard
    cur: list[Raw] = []
    lines: list[str] = []
    tokens = 0
    for rec in records:
        line = dumps_line(rec | {"shard": f"shard-{shard:03d}", "number": number})
        cost = count_tokens(line)
        if cur and tokens + cost > limit:
            yield shard_file_name(shard), cur, lines, tokens
            shard += 1
            cur, lines, tokens = [], [], 0
            line = dumps_line(rec | {"shard": f"shard-{shard:03d}", "number": number})
            cost = count_tokens(line)
        cur.append(rec)
        lines.append(line)
        tokens += cost
        number += 1
    if cur:
        yield shard_file_name(shard), cur, lines, tokens


def _info(file: str, chunks: list[Raw], tokens: int, text: str) -> ShardInfo:
    dates = sorted(d for c in chunks if (d := c.get("date")))
    items = list(dict.fromkeys(c["item"] for c in chunks))
    return ShardInfo(
        id=file.removesuffix(".jsonl"),
        file=file,
        first_date=dates[0] if dates else None,
        last_date=dates[-1] if dates else None,
        items=tuple(items),
        chunks=len(chunks),
        tokens=tokens,
        digest=digest(text.encode("utf-8")),
    )


def _intact(root: Path, info: ShardInfo) -> bool:
    try:
        data = read_repo_file(shards_dir(root) / info.file, root, missing_ok=True)
    except (ArkaiError, OSError):
        return False
    return data is not None and digest(data) == info.digest


def _grouped(records: Iterable[CondensedChunk]) -> dict[str, list[CondensedChunk]]:
    """Each item's chunks, bare (no placement), in chronological order."""
    current: dict[str, list[CondensedChunk]] = {}
    for rec in sorted((_bare(r) for r in records), key=order_key):
        current.setdefault(rec.item, []).append(rec)
    return current


def _usable(
    old: ShardManifest | None, shard_tokens: int, summary: ShardSummary, log: events.RunLog | None
) -> tuple[ShardInfo, ...]:
    """The old manifest's shards — none when they were made with another size or token counter
    (every shard is then rebuilt, and the summary and the run log say so)."""
    if shard_tokens < 1:
        raise ValueError(f"condense.shard_tokens must be a positive number, not {shard_tokens}")
    if old is None:
        return ()
    if (old.shard_tokens, old.token_counter) != (shard_tokens, TOKEN_COUNTER):
        summary.resharded = (
            f"shard size changed from {old.shard_tokens} to {shard_tokens} tokens"
            if old.shard_tokens != shard_tokens
            else f"token counter changed from {old.token_counter} to {TOKEN_COUNTER}"
        ) + ": every shard rebuilt"
        if log is not None:
            log.emit("ShardsResharded", reason=summary.resharded,
                     old_shard_tokens=old.shard_tokens, shard_tokens=shard_tokens)  # fmt: skip
        return ()
    return old.shards


def _first_holding(olds: Sequence[ShardInfo], changed: set[str], default: int) -> int:
    """The first old shard holding a ``changed`` item (the manifest lists each shard's items),
    else ``default``."""
    return next((n for n, info in enumerate(olds) if changed.intersection(info.items)), default)


def build_shards(
    root: Path,
    records: Iterable[CondensedChunk],
    *,
    shard_tokens: int = SHARD_TOKENS,
    log: events.RunLog | None = None,
) -> ShardSummary:
    """Bring ``index/shards/`` up to date with ``records`` (every condensed chunk of the
    library, in any order); see the module doc for what changes and what stays."""
    summary = ShardSummary()
    current = _grouped(records)
    old = read_manifest(root)
    olds = _usable(old, shard_tokens, summary, log)
    # The old shards that can still be read (up to the first damaged one), and each item's
    # chunks in them.
    readable: list[list[CondensedChunk]] = []
    for info in olds:
        if not _intact(root, info):
            break
        readable.append([_bare(c) for c in read_shard(root, info.file)])
    held: dict[str, list[CondensedChunk]] = {}
    for chunks in readable:
        for c in chunks:
            held.setdefault(c.item, []).append(c)
    truncated = len(readable) < len(olds)
    tail_items = {c.item for c in readable[-1]} if readable else set()

    def is_changed(item: str, chunks: list[CondensedChunk]) -> bool:
        now = current.get(item, [])
        if truncated and item in tail_items:
            # It may go on in the damaged shard: what was readable must still be its start.
            return now[: len(chunks)] != chunks
        return now != chunks

    changed = {i for i, cs in held.items() if is_changed(i, cs)}
    first_changed = _first_holding(olds[: len(readable)], changed, len(readable))
    if first_changed == len(readable) == len(olds):
        keep = max(0, len(olds) - 1)  # nothing old changed: reopen the newest shard
    else:
        keep = first_changed
        summary.rebuilt_from = olds[keep].file if keep < len(olds) else None
    kept = [c for chunks in readable[keep:] for c in chunks if c.item not in changed]
    done = {(c.item, c.chunk) for chunks in readable[:keep] for c in chunks}
    done |= {(c.item, c.chunk) for c in kept}
    fresh = [r for rs in current.values() for r in rs if (r.item, r.chunk) not in done]
    tail = [_raw(c) for c in kept] + [_raw(c) for c in sorted(fresh, key=order_key)]
    return _write(root, old, olds, keep, tail, shard_tokens, summary, log)


def update_shards(
    root: Path,
    keys: Mapping[str, str],
    chunks_of: Callable[[Collection[str]], Iterable[CondensedChunk]],
    *,
    shard_tokens: int = SHARD_TOKENS,
    log: events.RunLog | None = None,
) -> ShardSummary:
    """:func:`build_shards` for a library given as ``keys`` — each item's (content ID's) digest
    of what its chunks are made from — and ``chunks_of(ids)``, the current chunks of those
    items: the same files, made by reading only what can differ.

    The record of the last such build (:class:`arkai.adapters.shards.ShardRecord`) is used
    while the manifest is the one it left and every shard still has its digest; then only the
    items whose key changed (added, removed, edited) are read, and of the old shards only those
    holding them and those from the first changed one on. Otherwise every item is read
    (:func:`build_shards`). Either way the record is written for the next build."""
    record = read_record(root)
    summary = ShardSummary()
    old = read_manifest(root)
    olds = _usable(old, shard_tokens, ShardSummary(), None)
    if (
        record is None
        or old is None
        or not olds
        or record.manifest != manifest_digest(root)
        or not all(_intact(root, info) for info in olds)
    ):
        forget_record(root)  # a torn build below must not leave the old record standing
        summary = build_shards(root, chunks_of(list(keys)), shard_tokens=shard_tokens, log=log)
        summary.items_read = len(keys)
    else:
        candidates = {i for i, k in keys.items() if record.keys.get(i) != k}
        candidates |= record.keys.keys() - keys.keys()
        reading = sorted(candidates & keys.keys())
        summary.items_read = len(reading)
        now = _grouped(chunks_of(reading))
        # The old shards as their lines' objects: only the candidates' chunks are made records
        # (to compare), the others are packed again as they are.
        cache: dict[int, list[Raw]] = {}

        def shard(n: int) -> list[Raw]:
            if n not in cache:
                cache[n] = read_shard_objects(root, olds[n].file)
            return cache[n]

        held: dict[str, list[CondensedChunk]] = {}
        for n, info in enumerate(olds):
            if candidates.intersection(info.items):
                for d in shard(n):
                    if d["item"] in candidates:
                        held.setdefault(d["item"], []).append(_chunk(d, olds[n].file))
        # As build_shards decides: an item is changed when the shards hold other chunks for it
        # than it has now; items the shards do not hold are new.
        changed = {i for i, cs in held.items() if now.get(i, []) != cs}
        first_changed = _first_holding(olds, changed, len(olds))
        if first_changed == len(olds):
            keep = len(olds) - 1  # nothing old changed: reopen the newest shard
        else:
            keep = first_changed
            summary.rebuilt_from = olds[keep].file
        fresh = [r for i, rs in now.items() if i in changed or i not in held for r in rs]
        del held

        def tail() -> Iterator[Raw]:
            # One old shard at a time (the new files are staged until all are made).
            for n in range(keep, len(olds)):
                for d in cache.pop(n, None) or read_shard_objects(root, olds[n].file):
                    if d["item"] not in changed:
                        yield {k: v for k, v in d.items() if k not in _PLACEMENT}
            yield from (_raw(c) for c in sorted(fresh, key=order_key))

        forget_record(root)
        summary = _write(root, old, olds, keep, tail(), shard_tokens, summary, log)
    made = manifest_digest(root)
    if made is not None:
        write_record(root, ShardRecord(made, dict(keys)))
    return summary


def _write(
    root: Path,
    old: ShardManifest | None,
    olds: Sequence[ShardInfo],
    keep: int,
    tail: Iterable[Raw],
    shard_tokens: int,
    summary: ShardSummary,
    log: events.RunLog | None,
) -> ShardSummary:
    """Keep the first ``keep`` old shards as they are and pack ``tail`` (chunks without
    placement, in their new order; it may read old shards as it goes) into the shards after
    them, one shard in memory at a time: the changed files are staged and moved into place
    once the last one is made. Remove old files no longer listed; write the manifest when it
    changed."""
    infos = list(olds[:keep])
    summary.kept = [info.file for info in infos]
    first_number = sum(info.chunks for info in infos) + 1
    clear_staged(root)
    try:
        for file, chunks, lines, tokens in _pack(tail, keep + 1, first_number, shard_tokens):
            text = "".join(lines)
            if stage_shard_text(root, file, text):
                summary.written.append(file)
            else:
                summary.kept.append(file)
            infos.append(_info(file, chunks, tokens, text))
    except BaseException:
        clear_staged(root)
        raise
    commit_staged(root, summary.written)
    names = {i.file for i in infos}
    for info in old.shards if old is not None else ():
        if info.file not in names:
            remove_shard(root, info.file)
            summary.removed.append(info.file)
    manifest = ShardManifest(shard_tokens=shard_tokens, token_counter=TOKEN_COUNTER,
                             shards=tuple(infos))  # fmt: skip
    if old != manifest:
        write_manifest(root, manifest)
    summary.shards = len(infos)
    summary.chunks = sum(i.chunks for i in infos)
    summary.tokens = sum(i.tokens for i in infos)
    if log is not None:
        for file in summary.written:
            log.emit("ShardWritten", shard=file)
    return summary


def _item_chunks(item: Item) -> list[CondensedChunk]:
    """The item's condensed chunks (an item that failed keeps its earlier chunks); none when
    its ``condensed.json`` is missing, unreadable (reported by `arkai validate`, redone by
    `arkai condense`) or another item's."""
    try:
        rec = read_condensed(item.condensed / CONDENSED_FILE, item.root)
    except (ArkaiError, OSError):
        return []
    return list(rec.chunks) if rec is not None and rec.content_id == item.id else []


def library_chunks(repo: Repo, items: Iterable[Item] | None = None) -> list[CondensedChunk]:
    """Every condensed chunk of the library; ``items``: the library's items when the caller has
    listed them already."""
    return [c for item in (repo.items() if items is None else items) for c in _item_chunks(item)]


def shard_library(
    repo: Repo,
    log: events.RunLog | None = None,
    items: Iterable[Item] | None = None,
    keys: Mapping[str, str] | None = None,
    *,
    full: bool = False,
) -> ShardSummary:
    """The shard step over the library's condensed chunks (``index/shards/``); ``items``: the
    library's items when the caller has listed them already (they are not listed again);
    ``keys``: each of those items' digest of its files, its ``condensed.json`` among them (the
    index stage's item keys) — then only items whose key changed since the last build are read
    (:func:`update_shards`); ``full``: the record of the last build is not trusted (every item
    is read, as by a first build)."""
    _, shard_tokens = condense_params(repo.params)
    listed = list(repo.items() if items is None else items)
    if keys is not None and len({item.id for item in listed}) == len(listed) == len(keys):
        by_id = {item.id: item for item in listed}

        def chunks_of(ids: Collection[str]) -> Iterable[CondensedChunk]:
            return [c for i in ids for c in _item_chunks(by_id[i])]

        if full:
            forget_record(repo.root)
        return update_shards(repo.root, keys, chunks_of, shard_tokens=shard_tokens, log=log)
    forget_record(repo.root)
    summary = build_shards(
        repo.root, library_chunks(repo, listed), shard_tokens=shard_tokens, log=log
    )
    summary.items_read = len(listed)
    return summary
