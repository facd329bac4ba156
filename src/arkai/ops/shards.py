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
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from arkai.adapters import events
from arkai.adapters.fs import read_repo_file
from arkai.adapters.layout import Item
from arkai.adapters.repo import Repo
from arkai.adapters.shards import (
    CONDENSED_FILE,
    encode_shard,
    read_condensed,
    read_manifest,
    read_shard,
    remove_shard,
    shard_file_name,
    shards_dir,
    write_manifest,
    write_shard_text,
)
from arkai.core.canonjson import dumps_line
from arkai.core.hashing import digest
from arkai.core.tokens import CHARS_PER_TOKEN, count_tokens
from arkai.errors import ArkaiError
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


def order_key(c: CondensedChunk) -> tuple[str, str, int]:
    """Chronological order: date (undated first), content ID, chunk number."""
    return (c.date or "", c.item, c.chunk)


def _bare(c: CondensedChunk) -> CondensedChunk:
    return replace(c, shard=None, number=None)


def _pack(
    records: Sequence[CondensedChunk], first_shard: int, first_number: int, limit: int
) -> list[tuple[str, list[CondensedChunk], list[int]]]:
    """Place ``records`` in shards numbered from ``first_shard``: (file, chunks, line tokens)."""
    out: list[tuple[str, list[CondensedChunk], list[int]]] = []
    number, shard = first_number, first_shard
    cur: list[CondensedChunk] = []
    toks: list[int] = []
    for rec in records:
        placed = replace(rec, shard=f"shard-{shard:03d}", number=number)
        cost = count_tokens(dumps_line(placed.to_dict()))
        if cur and sum(toks) + cost > limit:
            out.append((shard_file_name(shard), cur, toks))
            shard += 1
            cur, toks = [], []
            placed = replace(rec, shard=f"shard-{shard:03d}", number=number)
            cost = count_tokens(dumps_line(placed.to_dict()))
        cur.append(placed)
        toks.append(cost)
        number += 1
    if cur:
        out.append((shard_file_name(shard), cur, toks))
    return out


def _info(file: str, chunks: list[CondensedChunk], tokens: int, text: str) -> ShardInfo:
    dates = sorted(c.date for c in chunks if c.date)
    items: list[str] = []
    for c in chunks:
        if c.item not in items:
            items.append(c.item)
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


def build_shards(
    root: Path,
    records: Iterable[CondensedChunk],
    *,
    shard_tokens: int = SHARD_TOKENS,
    log: events.RunLog | None = None,
) -> ShardSummary:
    """Bring ``index/shards/`` up to date with ``records`` (every condensed chunk of the
    library, in any order); see the module doc for what changes and what stays."""
    if shard_tokens < 1:
        raise ValueError(f"condense.shard_tokens must be a positive number, not {shard_tokens}")
    summary = ShardSummary()
    current: dict[str, list[CondensedChunk]] = {}
    for rec in sorted((_bare(r) for r in records), key=order_key):
        current.setdefault(rec.item, []).append(rec)
    old = read_manifest(root)
    olds: tuple[ShardInfo, ...] = old.shards if old is not None else ()
    if old is not None and (old.shard_tokens, old.token_counter) != (shard_tokens, TOKEN_COUNTER):
        summary.resharded = (
            f"shard size changed from {old.shard_tokens} to {shard_tokens} tokens"
            if old.shard_tokens != shard_tokens
            else f"token counter changed from {old.token_counter} to {TOKEN_COUNTER}"
        ) + ": every shard rebuilt"
        if log is not None:
            log.emit("ShardsResharded", reason=summary.resharded,
                     old_shard_tokens=old.shard_tokens, shard_tokens=shard_tokens)  # fmt: skip
        olds = ()
    # The old shards that can still be read (up to the first damaged one), and each item's
    # chunks in them.
    readable: list[list[CondensedChunk]] = []
    for info in olds:
        if not _intact(root, info):
            break
        readable.append(list(read_shard(root, info.file)))
    held: dict[str, list[CondensedChunk]] = {}
    for chunks in readable:
        for c in chunks:
            held.setdefault(c.item, []).append(_bare(c))
    truncated = len(readable) < len(olds)
    tail_items = {c.item for c in readable[-1]} if readable else set()

    def is_changed(item: str, chunks: list[CondensedChunk]) -> bool:
        now = current.get(item, [])
        if truncated and item in tail_items:
            # It may go on in the damaged shard: what was readable must still be its start.
            return now[: len(chunks)] != chunks
        return now != chunks

    changed = {i for i, cs in held.items() if is_changed(i, cs)}
    first_changed = next(
        (n for n, chunks in enumerate(readable) if changed & {c.item for c in chunks}),
        len(readable),
    )
    if first_changed == len(readable) == len(olds):
        keep = max(0, len(olds) - 1)  # nothing old changed: reopen the newest shard
    else:
        keep = first_changed
        summary.rebuilt_from = olds[keep].file if keep < len(olds) else None
    kept = [(olds[n], readable[n]) for n in range(keep)]
    done = {(c.item, c.chunk) for _, chunks in kept for c in chunks}
    tail = [_bare(c) for chunks in readable[keep:] for c in chunks if c.item not in changed]
    done |= {(c.item, c.chunk) for c in tail}
    tail += sorted(
        (r for rs in current.values() for r in rs if (r.item, r.chunk) not in done), key=order_key
    )
    infos = [info for info, _ in kept]
    summary.kept = [info.file for info in infos]
    first_number = sum(info.chunks for info in infos) + 1
    for file, chunks, toks in _pack(tail, len(kept) + 1, first_number, shard_tokens):
        text = encode_shard(chunks)
        if write_shard_text(root, file, text):
            summary.written.append(file)
        else:
            summary.kept.append(file)
        infos.append(_info(file, chunks, sum(toks), text))
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


def library_chunks(repo: Repo, items: Iterable[Item] | None = None) -> list[CondensedChunk]:
    """Every condensed chunk of the library (an item that failed keeps its earlier chunks);
    ``items``: the library's items when the caller has listed them already."""
    out: list[CondensedChunk] = []
    for item in repo.items() if items is None else items:
        try:
            rec = read_condensed(item.condensed / CONDENSED_FILE, item.root)
        except (ArkaiError, OSError):
            continue  # unreadable: reported by `arkai validate`, redone by `arkai condense`
        if rec is not None and rec.content_id == item.id:
            out.extend(rec.chunks)
    return out


def shard_library(
    repo: Repo, log: events.RunLog | None = None, items: Iterable[Item] | None = None
) -> ShardSummary:
    """The shard step over the library's condensed chunks (``index/shards/``); ``items``: the
    library's items when the caller has listed them already (they are not listed again)."""
    _, shard_tokens = condense_params(repo.params)
    chunks = library_chunks(repo, items)
    return build_shards(repo.root, chunks, shard_tokens=shard_tokens, log=log)
