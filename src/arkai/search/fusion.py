"""Fusing ranked lanes into one ranking (DESIGN §7).

Two fusers, both returning :class:`Fused` records that say, per lane, at which rank the
item was found and how much that lane contributed to its score (for ``--explain``):

- :func:`rrf` — Reciprocal Rank Fusion. An item at 1-based rank ``r`` in lane ``L`` gets
  ``weight[L] * (1 / (k + r) + bonus(r))`` where ``bonus(r) = top_bonus[r - 1]`` for the
  first ``len(top_bonus)`` ranks and 0 after. Only ranks matter, so lanes with
  incomparable scores fuse safely.
- :func:`convex` — score fusion. Each lane's raw scores are normalised (``"minmax"``: to
  [0, 1]; ``"zscore"``: mean 0, sd 1) and an item gets ``sum weight[L] * (normalised score
  + bonus(rank))``. An item a lane did not return is either scored by that lane on request
  (``fill``: the lane is then normalised over every candidate) or given a fixed
  ``missing`` value.

Ordering is total and deterministic: score descending, then id ascending.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

__all__ = ["DEFAULT_K", "DEFAULT_TOP_BONUS", "Fused", "ScoreFn", "convex", "normalise", "rrf"]

DEFAULT_K = 60
DEFAULT_TOP_BONUS: tuple[float, ...] = (0.05, 0.02, 0.02)
"""The design's top-rank bonus: +0.05 for rank 1, +0.02 for ranks 2 and 3, per lane."""


ScoreFn = Callable[[Sequence[str]], Sequence[float]]
"""Raw scores in one lane for the given ids (used by :func:`convex` to fill gaps)."""


@dataclass(frozen=True)
class Fused:
    """One fused result: ``lanes[name] = (1-based rank in that lane, contribution)``."""

    id: str
    score: float
    lanes: dict[str, tuple[int, float]] = field(default_factory=dict)


def _ordered(acc: dict[str, float], lanes: dict[str, dict[str, tuple[int, float]]]) -> list[Fused]:
    items = sorted(acc.items(), key=lambda kv: (-kv[1], kv[0]))
    return [Fused(i, s, lanes[i]) for i, s in items]


def _weight(weights: Mapping[str, float] | None, lane: str) -> float:
    if weights is None:
        return 1.0
    w = weights.get(lane, 1.0)
    if not math.isfinite(w) or w < 0:
        raise ValueError(f"lane weight for {lane!r} must be a finite number >= 0, got {w}")
    return w


def rrf(
    rankings: Mapping[str, Sequence[str]],
    *,
    k: float = DEFAULT_K,
    top_bonus: Sequence[float] = DEFAULT_TOP_BONUS,
    weights: Mapping[str, float] | None = None,
) -> list[Fused]:
    """Reciprocal Rank Fusion of ``rankings`` (lane name → ids, best first).

    A repeated id within one lane counts once, at its first rank. ``weights`` defaults to 1
    for every lane; pass ``top_bonus=()`` for plain RRF.
    """
    if k < 0:
        raise ValueError(f"RRF k must be >= 0, got {k}")
    acc: dict[str, float] = {}
    lanes: dict[str, dict[str, tuple[int, float]]] = {}
    for lane, ids in rankings.items():
        w = _weight(weights, lane)
        seen: set[str] = set()
        rank = 0
        for item in ids:
            if item in seen:
                continue
            seen.add(item)
            rank += 1
            bonus = top_bonus[rank - 1] if rank <= len(top_bonus) else 0.0
            c = w * (1.0 / (k + rank) + bonus)
            acc[item] = acc.get(item, 0.0) + c
            lanes.setdefault(item, {})[lane] = (rank, c)
    return _ordered(acc, lanes)


def normalise(scores: Sequence[float], method: str = "minmax") -> list[float]:
    """Normalise one lane's scores: ``minmax`` to [0, 1] (all equal → 1), ``zscore``
    to mean 0, sd 1 (all equal → 0)."""
    if not scores:
        return []
    if method == "minmax":
        lo, hi = min(scores), max(scores)
        if hi - lo <= 0:
            return [1.0] * len(scores)
        return [(s - lo) / (hi - lo) for s in scores]
    if method == "zscore":
        n = len(scores)
        mean = sum(scores) / n
        sd = math.sqrt(sum((s - mean) ** 2 for s in scores) / n)
        if sd <= 0:
            return [0.0] * n
        return [(s - mean) / sd for s in scores]
    raise ValueError(f"unknown normalisation {method!r} (minmax or zscore)")


def convex(
    lanes: Mapping[str, Sequence[tuple[str, float]]],
    *,
    weights: Mapping[str, float] | None = None,
    method: str = "minmax",
    missing: Mapping[str, float] | float = 0.0,
    fill: Mapping[str, ScoreFn] | None = None,
    top_bonus: Sequence[float] = (),
) -> list[Fused]:
    """Score fusion of ``lanes`` (lane name → (id, raw score) pairs, best first).

    For each lane the raw scores are normalised with :func:`normalise`, and an item's score
    is ``sum weight[L] * (normalised score + bonus(rank))`` over lanes, ``bonus`` as in
    :func:`rrf`. An item a lane did not return is handled in one of two ways:

    - ``fill[L]`` given: it is called once with the ids lane ``L`` lacks and returns their
      raw scores in that lane; lane ``L`` is then normalised over *all* candidates, and the
      item's explanation for ``L`` has rank 0 ("scored, not retrieved").
    - otherwise the lane is normalised over its own list and the item gets
      ``weight * missing[L]`` (no entry for ``L`` in its explanation).

    A repeated id within one lane counts once, at its first (best) position.
    """
    fills = fill or {}
    order: list[str] = []
    seen_all: set[str] = set()
    firsts: dict[str, list[tuple[str, float]]] = {}
    for lane, pairs in lanes.items():
        first: list[tuple[str, float]] = []
        seen: set[str] = set()
        for item, s in pairs:
            if item not in seen:
                seen.add(item)
                first.append((item, float(s)))
                if item not in seen_all:
                    seen_all.add(item)
                    order.append(item)
        firsts[lane] = first
    acc: dict[str, float] = dict.fromkeys(order, 0.0)
    explain: dict[str, dict[str, tuple[int, float]]] = {item: {} for item in order}
    for lane, first in firsts.items():
        w = _weight(weights, lane)
        ranked = [item for item, _ in first]
        raw = [s for _, s in first]
        rank_of = {item: r for r, item in enumerate(ranked, 1)}
        filler = fills.get(lane)
        if filler is not None:
            absent = [item for item in order if item not in rank_of]
            extra = [float(x) for x in filler(absent)] if absent else []
            if len(extra) != len(absent):
                raise ValueError(f"fill for lane {lane!r} returned {len(extra)} scores "
                                 f"for {len(absent)} ids")  # fmt: skip
            ranked, raw = ranked + absent, raw + extra
        normed = normalise(raw, method)
        for item, n in zip(ranked, normed, strict=True):
            rank = rank_of.get(item, 0)
            bonus = top_bonus[rank - 1] if 0 < rank <= len(top_bonus) else 0.0
            c = w * (n + bonus)
            acc[item] += c
            explain[item][lane] = (rank, c)
        if filler is None:
            fill_value = missing.get(lane, 0.0) if isinstance(missing, Mapping) else missing
            for item in order:
                if item not in rank_of:
                    acc[item] += w * fill_value
    return _ordered(acc, explain)
