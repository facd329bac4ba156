"""After fusion: a rerank hook's scores blended in, then feedback votes as a bounded boost
(seed 003, "Reranking" and "Position-aware blending"; docs/agents.md).

Both take the fused ranking (:class:`arkai.search.pipeline.Ranked`, best first) and return a new
one, each document's ``lanes`` extended with a pseudo-lane (``rerank`` / ``feedback``) so that
``--explain`` shows what moved it.

**Rerank** (:func:`blend_rerank`). Only the first :data:`RERANK_TOP` documents are reranked; the
rest keep their places below them. The hook's scores (any scale) are min-max normalised over the
reranked documents and mapped onto the fused scores' range ``[lo, hi]`` of those documents; a
document's new score is ``(1 - RERANK_WEIGHT) * fused + RERANK_WEIGHT * mapped`` with
:data:`RERANK_WEIGHT` ``= 0.5``. A document the hook gave no score counts as its lowest score. So
the reranker can reorder the top documents but never push one below a document that was not
reranked, and an equal fused score is not enough to resist a clearly better rerank score.

**Feedback** (:func:`boost_feedback`). ``net`` = up votes minus down votes for the document's item
under this query. The score moves by ``FEEDBACK_STEP * clamp(net, ±FEEDBACK_CAP) * spread``,
where ``spread`` is the range of the ranked scores (1 when they are all equal): each net vote is
worth 5% of the range, and no item moves by more than 15% of it however many votes it has. A
small boost reorders near-ties; it cannot lift an item from the bottom to the top.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from arkai.search.pipeline import Ranked

__all__ = [
    "FEEDBACK_CAP",
    "FEEDBACK_STEP",
    "RERANK_TOP",
    "RERANK_WEIGHT",
    "blend_rerank",
    "boost_feedback",
]

RERANK_TOP = 20
RERANK_WEIGHT = 0.5
FEEDBACK_STEP = 0.05
FEEDBACK_CAP = 3


def _spread(scores: Sequence[float]) -> float:
    if not scores:
        return 1.0
    width = max(scores) - min(scores)
    return width if width > 0 else 1.0


def _with(r: Ranked, score: float, lane: str, detail: dict[str, float | int]) -> Ranked:
    return Ranked(r.doc, score, {**r.lanes, lane: detail})


def blend_rerank(
    ranked: Sequence[Ranked], scores: Mapping[int, float], *, top: int = RERANK_TOP
) -> list[Ranked]:
    """``ranked`` with its first ``top`` documents reordered by blending ``scores`` (document →
    the hook's score) into their fused scores (module doc). No scores: unchanged."""
    head, tail = list(ranked[:top]), list(ranked[top:])
    if not head or not scores:
        return list(ranked)
    given = [scores[r.doc] for r in head if r.doc in scores]
    floor = min(given)
    hook = [scores.get(r.doc, floor) for r in head]
    h_lo, h_span = floor, max(given) - floor
    fused = [r.score for r in head]
    lo = min(fused)
    width = max(fused) - lo
    width = width if width > 0 else 1.0
    by_hook = sorted(range(len(head)), key=lambda n: (-hook[n], n))
    hook_rank = {n: place for place, n in enumerate(by_hook, 1)}
    out = []
    for n, r in enumerate(head):
        norm = (hook[n] - h_lo) / h_span if h_span > 0 else 1.0
        mapped = lo + width * norm
        new = (1 - RERANK_WEIGHT) * r.score + RERANK_WEIGHT * mapped
        detail: dict[str, float | int] = {
            "rank": hook_rank[n] if r.doc in scores else 0,
            "score": hook[n],
            "contribution": new - r.score,
        }
        out.append((new, n, _with(r, new, "rerank", detail)))
    out.sort(key=lambda t: (-t[0], t[1]))
    return [r for _, _, r in out] + tail


def boost_feedback(ranked: Sequence[Ranked], net: Mapping[int, int]) -> list[Ranked]:
    """``ranked`` with each document in ``net`` (document → net votes of its item) moved by the
    bounded feedback boost (module doc), re-sorted (ties keep their order)."""
    if not net or not ranked:
        return list(ranked)
    spread = _spread([r.score for r in ranked])
    out = []
    for n, r in enumerate(ranked):
        votes = net.get(r.doc, 0)
        if votes == 0:
            out.append((r.score, n, r))
            continue
        boost = FEEDBACK_STEP * max(-FEEDBACK_CAP, min(FEEDBACK_CAP, votes)) * spread
        detail: dict[str, float | int] = {"rank": 0, "score": votes, "contribution": boost}
        out.append((r.score + boost, n, _with(r, r.score + boost, "feedback", detail)))
    out.sort(key=lambda t: (-t[0], t[1]))
    return [r for _, _, r in out]
