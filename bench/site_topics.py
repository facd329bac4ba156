"""The site's read of ``index/topics.json``: CPU seconds and peak RSS of
``arkai.site.build._load_topics`` (each topic's first entries in page order and the digest of
them all, each item's first topics) for a synthetic index of N items, in a child process with
the stage runner's collector settings (``arkai.cli.stage.tune_gc``) — what every site build
pays before it makes a page. Prints JSON.

    python bench/site_topics.py [--items 1000 10000] [--runs 5] [--keep DIR]

The index is drawn from one seeded RNG: each item has 5–60 chunks and is under 30 of
``items / 18`` topics (559 at 10,000 items, the benchmark library's count), each entry naming a
random subset of the item's chunks with a random relevance; ``topics.json`` is written by the
index stage's writer (``arkai.search.topics.iter_topics_json``) and ``catalog.json`` lists the
items with their chunk counts. At 10,000 items: 300,000 entries, a 30 MB file (the benchmark
library's: 305,000 entries, 29 MB).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from arkai.search.topics import iter_topics_json

TOPICS_PER_ITEM = 30
ITEMS_PER_TOPIC = 18

RUN = """
import json, sys, time
from pathlib import Path
from arkai.adapters.events import maxrss_mb
from arkai.cli.stage import tune_gc
from arkai.site.build import _load_topics
tune_gc()
index = Path(sys.argv[1])
# Every item of the catalog is the library's (titled by its ID), as in a site build.
titles = {e["id"]: e["id"] for e in json.loads((index / "catalog.json").read_text())["items"]}
t = time.process_time()
topics, per_item, _ = _load_topics(index, titles)
cpu = time.process_time() - t
print(json.dumps({"cpu_s": cpu, "topics": len(topics), "items": len(per_item),
                  "entries": sum(x.size for x in topics.values()),
                  "maxrss_mb": maxrss_mb()}))  # this program's own peak (VmHWM), not its parent's
"""


def make_index(index: Path, n_items: int, seed: int = 1) -> None:
    rng = random.Random(seed)
    index.mkdir(parents=True, exist_ok=True)
    items = [{"id": f"item-{i:06d}", "chunks": rng.randint(5, 60)} for i in range(n_items)]
    (index / "catalog.json").write_text(json.dumps({"version": 1, "items": items}))
    n_topics = max(TOPICS_PER_ITEM, n_items // ITEMS_PER_TOPIC)
    topics: dict[str, Any] = {f"topic {t:05d}": {"items": []} for t in range(n_topics)}
    for it in items:
        for t in rng.sample(range(n_topics), TOPICS_PER_ITEM):
            chunks = sorted(rng.sample(range(it["chunks"]), rng.randint(0, it["chunks"])))
            topics[f"topic {t:05d}"]["items"].append(
                {"chunks": chunks, "content_id": it["id"],
                 "relevance": rng.choice(("high", "medium", "low"))}
            )  # fmt: skip
    doc = {"synonyms": {}, "topics": topics, "version": 2}
    with open(index / "topics.json", "wb") as f:
        for piece in iter_topics_json(doc):
            f.write(piece)


def measure(index: Path, runs: int) -> dict[str, Any]:
    got = []
    for _ in range(runs):
        out = subprocess.run([sys.executable, "-c", RUN, str(index)], check=True,
                             capture_output=True, text=True).stdout  # fmt: skip
        got.append(json.loads(out))
    cpu = [g["cpu_s"] for g in got]
    return {
        "topics_json_mb": round((index / "topics.json").stat().st_size / 2**20, 1),
        "topics": got[0]["topics"],
        "entries": got[0]["entries"],
        "items_with_topics": got[0]["items"],
        "cpu_s_median": round(statistics.median(cpu), 3),
        "cpu_s_min_max": [round(min(cpu), 3), round(max(cpu), 3)],
        "maxrss_mb_median": round(statistics.median(g["maxrss_mb"] for g in got), 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--items", type=int, nargs="+", default=[1000, 10_000])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--keep", type=Path, help="write the indexes here (kept)")
    args = ap.parse_args()
    result: dict[str, Any] = {"python": sys.version.split()[0], "runs": args.runs, "sizes": {}}
    with tempfile.TemporaryDirectory() as tmp:
        base = args.keep or Path(tmp)
        for n in args.items:
            index = base / f"n{n}" / "index"
            make_index(index, n)
            result["sizes"][str(n)] = measure(index, args.runs)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
