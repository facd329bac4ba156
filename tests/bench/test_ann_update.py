"""bench/ann_update.py runs against the vectors step's current API: a store and its ANN index
are made, one changed item updates the index, nothing changed keeps it (not read into FAISS)."""

from __future__ import annotations

import json

from tests.bench import run_bench


def test_the_ann_update_benchmark_runs_and_reports_both_paths() -> None:
    proc = run_bench("ann_update", "--sizes", "3000", timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout)
    (row,) = report["sizes"]
    assert row["rows"] == 3000 and row["ann"] == "built" and row["ann_mb"] >= 0
    assert row["one_changed"]["ann"] == "updated"
    assert row["unchanged"]["ann"] == "kept"
    for run in (row["one_changed"], row["unchanged"]):
        assert run["peak_rss_mb"] >= run["start_rss_mb"] > 0
