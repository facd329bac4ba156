"""The ``beliefs`` step at library scale, resumed from its log: peak memory and CPU per step
for N synthetic episodes (eight an item: 800,000 is a library of 100,000 items). Prints JSON.

    python bench/beliefs_scale.py --episodes 80000 800000 [--data ../shared/data]

A replay from scratch is quadratic in the episodes (each is compared with every earlier one),
so the log is made up, not replayed: every episode created a belief of its own (the most
beliefs, and the most the replay holds: a library of distinct talks is near it), each one's
candidates are the 32 episodes before it, and their weakest similarity is out of reach, so an
edit elsewhere is never nearer. What the step does then is what it does in the
daily loop — read every episode, copy the statement vectors in episode order out of the store
into a file (:class:`arkai.adapters.fs.RowFile`), read the log, decide afresh the one episode
that changed in the middle of the timeline (its candidates searched over every earlier row)
and re-apply every other one's recorded outcome, then write ``beliefs/``, the change log, the
beliefs' vectors and the new log — with the stage's own functions. Statements are the real
transcript sentences of ``DATA/transcripts`` (``bench/memory.py``'s), each made distinct by its
number; vectors are random unit rows (only their count and width matter here).

Two processes per size: one prepares (the statement store on disk, as the stage keeps it, and
the log) and is not measured; the measured one is a fresh interpreter reporting its own peak
RSS (``VmHWM``) and CPU seconds after each step. Beliefs are the stage's largest part at scale;
docs/scale.md, "The belief replay in bounded memory".
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

COMMON = r"""
import json, re, resource, sys
from datetime import date, timedelta
from pathlib import Path
import numpy as np
from arkai.core.hashing import text_digest
from arkai.model.belief import Episode

n, work, sentences = int(sys.argv[1]), Path(sys.argv[2]), json.loads(Path(sys.argv[3]).read_text())
DIM, BLOCK = 384, 1 << 13

def episodes():
    # As the stage reads them: an item's date and ID are one string for its eight episodes.
    start, out = date(2020, 1, 1), []
    for i in range(n):
        if i % 8 == 0:
            day, item = (start + timedelta(days=i // 400)).isoformat(), f"item{i // 8:07d}"
        out.append(Episode(id=f"{i:016x}", statement=f"{sentences[i % len(sentences)]} ({i})",
                           date=day, item=item, position=i % 8))
    return out

def vectors(lo, hi):
    rng = np.random.default_rng(lo)
    rows = rng.normal(size=(hi - lo, DIM)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)
"""

PREPARE = (
    COMMON
    + r"""
from arkai.memory.replay import CANDIDATES, ReplayLog, belief_id, fingerprints
from arkai.memory.resume import save_log
from arkai.search.vectors import VectorStore

eps = episodes()
store = VectorStore(DIM, "bench")
for lo in range(0, n, BLOCK):
    part = eps[lo : lo + BLOCK]
    store.add([text_digest(e.statement) for e in part], vectors(lo, lo + len(part)))
store.save(work / "store")
rows = np.arange(n)
cands = rows[:, None] - 1 - np.arange(CANDIDATES)[None, :]
log = ReplayLog(
    fingerprints=fingerprints(eps), kinds=np.zeros(n, dtype=np.uint8),
    targets=np.full(n, -1, dtype=np.int32), scores=np.zeros(n), notes={},
    owners=rows.astype(np.int32), ids=[belief_id("fact", e.id) for e in eps],
    cands=np.where(cands >= 0, cands, -1).astype(np.int32),
    kth=np.full(n, 1 << 42, dtype=np.int64),
)
save_log(work, "bench", log)
print(json.dumps({"log_mb": round((work / "replay.json").stat().st_size / 2**20, 1)}))
"""
)

MEASURED = (
    COMMON
    + r"""
steps = {}
def step(name):
    usage = resource.getrusage(resource.RUSAGE_SELF)
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            steps[name] = {"peak_mb": round(int(line.split()[1]) / 1024, 1),
                           "cpu_s": round(usage.ru_utime + usage.ru_stime, 2)}

from arkai.adapters import memory as files
from arkai.adapters.fs import RowFile
from arkai.memory.contradict import check
from arkai.memory.replay import Decisions, ReplayParams, replay
from arkai.memory.resume import load_log, save_log
from arkai.search.vectors import VectorStore
step("imports")
eps = episodes()
mid = n // 2
e = eps[mid]
eps[mid] = Episode(e.id, e.statement + " Edited.", e.date, e.item, e.position)
step("episodes")
keys = [text_digest(e.statement) for e in eps]
keys[mid] = keys[0]  # the edited statement: another's row stands in for its new vector
store = VectorStore.load(work / "store", "bench", dim=DIM)
at = np.fromiter((store.row_of(k) for k in keys), dtype=np.int64, count=n)
del keys
blocks = (store.take(at[lo : lo + BLOCK]) for lo in range(0, n, BLOCK))
rows = RowFile.written(work, blocks, n, DIM)
del store, at
step("vectors")
held = [load_log(work, "bench")]
assert held[0] is not None
step("read log")
# As the stage passes it: no reference kept, so the replay lets it go after the episodes.
result = replay(eps, rows, params=ReplayParams(), decisions=Decisions(), check=check,
                resume=held.pop())
step("replay")
header = {"format": 1, "as_of": result.as_of, "episodes": n}
files.write_state(work / "kb", header, result.beliefs, result.changes, result.vectors)
save_log(work, "bench", result.log)
step("write")
print(json.dumps({"episodes": n, "beliefs": len(result.beliefs), "decided": result.decided,
                  "resumed_at": result.resumed_at, "steps": steps}))
"""
)


def _sentences(data: Path) -> list[str]:
    path = Path(__file__).parent / "memory.py"
    spec = importlib.util.spec_from_file_location("bench_memory", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out: list[str] = module.sentences(data)
    return out


def _child(code: str, argv: list[str], env: dict[str, str]) -> str:
    """``python -c code *argv``: its last line of output (its error, if it fails)."""
    proc = subprocess.run([sys.executable, "-c", code, *argv], env=env, capture_output=True,
                          text=True, check=False)  # fmt: skip
    if proc.returncode:
        raise SystemExit(proc.stderr.strip()[-2000:])
    return proc.stdout.strip().splitlines()[-1]


def run(n: int, sentences: Path) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="arkai-beliefs-scale-"))
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    try:
        argv = [str(n), str(work), str(sentences)]
        prep, got = (_child(code, argv, env) for code in (PREPARE, MEASURED))
        return json.loads(got) | json.loads(prep)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--episodes", type=int, nargs="+", default=[80_000, 800_000])
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    args = ap.parse_args()
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as fh:
        json.dump(_sentences(args.data), fh)
    try:
        print(json.dumps({"runs": [run(n, Path(fh.name)) for n in args.episodes]}, indent=2))
    finally:
        os.unlink(fh.name)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
