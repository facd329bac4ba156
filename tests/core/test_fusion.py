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


# -- the one pipeline (arkai.search.pipeline) ---------------------------------------------


def _toy() -> Any:
    import numpy as np

    from arkai.search import pipeline
    from arkai.search.vectors import VectorStore

    docs = [
        ("Aspirin", "aspirin prevents heart attacks"),
        ("Statins", "statins lower cholesterol"),
        ("Sleep", "sleep and blood pressure"),
        ("Heart", "cardiac arrest and the heart"),
    ]
    store = VectorStore(3, "toy")
    rows = np.array([[0, 1, 0], [0, 1, 0], [0, 0, 1], [0.8, 0, 0.6]], dtype=np.float32)
    store.add(["d1", "d2", "d3", "d4"], rows)
    return pipeline.Corpus(pipeline.build_lexical(docs), store)


def test_pipeline_fills_both_lanes() -> None:
    import numpy as np

    from arkai.search import pipeline

    corpus = _toy()
    q = np.array([0.6, 0.0, 0.8], dtype=np.float32)  # d4 .96, d3 .8, d1 = d2 = 0
    got = pipeline.rank(corpus, "heart attack", query_vec=q, min_similarity=0.0).ranked
    assert {r.doc for r in got} == {0, 1, 2, 3}
    # d4: second in BM25 (heart, twice) and first in vectors; d1: first in BM25 (heart,
    # attack) and last in vectors.
    assert [r.doc for r in got][:2] == [3, 0]
    for r in got:
        assert set(r.lanes) == {"lexical", "vector"}  # every candidate scored by both lanes
        assert r.score == pytest.approx(sum(float(v["contribution"]) for v in r.lanes.values()))
    d2 = next(r for r in got if r.doc == 1)
    assert d2.lanes["lexical"]["rank"] == 0  # not retrieved lexically: scored on request
    # Filters apply to both lanes.
    allowed = np.array([True, True, True, False])
    masked = pipeline.rank(corpus, "heart attack", query_vec=q, mask=allowed, min_similarity=0.0)
    assert 3 not in {r.doc for r in masked.ranked}


def test_pipeline_lexical_only_never_embeds_the_query() -> None:
    from arkai.search import pipeline

    def boom() -> Any:
        raise AssertionError("the lexical mode must not embed the query")

    got = pipeline.rank(_toy(), "heart", mode="lexical", query_vec=boom).ranked
    assert [(r.doc, r.lanes["lexical"]["rank"]) for r in got][:1] == [(3, 1)]


def test_the_similarity_floor_turns_an_unrelated_query_into_no_results() -> None:
    import numpy as np

    from arkai.search import pipeline

    corpus = _toy()
    q = np.array([0.19, -0.98, 0.0], dtype=np.float32)  # best cosine 0.152 (d4), under 0.2
    q /= np.linalg.norm(q)
    got = pipeline.rank(corpus, "zzzqqq", query_vec=q, min_similarity=0.2)
    assert got.ranked == [] and got.found == {"lexical": 0, "vector": 0}
    assert got.best_similarity == pytest.approx(0.8 * q[0], abs=1e-6)
    # Above the hit floor but under the answer floor, with no word matched: nothing either.
    q2 = np.array([0.4, 0.0, 0.0], dtype=np.float32) + np.array([0, -0.9165, 0], np.float32)
    weak = pipeline.rank(corpus, "zzzqqq", query_vec=q2, min_similarity=0.2, answer_floor=0.4)
    assert weak.best_similarity == pytest.approx(0.32, abs=1e-3) and weak.ranked == []
    strong = pipeline.rank(corpus, "zzzqqq", query_vec=q2, answer_floor=0.3)
    assert [r.doc for r in strong.ranked] == [3]
    # Below the floor in the vector lane, a lexical match still counts.
    assert [r.doc for r in pipeline.rank(corpus, "sleep", query_vec=q).ranked] == [2]


def test_rrf_is_the_baseline_fusion() -> None:
    import numpy as np

    from arkai.search import pipeline

    q = np.array([0.6, 0.0, 0.8], dtype=np.float32)
    got = pipeline.rank(_toy(), "heart attack", query_vec=q, fusion="rrf").ranked
    assert [r.doc for r in got][:2] == [3, 0]  # both lanes rank d4 and d1 in their top two
    assert got[0].score == pytest.approx(1 / 62 + 1 / 61)


def test_hybrid_fuse_matches_convex_with_the_documented_defaults() -> None:
    from arkai.search import pipeline

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
    got = pipeline.fuse(lex, vec, lexical_scores=fill["lexical"], vector_scores=fill["vector"])
    assert got == want
    assert (pipeline.WEIGHTS, pipeline.NORMALISATION, pipeline.TOP_BONUS, pipeline.LANE_DEPTH) == (
        {"lexical": 0.5, "vector": 0.5},
        "zscore",
        (1.0,),
        100,
    )
    # Without fills, a missing candidate gets the lane's lowest normalised score.
    bare = {f.id: f for f in pipeline.fuse(lex, vec)}
    assert set(bare["d"].lanes) == {"vector"}
    assert bare["d"].score == pytest.approx(
        bare["d"].lanes["vector"][1] + 0.5 * min(normalise([5.0, 3.0, 1.0], "zscore"))
    )
