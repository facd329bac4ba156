"""``arkai ask`` latency on a 1,000-item library (docs/answers.md).

Prints one JSON object on stdout (progress on stderr); writes nothing into the repository (a
temporary folder only). The library is synthetic but made of real text: each item's
transcript is one SciFact abstract of the shared data (a sentence per line), dated over two
years, written straight into ``library/`` in arkai's layout (``metadata.json`` +
``transcript.md``) instead of 1,000 ``arkai add`` runs. No shards: ``arkai ask`` reads the
items as its implicit shard, the case every library without the ``condense`` stage is in.

    .venv/bin/python bench/ask.py              # 1,000 items, 5 questions
    .venv/bin/python bench/ask.py --items 200  # quicker

Measured, with the builtin provider in every role:

* **cold_cli** — ``arkai --repo LIB ask Q --json`` in a fresh process, per question (first
  asking: nothing cached);
* **cold_cli_cached** — the same command again (the shard, synthesis and validation answers
  come from the response store);
* **warm** — the ``arkai.ops.ask.ask`` operation in one process, after the first question:
  per question, new questions (``warm_new``) and repeated ones (``warm_repeat``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("ARKAI_SHARED_DATA") or ROOT.parent / "shared" / "data")
QUESTIONS = (
    "does vitamin D supplementation reduce fracture risk",
    "how does obesity change insulin resistance over time",
    "what is the role of microRNA in cancer metastasis",
    "do statins lower mortality in heart failure",
    "which genes regulate stem cell differentiation",
)


def say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def build(root: Path, n: int) -> None:
    from arkai.ops.init import init_repo

    init_repo(root, git=False)
    corpus = SHARED / "claims" / "scifact" / "corpus.jsonl"
    lib = root / "library" / "transcripts"
    with corpus.open(encoding="utf-8") as fh:
        for i, line in enumerate(fh):
            if i >= n:
                break
            d = json.loads(line)
            ident = f"{i:016x}"
            folder = lib / f"Abstract {i} ({ident[:8]})"
            folder.mkdir(parents=True)
            text = "".join(" ".join(s.split()) + "\n" for s in d["abstract"])
            (folder / "transcript.md").write_text(text, encoding="utf-8")
            day = f"{2024 + i % 2}-{1 + i % 12:02d}-{1 + i % 28:02d}"
            meta = {"id": ident, "title": d["title"][:80], "content_type": "transcripts",
                    "created_at": f"{day}T00:00:00Z", "tags": []}  # fmt: skip
            (folder / "metadata.json").write_text(json.dumps(meta), encoding="utf-8")


def cli(root: Path, q: str) -> tuple[float, int]:
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "arkai.cli.main", "--repo", str(root), "ask", q, "--json"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    return time.perf_counter() - t0, proc.returncode


def stats(xs: list[float]) -> dict[str, float]:
    return {"median_s": round(statistics.median(xs), 3), "max_s": round(max(xs), 3)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--items", type=int, default=1000)
    args = ap.parse_args()
    from arkai.adapters.repo import Repo
    from arkai.ops.ask import ask

    with tempfile.TemporaryDirectory(prefix="arkai-bench-ask-") as tmp:
        root = Path(tmp) / "lib"
        t0 = time.perf_counter()
        build(root, args.items)
        say(f"library of {args.items} items in {time.perf_counter() - t0:.1f}s")
        half = len(QUESTIONS) // 2 + 1
        cold = [cli(root, q) for q in QUESTIONS[:half]]
        say(f"cold CLI: {[round(t, 2) for t, _ in cold]}")
        cached = [cli(root, q) for q in QUESTIONS[:half]]
        repo = Repo.at(root)
        warm_new, warm_repeat = [], []
        ask(repo, QUESTIONS[0])
        for q in QUESTIONS[half:]:
            t = time.perf_counter()
            ask(repo, q)
            warm_new.append(time.perf_counter() - t)
        for q in QUESTIONS:
            t = time.perf_counter()
            ask(repo, q)
            warm_repeat.append(time.perf_counter() - t)
        lines = sum(1 for p in (root / "library").rglob("transcript.md") for _ in p.open())
        print(json.dumps({
            "items": args.items,
            "lines": lines,
            "exit_codes": sorted({c for _, c in cold + cached}),
            "cold_cli": stats([t for t, _ in cold]),
            "cold_cli_cached": stats([t for t, _ in cached]),
            "warm_new": stats(warm_new),
            "warm_repeat": stats(warm_repeat),
            "cpus": os.cpu_count(),
        }, indent=2))  # fmt: skip


if __name__ == "__main__":
    main()
