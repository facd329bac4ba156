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
  that was removed is taken out of the shards that hold it: those are written again with their
  other chunks (same shard, same numbers, same order) — a shard left with none is removed —
  and its new chunks are appended to the newest shard like a new item's; every other shard
  stays byte-identical, so an edit costs the shards holding the item and the newest one, not
  every shard after it;
- a shard file that is missing or whose bytes no longer match the manifest's digest is
  dropped and every item it listed is treated so (taken out of the other shards, appended
  again);
- changing ``shard_tokens`` (or the token counter) reshards everything, and says so (a
  ``ShardsResharded`` event and the summary's ``resharded`` reason).

Chunk numbers (``shard-NNN:chunk-M``) count through the library in shard order; a chunk keeps
its ID while it exists, and a chunk taken out leaves its number unused (the manifest's
``next_number`` is one past every number given), so an ID never names another chunk. New
shards are numbered after the highest shard number in the manifest.

Given each item's key (:func:`update_shards`; the index stage's item keys), a build reads only
the items whose key changed since the last such build and the old shards it needs; the files
are those :func:`build_shards` makes from every item.
"""

from __future__ import annotations

import hashlib
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
    """The first old shard written again because an item in it changed or was removed, or
    dropped because it could not be read (None when only the newest shard grew)."""
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


#: A chunk as its shard line's object: read from an old shard, with its placement (``shard``
#: and ``number``); to be placed, without (what :meth:`CondensedChunk.to_dict` gives for a bare
#: chunk). The chunks kept in a shard written again are moved as these, so an unchanged chunk
#: is not turned into a record and back.
Raw = dict[str, Any]


def _raw(c: CondensedChunk) -> Raw:
    return _bare(c).to_dict()


def _chunk(d: Raw, file: str) -> CondensedChunk:
    """The bare record of a shard line's object (``file``: the shard, for the message)."""
    try:
        return _bare(CondensedChunk.from_dict(d))
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise LibraryError(f"index/shards/{file}: not a condensed chunk ({exc})") from None


def _pack(
    records: Iterable[Raw],
    opened: tuple[str, list[Raw], list[str], int] | None,
    next_shard: int,
    first_number: int,
    limit: int,
) -> Iterator[tuple[str, list[Raw], list[str], int]]:
    """Place ``records`` (without placement) after ``opened`` — the newest shard reopened: its
    file, chunks, lines and tokens — or in a shard of its own, then in shards numbered from
    ``next_shard``, one shard at a time: (file, chunks, their lines, tokens)."""
    number = first_number
    if opened is not None:
        file, cur, lines, tokens = opened[0], list(opened[1]), list(opened[2]), opened[3]
    else:
        file, cur, lines, tokens = shard_file_name(next_shard), [], [], 0
        next_shard += 1
    for rec in records:
        line = dumps_line(rec | {"shard": _shard_id(file), "number": number})
        cost = count_tokens(line)
        if cur and tokens + cost > limit:
            yield file, cur, lines, tokens
            file, cur, lines, tokens = shard_file_name(next_shard), [], [], 0
            next_shard += 1
            line = dumps_line(rec | {"shard": _shard_id(file), "number": number})
            cost = count_tokens(line)
        cur.append(rec)
        lines.append(line)
        tokens += cost
        number += 1
    if cur:
        yield file, cur, lines, tokens


def _shard_id(file: str) -> str:
    return file.removesuffix(".jsonl")


def _shard_number(info: ShardInfo) -> int | None:
    """The ``NNN`` of a manifest entry named as this module names shards, else None."""
    head, _, digits = info.id.partition("-")
    if head != "shard" or not digits.isdigit() or info.file != f"{info.id}.jsonl":
        return None
    return int(digits)


def _info(file: str, chunks: list[Raw], tokens: int, text: str) -> ShardInfo:
    dates = sorted(d for c in chunks if (d := c.get("date")))
    items = list(dict.fromkeys(c["item"] for c in chunks))
    return ShardInfo(
        id=_shard_id(file),
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
    (every shard is then rebuilt, and the summary and the run log say so) or when one is not
    named as this module names shards (a manifest edited by hand)."""
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
    named = [_shard_number(info) for info in old.shards]
    numbers = [n for n in named if n is not None]
    if len(numbers) != len(named) or numbers != sorted(set(numbers)):
        return ()  # every shard is rebuilt
    return old.shards


def _next_number(old: ShardManifest | None, olds: Sequence[ShardInfo]) -> int:
    """The number the next chunk placed gets (1 when no old shard is kept)."""
    if not olds or old is None:
        return 1
    if old.next_number is not None:
        return old.next_number
    return sum(info.chunks for info in olds) + 1  # numbered 1, 2, … before it was kept


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
    old = _old_manifest(root)
    olds = _usable(old, shard_tokens, summary, log)
    gone = {n for n, info in enumerate(olds) if not _intact(root, info)}
    held: dict[str, list[CondensedChunk]] = {}
    for n, info in enumerate(olds):
        if n not in gone:
            for c in read_shard(root, info.file):
                held.setdefault(c.item, []).append(_bare(c))
    changed = {i for i, cs in held.items() if current.get(i, []) != cs}
    changed.update(i for n in gone for i in olds[n].items)
    fresh = [r for i, rs in current.items() if i in changed or i not in held for r in rs]
    del held, current
    return _apply(root, old, olds, gone, changed, _in_order(fresh),
                  lambda n: read_shard_objects(root, olds[n].file), shard_tokens, summary,
                  log)  # fmt: skip


def _old_manifest(root: Path) -> ShardManifest | None:
    """The manifest the last build left, for a build: None when there is none — or when it is
    damaged (not a shard manifest), so that every shard is made again and the manifest written
    anew (a damaged one failed every run until someone removed it)."""
    try:
        return read_manifest(root)
    except LibraryError:
        return None


def _in_order(chunks: list[CondensedChunk]) -> tuple[Iterator[Raw], int]:
    """``chunks`` (emptied) as their lines' objects in chronological order, each made as it
    is taken and the chunk let go (the objects of every chunk were held beside the chunks),
    and how many."""
    # Reversed, to be taken from the end: order keys are distinct (an item's chunk numbers
    # are), so this is the chronological order backwards.
    chunks.sort(key=order_key, reverse=True)

    def take() -> Iterator[Raw]:
        while chunks:
            yield _raw(chunks.pop())

    return take(), len(chunks)


def _line(c: CondensedChunk) -> bytes:
    """A bare chunk as the bytes :func:`_rebuild` digests: its shard line without placement."""
    return dumps_line(c.to_dict()).encode("utf-8")


def _rebuild(
    root: Path,
    ids: Sequence[str],
    chunks_of: Callable[[Collection[str]], Iterable[CondensedChunk]],
    *,
    shard_tokens: int,
    log: events.RunLog | None,
    candidates: set[str] | None = None,
) -> ShardSummary:
    """:func:`build_shards`'s files for the chunks of the items ``ids`` (``chunks_of``; every
    item of the library unless ``candidates`` is given), without the library's chunks in
    memory: the old shards are read one at a time for a digest of each item's chunks as they
    hold them, the items one at a time for a digest of their chunks now and the
    chronological order of those of the items to place (three small values a chunk), and the
    items to place are read again as their chunks are packed — an item's chunks usually lie
    together in that order, and the last :data:`_READ_BACK` items read are kept.
    ``candidates``: only these items can differ from the old shards (the last build's record
    said so; every old shard is intact): the shards holding none of them are not read, and
    those read are kept to be written again. (Every chunk of the library held at once, and
    again as the old shards hold it, was ≈ 38 KB an item: 709 MB for the step at 10,000 items
    when the old shards were kept but the record was not; issue 17.)"""
    summary = ShardSummary()
    old = _old_manifest(root)
    olds = _usable(old, shard_tokens, summary, log)
    gone = (set() if candidates is not None
            else {n for n, info in enumerate(olds) if not _intact(root, info)})  # fmt: skip
    kept: dict[int, list[Raw]] = {}

    def objects(n: int) -> list[Raw]:
        if candidates is None:
            return read_shard_objects(root, olds[n].file)
        if n not in kept:
            kept[n] = read_shard_objects(root, olds[n].file)
        return kept[n]

    held: dict[str, Any] = {}
    """Item → the running SHA-256 of its chunks as the old shards hold them, in their order."""
    for n, info in enumerate(olds):
        if n in gone or (candidates is not None and not candidates.intersection(info.items)):
            continue
        for d in objects(n):
            c = _chunk(d, info.file)
            if candidates is None or c.item in candidates:
                h = held.get(c.item)
                if h is None:
                    h = held[c.item] = hashlib.sha256()
                h.update(_line(c))
    # As build_shards decides: an item is changed when the shards hold other chunks for it
    # than it has now (none: removed); items the shards do not hold are new.
    keys: list[tuple[str, str, int]] = []
    changed: set[str] = set()
    read: dict[str, dict[int, CondensedChunk]] = {}
    """The last :data:`_READ_BACK` items to place that were read (an edit's item is not
    read twice)."""

    def keep(item: str, chunks: Iterable[CondensedChunk]) -> dict[int, CondensedChunk]:
        if len(read) >= _READ_BACK:
            del read[next(iter(read))]  # the item read longest ago
        read[item] = {c.chunk: c for c in chunks}
        return read[item]

    for i in ids:
        now = sorted((_bare(c) for c in chunks_of([i])), key=order_key)
        h = hashlib.sha256()
        for c in now:
            h.update(_line(c))
        was = held.pop(i, None)
        if was is not None and was.digest() == h.digest():
            continue
        if was is not None:
            changed.add(i)
        keys.extend(order_key(c) for c in now)
        keep(i, now)
    changed.update(held)
    changed.update(i for n in gone for i in olds[n].items)
    del held
    keys.sort()

    def records() -> Iterator[Raw]:
        for _, item, number in keys:
            chunks = read.get(item)
            if chunks is None:
                chunks = keep(item, chunks_of([item]))
            chunk = chunks.get(number)
            if chunk is None:
                raise LibraryError(f"{item}: its condensed chunks changed while the shards were "
                                   "built; run again")  # fmt: skip
            yield _raw(chunk)

    return _apply(root, old, olds, gone, changed, (records(), len(keys)), objects, shard_tokens,
                  summary, log)  # fmt: skip


#: Items whose chunks a build keeps read while it packs (:func:`_rebuild`).
_READ_BACK = 64


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
    holding them (and the newest, when chunks are appended). Otherwise every item is read
    (:func:`build_shards`). Either way the record is written for the next build."""
    record = read_record(root)
    summary = ShardSummary()
    old = _old_manifest(root)
    olds = _usable(old, shard_tokens, ShardSummary(), None)
    if (
        record is None
        or old is None
        or not olds
        or record.manifest != manifest_digest(root)
        or not all(_intact(root, info) for info in olds)
    ):
        forget_record(root)  # a torn build below must not leave the old record standing
        summary = _rebuild(root, sorted(keys), chunks_of, shard_tokens=shard_tokens, log=log)
        summary.items_read = len(keys)
    else:
        candidates = {i for i, k in keys.items() if record.keys.get(i) != k}
        candidates |= record.keys.keys() - keys.keys()
        reading = sorted(candidates & keys.keys())
        forget_record(root)
        # Only the candidates read, and the old shards holding one (a library grown by
        # thousands of items at once reads them as a first build does: one at a time).
        summary = _rebuild(root, reading, chunks_of, shard_tokens=shard_tokens, log=log,
                           candidates=candidates)  # fmt: skip
        summary.items_read = len(reading)
    made = manifest_digest(root)
    if made is not None:
        write_record(root, ShardRecord(made, dict(keys)))
    return summary


def _apply(
    root: Path,
    old: ShardManifest | None,
    olds: Sequence[ShardInfo],
    gone: set[int],
    changed: set[str],
    fresh: tuple[Iterable[Raw], int],
    objects: Callable[[int], list[Raw]],
    shard_tokens: int,
    summary: ShardSummary,
    log: events.RunLog | None,
) -> ShardSummary:
    """Write the shards: the old ones (``olds``) that cannot be read (``gone``) dropped; those
    holding a ``changed`` item written again without its chunks (removed when none is left);
    ``fresh`` — chunks without placement as their lines' objects, in chronological order, and
    how many — appended to the newest old shard, spilling into new shards (taken one at a
    time: :func:`_in_order`, :func:`_rebuild`); the others kept as they are.
    ``objects(n)``: old shard ``n``'s lines' objects (placement included). Changed files are
    staged and moved into place once the last is made; old files no longer listed are removed;
    the manifest is written when it changed."""
    records, count = fresh
    newest = len(olds) - 1
    reopen = count > 0 and newest >= 0 and newest not in gone
    infos: list[ShardInfo] = []
    first = _next_number(old, olds)
    clear_staged(root)
    try:
        for n, info in enumerate(olds):
            touched = bool(changed.intersection(info.items))
            if n in gone or (n == newest and reopen):
                if n in gone and summary.rebuilt_from is None:
                    summary.rebuilt_from = info.file
                continue
            if not touched:
                infos.append(info)
                summary.kept.append(info.file)
                continue
            if summary.rebuilt_from is None:
                summary.rebuilt_from = info.file
            left = [d for d in objects(n) if d["item"] not in changed]
            if left:
                lines = [dumps_line(d) for d in left]  # placement as it was
                text = "".join(lines)
                if stage_shard_text(root, info.file, text):
                    summary.written.append(info.file)
                else:
                    summary.kept.append(info.file)
                infos.append(_info(info.file, left, sum(map(count_tokens, lines)), text))
        opened = None
        if reopen:
            info = olds[newest]
            if changed.intersection(info.items) and summary.rebuilt_from is None:
                summary.rebuilt_from = info.file
            left = [d for d in objects(newest) if d["item"] not in changed]
            lines = [dumps_line(d) for d in left]
            opened = (info.file, left, lines, sum(map(count_tokens, lines)))
        numbers = [x for info in olds if (x := _shard_number(info)) is not None]
        after = max(numbers, default=0) + 1
        for file, chunks, lines, tokens in _pack(records, opened, after, first, shard_tokens):
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
                             shards=tuple(infos), next_number=first + count)  # fmt: skip
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
    by_id = {item.id: item for item in listed}

    def chunks_of(ids: Collection[str]) -> Iterable[CondensedChunk]:
        return [c for i in ids for c in _item_chunks(by_id[i])]

    if keys is not None and len(by_id) == len(listed) == len(keys):
        if full:
            forget_record(repo.root)
        return update_shards(repo.root, keys, chunks_of, shard_tokens=shard_tokens, log=log)
    forget_record(repo.root)
    if len(by_id) == len(listed):  # the items read one at a time (no record: no keys)
        summary = _rebuild(repo.root, sorted(by_id), chunks_of, shard_tokens=shard_tokens, log=log)
    else:  # two folders with one content ID: every chunk, as build_shards takes them
        summary = build_shards(
            repo.root, library_chunks(repo, listed), shard_tokens=shard_tokens, log=log
        )
    summary.items_read = len(listed)
    return summary
