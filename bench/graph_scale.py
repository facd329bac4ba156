"""Graph benchmark: the index stage's graph step over N synthetic items — from scratch, then
one item's entities changed (its RELATED_TO list recomputed from the per-item cache, the lists
it enters or leaves brought up to date, the rest kept; its part of the three files made again,
every other item's copied from the parts cache, ``arkai.search.graphparts``) — and the site's
related-items reader on the ``related.jsonl`` it writes, for each cap on RELATED_TO neighbours
per item (``index.graph.max_related``; 0: no cap, every related pair). Each phase is a child
process so its CPU seconds and peak RSS are its own. Prints JSON.

    python bench/graph_scale.py [--items 1000 3000 10000] [--caps 0 20] [--uncapped-max 3000]
                                [--entities 8] [--vocabulary 400]

Items are random but seeded: each has ``--entities`` entities drawn from a vocabulary of
``--vocabulary`` names (Zipf-like, so popular entities make dense neighbourhoods, as copies of
a few transcripts do in bench/index_scale.py) and up to two high topics.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

CHILD = """
import json, random, sys, time
from pathlib import Path
from arkai.search.graph import GraphItem, GraphSettings, features, node_id
from arkai.search.graphparts import PartStore, graph_parts, iter_graphml, iter_json, related_jsonl
from arkai.adapters.fs import write_chunks_if_changed
from arkai.search.graphcache import related_table, update_related

root, phase, n, k, vocab, cap = Path(sys.argv[1]), sys.argv[2], *map(int, sys.argv[3:7])
if phase == "site":
    from arkai.site.build import _load_related
    titles = {f"{i:016x}": f"Item {i}" for i in range(n + 1)}
    started = time.process_time()
    related = _load_related(root / "index", titles)
    print(json.dumps({"related_s": round(time.process_time() - started, 2),
                      "items_with_related": len(related)}))
    raise SystemExit(0)
rng = random.Random(17)
names = [f"Name {j}" for j in range(vocab)]
weights = [1 / (j + 1) for j in range(vocab)]
def item(i, salt=0):
    r = random.Random(i * 7919 + salt)
    ents = {r.choices(names, weights)[0] for _ in range(k)}
    topics = [(f"topic {r.randrange(vocab)}", 0.5) for _ in range(r.randint(0, 2))]
    return GraphItem(content_id=f"{i:016x}", title=f"Item {i}", path=f"library/x/{i}",
                     mentions=[(e, "person", 1) for e in sorted(ents)], quotes=[],
                     cites={}, high_topics=topics)
items = [item(i) for i in range(n)]
if phase == "changed":
    items[n // 2] = item(n // 2, salt=1)
started = time.process_time()
nodes = {node_id("content", it.content_id): it for it in items}
table = related_table(root)
up = update_related({m: features(it) for m, it in nodes.items()},
                    {m: it.content_id for m, it in nodes.items()}, table, 2, cap)
table.save(prune=True)  # as the index stage does (arkai.ops.index._graph)
related_s = time.process_time() - started
parts_started = time.process_time()
index = root / "index"
index.mkdir(exist_ok=True)
with PartStore(root) as store:
    related_edges = len(up.edges)  # (graph_parts empties the dict as it makes the links)
    graph = graph_parts(items, GraphSettings(max_related=cap), up.edges, store)
    parts_s = time.process_time() - parts_started
    # The index stage's writers (arkai.ops.index._graph); the parts read back are written out
    # from the store, so it stays open until they are.
    write_chunks_if_changed(index / "graph.json", iter_json(graph))
    write_chunks_if_changed(index / "graph.graphml", iter_graphml(graph))
write_chunks_if_changed(index / "related.jsonl", related_jsonl(graph))
print(json.dumps({"related_edges_s": round(related_s, 2), "recomputed_items": up.changed,
                  "neighbour_lists_merged": up.merged,
                  "neighbour_lists_recomputed": up.recomputed,
                  "graph_step_s": round(time.process_time() - started, 2),
                  "parts_s": round(parts_s, 2), "parts_built": store.built,
                  "parts_rejected": store.rejected,
                  "edges": graph.edges,
                  "related_edges": related_edges}))
"""


def child(root: Path, phase: str, args: argparse.Namespace, n: int, cap: int) -> dict[str, Any]:
    """One phase in a child process: its report, wall and CPU seconds, peak RSS."""
    started = time.perf_counter()
    report_path = root / f".{phase}.json"
    pid = os.fork()
    if pid == 0:
        with open(report_path, "wb") as fh:
            os.dup2(fh.fileno(), 1)
        os.execv(sys.executable, [sys.executable, "-c", CHILD, str(root), phase, str(n),
                                  str(args.entities), str(args.vocabulary), str(cap)])  # fmt: skip
    _, status, usage = os.wait4(pid, 0)
    if status:
        raise SystemExit(f"{phase} failed (status {status})")
    report: dict[str, Any] = json.loads(report_path.read_text().strip().splitlines()[-1])
    report["wall_s"] = round(time.perf_counter() - started, 2)
    report["cpu_s"] = round(usage.ru_utime + usage.ru_stime, 2)
    report["peak_rss_mb"] = round(usage.ru_maxrss / 1024, 1)
    return report


def run(args: argparse.Namespace, n: int, cap: int, tmp: Path) -> dict[str, Any]:
    root = tmp / f"n{n}-cap{cap}"
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir()
    result: dict[str, Any] = {"items": n, "max_related": cap}
    for phase in ("full", "noop", "changed", "site"):
        result[phase] = child(root, "full" if phase == "noop" else phase, args, n, cap)
    index = root / "index"
    result["graph_json_mb"] = round((index / "graph.json").stat().st_size / 2**20, 1)
    result["related_jsonl_mb"] = round((index / "related.jsonl").stat().st_size / 2**20, 2)
    if args.keep is None:
        shutil.rmtree(root, ignore_errors=True)  # the uncapped graphs are large
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--items", type=int, nargs="+", default=[1000, 3000, 10000])
    ap.add_argument(
        "--caps",
        type=int,
        nargs="+",
        default=[0, 20],
        help="Values of index.graph.max_related to run (0: no cap).",
    )
    ap.add_argument(
        "--uncapped-max",
        type=int,
        default=3000,
        help="Largest N run with cap 0 (its edges grow with the square of N).",
    )
    ap.add_argument("--entities", type=int, default=8)
    ap.add_argument("--vocabulary", type=int, default=400)
    ap.add_argument("--keep", type=Path, help="Keep the files here (one folder per N and cap).")
    args = ap.parse_args()
    tmp = args.keep or Path(tempfile.mkdtemp(prefix="arkai-graph-bench-"))
    tmp.mkdir(parents=True, exist_ok=True)
    try:
        results = [
            run(args, n, cap, tmp)
            for n in args.items
            for cap in args.caps
            if cap > 0 or n <= args.uncapped_max
        ]
        print(json.dumps({
            "bench": "graph_scale", "python": platform.python_version(), "cpus": os.cpu_count(),
            "load_avg_1m": round(os.getloadavg()[0], 1), "results": results,
        }, indent=2))  # fmt: skip
    finally:
        if args.keep is None:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
