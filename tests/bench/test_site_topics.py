"""bench/site_topics.py: the synthetic index is what the index stage writes (every entry read
by the site's patterns, none decoded), and a measured run reports the counts it read."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest

from arkai.site import build as site_build
from tests.bench import load_bench


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return load_bench("site_topics")


def test_the_synthetic_index_is_read_as_the_index_stage_writes_it(
    bench: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    index = tmp_path / "index"
    bench.make_index(index, 200)

    def no_decoding(*_: object) -> None:
        raise AssertionError("a topic of the synthetic index was decoded")

    titles = {f"item-{i:06d}": "t" for i in range(200)}
    with monkeypatch.context() as m:
        m.setattr(site_build, "_topic_items", no_decoding)
        topics, per_item, _ = site_build._load_topics(index, titles)
    assert sum(t.size for t in topics.values()) == 200 * bench.TOPICS_PER_ITEM
    assert len(per_item) == 200
    assert all(
        len([*site_build.item_topics(v)]) == site_build.MAX_TOPICS for v in per_item.values()
    )
    got = bench.measure(index, 1)
    assert got["entries"] == 200 * bench.TOPICS_PER_ITEM
    assert got["topics"] == len(topics) and got["items_with_topics"] == 200
    assert got["cpu_s_median"] > 0 and got["maxrss_mb_median"] > 0
