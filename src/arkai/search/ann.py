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
at, the index is rebuilt (new centroids). Two files in ``index/vectors/``, each written atomically:
``ann.faiss`` (the FAISS index) and ``ann.json`` (format, engine, settings, count, the store's
key digest it matches, and the SHA-256 of ``ann.faiss``), written last. At search time an
``ann.json`` whose digest does not match the store or whose ``ann.faiss`` does not match its
recorded SHA-256 is refused with an :class:`AnnError` naming the file; the caller scans exactly
instead, so a damaged index never gives wrong results silently. ``faiss`` is imported only here,
only when an index is built or read.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from arkai.adapters.fs import atomic_write
from arkai.errors import InvalidInputError, LibraryError
from arkai.search.vectors import Ids, KeySnapshot, VectorStore

__all__ = ["ANN_FILE", "ANN_META", "ENGINE", "AnnError", "AnnIndex", "AnnSettings", "key_ids"]

FORMAT = 1
ENGINE = "faiss-ivf-sq8"
ANN_FILE = "ann.faiss"
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
    """A FAISS IVF index over a :class:`VectorStore`'s rows, addressed by chunk key."""

    def __init__(self, index: Any, meta: dict[str, Any]) -> None:
        self.index = index
        self.meta = meta
        self._sorted_ids: I64 | None = None
        self._rows_of_sorted: I64 | None = None

    @property
    def count(self) -> int:
        return int(self.index.ntotal)

    # -- building ---------------------------------------------------------------------

    @classmethod
    def build(cls, store: VectorStore, settings: AnnSettings) -> AnnIndex:
        """Train on (a fixed-seed sample of) the store's rows and add them all."""
        faiss = _faiss()
        n = len(store)
        if n == 0:
            raise InvalidInputError("cannot build an ANN index over an empty vector store")
        nlist = min(settings.lists_for(n), n)
        quantizer = faiss.IndexFlatIP(store.dim)
        index = faiss.IndexIVFScalarQuantizer(
            quantizer, store.dim, nlist, faiss.ScalarQuantizer.QT_8bit, faiss.METRIC_INNER_PRODUCT
        )
        # The rows are read a block at a time (the store's segments are memory-mapped; the
        # whole matrix is 2.8 GB at 100,000 items).
        if n > TRAIN_ROWS:
            pick = np.sort(np.random.default_rng(0).choice(n, TRAIN_ROWS, replace=False))
        else:
            pick = np.arange(n)
        index.cp.niter = KMEANS_ITERATIONS
        index.train(store.take(pick))
        ids = key_ids(store.ids)
        if len(np.unique(ids)) != n:
            raise InvalidInputError(
                "two chunk keys share their first 60 bits: the ANN index cannot address them"
            )
        for lo in range(0, n, ADD_ROWS):
            block = np.arange(lo, min(n, lo + ADD_ROWS))
            index.add_with_ids(store.take(block), ids[block])
        meta = {
            "format": FORMAT,
            "engine": ENGINE,
            "model": store.model_name,
            "dim": store.dim,
            "nlist": nlist,
            "nprobe": settings.nprobe,
            "trained_count": n,
            "removed_since_training": 0,
        }
        return cls(index, meta)

    def update(self, store: VectorStore, old: KeySnapshot, settings: AnnSettings) -> AnnIndex:
        """Bring the index in line with ``store`` (whose keys were ``old`` when the index was
        last saved): add the new keys, remove the gone ones — or rebuild when too much was
        removed since training or the store grew past four times that size."""
        now = store.ids
        gone = old.ids[store.rows_of(old.ids) < 0]
        new = np.flatnonzero(~store.present(old.ids))
        removed = int(self.meta.get("removed_since_training", 0)) + len(gone)
        trained = int(self.meta.get("trained_count", 0)) or 1
        if (
            removed > settings.rebuild_fraction * trained
            or len(store) > 4 * trained
            or self.meta.get("dim") != store.dim
            or self.meta.get("model") != store.model_name
        ):
            return AnnIndex.build(store, settings)
        if len(gone):
            self.index.remove_ids(key_ids(gone))
        for lo in range(0, len(new), ADD_ROWS):
            block = new[lo : lo + ADD_ROWS]
            self.index.add_with_ids(store.take(block), key_ids(now[block]))
        self.meta = {**self.meta, "removed_since_training": removed, "nprobe": settings.nprobe}
        self._sorted_ids = self._rows_of_sorted = None
        return self

    # -- persistence ------------------------------------------------------------------

    def save(self, folder: Path, store: VectorStore) -> None:
        """Write ``ann.faiss`` then ``ann.json`` (recording the store's key digest). The index
        is written to the file as FAISS serialises it, not copied into one buffer first (it is
        ≈ 700 MB at 100,000 items)."""
        faiss = _faiss()
        digest = hashlib.sha256()

        def write(fh: Any) -> None:
            def put(data: bytes) -> int:
                digest.update(data)
                fh.write(data)
                return len(data)

            writer = faiss.PyCallbackIOWriter(put)
            faiss.write_index(self.index, writer)
            del writer  # its last buffered bytes are passed on when it is let go

        atomic_write(folder / ANN_FILE, write, fsync=False)
        meta = {
            **self.meta,
            "count": self.count,
            "keys_sha256": store.keys_sha256(),
            "file_sha256": "sha256:" + digest.hexdigest(),
        }
        text = json.dumps(meta, indent=2, sort_keys=True) + "\n"
        atomic_write(folder / ANN_META, lambda fh: fh.write(text.encode("utf-8")), fsync=False)

    @classmethod
    def load(cls, folder: Path, keys: KeySnapshot, dim: int) -> AnnIndex:
        """The index in ``folder`` for a store with ``keys`` of width ``dim``; :class:`AnnError`
        naming the file when it is missing, damaged, or built for other rows."""
        meta = cls.check(folder, keys)
        path = folder / ANN_FILE
        faiss = _faiss()
        try:
            index = faiss.read_index(str(path))
        except RuntimeError as exc:
            raise AnnError(f"{path}: FAISS cannot read it ({exc})") from None
        if int(index.ntotal) != len(keys.ids) or int(index.d) != dim:
            raise AnnError(f"{path}: holds {index.ntotal} vectors of width {index.d}, "
                           f"the store {len(keys.ids)} of width {dim}")  # fmt: skip
        return cls(index, meta)

    @staticmethod
    def check(folder: Path, keys: KeySnapshot) -> dict[str, Any]:
        """``ann.json`` when it records ``keys`` and ``ann.faiss`` has the SHA-256 it records
        (the file is hashed, not read into FAISS); :class:`AnnError` naming the file if not."""
        meta_path, path = folder / ANN_META, folder / ANN_FILE
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
        try:
            digest = _file_digest(path)
        except OSError as exc:
            raise AnnError(f"{path}: cannot read the ANN index ({exc})") from None
        if digest != meta.get("file_sha256"):
            raise AnnError(f"{path}: damaged (its SHA-256 differs from {meta_path.name})")
        return meta

    @staticmethod
    def remove(folder: Path) -> bool:
        """Delete the index files (below the threshold); True when there were any."""
        gone = False
        for name in (ANN_META, ANN_FILE):
            p = folder / name
            if p.exists():
                p.unlink()
                gone = True
        return gone

    # -- search -----------------------------------------------------------------------

    def bind(self, store: VectorStore) -> None:
        """Map FAISS ids back to the store's rows (once per loaded store)."""
        ids = key_ids(store.ids)
        order = np.argsort(ids, kind="stable")
        self._sorted_ids, self._rows_of_sorted = ids[order], order.astype(np.int64)

    def candidates(self, query: F32, k: int, store: VectorStore) -> I64:
        """The store rows of (about) the ``k`` nearest rows to ``query``, unordered."""
        if self._sorted_ids is None:
            self.bind(store)
        assert self._sorted_ids is not None and self._rows_of_sorted is not None
        faiss = _faiss()
        params = faiss.SearchParametersIVF(nprobe=int(self.meta.get("nprobe", 48)))
        q = np.ascontiguousarray(query.reshape(1, -1), dtype=np.float32)
        _, found = self.index.search(q, int(k), params=params)
        ids = found[0][found[0] >= 0]
        pos = np.searchsorted(self._sorted_ids, ids)
        pos = np.minimum(pos, len(self._sorted_ids) - 1)
        ok = self._sorted_ids[pos] == ids
        out: I64 = self._rows_of_sorted[pos[ok]]
        return out
