"""bench/graph_scale.py runs against the graph step's current API and measures what it says:
a first build makes every item's list and part, a second run with nothing changed makes none,
one changed item makes one (the benchmark had gone stale once, unnoticed, when the related
lists moved to their own table)."""

from __future__ import annotations

import json

from tests.bench import run_bench


def test_the_graph_benchmark_runs_and_reports_each_phase() -> None:
    args = ["--items", "150", "--caps", "0", "5", "--entities", "4", "--vocabulary", "60"]
    proc = run_bench("graph_scale", *args)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout)
    assert report["bench"] == "graph_scale"
    assert [(r["items"], r["max_related"]) for r in report["results"]] == [(150, 0), (150, 5)]
    for r in report["results"]:
        full, noop, changed = r["full"], r["noop"], r["changed"]
        assert full["recomputed_items"] == full["parts_built"] == 150
        assert noop["recomputed_items"] == noop["parts_built"] == 0
        assert noop["edges"] == full["edges"] and noop["related_edges"] == full["related_edges"]
        assert changed["recomputed_items"] == changed["parts_built"] == 1
        assert all(p["parts_rejected"] == 0 for p in (full, noop, changed))
        assert full["related_edges"] > 0 and r["site"]["items_with_related"] > 0
        assert r["related_jsonl_mb"] > 0 and r["graph_json_mb"] > 0
    capped, uncapped = report["results"][1], report["results"][0]
    assert capped["full"]["related_edges"] < uncapped["full"]["related_edges"]
