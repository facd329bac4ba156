"""CITES counts kept incrementally (docs/index-format.md, "CITES").

An item cites another when its transcript holds the other's URL or exact title
(:func:`arkai.search.graph.find_cites`). The count of one needle text in one transcript
(:func:`arkai.search.graph.cite_counts`) is a function of the two alone, so what an item found
stays right while its transcript and the needle texts it was searched for do. An item added,
removed or retitled changes only a few needle texts; before this cache, it made every
transcript be searched again for every needle (≈ 20 s at 10,000 items).

**What is kept** (``.arkai/index-cache/cites.json``, one file): a version number, each needle
text with the version at which it (last) appeared, and per item its key (the digest of its
inputs), the version it has been searched through and the nonzero counts it found, after a
header line with the SHA-256 of the rest (:func:`arkai.adapters.itemcache.write_checked`, as
the other records beside the item cache). A run bumps
the version when any needle text is new; an item whose key is unchanged is searched only for
the texts newer than its version (its transcript is read for that only), and its counts for
texts that are gone are dropped; a new or changed item is searched for every text. A text that
goes and comes back is new again. Every entry is checked (types, versions no later than the
file's); anything else is searched afresh. The file is written whole (atomically) when it
changed; it is derived data: lost, every item is searched again.
"""

from __future__ import annotations

import bisect
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arkai.adapters.itemcache import CACHE_DIR, read_checked, write_checked
from arkai.core import canonjson
from arkai.search.graph import (
    Needle,
    cite_counts,
    cites_of,
    distinct_needles,
    needle_targets,
    node_id,
)

FILE = CACHE_DIR / "cites.json"
VERSION = 1


@dataclass
class CiteUpdate:
    cites: dict[str, dict[str, int]]
    """Content node ID → cited node ID → occurrences."""
    searched: int = 0
    """Items searched for every needle text (new, changed, or without a usable entry)."""
    searched_new: int = 0
    """Items whose transcript was searched for the new needle texts only."""
    rejected: bool = False
    """The file was there but not usable."""


def _empty() -> dict[str, Any]:
    return {"at": 0, "texts": {}, "items": {}}


def _load(body: bytes | None) -> dict[str, Any] | None:
    """The state in the file's body (:func:`read_checked`: None when the file is missing or
    its body is not the one its digest names), or None when it is not a usable state."""
    if body is None:
        return None
    try:
        data = json.loads(body.decode("utf-8"))
        at, texts, items = data["at"], data["texts"], data["items"]
        ok = (
            data.get("version") == VERSION
            and type(at) is int
            and at >= 0
            and isinstance(texts, dict)
            and all(type(v) is int and 0 < v <= at for v in texts.values())
            and isinstance(items, dict)
        )
    except (ValueError, UnicodeDecodeError, KeyError, TypeError):
        ok = False
    return {"at": at, "texts": texts, "items": items} if ok else None


def _entry(raw: Any, key: str, at: int) -> tuple[int, dict[str, int]] | None:
    """(version searched through, counts) of an item's entry made from ``key``."""
    if not isinstance(raw, dict) or raw.get("key") != key:
        return None
    v, found = raw.get("at"), raw.get("found")
    if type(v) is not int or not 0 <= v <= at or not isinstance(found, dict):
        return None
    if not all(isinstance(t, str) and type(c) is int and c > 0 for t, c in found.items()):
        return None
    return v, found


def update_cites(
    root: Path,
    items: Iterable[tuple[str, str, Callable[[], str]]],
    needles: Sequence[Needle],
    *,
    full: bool = False,
) -> CiteUpdate:
    """Every item's CITES counts: ``items`` are (content ID, key of its inputs, a function that
    reads its transcript). ``full``: the file is not used (every item searched)."""
    path = root / FILE
    old = read_checked(path)
    loaded = None if full else _load(old)
    state = _empty() if loaded is None else loaded
    rejected = not full and loaded is None and (path.exists() or path.is_symlink())
    wanted = distinct_needles(needles)
    words = dict(wanted)
    targets = needle_targets(needles)
    old_texts: Mapping[str, int] = state["texts"]
    at = state["at"] + (1 if any(t not in old_texts for t in words) else 0)
    texts = {t: old_texts.get(t, at) for t in words}
    # The texts in the order they appeared, to find those newer than an item's version.
    order = sorted((v, t) for t, v in texts.items())
    versions = [v for v, _ in order]
    out = CiteUpdate(cites={}, rejected=rejected)
    entries: dict[str, dict[str, Any]] = {}
    for cid, key, read in items:
        entry = _entry(state["items"].get(cid), key, state["at"])
        if entry is None:
            found = cite_counts(read(), wanted)
            out.searched += 1
        else:
            v, kept = entry
            found = {t: c for t, c in kept.items() if t in texts}
            newer = order[bisect.bisect_right(versions, v) :]
            if newer:
                found.update(cite_counts(read(), [(t, words[t]) for _, t in newer]))
                out.searched_new += 1
        entries[cid] = {"at": at, "found": found, "key": key}
        node = node_id("content", cid)
        out.cites[node] = cites_of(node, found, targets)
    new = {"at": at, "items": entries, "texts": texts, "version": VERSION}
    body = canonjson.dumps_line(new).encode("utf-8")
    if body != old:
        write_checked(path, body)  # derived (no fsync): searched again when lost
    return out
