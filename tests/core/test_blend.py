"""Rerank blending and the feedback boost (:mod:`arkai.search.blend`)."""

from __future__ import annotations

import pytest

from arkai.search.blend import (
    FEEDBACK_CAP,
    FEEDBACK_STEP,
    RERANK_WEIGHT,
    blend_rerank,
    boost_feedback,
)
from arkai.search.pipeline import Ranked


def ranked(*scores: float) -> list[Ranked]:
    return [Ranked(n, s, {"lexical": {"rank": n + 1, "score": s, "contribution": s}})
            for n, s in enumerate(scores)]  # fmt: skip


def docs(rs: list[Ranked]) -> list[int]:
    return [r.doc for r in rs]


def test_rerank_reorders_only_the_top_and_never_below_the_rest() -> None:
    rs = ranked(3.0, 2.9, 1.0, 0.5)
    out = blend_rerank(rs, {0: 0.0, 1: 9.0, 2: 0.0}, top=3)
    assert docs(out) == [1, 0, 2, 3]
    # Blend: (1 - w) * fused + w * (lo + width * norm); doc 1 had fused 2.9, hook max → 3.0.
    new = (1 - RERANK_WEIGHT) * 2.9 + RERANK_WEIGHT * 3.0
    assert out[0].score == pytest.approx(new)
    assert min(r.score for r in out[:3]) >= out[3].score
    assert out[0].lanes["rerank"] == {"rank": 1, "score": 9.0,
                                      "contribution": pytest.approx(new - 2.9)}  # fmt: skip
    assert out[3].lanes.keys() == {"lexical"}


def test_unscored_candidate_counts_as_the_lowest() -> None:
    out = blend_rerank(ranked(3.0, 2.0, 1.0), {1: 5.0, 2: 1.0})
    assert docs(out) == [1, 0, 2]
    assert out[1].lanes["rerank"]["rank"] == 0


def test_equal_fused_scores_are_still_reordered() -> None:
    out = blend_rerank(ranked(1.0, 1.0), {0: 0.0, 1: 1.0})
    assert docs(out) == [1, 0]


def test_no_scores_no_change() -> None:
    rs = ranked(2.0, 1.0)
    assert blend_rerank(rs, {}) == rs


def test_feedback_boost_is_small_and_capped() -> None:
    rs = ranked(10.0, 9.9, 5.0, 0.0)
    out = boost_feedback(rs, {1: 1})
    assert docs(out) == [1, 0, 2, 3]
    step = pytest.approx(FEEDBACK_STEP * 10.0)
    assert out[0].lanes["feedback"] == {"rank": 0, "score": 1, "contribution": step}
    # However many votes: at most FEEDBACK_CAP steps of the score range.
    many = boost_feedback(rs, {3: 50})
    assert docs(many) == [0, 1, 2, 3]
    assert many[3].score == pytest.approx(FEEDBACK_STEP * FEEDBACK_CAP * 10.0)
    down = boost_feedback(rs, {0: -2})
    assert docs(down) == [1, 0, 2, 3]


def test_variant_lane_weights() -> None:
    from arkai.search.pipeline import variant_weights

    assert variant_weights(["lexical", "vector"]) == {"lexical": 0.5, "vector": 0.5}
    got = variant_weights(["lexical", "vector", "lexical:1", "lexical:2", "vector:1"])
    assert got == {"lexical": 0.5, "vector": 0.5, "lexical:1": 0.125, "lexical:2": 0.125,
                   "vector:1": 0.25}  # fmt: skip
    # All variants of a kind together: half of the original lane's weight.
    assert got["lexical:1"] + got["lexical:2"] == got["lexical"] / 2
