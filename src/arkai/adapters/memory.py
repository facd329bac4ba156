"""The files of the belief memory.

People's side (inputs, in git, edited by hand or by ``arkai forget`` / ``belief pin`` /
``prune --apply`` / ``memory import``):

- ``memory/decisions.yaml`` — ``forget:``, ``pin:``, ``prune:`` mappings of belief ID → note;
- ``memory/imported.jsonl`` — beliefs imported from an export file, replayed as episodes.

The replay's side (outputs of the ``beliefs`` stage, rebuilt from the inputs):

- ``beliefs/beliefs.json`` — every belief (kept in git, so belief changes show in pull requests);
- ``beliefs/changes.jsonl`` — the change log, one change per line;
- ``index/beliefs/`` — the beliefs' vectors and the statement embedding store (in DVC's cache,
  not in git; rebuilt when missing).
"""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import yaml

from arkai.adapters.fs import (
    atomic_write_text,
    parse_yaml,
    read_repo_file,
    write_chunks_if_changed,
    write_if_changed,
)
from arkai.adapters.store import iter_jsonl, read_json_as
from arkai.core.canonjson import dumps_line
from arkai.core.hashing import sha256_hex
from arkai.errors import LibraryError
from arkai.model.belief import TYPES, Belief, Change, Episode

MEMORY_DIR = "memory"
DECISIONS = "decisions.yaml"
IMPORTED = "imported.jsonl"
BELIEFS_DIR = "beliefs"
BELIEFS = "beliefs.json"
CHANGES = "changes.jsonl"
CACHE = "index/beliefs"
"""The replay's vectors and statement embeddings (repo-relative; a DVC-cached output)."""
VECTORS = "vectors.npy"
STORE = "store"
DECISION_KINDS = ("forget", "pin", "prune")
F32 = npt.NDArray[np.float32]

_HEADER = """\
# People's decisions on beliefs, read by the `beliefs` stage (arkai forget ID, arkai belief pin
# ID and arkai prune --apply write here; edit by hand as well). Each maps a belief ID to a note.
#   forget: the belief is dropped and stays dropped (what would reinforce it is absorbed)
#   pin:    the belief never decays, is never pruned and is never invalidated by a conflict
#   prune:  the belief is pruned at the next replay
"""


def decisions_path(root: Path) -> Path:
    return root / MEMORY_DIR / DECISIONS


def read_decisions(root: Path) -> dict[str, dict[str, str]]:
    """``{"forget": {id: note}, "pin": {...}, "prune": {...}}``; a bad file names itself."""
    path = decisions_path(root)
    data = read_repo_file(path, root, missing_ok=True)
    out: dict[str, dict[str, str]] = {k: {} for k in DECISION_KINDS}
    if data is None:
        return out
    raw = parse_yaml(data, path)
    if raw is None:
        return out
    if not isinstance(raw, dict):
        raise LibraryError(f"{path}: expected a mapping with forget:, pin: and prune:")
    for key, entries in raw.items():
        if key not in DECISION_KINDS:
            raise LibraryError(f"{path}: unknown section {key!r} (expected forget, pin, prune)")
        if entries is None:
            continue
        if not isinstance(entries, dict):
            raise LibraryError(f"{path}: '{key}' must map belief IDs to notes")
        for bid, note in entries.items():
            if not isinstance(bid, str) or not bid:
                raise LibraryError(f"{path}: '{key}' has a key that is not a belief ID: {bid!r}")
            if note is not None and not isinstance(note, str):
                raise LibraryError(f"{path}: '{key}.{bid}' must be a note (text)")
            out[key][bid] = note or ""
    return out


def write_decisions(root: Path, decisions: dict[str, dict[str, str]]) -> Path:
    path = decisions_path(root)
    path.parent.mkdir(parents=True, exist_ok=True)
    body = {k: dict(sorted(decisions.get(k, {}).items())) for k in DECISION_KINDS}
    text = _HEADER + yaml.safe_dump(body, sort_keys=False, allow_unicode=True, width=100)
    atomic_write_text(path, text)
    return path


def read_imported(root: Path) -> list[Episode]:
    path = root / MEMORY_DIR / IMPORTED
    data = read_repo_file(path, root, missing_ok=True)
    return [] if data is None else list(iter_jsonl(data, path, "not an imported belief", _imported))


def _imported(d: dict[str, Any]) -> Episode:
    kind = d.get("type", "fact")
    if kind not in TYPES:
        raise ValueError(f"unknown type {kind!r}")
    return Episode(id=str(d["id"]), statement=str(d["statement"]), date=str(d["date"]),
                   item=None, kind=kind)  # fmt: skip


def write_imported(root: Path, rows: list[dict[str, Any]]) -> Path:
    path = root / MEMORY_DIR / IMPORTED
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, "".join(dumps_line(r) for r in rows))
    return path


def beliefs_dir(root: Path) -> Path:
    return root / BELIEFS_DIR


def cache_dir(root: Path) -> Path:
    """``index/beliefs/``: the beliefs' vectors and the statement embedding store."""
    return root / CACHE


def write_state(
    root: Path, header: dict[str, Any], beliefs: list[Belief], changes: list[Change], vectors: F32
) -> bool:
    """Write the replay's outputs; True when ``beliefs.json`` changed."""
    out = beliefs_dir(root)
    cache_dir(root).mkdir(parents=True, exist_ok=True)
    out.mkdir(parents=True, exist_ok=True)
    doc = header | {"beliefs": [b.to_dict() for b in beliefs]}
    encoded = (json.dumps(doc, indent=1, ensure_ascii=False, sort_keys=True) + "\n").encode()
    changed = write_if_changed(out / BELIEFS, encoded)
    # Both in pieces, never held whole (a line a change: ≈ 120 MB at 100,000 items).
    write_chunks_if_changed(out / CHANGES, _lines(changes))
    rows = np.ascontiguousarray(vectors, dtype=np.float32)
    head = io.BytesIO()
    np.lib.format.write_array_header_1_0(head, np.lib.format.header_data_from_array_1_0(rows))
    body = rows.reshape(-1).data.cast("B")
    write_chunks_if_changed(cache_dir(root) / VECTORS, [head.getvalue(), body])
    write_recall_index(root, beliefs, encoded)
    return changed


def _lines(changes: list[Change], batch: int = 4096) -> Iterator[bytes]:
    for lo in range(0, len(changes), batch):
        yield "".join(dumps_line(c.to_dict()) for c in changes[lo : lo + batch]).encode()


# -- the recall index: answer `arkai recall` without parsing every belief ----------------

RECALL_LINES = "beliefs.jsonl"
RECALL_META = "recall.json"


def write_recall_index(root: Path, beliefs: list[Belief], beliefs_json: bytes) -> None:
    """``index/beliefs/beliefs.jsonl`` (one belief per line, in ``beliefs.json`` order) and
    ``recall.json`` (line offsets, statuses, and the digest of the ``beliefs.json`` they
    mirror): a cold ``arkai recall`` reads only the lines of its hits."""
    lines = [dumps_line(b.to_dict()).encode("utf-8") for b in beliefs]
    offsets, pos = [], 0
    for line in lines:
        offsets.append(pos)
        pos += len(line)
    folder = cache_dir(root)
    write_if_changed(folder / RECALL_LINES, b"".join(lines))
    meta = {
        "beliefs_sha256": sha256_hex(beliefs_json),
        "offsets": offsets,
        "status": [b.status for b in beliefs],
    }
    write_if_changed(folder / RECALL_META, json.dumps(meta, separators=(",", ":")).encode())


@dataclass(frozen=True)
class RecallIndex:
    """The recall index, checked against ``beliefs.json``."""

    statuses: list[str]
    offsets: list[int]
    path: Path

    def beliefs(self, rows: list[int]) -> list[Belief]:
        out = []
        with open(self.path, "rb") as fh:
            for row in rows:
                fh.seek(self.offsets[row])
                out.append(Belief.from_dict(json.loads(fh.readline())))
        return out


def read_recall_index(root: Path) -> RecallIndex | None:
    """The recall index when it mirrors the current ``beliefs.json`` (else None: callers
    parse ``beliefs.json`` itself)."""
    folder = cache_dir(root)
    data = read_repo_file(beliefs_dir(root) / BELIEFS, root, missing_ok=True)
    meta_raw = read_repo_file(folder / RECALL_META, root, missing_ok=True)
    if data is None or meta_raw is None or not (folder / RECALL_LINES).is_file():
        return None
    try:
        meta = json.loads(meta_raw)
        if meta.get("beliefs_sha256") != sha256_hex(data):
            return None
        return RecallIndex([str(x) for x in meta["status"]], [int(x) for x in meta["offsets"]],
                           folder / RECALL_LINES)  # fmt: skip
    except (ValueError, KeyError, TypeError):
        return None


def read_state(root: Path) -> tuple[dict[str, Any], list[Belief]] | None:
    """The header and beliefs of ``beliefs/beliefs.json``, or None before the first replay."""
    return read_json_as(beliefs_dir(root) / BELIEFS, root, "not a beliefs file", _state)


def _state(doc: Any) -> tuple[dict[str, Any], list[Belief]]:
    beliefs = [Belief.from_dict(b) for b in doc.pop("beliefs")]
    return doc, beliefs


def state_digest(root: Path) -> str:
    """Digest of the bytes of ``beliefs.json`` and ``changes.jsonl`` (either may be missing):
    what a page made from the replayed state is keyed by, without parsing either."""
    h = hashlib.sha256()
    for name in (BELIEFS, CHANGES):
        data = read_repo_file(beliefs_dir(root) / name, root, missing_ok=True)
        h.update(b"-;" if data is None else b"%d;" % len(data) + data)
    return h.hexdigest()


def read_changes(root: Path) -> list[Change]:
    path = beliefs_dir(root) / CHANGES
    data = read_repo_file(path, root, missing_ok=True)
    return (
        []
        if data is None
        else list(iter_jsonl(data, path, "not a belief change", Change.from_dict))
    )


def read_vectors(root: Path) -> F32 | None:
    path = cache_dir(root) / VECTORS
    try:
        arr = np.load(path, allow_pickle=False, mmap_mode="r")
    except (OSError, ValueError):
        return None
    return np.asarray(arr, dtype=np.float32)
