"""The persisted replay log (``index/beliefs/replay.json``): what the last replay did per
episode, so the next ``beliefs`` run decides afresh only the episodes whose outcome can differ
(:class:`arkai.memory.replay.ReplayLog`).

Derived and rebuilt when unusable, like the vectors beside it: a header line, a line of JSON
with the belief IDs the rows name by number and the conflicts' notes, then the log's arrays,
one after the other, little-endian, ``n`` rows each::

    {"digest": "sha256:…", "episodes": n, "format": 4, "key": "sha256:…", "width": 32}
    {"ids": ["<belief ID>", …], "notes": {"<episode>": "<note>", …}, "written": {…}}
    fingerprints  16 bytes × n
    kinds         uint8 × n        (the action: KINDS' position)
    targets       int32 × n        (the belief it names; -1 for a creation)
    owners        int32 × n        (the belief the episode joined)
    scores        float64 × n      (the action's similarity; 0 when it has none)
    kth           int64 × n
    candidates    int32 × n × width (nearest first, padded with -1)

Read, each array is read into a buffer of its own, never Python objects per number: the log of
80,000 episodes as JSON lists (format 2) and then as JSON with a candidates array (format 3)
took the ``beliefs`` stage from ≈ 230 to ≈ 430 MB while it was read. Formats 2 and 3 are still
read (once: the next save writes format 4).

``key`` is the caller's digest of everything besides the episodes that the outcome depends on
(parameters, people's decisions, the contradiction check, the embedder); ``digest`` is the
SHA-256 of the bytes after the header line. ``written`` (optional) is what the caller wrote from
the replay that saved the log (:func:`arkai.ops.memory.build`: each output file's digest and the
beliefs' counts), under the same digest as the arrays. A log is used only when it parses, has a
known format, the expected key and a matching digest, and is well formed (every candidate an
earlier episode, every action a known kind naming a known belief); anything else is ignored and
the replay starts from the first episode.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from io import BufferedReader
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import numpy.typing as npt

from arkai.adapters.fs import atomic_write
from arkai.core import canonjson
from arkai.memory.replay import CANDIDATES, FINGERPRINT, KINDS, NONE, ROW_CHUNK, ReplayLog

LOG_FILE = "replay.json"
LOG_FORMAT = 4
#: The formats before the arrays (read, never written): 3 held the candidates as an array
#: after a JSON line with the rest, 2 everything as JSON.
OLDER_FORMATS = (2, 3)
#: The arrays after the JSON line, in file order: (field, dtype, values per row).
_ARRAYS: tuple[tuple[str, str, int], ...] = (
    ("fingerprints", "S16", 1), ("kinds", "u1", 1), ("targets", "<i4", 1), ("owners", "<i4", 1),
    ("scores", "<f8", 1), ("kth", "<i8", 1), ("cands", "<i4", CANDIDATES),
)  # fmt: skip


def _dumps(value: Any) -> bytes:
    return canonjson.dumps_compact(value).encode()


def _pieces(log: ReplayLog, written: Mapping[str, Any] | None) -> list[bytes | memoryview]:
    """The bytes after the header line, as pieces (the arrays not copied)."""
    meta: dict[str, Any] = {"ids": list(log.ids),
                            "notes": {str(o): n for o, n in sorted(log.notes.items())}}  # fmt: skip
    if written is not None:
        meta["written"] = dict(written)
    out: list[bytes | memoryview] = [_dumps(meta) + b"\n"]
    for name, dtype, _ in _ARRAYS:
        arr = np.ascontiguousarray(getattr(log, name), dtype=dtype).reshape(-1)
        out.append(arr.data.cast("B"))
    return out


@dataclass(frozen=True, slots=True)
class SavedLog:
    """A log read back, and what its saver recorded it wrote (None: nothing recorded)."""

    log: ReplayLog
    written: dict[str, Any] | None


def save_log(
    folder: Path, key: str, log: ReplayLog, written: Mapping[str, Any] | None = None
) -> None:
    pieces = _pieces(log, written)
    digest = hashlib.sha256()
    for piece in pieces:
        digest.update(piece)
    header = {"digest": "sha256:" + digest.hexdigest(), "episodes": len(log),
              "format": LOG_FORMAT, "key": key, "width": CANDIDATES}  # fmt: skip

    def write(fh: BinaryIO) -> None:
        fh.write(_dumps(header) + b"\n")
        for piece in pieces:
            fh.write(piece)

    # Derived, rebuilt when lost: no fsync (a torn file fails its digest check).
    atomic_write(folder / LOG_FILE, write, fsync=False)


def load_log(folder: Path, key: str) -> ReplayLog | None:
    """The log saved under ``key``, or None when there is none or it cannot be trusted."""
    saved = load_saved(folder, key)
    return None if saved is None else saved.log


def load_saved(folder: Path, key: str) -> SavedLog | None:
    """:func:`load_log`, with what was recorded beside it."""
    try:
        with (folder / LOG_FILE).open("rb") as fh:
            line = fh.readline()
            header = json.loads(line) if line.endswith(b"\n") else None
            if (
                not isinstance(header, dict)
                or header.get("format") not in (LOG_FORMAT, *OLDER_FORMATS)
                or header.get("key") != key
            ):
                return None
            if header["format"] == LOG_FORMAT:
                return _read_arrays(header, fh)
            body = fh.read()
        if header.get("digest") != "sha256:" + hashlib.sha256(body).hexdigest():
            return None
        older = _read_older(header["format"], body)
        return None if older is None else SavedLog(older, None)
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        return None


def _read_arrays(header: dict[str, Any], fh: BufferedReader) -> SavedLog | None:
    """A format-4 log from ``fh`` (after its header line), each array read into its own
    buffer as the digest is taken — not views of one buffer of the file, so that a replay
    can let go of the candidates before the episodes (``_Resume.compare_searched`` in
    :mod:`arkai.memory.replay`); None when it is not well formed or fails its digest."""
    n = header.get("episodes")
    if type(n) is not int or n < 0 or header.get("width") != CANDIDATES:
        return None
    line = fh.readline()
    size = sum(n * per * np.dtype(dtype).itemsize for _, dtype, per in _ARRAYS)
    if not line.endswith(b"\n") or os.fstat(fh.fileno()).st_size != fh.tell() + size:
        return None
    digest = hashlib.sha256(line)
    meta = json.loads(line)
    ids, notes, written = meta["ids"], meta["notes"], meta.get("written")
    if written is not None and not isinstance(written, dict):
        return None
    if not isinstance(ids, list) or not all(isinstance(b, str) for b in ids):
        return None
    if not isinstance(notes, dict) or not all(isinstance(v, str) for v in notes.values()):
        return None
    arrays: dict[str, npt.NDArray[Any]] = {}
    for name, dtype, per in _ARRAYS:
        arr = np.empty(n * per, dtype=dtype)
        view = arr.data.cast("B")
        if fh.readinto(view) != len(view):
            return None
        digest.update(view)
        arrays[name] = arr.reshape(n, per) if per > 1 else arr
    if header.get("digest") != "sha256:" + digest.hexdigest():
        return None
    log = ReplayLog(
        fingerprints=arrays["fingerprints"].view(FINGERPRINT),
        kinds=arrays["kinds"],
        targets=arrays["targets"].astype(np.int32, copy=False),
        scores=arrays["scores"].astype(np.float64, copy=False),
        notes={int(o): v for o, v in notes.items()},
        owners=arrays["owners"].astype(np.int32, copy=False),
        ids=ids,
        cands=arrays["cands"].astype(np.int32, copy=False),
        kth=arrays["kth"].astype(np.int64, copy=False),
    )
    return SavedLog(log, written) if _well_formed(log) else None


def _well_formed(log: ReplayLog) -> bool:
    """Every action a known kind naming a known belief (a creation none), a similarity where
    it has one, a note exactly on each conflict, every owner a known belief, and every row's
    candidates earlier episodes, then padding."""
    kinds, targets, beliefs = log.kinds, log.targets, len(log.ids)
    if len(kinds) and int(kinds.max()) >= len(KINDS):
        return False
    creates = kinds == KINDS.index("c")
    if not bool((targets[creates] == NONE).all()):
        return False
    named = targets[~creates]
    if len(named) and not (int(named.min()) >= 0 and int(named.max()) < beliefs):
        return False
    scored = (kinds == KINDS.index("r")) | (kinds == KINDS.index("x"))
    if not (bool(np.isfinite(log.scores[scored]).all()) and bool((log.scores[~scored] == 0).all())):
        return False
    if set(log.notes) != set(np.flatnonzero(kinds == KINDS.index("x")).tolist()):
        return False
    if len(log.owners) and not (int(log.owners.min()) >= 0 and int(log.owners.max()) < beliefs):
        return False
    for lo in range(0, len(log), ROW_CHUNK):
        rows = log.cands[lo : lo + ROW_CHUNK]
        named_c = rows != NONE
        earlier = rows < np.arange(lo, lo + len(rows))[:, None]
        if not bool(((rows >= 0) & earlier | ~named_c).all()):
            return False
        if bool((named_c[:, 1:] & ~named_c[:, :-1]).any()):  # a candidate after padding
            return False
    return True


def _read_older(fmt: int, body: bytes) -> ReplayLog | None:
    """A format-2 or -3 log (lists of JSON values; format 3's candidates an ``int32`` array
    after the JSON line), as :meth:`ReplayLog.of` takes them."""
    if fmt == 3:
        meta, _, tail = body.partition(b"\n")
        d = json.loads(meta)
        cands = _counted(d.pop("cand_counts"), tail)
        if cands is None:
            return None
    else:
        d = json.loads(body)
        cands = d.pop("cands")
        if not isinstance(cands, list):
            return None
    prints = d["fingerprints"]
    if not isinstance(prints, list) or not all(isinstance(f, str) and len(f) == 32 for f in prints):
        return None
    return ReplayLog.of(
        [bytes.fromhex(f) for f in prints], d["actions"], d["owners"], cands, d["kth"]
    )


def _counted(counts: Any, tail: bytes) -> list[list[int]] | None:
    """Format 3's candidates: each episode's count of the ``int32`` array after the JSON line."""
    if not isinstance(counts, list) or not all(type(c) is int and c >= 0 for c in counts):
        return None
    if len(tail) % 4 or len(tail) // 4 != sum(counts):
        return None
    flat = np.frombuffer(tail, dtype="<i4").tolist()
    ends = itertools.accumulate(counts)
    return [flat[end - c : end] for c, end in zip(counts, ends, strict=True)]
