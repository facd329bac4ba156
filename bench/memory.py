"""Belief memory benchmark: replay time and peak memory, the one-new-episode cost, recall latency.

Usage::

    .venv/bin/python bench/memory.py [--sizes 10000,100000] [--recall-size 100000] [--data DIR]

Prints one JSON object on stdout; works in a temporary folder and writes nothing else.

Episodes are synthetic *from real transcript sentences*: the sentences of the shared
transcripts (``DIR/transcripts``, default ``../shared/data``) are embedded once with the packaged
embedder; episode *i* takes sentence ``i mod S`` as its statement and that sentence's vector plus
Gaussian noise (σ = 0.02 per dimension, then normalised) as its vector, so repeated sentences
land near each other (reinforcements), paraphrase-like neighbours fall in the contradiction band
and the builtin rules run on real text. Dates advance one day per 100 episodes.

* ``replay`` — per size N: seconds for :func:`arkai.memory.replay.replay` over N episodes, and
  the peak RSS of a fresh process doing it (each size runs in its own process).
* ``one_new_episode`` — the replay is a full, deterministic re-run; one new episode costs one
  embedding (the store keeps the others) plus the replay of N + 1: reported as that replay's
  seconds at the largest size, with ``embed_one_s`` measured separately.
* ``mid_change_*`` (per size) — the episode in the middle of the timeline changes: the replay
  resumed from the full replay's log (:class:`arkai.memory.replay.ReplayLog`) vs one from
  scratch, whether their beliefs, changes, vectors and logs agree, and how many episodes the
  resumed one decided afresh (``mid_change_decided``); ``unchanged_resumed_s`` is the
  resumed replay when nothing changed, ``one_added_at_end_resumed_s`` when one episode is added
  at the end of the timeline (a new item dated today).
* ``recall`` — a library folder holding ``beliefs/`` with ``--recall-size`` beliefs: ``arkai
  recall`` as a cold CLI process (best of 3 wall times) and warm in-process p50/p95 over 50
  queries (embedder loaded).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import replace as dc_replace
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from arkai.adapters.memory import write_state  # noqa: E402
from arkai.memory.contradict import check  # noqa: E402
from arkai.memory.replay import Decisions, ReplayParams, ReplayResult, replay  # noqa: E402
from arkai.model.belief import Belief, Episode  # noqa: E402

_TIMING = re.compile(r"^\d+$|-->|^WEBVTT|^NOTE|^\s*$")


def sentences(data: Path, limit: int = 4000) -> list[str]:
    out: list[str] = []
    for path in sorted((data / "transcripts").rglob("*")):
        if path.suffix not in (".srt", ".vtt") or not path.is_file():
            continue
        text = " ".join(
            re.sub(r"<[^>]+>", "", ln).strip()
            for ln in path.read_text(encoding="utf-8", errors="replace").splitlines()
            if not _TIMING.search(ln)
        )
        for s in re.split(r"(?<=[.!?])\s+", text):
            words = s.split()
            if 6 <= len(words) <= 40:
                out.append(" ".join(words))
    return list(dict.fromkeys(out))[:limit]


def base_vectors(texts: list[str], cache: Path) -> np.ndarray:
    if cache.is_file():
        arr = np.load(cache)
        if len(arr) == len(texts):
            return arr
    from arkai.search import embed

    arr = embed.get_embedder("default").encode(texts, batch_size=64)
    np.save(cache, arr)
    return arr


def episodes(texts: list[str], base: np.ndarray, n: int) -> tuple[list[Episode], np.ndarray]:
    rng = np.random.default_rng(42)
    idx = np.arange(n) % len(texts)
    vecs = base[idx] + rng.normal(0, 0.02, size=(n, base.shape[1])).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    start = date(2024, 1, 1)
    eps = [
        Episode(
            id=f"{i:016x}",
            statement=texts[int(j)],
            date=(start + timedelta(days=i // 100)).isoformat(),
            item=f"item{i // 10:07d}",
            position=i % 10,
        )
        for i, j in enumerate(idx)
    ]
    return eps, vecs.astype(np.float32)


def one(n: int, data: Path, cache: Path) -> dict[str, Any]:
    texts = sentences(data)
    base = base_vectors(texts, cache)
    eps, vecs = episodes(texts, base, n)
    t0 = time.perf_counter()
    res = replay(eps, vecs, params=ReplayParams(), decisions=Decisions(), check=check)
    seconds = time.perf_counter() - t0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    counts: dict[str, int] = {}
    for c in res.changes:
        counts[c.kind] = counts.get(c.kind, 0) + 1
    out = {"episodes": n, "seconds": round(seconds, 2), "peak_rss_mb": round(rss),
           "beliefs": len(res.beliefs), "changes": counts}  # fmt: skip
    return out | resume_bench(eps, vecs, res, texts)


def resume_bench(
    eps: list[Episode], vecs: np.ndarray, res: ReplayResult, texts: list[str]
) -> dict[str, Any]:
    """The episode in the middle of the timeline changes (another sentence, its vector): the
    replay resumed from ``res``'s log vs one from scratch (seconds, and whether they agree)."""
    mid = len(eps) // 2
    other = texts[(texts.index(eps[mid].statement) + 1) % len(texts)]
    eps2 = [*eps[:mid], dc_replace(eps[mid], statement=other), *eps[mid + 1 :]]
    vecs2 = vecs.copy()
    vecs2[mid] = vecs[next(i for i, e in enumerate(eps) if e.statement == other)]
    kw: dict[str, Any] = {"params": ReplayParams(), "decisions": Decisions(), "check": check}
    t0 = time.perf_counter()
    resumed = replay(eps2, vecs2, resume=res.log, **kw)
    resumed_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    scratch = replay(eps2, vecs2, **kw)
    scratch_s = time.perf_counter() - t0
    same = (
        [b.to_dict() for b in resumed.beliefs] == [b.to_dict() for b in scratch.beliefs]
        and [c.to_dict() for c in resumed.changes] == [c.to_dict() for c in scratch.changes]
        and resumed.vectors[:].tobytes() == scratch.vectors[:].tobytes()
        and resumed.log == scratch.log
    )
    t0 = time.perf_counter()
    noop = replay(eps, vecs, resume=res.log, **kw)
    noop_s = time.perf_counter() - t0
    # The daily loop's usual case: a new item dated today adds episodes at the end.
    last = eps[-1]
    new_ep = dc_replace(last, id="f" * 16, statement=other, item="item-new", position=0)
    t0 = time.perf_counter()
    added = replay([*eps, new_ep], np.vstack([vecs, vecs2[mid : mid + 1]]), resume=res.log, **kw)
    added_s = time.perf_counter() - t0
    return {
        "mid_change_resumed_s": round(resumed_s, 2),
        "mid_change_resumed_at": resumed.resumed_at,
        "mid_change_decided": resumed.decided,
        "mid_change_scratch_s": round(scratch_s, 2),
        "mid_change_equal": same,
        "unchanged_resumed_s": round(noop_s, 2),
        "unchanged_resumed_at": noop.resumed_at,
        "one_added_at_end_resumed_s": round(added_s, 2),
        "one_added_at_end_resumed_at": added.resumed_at,
        "one_added_at_end_decided": added.decided,
    }


def recall_bench(n: int, data: Path, cache: Path) -> dict[str, float]:
    texts = sentences(data)
    base = base_vectors(texts, cache)
    eps, vecs = episodes(texts, base, n)
    tmp = Path(tempfile.mkdtemp(prefix="arkai-mem-bench-"))
    try:
        subprocess.run([sys.executable, "-m", "arkai.cli.main", "init", str(tmp / "kr")],
                       check=True, capture_output=True)  # fmt: skip
        kr = tmp / "kr"
        beliefs = [
            Belief(
                id=f"{i:016x}",
                statement=e.statement,
                type="fact",
                confidence=0.6,
                status="active",
                created=e.date,
                reinforced=e.date,
                episodes=(e.id,),
            )
            for i, e in enumerate(eps)
        ]
        header = {"format": 1, "as_of": eps[-1].date, "episodes": n, "params": {}}
        write_state(kr, header, beliefs, [], vecs)
        env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
        cold = []
        for _ in range(3):
            t0 = time.perf_counter()
            proc = subprocess.run(
                [sys.executable, "-m", "arkai.cli.main", "--repo", str(kr), "recall",
                 "how many hives does the city network have", "--json"],
                check=False, capture_output=True, env=env,
            )  # fmt: skip
            assert proc.returncode in (0, 5), proc.stderr
            cold.append(time.perf_counter() - t0)
        from arkai.adapters.repo import Repo
        from arkai.ops.memory import recall

        repo = Repo(kr)
        recall(repo, "warm up", as_of=date(2026, 1, 1))
        warm = []
        for q in texts[:50]:
            t0 = time.perf_counter()
            recall(repo, q, as_of=date(2026, 1, 1))
            warm.append((time.perf_counter() - t0) * 1000)
        warm.sort()
        return {"beliefs": n, "cold_cli_s": round(min(cold), 2),
                "warm_p50_ms": round(statistics.median(warm), 1),
                "warm_p95_ms": round(warm[int(len(warm) * 0.95) - 1], 1)}  # fmt: skip
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--recall-size", type=int, default=100000)
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    ap.add_argument("--one", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--cache", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print(json.dumps(one(args.one, args.data, args.cache)))
        return
    work = Path(tempfile.mkdtemp(prefix="arkai-mem-bench-"))
    cache = work / "base.npy"
    try:
        base_vectors(sentences(args.data), cache)
        t0 = time.perf_counter()
        from arkai.search import embed

        embed.get_embedder("default").encode(["One new statement to embed."])
        embed_one = time.perf_counter() - t0
        sizes = [int(s) for s in args.sizes.split(",") if s]
        runs = []
        for n in sizes:
            proc = subprocess.run(
                [sys.executable, __file__, "--one", str(n), "--data", str(args.data),
                 "--cache", str(cache)],
                check=True, capture_output=True, text=True,
                env=dict(os.environ, OPENBLAS_NUM_THREADS="1"),
            )  # fmt: skip
            runs.append(json.loads(proc.stdout))
        largest = max(sizes)
        extra = subprocess.run(
            [sys.executable, __file__, "--one", str(largest + 1), "--data", str(args.data),
             "--cache", str(cache)],
            check=True, capture_output=True, text=True,
            env=dict(os.environ, OPENBLAS_NUM_THREADS="1"),
        )  # fmt: skip
        plus_one = json.loads(extra.stdout)
        out = {
            "sentences": len(sentences(args.data)),
            "replay": runs,
            "one_new_episode": {
                "episodes": largest + 1,
                "replay_s": plus_one["seconds"],
                "embed_one_s": round(embed_one, 3),
            },
            "recall": recall_bench(args.recall_size, args.data, cache),
        }
        print(json.dumps(out, indent=2))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
