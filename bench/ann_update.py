"""Memory of the index stage's vectors step above the ANN threshold (JSON).

For each size a vector store of that many rows (random unit vectors of width 384 under
``sha256:`` keys, saved in segments as the index stage saves them) and its ANN index
(``update_ann``, FAISS ``IVF,SQ8``) are made in a temporary folder. Then, each in a fresh
process, the step's work on a library where one item changed is measured — the store
loaded, ``--changed`` rows pruned and as many added, the store saved, ``update_ann`` —
and the same with nothing changed (the index kept, not read into FAISS). Printed per size:
the peak RSS of each process and what it started from (imports), the ANN and store sizes on
disk, and the seconds of each run::

    OPENBLAS_NUM_THREADS=1 python bench/ann_update.py --sizes 200000,400000
"""

from __future__ import annotations

import argparse
import hashlib
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

DIM = 384
MODEL = "bench-model"


def _keys(lo: int, hi: int, salt: str) -> list[str]:
    return ["sha256:" + hashlib.sha256(f"{salt}{i}".encode()).hexdigest() for i in range(lo, hi)]


def _rows(n: int, seed: int) -> Any:
    x = np.random.default_rng(seed).standard_normal((n, DIM), dtype=np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return x


def make(folder: Path, n: int) -> dict[str, Any]:
    """The store and its ANN index in ``folder``."""
    from arkai.ops.index import update_ann
    from arkai.search.vectors import KeySnapshot, VectorStore

    store = VectorStore(DIM, MODEL)
    for lo in range(0, n, 100_000):
        hi = min(n, lo + 100_000)
        store.add(_keys(lo, hi, "row"), _rows(hi - lo, lo))
    store.save(folder)
    t = time.perf_counter()
    how = update_ann(folder, store, KeySnapshot.empty(), {"threshold": 1})
    return {"ann": how, "ann_build_s": round(time.perf_counter() - t, 1)}


def step(folder: Path, changed: int) -> dict[str, Any]:
    """The vectors step's store and ANN work with ``changed`` rows replaced (0: none)."""
    from arkai.ops.index import update_ann
    from arkai.search.vectors import VectorStore

    start = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t = time.perf_counter()
    store = VectorStore.load(folder, MODEL, dim=DIM)
    old = store.snapshot()
    if changed:
        store.prune(store.ids[changed:])
        store.add(_keys(0, changed, f"new{time.time_ns()}"), _rows(changed, 7))
        store.save(folder)
    how = update_ann(folder, store, old, {"threshold": 1})
    return {"ann": how, "seconds": round(time.perf_counter() - t, 2),
            "start_rss_mb": round(start / 1024), "peak_rss_mb": round(
                resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)}  # fmt: skip


def _child(args: list[str]) -> dict[str, Any]:
    out = subprocess.run([sys.executable, __file__, *args], check=True, capture_output=True,
                         text=True)  # fmt: skip
    result: dict[str, Any] = json.loads(out.stdout)
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="200000,400000")
    ap.add_argument("--changed", type=int, default=20, help="rows replaced (one item's chunks)")
    ap.add_argument("--run", nargs=3, help=argparse.SUPPRESS)  # child: what folder n/changed
    a = ap.parse_args()
    if a.run:
        what, folder, value = a.run
        got = make(Path(folder), int(value)) if what == "make" else step(Path(folder), int(value))
        print(json.dumps(got))
        return
    rows = []
    for n in (int(s) for s in a.sizes.split(",")):
        with tempfile.TemporaryDirectory(prefix="arkai-ann-update-") as tmp:
            folder = Path(tmp) / "vectors"
            made = _child(["--run", "make", str(folder), str(n)])
            disk = {p.name: p.stat().st_size for p in folder.iterdir()}
            rows.append({
                "rows": n,
                "ann_mb": round(sum(v for k, v in disk.items() if k.endswith(".faiss")) / 2**20),
                "ann_shards": sum(k.endswith(".faiss") for k in disk),
                "store_mb": round(sum(v for k, v in disk.items() if k.endswith(".npy")) / 2**20),
                **made,
                "one_changed": _child(["--run", "step", str(folder), str(a.changed)]),
                "unchanged": _child(["--run", "step", str(folder), "0"]),
            })  # fmt: skip
            print(json.dumps(rows[-1]), file=sys.stderr)
    print(json.dumps({"changed_rows": a.changed, "sizes": rows}, indent=2))


if __name__ == "__main__":
    main()
