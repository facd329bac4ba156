"""bench/beliefs_scale.py: the beliefs step resumed on synthetic episodes decides afresh only
the edited episode and the ones whose candidates name it, and reports each step's peak."""

from __future__ import annotations

import json
from pathlib import Path

from tests.bench import load_bench


def test_a_small_run_resumes_and_reports_every_step(tmp_path: Path) -> None:
    bench = load_bench("beliefs_scale")
    sentences = tmp_path / "sentences.json"
    texts = [f"Statement number {i} about build caches." for i in range(50)]
    sentences.write_text(json.dumps(texts))
    got = bench.run(3000, sentences)
    assert got["episodes"] == 3000 and got["resumed_at"] == 1500
    # The edited episode and the 32 after it (their candidates name it) are decided afresh; it
    # now holds episode 0's vector, so it reinforces that belief: one belief fewer.
    assert got["decided"] == 33 and got["beliefs"] == 2999
    steps = got["steps"]
    assert list(steps) == ["imports", "episodes", "vectors", "read log", "replay", "write"]
    peaks = [s["peak_mb"] for s in steps.values()]
    assert peaks == sorted(peaks) and 0 < peaks[0] < peaks[-1] < 1000
    assert got["log_mb"] > 0
