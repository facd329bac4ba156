"""bench/manifests.py --items: the extract stage's manifest bookkeeping on a synthetic library
plans nothing when nothing changed and exactly the edited item when one transcript changed,
and reports each run's own peak memory."""

from __future__ import annotations

from types import ModuleType

import pytest

from tests.bench import load_bench


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return load_bench("manifests")


def test_the_bookkeeping_plans_only_the_edited_item(bench: ModuleType) -> None:
    got = bench.stage_bookkeeping(120, 2)
    assert got["files"] == 120 * 9
    assert got["first"]["changed_items"] is None and not got["first"]["sealed"]
    assert got["nothing_changed"]["changed_items"] == [0]
    assert got["one_changed"]["changed_items"] == [1]
    for loop in ("nothing_changed", "one_changed"):
        assert len(got[loop]["peak_rss_mb"]) == 2
        assert all(0 < mb < 500 for mb in got[loop]["peak_rss_mb"])
        assert all(s >= 0 for s in got[loop]["work_cpu_s"])
