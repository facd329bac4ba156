"""bench/site.py --grow: a pipeline-built repo grown K-fold for the site stage alone — every
copy its own item, the index grown to match (a copy's topic entries point at its own chunks)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.bench import load_bench
from tests.conftest import Runner, chunk_text
from tests.func.test_site_build import item_dirs, make_repo
from tests.func.test_site_topics import write_index


def test_grow_copies_items_and_their_index(tmp_path: Path, arkai: Runner) -> None:
    bench = load_bench("site")
    repo = make_repo(tmp_path, arkai)
    ids = sorted(item_dirs(repo))
    write_index(repo, ids, {}, pad=0)
    (repo / "index" / "related.jsonl").write_text(json.dumps({"id": ids[0], "related": [
        [ids[1], "related", 0.5]]}) + "\n")  # fmt: skip
    grown = tmp_path / "grown"
    assert bench.grow(repo, grown, 2) == 2 * len(ids)
    got = item_dirs(grown)
    assert len(got) == 2 * len(ids) and set(ids) <= set(got)
    chunks = [json.loads(line) for line in chunk_text(grown / "index").splitlines()]
    topics = json.loads((grown / "index" / "topics.json").read_text())["topics"]
    # Each item's own chunk numbers (topics.json version 2), placed by the grown catalog.
    from arkai.search.topics import chunk_offsets

    offsets = chunk_offsets(json.loads((grown / "index" / "catalog.json").read_text())["items"])
    assert set(offsets) <= set(got) and len(offsets) == 2 * 5  # the items write_index lists
    for term, entry in topics.items():
        originals = [i for i in entry["items"] if i["content_id"] in ids]
        copies = [i for i in entry["items"] if i["content_id"] not in ids]
        assert len(copies) == len(originals) > 0, term
        for it in [*originals, *copies]:
            assert it["content_id"] in got
            first = offsets[it["content_id"]]
            assert all(chunks[first + n]["content_id"] == it["content_id"] for n in it["chunks"])
    related = (grown / "index" / "related.jsonl").read_text().splitlines()
    assert len(related) == 2 and json.loads(related[1])["id"] in got


def test_a_measured_build_reports_its_own_peak_not_its_parents(tmp_path: Path) -> None:
    """The child's peak RSS is its own (``VmHWM``): a benchmark that holds a grown library's
    index (here 400 MB) before it starts a build does not lend it that peak, as ``ru_maxrss``
    of a fork+exec child did."""
    bench = load_bench("site")
    held = bytearray(400 * 2**20)
    held[::4096] = b"x" * len(held[::4096])  # every page touched: resident
    code = "import json; print(json.dumps({'ok': 1}))"
    report, figures = bench.measured(code, [], tmp_path / "out.json", "child")
    assert report == {"ok": 1}
    assert 5 < figures["peak_rss_mb"] < 200
    assert figures["cpu_s"] >= 0 and figures["wall_s"] > 0
    del held
