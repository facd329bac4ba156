"""The vector lane above a size threshold: an approximate nearest-neighbour index (DESIGN §7).

Below ``index.ann.threshold`` chunks the vector lane scans every row exactly
(:meth:`arkai.search.vectors.VectorStore.search`). From the threshold on, the index stage also
writes a FAISS inverted-file index with 8-bit scalar-quantised residuals (``IVF<nlist>,SQ8``,
inner product) next to the store, and the lane asks it for candidates, then scores those
candidates exactly against the store's float32 rows: the lane's scores are real cosines, only
the candidate set is approximate. docs/team.md ("Indexes for very large libraries") has the
measurements behind the choice.

Content addressing: a vector's id in the FAISS index is the first 60 bits of its chunk key
(``sha256:…``), so an incremental run adds the keys the index lacks and removes the ids of
pruned keys without renumbering anything; when more than ``rebuild_fraction`` of the index
was removed since it was trained, or the library grew past four times the size it was trained
at, the index is rebuilt (new centroids).

Shards (format 2): the index is ``2 ** shard_bits`` FAISS indexes sharing one trained
quantizer, a key's vector in the shard its id's first ``shard_bits`` bits name — as many as
keep a shard to :data:`SHARD_ROWS` rows on average when built (one below 262,144 rows, eight
at 2,000,000). An update reads, changes and writes only the shards its keys fall in, one at a
time (the whole index is ≈ 700 MB at 100,000 items; a shard an eighth of it); a search asks
every shard for its ``k`` nearest, which hold the ``k`` nearest of one index over the same
lists. Files in ``index/vectors/``: ``ann-<digest>.faiss`` per shard, named by its content and
written atomically through FAISS's writer, and ``ann.json`` (format, engine, settings, count,
the store's key digest it matches, each shard's file, count and SHA-256), written last; the
shard files it no longer lists are removed after it. At search time an ``ann.json`` whose
digest does not match the store or a shard file that does not match its recorded SHA-256 is
refused with an :class:`AnnError` naming the file; the caller scans exactly instead, so a
damaged index never gives wrong results silently. A format-1 index (one ``ann.faiss``) is
refused the same way, so the index stage builds it again once. ``faiss`` is imported only
here, only when an index is built or read.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from arkai.adapters.fs import atomic_write
from arkai.errors import InvalidInputError, LibraryError
from arkai.search.vectors import Ids, KeySnapshot, VectorStore

__all__ = ["ANN_META", "ENGINE", "AnnError", "AnnIndex", "AnnSettings", "key_ids", "shard_of"]

FORMAT = 2
ENGINE = "faiss-ivf-sq8"
#: Format 1's one index file (removed when a format-2 index is written).
LEGACY_FILE = "ann.faiss"
#: A shard's file, named by its content.
_SHARD_NAME = re.compile(r"ann-[0-9a-f]{32}\.faiss")
#: Rows a shard holds on average at most when the index is built (8 shards at 2,000,000).
SHARD_ROWS = 262_144
_STAGED = re.compile(r"\.ann-[0-9]+\.staged")
MAX_SHARD_BITS = 8
ANN_META = "ann.json"
#: Train the centroids on at most this many rows (a fixed-seed sample).
TRAIN_ROWS = 100_000
#: k-means iterations when training (FAISS's default is 25; 10 measured the same recall).
KMEANS_ITERATIONS = 10
#: Rows read from the store and added to the index at a time.
ADD_ROWS = 65_536
I64 = npt.NDArray[np.int64]
F32 = npt.NDArray[np.float32]


class AnnError(LibraryError):
    """The ANN index on disk is missing, damaged or does not match the vector store."""


@dataclass(frozen=True)
class AnnSettings:
    """``index.ann`` in params.yaml."""

    threshold: int = 200_000
    """Chunks from which the ANN index is built and used (below: exact scan only)."""
    nlist: int = 0
    """Inverted lists (k-means centroids); 0: ``2 * sqrt(rows)`` rounded, within 64–65,536."""
    nprobe: int = 48
    """Lists visited per query."""
    rebuild_fraction: float = 0.2
    """Rebuild (retrain) when removals since training exceed this share of the index."""

    @classmethod
    def from_params(cls, raw: Any) -> AnnSettings:
        if raw is None:
            return cls()
        if not isinstance(raw, dict):
            raise InvalidInputError("params.yaml: `index.ann` must be a mapping")
        unknown = set(raw) - {"threshold", "nlist", "nprobe", "rebuild_fraction"}
        if unknown:
            raise InvalidInputError(f"params.yaml: unknown `index.ann` keys {sorted(unknown)}")
        out = cls(**{k: type(getattr(cls(), k))(v) for k, v in raw.items()})
        if out.threshold < 1 or out.nlist < 0 or out.nprobe < 1:
            raise InvalidInputError(
                "params.yaml: `index.ann` needs threshold >= 1, nlist >= 0, nprobe >= 1"
            )
        if not 0.0 < out.rebuild_fraction <= 1.0:
            raise InvalidInputError("params.yaml: `index.ann.rebuild_fraction` must be in (0, 1]")
        return out

    def lists_for(self, rows: int) -> int:
        if self.nlist:
            return self.nlist
        return int(min(65_536, max(64, round(2 * math.sqrt(rows)))))


def key_ids(ids: Ids) -> I64:
    """The FAISS id of each key id (:func:`arkai.search.vectors.key_id`: for a chunk key, the
    digest it names): its first 60 bits."""
    data = np.ascontiguousarray(ids).tobytes()
    head = np.frombuffer(data, dtype=">u8").reshape(-1, 4)[:, 0]
    out: I64 = (head >> np.uint64(4)).astype(np.int64)
    return out


def _file_digest(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return "sha256:" + h.hexdigest()


def _faiss() -> Any:
    import faiss

    return faiss


class AnnIndex:
    """A FAISS IVF index over a :class:`VectorStore`'s rows, addressed by chunk key, in
    ``2 ** shard_bits`` shards: one trained quantizer, each key's vector in the shard its id's
    first bits name (:func:`shard_of`), so an update reads and writes only the shards its
    keys fall in, one at a time."""

    def __init__(self, shards: list[Any], meta: dict[str, Any]) -> None:
        self.shards = shards
        self.meta = meta
        self._sorted_ids: I64 | None = None
        self._rows_of_sorted: I64 | None = None

    @property
    def count(self) -> int:
        return sum(int(s.ntotal) for s in self.shards)

    # -- building ---------------------------------------------------------------------

    @classmethod
    def build(cls, store: VectorStore, settings: AnnSettings) -> AnnIndex:
        """Train on (a fixed-seed sample of) the store's rows and add them all, each to its
        shard (held: :meth:`build_files` writes each shard as it is made instead)."""
        meta, shards = _built(store, settings)
        return cls(list(shards), meta)

    @classmethod
    def build_files(cls, folder: Path, store: VectorStore, settings: AnnSettings) -> None:
        """:meth:`build` into ``folder``, each shard written as soon as it is made and let go
        (one shard held, not the whole index)."""
        faiss = _faiss()
        meta, shards = _built(store, settings)
        listed = [_write_shard(folder, shard, faiss) for shard in shards]
        _write_meta(folder, meta, listed, store)

    @classmethod
    def update_files(
        cls, folder: Path, store: VectorStore, old: KeySnapshot, settings: AnnSettings
    ) -> str:
        """Bring the index in ``folder`` (made for the keys ``old``) in line with ``store``:
        remove the gone keys and add the new ones in the shards they fall in, each shard read,
        changed and written on its own ("updated"); or rebuild when too much was removed since
        training or the store grew past four times that size ("rebuilt"). :class:`AnnError`
        when the files are not the index ``old`` was given."""
        meta = cls.check(folder, old)
        now = store.ids
        gone = key_ids(old.ids[store.rows_of(old.ids) < 0])
        new = np.flatnonzero(~store.present(old.ids))
        removed = int(meta.get("removed_since_training", 0)) + len(gone)
        trained = int(meta.get("trained_count", 0)) or 1
        if (
            removed > settings.rebuild_fraction * trained
            or len(store) > 4 * trained
            or meta.get("dim") != store.dim
            or meta.get("model") != store.model_name
        ):
            cls.build_files(folder, store, settings)
            return "rebuilt"
        faiss = _faiss()
        bits = int(meta["shard_bits"])
        new_ids = key_ids(now[new])
        gone_at, new_at = shard_of(gone, bits), shard_of(new_ids, bits)
        listed = [dict(e) for e in meta["shards"]]
        for s in sorted({*gone_at.tolist(), *new_at.tolist()}):
            index = _read_shard(folder / listed[s]["file"], faiss)
            drop = gone[gone_at == s]
            if len(drop):
                index.remove_ids(drop)
            rows, ids = new[new_at == s], new_ids[new_at == s]
            for lo in range(0, len(rows), ADD_ROWS):
                index.add_with_ids(store.take(rows[lo : lo + ADD_ROWS]), ids[lo : lo + ADD_ROWS])
            listed[s] = _write_shard(folder, index, faiss)
            del index
        meta = {**meta, "removed_since_training": removed, "nprobe": settings.nprobe}
        _write_meta(folder, meta, listed, store)
        return "updated"

    # -- persistence ------------------------------------------------------------------

    def save(self, folder: Path, store: VectorStore) -> None:
        """Write each shard (``ann-<digest>.faiss``, named by its content) then ``ann.json``
        (recording the store's key digest and each shard's SHA-256), then remove the files it
        no longer lists. A shard is written through FAISS's writer a buffer at a time, not
        copied into one buffer first."""
        faiss = _faiss()
        listed = [_write_shard(folder, shard, faiss) for shard in self.shards]
        _write_meta(folder, self.meta, listed, store)

    @classmethod
    def load(cls, folder: Path, keys: KeySnapshot, dim: int) -> AnnIndex:
        """The index in ``folder`` for a store with ``keys`` of width ``dim``; :class:`AnnError`
        naming the file when it is missing, damaged, or built for other rows."""
        meta = cls.check(folder, keys)
        faiss = _faiss()
        shards = []
        for entry in meta["shards"]:
            path = folder / entry["file"]
            index = _read_shard(path, faiss)
            if int(index.ntotal) != entry["count"] or int(index.d) != dim:
                raise AnnError(f"{path}: holds {index.ntotal} vectors of width {index.d}, "
                               f"{ANN_META} {entry['count']} of width {dim}")  # fmt: skip
            shards.append(index)
        return cls(shards, meta)

    @staticmethod
    def check(folder: Path, keys: KeySnapshot) -> dict[str, Any]:
        """``ann.json`` when it records ``keys`` and each shard file has the SHA-256 it
        records (the files are hashed, not read into FAISS); :class:`AnnError` naming the file
        if not."""
        meta_path = folder / ANN_META
        try:
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise AnnError(f"{meta_path}: cannot read the ANN index record ({exc})") from None
        if (
            not isinstance(meta, dict)
            or meta.get("format") != FORMAT
            or meta.get("engine") != ENGINE
        ):
            raise AnnError(f"{meta_path}: not a {ENGINE} index record of format {FORMAT}")
        if meta.get("keys_sha256") != keys.sha256 or meta.get("count") != len(keys.ids):
            raise AnnError(f"{meta_path}: the ANN index was built for other vectors than the store")
        bits, listed = meta.get("shard_bits"), meta.get("shards")
        if (
            not isinstance(bits, int)
            or not 0 <= bits <= MAX_SHARD_BITS
            or not isinstance(listed, list)
            or len(listed) != 1 << bits
            or not all(_shard_entry(e) for e in listed)
            or sum(e["count"] for e in listed) != meta["count"]
        ):
            raise AnnError(f"{meta_path}: its list of shards is not one this version writes")
        for entry in listed:
            path = folder / entry["file"]
            try:
                digest = _file_digest(path)
            except OSError as exc:
                raise AnnError(f"{path}: cannot read the ANN index ({exc})") from None
            if digest != entry["sha256"]:
                raise AnnError(f"{path}: damaged (its SHA-256 differs from {meta_path.name})")
        return meta

    @staticmethod
    def remove(folder: Path) -> bool:
        """Delete the index files (below the threshold); True when there were any."""
        gone = False
        for p in _index_files(folder):
            p.unlink()
            gone = True
        meta = folder / ANN_META
        if meta.exists():
            meta.unlink()
            gone = True
        return gone

    # -- search -----------------------------------------------------------------------

    def bind(self, store: VectorStore) -> None:
        """Map FAISS ids back to the store's rows (once per loaded store)."""
        ids = key_ids(store.ids)
        order = np.argsort(ids, kind="stable")
        self._sorted_ids, self._rows_of_sorted = ids[order], order.astype(np.int64)
        probe = int(self.meta.get("nprobe", 48))
        for shard in self.shards:  # the lists a search scans in each (as the record says)
            shard.nprobe = max(1, min(probe, int(shard.nlist)))

    def candidates(self, query: F32, k: int, store: VectorStore) -> I64:
        """The store rows of (about) the ``k`` nearest rows to ``query``, unordered: the
        coarse quantizer (one for every shard) searched once, each shard's lists it names
        scanned, and the ``k`` best of all the shards' answers by the index's own scores —
        what one index over the same lists gives."""
        if self._sorted_ids is None:
            self.bind(store)
        assert self._sorted_ids is not None and self._rows_of_sorted is not None
        q = np.ascontiguousarray(query.reshape(1, -1), dtype=np.float32)
        first = self.shards[0]
        dq, iq = first.quantizer.search(q, int(first.nprobe))
        scores, found = [], []
        for shard in self.shards:
            d, i = shard.search_preassigned(q, int(k), iq, dq)
            ok = i[0] >= 0
            scores.append(d[0][ok])
            found.append(i[0][ok])
        ids = np.concatenate(found)
        if len(ids) > k:
            best = np.concatenate(scores)
            ids = ids[np.argpartition(-best, int(k) - 1)[: int(k)]]
        pos = np.searchsorted(self._sorted_ids, ids)
        pos = np.minimum(pos, len(self._sorted_ids) - 1)
        ok = self._sorted_ids[pos] == ids
        out: I64 = self._rows_of_sorted[pos[ok]]
        return out


def _built(store: VectorStore, settings: AnnSettings) -> tuple[dict[str, Any], Iterator[Any]]:
    """The index's record and its shards, each made when asked for: a quantizer trained on (a
    fixed-seed sample of) the store's rows, then per shard a copy of it with the rows whose
    keys fall there added (read from the store a block at a time: its segments are
    memory-mapped, the whole matrix 2.8 GB at 100,000 items)."""
    faiss = _faiss()
    n = len(store)
    if n == 0:
        raise InvalidInputError("cannot build an ANN index over an empty vector store")
    nlist = min(settings.lists_for(n), n)
    quantizer = faiss.IndexFlatIP(store.dim)
    trained = faiss.IndexIVFScalarQuantizer(
        quantizer, store.dim, nlist, faiss.ScalarQuantizer.QT_8bit, faiss.METRIC_INNER_PRODUCT
    )
    if n > TRAIN_ROWS:
        pick = np.sort(np.random.default_rng(0).choice(n, TRAIN_ROWS, replace=False))
    else:
        pick = np.arange(n)
    trained.cp.niter = KMEANS_ITERATIONS
    trained.train(store.take(pick))
    ids = key_ids(store.ids)
    if len(np.unique(ids)) != n:
        raise InvalidInputError(
            "two chunk keys share their first 60 bits: the ANN index cannot address them"
        )
    bits = shard_bits(n)
    meta = {
        "format": FORMAT,
        "engine": ENGINE,
        "model": store.model_name,
        "dim": store.dim,
        "nlist": nlist,
        "nprobe": settings.nprobe,
        "shard_bits": bits,
        "trained_count": n,
        "removed_since_training": 0,
    }

    def shards() -> Iterator[Any]:
        where = shard_of(ids, bits)
        for s in range(1 << bits):
            index = faiss.clone_index(trained)
            rows = np.flatnonzero(where == s)
            for lo in range(0, len(rows), ADD_ROWS):
                block = rows[lo : lo + ADD_ROWS]
                index.add_with_ids(store.take(block), ids[block])
            yield index

    return meta, shards()


def shard_bits(rows: int) -> int:
    """How many leading bits of a key's id pick its shard, for an index of ``rows``: the
    fewest that put at most :data:`SHARD_ROWS` rows in a shard on average (at most
    :data:`MAX_SHARD_BITS`)."""
    bits = 0
    while rows > SHARD_ROWS << bits and bits < MAX_SHARD_BITS:
        bits += 1
    return bits


def shard_of(ids: I64, bits: int) -> I64:
    """The shard of each FAISS id (:func:`key_ids`: 60 bits) in an index of ``2 ** bits``."""
    if bits == 0:
        return np.zeros(len(ids), dtype=np.int64)
    out: I64 = np.asarray(ids, dtype=np.int64) >> (60 - bits)
    return out


def _shard_entry(entry: Any) -> bool:
    return (
        isinstance(entry, dict)
        and isinstance(entry.get("file"), str)
        and _SHARD_NAME.fullmatch(entry["file"]) is not None
        and isinstance(entry.get("count"), int)
        and entry["count"] >= 0
        and isinstance(entry.get("sha256"), str)
    )


def _index_files(folder: Path) -> list[Path]:
    """The shard files in ``folder`` (and a format-1 index's one file, and a shard a stopped
    run staged), listed or not."""
    if not folder.is_dir():
        return []
    return [p for p in folder.iterdir() if _SHARD_NAME.fullmatch(p.name)
            or p.name == LEGACY_FILE or _STAGED.fullmatch(p.name)]  # fmt: skip


def _read_shard(path: Path, faiss: Any) -> Any:
    try:
        return faiss.read_index(str(path))
    except RuntimeError as exc:
        raise AnnError(f"{path}: FAISS cannot read it ({exc})") from None


def _write_shard(folder: Path, index: Any, faiss: Any) -> dict[str, Any]:
    """Write ``index`` through FAISS's writer, hashed as it goes, and name the file by its
    content; its entry in ``ann.json``."""
    digest = hashlib.sha256()

    def write(fh: Any) -> None:
        def put(data: bytes) -> int:
            digest.update(data)
            fh.write(data)
            return len(data)

        writer = faiss.PyCallbackIOWriter(put)
        faiss.write_index(index, writer)
        del writer  # its last buffered bytes are passed on when it is let go

    staged = folder / f".ann-{os.getpid()}.staged"
    atomic_write(staged, write, fsync=False)
    name = f"ann-{digest.hexdigest()[:32]}.faiss"
    os.replace(staged, folder / name)
    return {"file": name, "count": int(index.ntotal), "sha256": "sha256:" + digest.hexdigest()}


def _write_meta(
    folder: Path, meta: dict[str, Any], listed: list[dict[str, Any]], store: VectorStore
) -> None:
    """``ann.json`` for the shards ``listed`` (written last), then the shard files it does not
    list removed."""
    record = {**meta, "count": sum(e["count"] for e in listed), "shards": listed,
              "keys_sha256": store.keys_sha256()}  # fmt: skip
    text = json.dumps(record, indent=2, sort_keys=True) + "\n"
    atomic_write(folder / ANN_META, lambda fh: fh.write(text.encode("utf-8")), fsync=False)
    keep = {e["file"] for e in listed}
    for p in _index_files(folder):
        if p.name not in keep:
            p.unlink(missing_ok=True)
