"""bench/scale.py: the least-squares fit, the projection, the README table and the plot (the
measuring itself runs the real pipeline for minutes: run by hand, see bench/README.md)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.conftest import ROOT


@pytest.fixture(scope="module")
def scale() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_scale", ROOT / "bench" / "scale.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_scale"] = module
    spec.loader.exec_module(module)
    return module


def _size(n: int, noop: float, changed: float, added: float) -> dict[str, Any]:
    def loop(s: float) -> dict[str, Any]:
        return {"min_s": s - 0.1, "median_s": s, "runs": []}

    return {
        "items": n,
        "full": {"total_s": 0.5 * n},
        "noop": loop(noop),
        "changed": loop(changed),
        "added": loop(added),
        "peak_rss_mb": {"extract": 100.0 + n / 10, "index": 200.0 + n / 5},
    }


def test_the_fit_is_the_least_squares_line(scale: ModuleType) -> None:
    exact = scale.fit([(100, 2.0), (1000, 11.0), (10_000, 101.0)])  # 1 + 0.01 N
    assert exact["ms_per_item"] == pytest.approx(10.0)
    assert exact["intercept_s"] == pytest.approx(1.0)
    assert exact["projected_s"] == {"10000": 101.0, "100000": 1001.0}
    # Off the line: the slope that minimises the squared error (by hand: 2.5 and 0.5).
    rough = scale.fit([(1, 3.0), (2, 5.0), (3, 8.0)])
    assert rough["ms_per_item"] == pytest.approx(2500.0)
    assert rough["intercept_s"] == pytest.approx(0.333, abs=1e-3)
    assert scale.fit([(100, 2.0), (100, 3.0)]) == {"points": 2}  # one size: no line


def test_targets_and_table(scale: ModuleType) -> None:
    sizes = {"100": _size(100, 1.0, 9.0, 9.5), "1000": _size(1000, 1.9, 9.9, 10.4)}
    got = scale.analyse(sizes)
    assert got["fit"]["noop"]["projected_s"]["10000"] == pytest.approx(10.9)
    assert got["targets"] == {
        "changed_le_10s_at_10000": False,
        "changed_cpu_le_10s_at_10000": None,  # no CPU figures: no fit
        "noop_le_3s_at_10000": False,
        "noop_cpu_le_3s_at_10000": None,
    }
    flat = {"100": _size(100, 1.0, 5.0, 5.0), "1000": _size(1000, 1.0, 5.0, 5.0)}
    for size in flat.values():
        for loop in ("noop", "changed", "added"):
            size[loop]["median_cpu_s"] = 0.5 * size[loop]["median_s"]
        size["full"]["cpu_s"] = 1.0
    flat_fit = scale.analyse(flat)
    assert all(flat_fit["targets"].values())
    assert flat_fit["fit_cpu"]["changed"]["projected_s"]["100000"] == pytest.approx(2.5)
    assert (
        scale.markdown(flat)
        .splitlines()[2]
        .startswith("| 100 | 50 s (1.0 s CPU) | 1.0 s (0.5 s CPU) | 5.0 s (2.5 s CPU) |")
    )
    table = scale.markdown(sizes).splitlines()
    assert table[0] == (
        "| N | full build | no-op | one changed | one added | extract MB | index MB |"
    )
    assert table[2] == "| 100 | 50 s | 1.0 s | 9.0 s | 9.5 s | 110 | 220 |"
    assert table[3] == "| 1,000 | 500 s | 1.9 s | 9.9 s | 10.4 s | 200 | 400 |"


def test_the_plot_is_a_png(scale: ModuleType, tmp_path: Path) -> None:
    sizes = {"100": _size(100, 1.0, 9.0, 9.5), "1000": _size(1000, 1.9, 9.9, 10.4)}
    png = tmp_path / "docs" / "scale.png"
    scale.plot({"sizes": sizes, **scale.analyse(sizes)}, png)
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000
