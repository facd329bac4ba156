"""The files of the belief memory.

People's side (inputs, in git, edited by hand or by ``arkai forget`` / ``belief pin`` /
``prune --apply`` / ``memory import``):

- ``memory/decisions.yaml`` — ``forget:``, ``pin:``, ``prune:`` mappings of belief ID → note;
- ``memory/imported.jsonl`` — beliefs imported from an export file, replayed as episodes.

The replay's side (outputs of the ``beliefs`` stage, rebuilt from the inputs):

- ``beliefs/beliefs.json`` — every belief (kept in git, so belief changes show in pull requests);
- ``beliefs/changes.jsonl`` — the change log, one change per line;
- ``index/beliefs/`` — the beliefs' vectors and the statement embedding store (in DVC's cache,
  not in git; rebuilt when missing), and what mirrors the two files above for their readers:
  the recall index (``beliefs.jsonl``, ``recall.json``) and each belief's history
  (``history.json``), each keyed by the SHA-256 of the file it mirrors.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple, Protocol

import numpy as np
import numpy.typing as npt
import yaml

from arkai.adapters.fs import (
    atomic_write_text,
    fed,
    open_repo_file,
    parse_yaml,
    read_repo_file,
    write_chunks_if_changed,
    write_if_changed,
)
from arkai.adapters.store import iter_jsonl, read_json_as
from arkai.core.canonjson import dumps_compact, dumps_line
from arkai.core.hashing import DIGEST_PREFIX, file_digest, sha256_hex
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


class SlicedRows(Protocol):
    """Rows of float32 that slicing reads (an array, or the replay's beliefs' vectors)."""

    @property
    def shape(self) -> tuple[int, ...]: ...

    def __getitem__(self, key: slice, /) -> Any: ...


def write_state(
    root: Path,
    header: dict[str, Any],
    beliefs: list[Belief],
    changes: list[Change],
    vectors: SlicedRows,
) -> bool:
    """Write the replay's outputs; True when ``beliefs.json`` changed. ``vectors`` (one row a
    belief) is read and written a block at a time."""
    out = beliefs_dir(root)
    cache_dir(root).mkdir(parents=True, exist_ok=True)
    out.mkdir(parents=True, exist_ok=True)
    # Each in pieces, never held whole (a belief's entry ≈ 700 bytes, a change's line ≈ 150:
    # at 100,000 items of distinct talks, hundreds of MB each).
    digest, log = hashlib.sha256(), hashlib.sha256()
    changed = write_chunks_if_changed(out / BELIEFS, _document(header, beliefs, digest))
    write_chunks_if_changed(out / CHANGES, fed(_lines(changes), log))
    write_chunks_if_changed(cache_dir(root) / VECTORS, _npy(vectors))
    write_recall_index(root, beliefs, digest.hexdigest())
    write_histories(root, histories(changes), log.hexdigest())
    return changed


def written_digests(root: Path) -> dict[str, str | None]:
    """Each file :func:`write_state` writes, by its path from ``root``, and its SHA-256 (None
    when it is missing or not a regular file inside ``root``): recorded after a write, and
    compared before the ``beliefs`` stage keeps the last replay's outputs for unchanged
    episodes (:func:`arkai.ops.memory.build`) — a file edited, removed or replaced since is
    written again."""
    paths = [beliefs_dir(root) / BELIEFS, beliefs_dir(root) / CHANGES]
    paths += [cache_dir(root) / n for n in (VECTORS, RECALL_LINES, RECALL_META, HISTORY)]
    out: dict[str, str | None] = {}
    for path in paths:
        try:
            with open_repo_file(path, root) as fh:
                out[path.relative_to(root).as_posix()] = file_digest(fh)
        except (OSError, LibraryError):
            out[path.relative_to(root).as_posix()] = None
    return out


#: Stands for the beliefs in the dump of ``beliefs.json``'s other fields (escaped by JSON, so
#: no other value can read the same).
_BELIEFS_HERE = "\0beliefs\0"


def _document(header: dict[str, Any], beliefs: list[Belief], digest: Any) -> Iterator[bytes]:
    """``beliefs.json`` — ``header`` and the beliefs, the bytes of ``json.dumps(indent=1,
    sort_keys=True, ensure_ascii=False)`` of the whole document and a newline — in pieces, a
    batch of beliefs at a time; ``digest`` (a hashlib object) is fed every byte."""

    def out(text: str) -> bytes:
        data = text.encode("utf-8")
        digest.update(data)
        return data

    if not beliefs:
        yield out(json.dumps(header | {"beliefs": []}, indent=1, ensure_ascii=False,
                             sort_keys=True) + "\n")  # fmt: skip
        return
    whole = json.dumps(header | {"beliefs": _BELIEFS_HERE}, indent=1, ensure_ascii=False,
                       sort_keys=True)  # fmt: skip
    before, after = whole.split(json.dumps(_BELIEFS_HERE))
    yield out(before + "[\n")
    for lo in range(0, len(beliefs), 1024):
        entries = (json.dumps(b.to_dict(), indent=1, ensure_ascii=False, sort_keys=True)
                   for b in beliefs[lo : lo + 1024])  # fmt: skip
        text = ",\n".join("  " + entry.replace("\n", "\n  ") for entry in entries)
        yield out(("" if lo == 0 else ",\n") + text)
    yield out("\n ]" + after + "\n")


def _npy(vectors: SlicedRows, batch: int = 8192) -> Iterator[bytes]:
    """``vectors`` as ``np.save`` writes a float32 matrix, a block of rows at a time."""
    count, width = int(vectors.shape[0]), int(vectors.shape[1])
    head = io.BytesIO()
    layout = {"descr": "<f4", "fortran_order": False, "shape": (count, width)}
    np.lib.format.write_array_header_1_0(head, layout)
    yield head.getvalue()
    for lo in range(0, count, batch):
        yield np.ascontiguousarray(vectors[lo : lo + batch], dtype="<f4").tobytes()


def _lines(changes: list[Change], batch: int = 4096) -> Iterator[bytes]:
    for lo in range(0, len(changes), batch):
        yield "".join(map(_change_line, changes[lo : lo + batch])).encode()


_quoted = json.encoder.encode_basestring  # a JSON string, non-ASCII kept (canonjson's)


def _change_line(c: Change) -> str:
    """``canonjson.dumps_line(c.to_dict())`` (tested), made without the dict and the encoder's
    key sort — the keys written in their sorted order — for what every change holds: strings,
    an int and finite floats (anything else goes through the encoder). The change log has a
    line per reinforcement (≈ 80,000 at 10,000 items), encoded every run: 3.7× faster."""
    if type(c.seq) is not int or not (_plain(c.confidence) and _plain(c.similarity)):
        return dumps_line(c.to_dict())
    try:
        out = ['{"belief":', _quoted(c.belief)]
        if c.confidence is not None:
            out += [',"confidence":', float.__repr__(c.confidence)]
        out += [',"date":', _quoted(c.date)]
        if c.episode is not None:
            out += [',"episode":', _quoted(c.episode)]
        out += [',"kind":', _quoted(c.kind)]
        if c.note is not None:
            out += [',"note":', _quoted(c.note)]
        if c.other is not None:
            out += [',"other":', _quoted(c.other)]
        out += [',"seq":', int.__repr__(c.seq)]
        if c.similarity is not None:
            out += [',"similarity":', float.__repr__(c.similarity)]
    except TypeError:  # a field that is not a string
        return dumps_line(c.to_dict())
    out.append("}\n")
    return "".join(out)


def _plain(v: object) -> bool:
    """None or a finite float (what ``float.__repr__`` writes as JSON does)."""
    return v is None or (type(v) is float and math.isfinite(v))


# -- the recall index: answer `arkai recall` without parsing every belief ----------------

RECALL_LINES = "beliefs.jsonl"
RECALL_META = "recall.json"


def write_recall_index(root: Path, beliefs: list[Belief], beliefs_sha256: str) -> None:
    """``index/beliefs/beliefs.jsonl`` (one belief per line, in ``beliefs.json`` order) and
    ``recall.json`` (line offsets, statuses, and ``beliefs_sha256``, the hex SHA-256 of the
    ``beliefs.json`` they mirror): a cold ``arkai recall`` reads only the lines of its hits."""
    offsets: list[int] = []

    def lines() -> Iterator[bytes]:
        pos = 0
        for lo in range(0, len(beliefs), 4096):
            batch = [dumps_line(b.to_dict()).encode("utf-8") for b in beliefs[lo : lo + 4096]]
            for line in batch:
                offsets.append(pos)
                pos += len(line)
            yield b"".join(batch)

    folder = cache_dir(root)
    write_chunks_if_changed(folder / RECALL_LINES, lines())
    meta = {
        "beliefs_sha256": beliefs_sha256,
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


# -- each belief's history: the beliefs page without reading the change log -------------

HISTORY = "history.json"
#: Beliefs whose histories are encoded and written at once.
HISTORY_BATCH = 4096
HISTORY_LATEST = 10
"""The changes a belief's history keeps (its latest): the beliefs page shows them and counts
the rest (``arkai belief history ID`` lists them all)."""


class Step(NamedTuple):
    """A change as a belief's history shows it."""

    date: str
    kind: str
    note: str | None


@dataclass(slots=True)
class History:
    """One belief's changes as its page shows them: how many there are and the latest
    :data:`HISTORY_LATEST` — never every change (the log grows with every episode: ≈ 80,000
    lines, 12 MB, at 10,000 items)."""

    count: int = 0
    latest: list[Step] = field(default_factory=list)
    """Oldest first, at most :data:`HISTORY_LATEST`: a list cut as it grows (a bounded
    ``deque`` per belief took ≈ 600 bytes, ≈ 500 MB at 800,000 beliefs of one change each)."""

    def add(self, step: Step) -> None:
        """Count a change, ``step`` as its page shows it."""
        self.count += 1
        latest = self.latest
        latest.append(step)
        if len(latest) > HISTORY_LATEST:
            del latest[0]


def histories(changes: Iterable[Change]) -> dict[str, History]:
    """Each belief's :class:`History` over ``changes`` in their order (a change naming another
    belief counts for both). Changes in a row that read the same (date, kind, note: the
    creations of one day) share one :class:`Step`, a tuple: one each was ≈ 64 bytes a belief,
    50 MB at 800,000 beliefs, at the peak of the stage's write."""
    out: dict[str, History] = {}
    step: Step | None = None
    for c in changes:
        if step is None or step != (c.date, c.kind, c.note):
            step = Step(c.date, c.kind, c.note)
        for bid in (c.belief,) if c.other is None or c.other == c.belief else (c.belief, c.other):
            if (h := out.get(bid)) is None:
                h = out[bid] = History()
            h.add(step)
    return out


def write_histories(root: Path, by_belief: dict[str, History], changes_sha256: str) -> None:
    """``index/beliefs/history.json``: each belief's history and ``changes_sha256``, the hex
    SHA-256 of the ``changes.jsonl`` it was folded from. The beliefs stage has every change in
    memory; the site, which made each page's history by parsing the whole log (0.44 s a run
    at 10,000 items), reads this instead (:func:`read_histories`)."""
    # The bytes of ``json.dumps(doc, ensure_ascii=False, separators=(",", ":"))`` (tested; the
    # compact canonical encoder's: the head's keys are in sorted order, the rest has none), a
    # batch of beliefs at a time: the document whole, its text and its bytes were ≈ 0.3 GB at
    # 800,000 beliefs, the stage's peak.
    head = dumps_compact({"changes_sha256": changes_sha256, "latest": HISTORY_LATEST})

    def pieces() -> Iterator[bytes]:
        batch = HISTORY_BATCH
        out = [head[:-1], ',"beliefs":{']
        for n, (b, h) in enumerate(by_belief.items()):
            out.append(("," if n else "") + dumps_compact(b) + ":"
                       + dumps_compact([h.count, [list(s) for s in h.latest]]))  # fmt: skip
            if len(out) >= batch:
                yield "".join(out).encode("utf-8")
                out = []
        out.append("}}")
        yield "".join(out).encode("utf-8")

    write_chunks_if_changed(cache_dir(root) / HISTORY, pieces())


def read_histories(root: Path) -> dict[str, History] | None:
    """Each belief's history from ``history.json`` when it mirrors the current
    ``changes.jsonl`` (its digest, read a block at a time) and is in the form
    :func:`write_histories` gives; else None (the caller folds the log itself,
    :func:`histories` over :func:`iter_changes`). No change log: None as well."""
    try:
        raw = read_repo_file(cache_dir(root) / HISTORY, root, missing_ok=True)
        if raw is None:
            return None
        with open_repo_file(beliefs_dir(root) / CHANGES, root) as fh:
            log = file_digest(fh)
        doc = json.loads(raw)
    except (OSError, LibraryError, ValueError):
        return None
    if not (
        isinstance(doc, dict)
        and DIGEST_PREFIX + str(doc.get("changes_sha256")) == log
        and doc.get("latest") == HISTORY_LATEST
        and isinstance(doc.get("beliefs"), dict)
    ):
        return None
    out: dict[str, History] = {}
    for bid, entry in doc["beliefs"].items():
        steps = _steps(entry)
        if steps is None:
            return None
        out[bid] = History(entry[0], steps)
    return out


def _steps(entry: Any) -> list[Step] | None:
    """A history's ``[count, [[date, kind, note], …]]`` as steps, or None when not of that form
    (as many steps as the count, up to those kept: any other number is not)."""
    if not (
        isinstance(entry, list)
        and len(entry) == 2
        and type(entry[0]) is int
        and isinstance(entry[1], list)
        and len(entry[1]) == min(entry[0], HISTORY_LATEST)
    ):
        return None
    steps = []
    for s in entry[1]:
        if not (isinstance(s, list) and len(s) == 3 and type(s[0]) is str and type(s[1]) is str
                and (s[2] is None or type(s[2]) is str)):  # fmt: skip
            return None
        steps.append(Step(*s))
    return steps


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


def iter_changes(root: Path) -> Iterator[Change]:
    """``beliefs/changes.jsonl`` in its order, read a line at a time (it grows with every
    episode: ≈ 24 MB at 20,000 items); nothing when it is missing. A line that is not a
    change is a :class:`LibraryError` naming the file and line."""
    path = beliefs_dir(root) / CHANGES
    try:
        fh = open_repo_file(path, root)
    except FileNotFoundError:
        return
    with fh:
        yield from iter_jsonl(fh, path, "not a belief change", Change.from_dict)


def read_changes(root: Path) -> list[Change]:
    """Every change of ``beliefs/changes.jsonl`` (:func:`iter_changes`)."""
    return list(iter_changes(root))


def read_vectors(root: Path) -> F32 | None:
    path = cache_dir(root) / VECTORS
    try:
        arr = np.load(path, allow_pickle=False, mmap_mode="r")
    except (OSError, ValueError):
        return None
    return np.asarray(arr, dtype=np.float32)
