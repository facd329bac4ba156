"""bench/scale.py: the least-squares fit, the projection, the README table and the plot, the
merge of separately measured sizes, and the grown library — copies that are distinct items
whose extraction the response store answers (the measuring itself runs the real pipeline for
minutes: run by hand, see bench/README.md)."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from arkai.formats import parse_source, render_transcript
from arkai.ops.extract import VERIFY
from tests.bench import load_bench, run_bench
from tests.conftest import Runner, chunk_text, load_json


@pytest.fixture(scope="module")
def scale() -> ModuleType:
    return load_bench("scale")


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
    only_before = scale.merge({}, sizes, "before", 3)  # no main set yet: the labelled one alone
    assert only_before["sizes"] == {}
    scale.plot(only_before, png)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.read_bytes() != data


def _with_stages(size: dict[str, Any], per_item_ms: float) -> dict[str, Any]:
    """``size`` with per-stage CPU seconds and peak RSS in its loops (index grows with N)."""
    n = size["items"]
    for loop in ("noop", "changed", "added"):
        size[loop]["stage_cpu_s"] = {"extract": 2.0, "index": 1.0 + per_item_ms * n / 1000}
        size[loop]["peak_rss_mb"] = {"extract": 200.0, "index": 100.0 + n / 10}
    return size


def test_each_stage_is_fitted_per_loop(scale: ModuleType) -> None:
    sizes = {
        str(n): _with_stages(_size(n, 1.0, 9.0, 9.5), per_item_ms=3.0) for n in (100, 1000, 10_000)
    }
    got = scale.analyse(sizes)
    index = got["fit_stage_cpu"]["changed"]["index"]
    assert index["points"] == 3
    assert index["ms_per_item"] == pytest.approx(3.0)
    assert index["intercept_s"] == pytest.approx(1.0)
    assert index["projected_s"]["100000"] == pytest.approx(301.0)
    assert got["fit_stage_cpu"]["noop"]["extract"]["ms_per_item"] == pytest.approx(0.0)
    rss = got["fit_stage_rss_mb"]["added"]["index"]
    assert rss["projected_s"]["100000"] == pytest.approx(10_100.0)  # MB, named like seconds
    table = scale.stage_table({"sizes": sizes, **got}).splitlines()
    assert table[0].startswith("| loop | stage | CPU s at 100 | CPU s at 1,000 | CPU s at 10,000 |")
    assert (
        "| changed | index | 1.30 | 4.00 | 31.00 | 110 | 200 | 1100 | 3.00 | 31.00 | 301.00 |"
        in (table)
    )


def test_sizes_merge_into_their_set(scale: ModuleType) -> None:
    old = scale.merge({}, {"100": _size(100, 1.0, 9.0, 9.5)}, None, 3)
    before = scale.merge(old, {"1000": _size(1000, 5.0, 40.0, 41.0)}, "before", 3)
    assert set(before["sizes"]) == {"100"}  # the labelled size stays out of the main set
    assert set(before["labels"]["before"]["sizes"]) == {"1000"}
    again = scale.merge(before, {"1000": _size(1000, 1.9, 9.9, 10.4)}, None, 1)
    assert set(again["sizes"]) == {"100", "1000"}
    assert again["fit"]["noop"]["projected_s"]["10000"] == pytest.approx(10.9)  # re-analysed
    assert again["labels"]["before"]["sizes"]["1000"]["noop"]["median_s"] == 5.0  # kept
    remeasured = scale.merge(again, {"100": _size(100, 2.0, 9.0, 9.5)}, None, 1)
    assert remeasured["sizes"]["100"]["noop"]["median_s"] == 2.0  # the same size replaced
    assert remeasured["sizes"]["1000"]["noop"]["median_s"] == 1.9
    size = _size(1000, 1.9, 9.9, 10.4)
    size["base"] = 100
    assert scale.markdown({"1000": size}).splitlines()[2].startswith("| 1,000 (100 distinct) |")
    # A grown size's first build is no full build: left out of that fit, not of the loops'.
    grown = scale.analyse({"100": _size(100, 1.0, 9.0, 9.5), "1000": size})
    assert grown["fit"]["full"] == {"points": 1}
    assert grown["fit"]["noop"]["points"] == 2


def test_the_first_cue_number_changes_bytes_only(scale: ModuleType) -> None:
    srt = (
        b"1\n00:00:00,000 --> 00:00:02,000\nHello there.\n\n"
        b"2\n00:00:02,000 --> 00:00:04,000\nBye.\n"
    )
    copy = scale.first_cue_number(srt, 4711)
    assert copy.startswith(b"4711\n") and copy != srt
    assert render_transcript(parse_source("a.srt", copy)) == render_transcript(
        parse_source("a.srt", srt)
    )
    with pytest.raises(ValueError, match="cue number"):
        scale.first_cue_number(b"00:00:00,000 --> 00:00:02,000\nHi.\n", 2)


@pytest.mark.shared_data
def test_grown_copies_are_items_of_their_own_answered_by_the_store(
    scale: ModuleType, tmp_path: Path, kr: Path, arkai: Runner
) -> None:
    """Five talks, two distinct, seeded as bench/scale.py does: five items, IDs, folders and
    evidence IDs; the copies' transcripts are their base talk's bytes, so their transcript
    patterns are store hits; their chunks get their base chunks' vectors, which are what the
    model gives for them (the same bits: a text's row does not depend on the texts embedded
    with it), and the index run that follows
    embeds nothing."""
    inbox, spare = tmp_path / "inbox", tmp_path / "spare"
    inbox.mkdir()
    spare.mkdir()
    files, extras, words = scale.grow_items(inbox, spare, 5, 2, 1)
    assert [f.name for f in files] == [f"talk-{i:05d}.srt" for i in range(5)]
    assert len({f.read_bytes() for f in [*files, *extras]}) == 6 and words > 0
    assert sorted(p.name for p in inbox.iterdir()) == [f.name for f in files]
    copies = tmp_path / "copies"
    copies.mkdir()
    for f in files[2:]:
        f.rename(copies / f.name)
    for folder in (inbox, copies):
        code, _, err = arkai("--repo", kr, "add", folder, "--quiet")
        assert code == 0, err
        code, out, err = arkai("--repo", kr, "extract", "--json")
        assert code == 0, err
        if folder == inbox:
            code, _, err = arkai("--repo", kr, "reindex", "--json")
            assert code == 0, err
    summary = load_json(out)  # the copies' extraction
    metas = [json.loads(p.read_text()) for p in sorted(kr.glob("library/*/*/metadata.json"))]
    assert len({m["id"] for m in metas}) == 5
    by_title = {m["title"]: m["artifact_digests"]["transcript.md"] for m in metas}
    assert len(set(by_title.values())) == 2
    assert by_title["Talk 00000"] == by_title["Talk 00002"] == by_title["Talk 00004"]
    assert summary["extracted"] == 3
    # The response-store records each item used: a copy's transcript patterns are its base
    # talk's records (hits); only the verification, whose input names the item's own evidence
    # IDs, is a call of its own.
    transcript_keys, verify_keys = {}, {}
    for path in kr.glob("extracted/*/*/extraction.json"):
        record = json.loads(path.read_text())
        cid, pats = record["content_id"], record["patterns"]
        transcript_keys[cid] = {k for name, p in pats.items() if name != VERIFY for k in p["keys"]}
        verify_keys[cid] = set(pats[VERIFY]["keys"])
    title = {m["id"]: m["title"] for m in metas}
    keys = {title[cid]: got for cid, got in transcript_keys.items()}
    assert keys["Talk 00002"] == keys["Talk 00004"] == keys["Talk 00000"]
    assert keys["Talk 00003"] == keys["Talk 00001"] != keys["Talk 00000"]
    assert len(set().union(*verify_keys.values())) == 5
    assert summary["calls"] == 3  # the copies' verifications
    copies_titles = ("Talk 00002", "Talk 00003", "Talk 00004")
    assert summary["cache_hits"] == sum(len(keys[t]) for t in copies_titles)
    evidence = [
        {json.loads(line)["id"] for line in p.read_text().splitlines()}
        for p in sorted(kr.glob("extracted/*/*/evidence.jsonl"))
    ]
    assert len(evidence) == 5 and all(evidence)
    assert len(set().union(*evidence)) == sum(map(len, evidence))  # no ID shared by two items

    reused = scale.reuse_vectors(kr, 2)
    code, out, err = arkai("--repo", kr, "reindex", "--json")
    assert code == 0, err
    index = load_json(out)
    chunks = [json.loads(line) for line in chunk_text(kr / "index").splitlines()]
    of_copies = [c for c in chunks if title[c["content_id"]] in copies_titles]
    assert of_copies and reused == len({c["key"] for c in of_copies})
    assert index["embedded"] == 0 and index["items"] == 5
    from arkai.search import embed
    from arkai.search.vectors import VectorStore

    meta = json.loads((kr / "index" / "vectors" / "meta.json").read_text())
    store = VectorStore.load(kr / "index" / "vectors", meta["model"], dim=meta["dim"])
    assert sorted(store.keys) == sorted({c["key"] for c in chunks})
    sample = of_copies[:: max(1, len(of_copies) // 8)]
    fresh = embed.get_embedder(meta["model"]).encode([c["text"] for c in sample], kind="passage")
    # Each text is run through the model alone, so its row is the same bits here as when the
    # base talk's chunks were embedded beside other chunks.
    assert np.array_equal(store.get([c["key"] for c in sample]), fresh)


def test_re_rendering_reads_every_set(tmp_path: Path) -> None:
    """``--out FILE --markdown`` without sizes re-renders what FILE holds, the labelled sets
    included, and leaves the sizes in it as they were."""
    out = tmp_path / "scale.json"
    before = {"1000": _size(1000, 5.0, 40.0, 41.0)}
    before["1000"]["base"] = 100
    out.write_text(json.dumps({"sizes": {}, "labels": {"before": {"sizes": before}}}))
    proc = run_bench("scale", "--out", str(out), "--markdown", timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "before:\n| N | full build |" in proc.stderr
    assert "| 1,000 (100 distinct) | 500 s † | 5.0 s | 40.0 s | 41.0 s |" in proc.stderr
    again = json.loads(out.read_text())
    assert again["labels"]["before"]["sizes"] == before
    assert again["labels"]["before"]["fit"]["noop"] == {"points": 1}
    empty = tmp_path / "empty.json"
    empty.write_text("{}")
    proc = run_bench("scale", "--out", str(empty), timeout=120)
    assert proc.returncode == 2 and "give --sizes" in proc.stderr


def test_a_loop_summary_has_each_stage_and_dvc(scale: ModuleType) -> None:
    def run(total: float, extract: float | None, dvc: float, rss: float) -> dict[str, Any]:
        cpu = {"index": 2.0} | ({} if extract is None else {"extract": extract})
        return {"total_s": total, "cpu_s": total / 2, "dvc_cpu_s": dvc, "stage_cpu_s": cpu,
                "rss_mb": {"index": rss}}  # fmt: skip

    got = scale._summary(
        [run(3.0, 1.0, 0.5, 100.0), run(9.0, None, 0.7, 300.0), run(5.0, 3.0, 0.9, 200.0)]
    )
    assert (got["min_s"], got["median_s"], got["median_cpu_s"]) == (3.0, 5.0, 2.5)
    # A run that skipped a stage counts 0 for it; ``dvc`` is the CPU outside the stages.
    assert got["stage_cpu_s"] == {"index": 2.0, "extract": 1.0, "dvc": 0.7}
    assert got["peak_rss_mb"] == {"index": 300.0}
    assert got["median_run"]["total_s"] == 5.0


def test_the_legend_does_not_grow_with_the_labelled_sets(
    scale: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Seventeen labelled sets took the plot's height with a legend entry each: the earlier
    sets share one entry per loop."""
    from matplotlib.figure import Figure

    sizes = {"100": _size(100, 1.0, 9.0, 9.5), "1000": _size(1000, 1.9, 9.9, 10.4)}
    result: dict[str, Any] = {"sizes": sizes, **scale.analyse(sizes)}
    for k in range(20):
        result = scale.merge(result, sizes, f"set-{k}", 3)
    entries: list[list[str]] = []
    save = Figure.savefig

    def seen(fig: Figure, *args: Any, **kwargs: Any) -> None:
        entries.append([t.get_text() for ax in fig.axes for t in ax.get_legend().get_texts()])
        save(fig, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", seen)
    scale.plot({"sizes": sizes, **scale.analyse(sizes)}, tmp_path / "alone.png")
    scale.plot(result, tmp_path / "scale.png")
    alone, texts = entries
    assert len(result["labels"]) == 20
    assert texts == [*alone[:-2], "earlier sets: one changed, CPU", "earlier sets: no-op, CPU",
                     *alone[-2:]]  # fmt: skip
