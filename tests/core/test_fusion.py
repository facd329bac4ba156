"""Fusion: golden cases from ``tests/fixtures/fusion_cases.yaml`` plus edge behaviour."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from arkai.search.fusion import DEFAULT_TOP_BONUS, Fused, convex, normalise, rrf

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "fusion_cases.yaml"
CASES: dict[str, list[dict[str, Any]]] = yaml.safe_load(FIXTURE.read_text(encoding="utf-8"))


def _check(got: list[Fused], expect: list[dict[str, Any]]) -> None:
    assert [f.id for f in got] == [e["id"] for e in expect]
    for f, e in zip(got, expect, strict=True):
        assert f.score == pytest.approx(e["score"], abs=1e-12), f.id
        assert set(f.lanes) == set(e["lanes"]), f.id
        for lane, (rank, contribution) in e["lanes"].items():
            assert f.lanes[lane][0] == rank, (f.id, lane)
            assert f.lanes[lane][1] == pytest.approx(contribution, abs=1e-12), (f.id, lane)


@pytest.mark.parametrize("case", CASES["rrf"], ids=lambda c: c["name"])
def test_rrf_golden(case: dict[str, Any]) -> None:
    got = rrf(
        case["rankings"],
        k=case["k"],
        top_bonus=tuple(case["top_bonus"]),
        weights=case.get("weights"),
    )
    _check(got, case["expect"])
    for f in got:
        assert f.score == pytest.approx(sum(c for _, c in f.lanes.values()), abs=1e-12)


@pytest.mark.parametrize("case", CASES["convex"], ids=lambda c: c["name"])
def test_convex_golden(case: dict[str, Any]) -> None:
    lanes = {name: [(i, float(s)) for i, s in pairs] for name, pairs in case["lanes"].items()}
    fill = {
        lane: (lambda ids, table=table: [float(table[i]) for i in ids])
        for lane, table in case.get("fill", {}).items()
    }
    got = convex(
        lanes,
        weights=case.get("weights"),
        method=case["method"],
        missing=case.get("missing", 0.0),
        fill=fill,
        top_bonus=tuple(case.get("top_bonus", ())),
    )
    _check(got, case["expect"])
    if "missing" not in case:
        for f in got:
            assert f.score == pytest.approx(sum(c for _, c in f.lanes.values()), abs=1e-12)


def test_convex_fill_must_answer_every_id() -> None:
    with pytest.raises(ValueError, match="returned 0 scores for 1 ids"):
        convex({"a": [("x", 1.0)], "b": [("y", 1.0)]}, fill={"b": lambda ids: []})


def test_rrf_default_bonus_is_the_designs() -> None:
    assert DEFAULT_TOP_BONUS == (0.05, 0.02, 0.02)
    [only] = rrf({"lexical": ["a"]})
    assert only.score == pytest.approx(1 / 61 + 0.05)


def test_rrf_rejects_bad_parameters() -> None:
    with pytest.raises(ValueError):
        rrf({"lexical": ["a"]}, k=-1)
    with pytest.raises(ValueError):
        rrf({"lexical": ["a"]}, weights={"lexical": -1.0})
    with pytest.raises(ValueError):
        rrf({"lexical": ["a"]}, weights={"lexical": float("nan")})


def test_rrf_zero_weight_lane_still_lists_its_items() -> None:
    got = rrf({"lexical": ["a"], "vector": ["b"]}, weights={"vector": 0.0}, top_bonus=())
    assert [f.id for f in got] == ["a", "b"]
    assert got[1].score == 0.0
    assert got[1].lanes == {"vector": (1, 0.0)}


def test_normalise() -> None:
    assert normalise([]) == []
    assert normalise([3.0, 1.0, 2.0]) == [1.0, 0.0, 0.5]
    assert normalise([2.0, 2.0]) == [1.0, 1.0]
    assert normalise([2.0, 2.0], "zscore") == [0.0, 0.0]
    assert normalise([3.0, 1.0], "zscore") == [1.0, -1.0]
    with pytest.raises(ValueError):
        normalise([1.0], "rank")


# -- the product's hybrid (arkai.search.hybrid) -----------------------------------------


def _toy() -> tuple[Any, Any, list[str]]:
    import numpy as np

    from arkai.search import hybrid

    docs = [
        ("Aspirin", "aspirin prevents heart attacks"),
        ("Statins", "statins lower cholesterol"),
        ("Sleep", "sleep and blood pressure"),
        ("Heart", "cardiac arrest and the heart"),
    ]
    index = hybrid.build_lexical(docs)
    vecs = np.array([[0, 1, 0], [0, 1, 0], [0, 0, 1], [0.8, 0, 0.6]], dtype=np.float32)
    return index, vecs, ["d1", "d2", "d3", "d4"]


def test_hybrid_search_fills_both_lanes() -> None:
    import numpy as np

    from arkai.search import hybrid

    index, vecs, ids = _toy()
    q = np.array([0.6, 0.0, 0.8], dtype=np.float32)  # d4 .96, d3 .8, d1 = d2 = 0
    got = hybrid.search("heart attack", q, index=index, doc_vecs=vecs, ids=ids, k=4)
    assert {f.id for f in got} == {"d1", "d2", "d3", "d4"}
    # d4: second in BM25 (heart, twice) and first in vectors; d1: first in BM25 (heart,
    # attack) and last in vectors.
    assert [f.id for f in got][:2] == ["d4", "d1"]
    for f in got:
        assert set(f.lanes) == {"lexical", "vector"}  # every candidate scored by both lanes
        assert f.score == pytest.approx(sum(c for _, c in f.lanes.values()))
    d2 = next(f for f in got if f.id == "d2")
    assert d2.lanes["lexical"][0] == 0  # not retrieved lexically: scored on request
    # Filters apply to both lanes.
    allowed = np.array([True, True, True, False])
    assert "d4" not in {
        f.id
        for f in hybrid.search(
            "heart attack", q, index=index, doc_vecs=vecs, ids=ids, k=4, allowed=allowed
        )
    }


def test_hybrid_search_lexical_only() -> None:
    from arkai.search import hybrid

    index, _, ids = _toy()
    got = hybrid.search("heart", None, index=index, doc_vecs=None, ids=ids, k=1)
    assert [(f.id, f.lanes["lexical"][0]) for f in got] == [("d4", 1)]


def test_hybrid_fuse_matches_convex_with_the_documented_defaults() -> None:
    from arkai.search import hybrid

    lex = [("a", 5.0), ("b", 3.0), ("c", 1.0)]
    vec = [("b", 0.9), ("d", 0.5), ("a", 0.4)]
    fill = {"lexical": lambda ids: [0.0] * len(ids), "vector": lambda ids: [0.1] * len(ids)}
    want = convex(
        {"lexical": lex, "vector": vec},
        weights={"lexical": 0.5, "vector": 0.5},
        method="zscore",
        fill=fill,
        top_bonus=(1.0,),
    )
    got = hybrid.fuse(lex, vec, lexical_scores=fill["lexical"], vector_scores=fill["vector"])
    assert got == want
    assert (hybrid.WEIGHTS, hybrid.NORMALISATION, hybrid.TOP_BONUS, hybrid.LANE_DEPTH) == (
        {"lexical": 0.5, "vector": 0.5},
        "zscore",
        (1.0,),
        100,
    )
    # Without fills, a missing candidate gets the lane's lowest normalised score.
    bare = {f.id: f for f in hybrid.fuse(lex, vec)}
    assert set(bare["d"].lanes) == {"vector"}
    assert bare["d"].score == pytest.approx(
        bare["d"].lanes["vector"][1] + 0.5 * min(normalise([5.0, 3.0, 1.0], "zscore"))
    )


def test_plain_rrf_baseline() -> None:
    from arkai.search import hybrid

    got = hybrid.plain_rrf([("a", 9.0), ("b", 1.0)], [("b", 0.5)])
    assert [f.id for f in got] == ["b", "a"]
    assert got[0].score == pytest.approx(1 / 62 + 1 / 61)
