"""The persisted replay log (``index/beliefs/replay.json``): what the last replay did per
episode, so the next ``beliefs`` run decides afresh only the episodes whose outcome can differ
(:class:`arkai.memory.replay.ReplayLog`).

Derived and rebuilt when unusable, like the vectors beside it: a header line, a line of JSON
with the log but its candidates, then the candidates as little-endian ``int32``, every
episode's after the last one's (``cand_counts`` says how many each has)::

    {"digest": "sha256:…", "format": 3, "key": "sha256:…"}
    {"actions": […], "cand_counts": […], "fingerprints": […], "kth": […], "owners": […]}
    <int32 × sum(cand_counts)>

(The candidates are most of the log — 2.5 million numbers for 80,000 episodes — and as JSON
took ≈ 1.2 s a run to parse and check; as an array 0.1 s. Format 2, the candidates as JSON
lists in the second line and nothing after it, is still read.)

``key`` is the caller's digest of everything besides the episodes that the outcome depends on
(parameters, people's decisions, the contradiction check, the embedder); ``digest`` is the
SHA-256 of the bytes after the header line. A log is used only when it parses, has a known
format, the expected key and a matching digest, and is well formed (every candidate an earlier
episode); anything else is ignored and the replay starts from the first episode.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import numpy as np

from arkai.adapters.fs import atomic_write_bytes
from arkai.core import canonjson
from arkai.core.hashing import sha256_hex
from arkai.memory.replay import ReplayLog

LOG_FILE = "replay.json"
LOG_FORMAT = 3
#: The format before the candidates were an array (read, never written).
JSON_FORMAT = 2


def _dumps(value: Any) -> bytes:
    return canonjson.dumps_compact(value).encode()


def save_log(folder: Path, key: str, log: ReplayLog) -> None:
    counts = [len(c) for c in log.cands]
    flat = np.fromiter(itertools.chain.from_iterable(log.cands), dtype="<i4", count=sum(counts))
    meta = _dumps({"actions": log.actions, "cand_counts": counts, "kth": log.kth,
                   "fingerprints": log.fingerprints, "owners": log.owners})  # fmt: skip
    body = meta + b"\n" + flat.tobytes()
    header = {"digest": "sha256:" + sha256_hex(body), "format": LOG_FORMAT, "key": key}
    # Derived, rebuilt when lost: no fsync (a torn file fails its digest check).
    atomic_write_bytes(folder / LOG_FILE, _dumps(header) + b"\n" + body, fsync=False)


def load_log(folder: Path, key: str) -> ReplayLog | None:
    """The log saved under ``key``, or None when there is none or it cannot be trusted."""
    try:
        raw = (folder / LOG_FILE).read_bytes()
    except OSError:
        return None
    head, _, body = raw.partition(b"\n")
    try:
        header = json.loads(head)
        if (
            not isinstance(header, dict)
            or header.get("format") not in (LOG_FORMAT, JSON_FORMAT)
            or header.get("key") != key
            or header.get("digest") != "sha256:" + sha256_hex(body)
        ):
            return None
        del raw
        if header["format"] == LOG_FORMAT:
            meta, _, tail = body.partition(b"\n")
            d = json.loads(meta)
            cands = _array_candidates(d.pop("cand_counts"), tail)
        else:
            d = json.loads(body)
            cands = _candidates(d.pop("cands"))
        del body
        if cands is None:
            return None
        log = ReplayLog(
            fingerprints=[str(f) for f in d.pop("fingerprints")],
            actions=[tuple(a) for a in d.pop("actions")],
            owners=[str(b) for b in d["owners"]],
            cands=cands,
            kth=[int(v) for v in d["kth"]],
        )
    except (ValueError, KeyError, TypeError):
        return None
    n = len(log.fingerprints)
    if not n == len(log.actions) == len(log.owners) == len(log.cands) == len(log.kth):
        return None
    if not all(_well_formed(a) for a in log.actions):
        return None
    return log


def _array_candidates(counts: Any, tail: bytes) -> list[list[int]] | None:
    """Each episode's candidates from their counts and the ``int32`` array after the JSON
    line, checked (every one an earlier episode) with array operations, each number one
    shared int object (as :func:`_candidates` keeps them). None when malformed."""
    if not isinstance(counts, list) or not all(type(c) is int and c >= 0 for c in counts):
        return None
    if len(tail) % 4 or len(tail) // 4 != sum(counts):
        return None
    flat = np.frombuffer(tail, dtype="<i4")
    rows = np.repeat(np.arange(len(counts), dtype=np.int64), counts)
    if flat.size and not (bool((flat >= 0).all()) and bool((flat < rows).all())):
        return None
    shared = list(range(len(counts)))
    values = list(map(shared.__getitem__, flat.tolist()))
    ends = itertools.accumulate(counts)
    return [values[end - c : end] for c, end in zip(counts, ends, strict=True)]


def _candidates(raw: Any) -> list[list[int]] | None:
    """Each episode's candidates (earlier episodes' numbers), checked and kept in the decoded
    lists themselves, every number one shared int object: JSON makes an object per occurrence
    and the candidate lists of 80,000 episodes hold millions (with a checked copy beside the
    decoded lists, reading the log took the beliefs stage to 435 MB at 10,000 items; now
    360). None when malformed."""
    if not isinstance(raw, list):
        return None
    shared = list(range(len(raw)))
    for i, c in enumerate(raw):
        if not isinstance(c, list):
            return None
        for k, j in enumerate(c):
            if type(j) is not int or j < 0 or j >= i:
                return None
            c[k] = shared[j]
    return raw


#: Each action's fields after its kind (see :data:`arkai.memory.replay.Action`).
_SHAPES: dict[str, tuple[type, ...]] = {
    "c": (), "r": (str, float), "l": (str,), "x": (str, float, str),
}  # fmt: skip


def _well_formed(action: tuple[Any, ...]) -> bool:
    if len(action) == 3 and action[0] == "r":  # most episodes reinforce a belief: checked inline
        return isinstance(action[1], str) and isinstance(action[2], float)
    shape = _SHAPES.get(action[0]) if action and isinstance(action[0], str) else None
    if shape is None or len(action) != 1 + len(shape):
        return False
    return all(isinstance(v, t) for v, t in zip(action[1:], shape, strict=True))
