"""The belief replay: episodes in time order → beliefs and their change log (seed 002).

Pure and deterministic: the same episodes, vectors, decisions and parameters give the same
beliefs and changes, byte for byte once written. For each episode (a claim, in date order):

- its nearest beliefs are found among the earlier episodes' beliefs (exact cosine against each
  candidate belief's vector, candidates from a blocked top-k search over earlier episodes);
- the nearest active belief above ``reinforce`` (0.85) is **reinforced** — base confidence
  ``c ← c + (1 − c) · reinforce_step``, decay timer reset to the episode's date, episode linked —
  unless the contradiction check finds a conflict (a negated near-copy is not a reinforcement);
- else each active belief between ``contradict`` (0.70) and ``reinforce`` is checked, nearest
  first; the first **conflict** invalidates it and the episode creates its replacement;
- else the episode **creates** a belief at ``new_confidence`` (0.6).

People decide through :class:`Decisions`: a forgotten belief is created as ``forgotten`` and
absorbs what would reinforce it (so forgetting sticks); a pinned belief never decays, is never
pruned and is never invalidated (a conflict is logged as ``conflict``); a prune decision prunes.
After all episodes, beliefs a person decided to prune are **pruned** (with ``auto_prune``, also
every active one whose effective confidence at the last episode's date is below ``prune_floor``
— off by default: a library of talks spans years, and an old fact is not wrong for being old),
and groups of similar active facts from ≥ 2 items become
**insights** (the group's most confident statement; its episodes are the union).

Resumable: the result carries a :class:`ReplayLog` — each episode's fingerprint, what it did
(its :data:`Action`) and its candidates. Given the log of an earlier replay with the same
parameters, decisions and check, :func:`replay` re-applies the recorded actions of the episodes
before the first changed one (rounded down to the start of its candidate block, so every
similarity it reuses was computed over the same rows) and replays only from there: episode *i*'s
outcome depends only on episodes ``< i``, so the result is the same as a replay from scratch.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import date, datetime
from typing import Any

import numpy as np
import numpy.typing as npt

from arkai.core.hashing import sha256_hex
from arkai.memory.contradict import Conflict
from arkai.model.belief import (
    ACTIVE,
    FACT,
    FORGOTTEN,
    INSIGHT,
    INVALIDATED,
    PRUNED,
    Belief,
    Change,
    Episode,
)

F32 = npt.NDArray[np.float32]
Checker = Callable[[str, str], Conflict | None]
#: Earlier episodes considered per episode (the candidate beliefs are theirs).
CANDIDATES = 32
#: Similarity cells computed at once (rows × earlier rows): 2^23 float32 = 32 MB, and the
#: block's ranking (int64) 64 MB — a block of 2^25 cells peaked at ≈ 550 MB (issue 17).
BLOCK_CELLS = 1 << 23


@dataclass(frozen=True, slots=True)
class ReplayParams:
    reinforce: float = 0.85
    contradict: float = 0.70
    new_confidence: float = 0.6
    reinforce_step: float = 0.2
    half_life_days: float = 30.0
    prune_floor: float = 0.05
    auto_prune: bool = False
    top_k: int = 5
    insight_similarity: float = 0.8
    insight_min_items: int = 2

    @classmethod
    def from_params(cls, p: dict[str, Any]) -> ReplayParams:
        known = {k: p[k] for k in cls.__slots__ if k in p}  # provider/model: ops.memory
        out = cls(**known)
        if not 0 < out.contradict <= out.reinforce <= 1:
            raise ValueError("memory: need 0 < contradict ≤ reinforce ≤ 1")
        if out.half_life_days <= 0:
            raise ValueError("memory.half_life_days must be > 0")
        return out


@dataclass(frozen=True, slots=True)
class Decisions:
    """A person's decisions (``memory/decisions.yaml``): belief ID → note."""

    forget: dict[str, str] = field(default_factory=dict)
    pin: dict[str, str] = field(default_factory=dict)
    prune: dict[str, str] = field(default_factory=dict)


#: What one episode did: ``("c",)`` created a belief; ``("r", belief, similarity)`` reinforced
#: it; ``("l", belief)`` was absorbed by a forgotten one; ``("x", belief, similarity, note)``
#: created a belief that conflicts with ``belief``.
Action = tuple[Any, ...]


@dataclass(frozen=True, slots=True)
class ReplayLog:
    """What a replay did per episode, so a later one can resume at the first changed episode."""

    fingerprints: list[str]
    actions: list[Action]
    cands: list[list[int]]
    block: int
    """The candidate search's block height (resuming needs the same blocks)."""


@dataclass(frozen=True, slots=True)
class ReplayResult:
    beliefs: list[Belief]
    changes: list[Change]
    vectors: F32
    """One row per belief (the vector of the statement it holds), in ``beliefs`` order."""
    as_of: str | None
    log: ReplayLog | None = None
    resumed_at: int = 0
    """Episodes whose recorded outcome was re-applied instead of replayed."""


def fingerprint(ep: Episode) -> str:
    """Everything of an episode the replay reads (its vector follows from the statement)."""
    fields = (ep.id, ep.statement, ep.date, ep.item or "", str(ep.position), ep.kind)
    return sha256_hex("\0".join(fields).encode("utf-8"))[:32]


def belief_id(kind: str, seed: str) -> str:
    return sha256_hex(f"belief\0{kind}\0{seed}".encode())[:16]


def to_date(text: str) -> date:
    try:
        return date.fromisoformat(text[:10])
    except ValueError:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).date()


def effective_confidence(b: Belief, as_of: date, half_life_days: float) -> float:
    """Base confidence decayed with the half-life from the last reinforcement (pinned: none)."""
    if b.pinned:
        return b.confidence
    days = max(0, (as_of - to_date(b.reinforced)).days)
    return b.confidence * math.pow(0.5, days / half_life_days)


def block_rows(n: int) -> int:
    """Rows per candidate block: a power of two (so it changes rarely as ``n`` grows)."""
    rows = max(1, min(1024, BLOCK_CELLS // max(1, n)))
    return 1 << (rows.bit_length() - 1)


def block_start(p: int, block: int) -> int:
    """The first row of the candidate block holding row ``p`` (blocks start at row 1)."""
    return 0 if p <= 0 else 1 + (p - 1) // block * block


def _candidates(vectors: F32, k: int, start: int = 0) -> list[list[int]]:
    """For each row from ``start`` (a block start), up to ``k`` earlier rows by descending
    similarity (blocked matmul); rows before ``start`` are left empty."""
    n = len(vectors)
    out: list[list[int]] = [[] for _ in range(n)]
    block = block_rows(n)
    for lo in range(1, n, block):
        if lo < start:
            continue
        hi = min(n, lo + block)
        sims = vectors[lo:hi] @ vectors[:hi].T
        rows = np.arange(lo, hi)
        mask = np.arange(hi)[None, :] >= rows[:, None]
        sims[mask] = -np.inf
        del mask
        np.negative(sims, out=sims)  # in place: no second block in memory
        kk = min(k, hi - 1)
        part = np.argpartition(sims, kk - 1, axis=1)[:, :kk] if kk < hi else np.argsort(sims)
        for r, row in enumerate(part):
            i = lo + r
            cand = [int(j) for j in row if j < i]
            cand.sort(key=lambda j: (float(sims[r, j]), j))
            out[i] = cand
    return out


class _State:
    def __init__(self, params: ReplayParams, decisions: Decisions, check: Checker) -> None:
        self.p = params
        self.d = decisions
        self.check = check
        self.beliefs: dict[str, Belief] = {}
        self.order: list[str] = []
        self.vec_row: dict[str, int] = {}
        """Belief → the episode row whose vector it holds."""
        self.of_episode: dict[int, str] = {}
        self.changes: list[Change] = []

    def log(self, kind: str, belief: str, day: str, **kw: Any) -> None:
        self.changes.append(Change(len(self.changes) + 1, kind, belief, day, **kw))

    def create(self, i: int, ep: Episode, kind: str = FACT, seed: str | None = None) -> Belief:
        bid = belief_id(kind, seed or ep.id)
        b = Belief(
            id=bid, statement=ep.statement, type=kind, confidence=self.p.new_confidence,
            status=ACTIVE, created=ep.date, reinforced=ep.date, episodes=(ep.id,),
            items=(ep.item,) if ep.item else (), pinned=bid in self.d.pin,
        )  # fmt: skip
        self.beliefs[bid] = b
        self.order.append(bid)
        self.vec_row[bid] = i
        self.of_episode[i] = bid
        self.log("create", bid, ep.date, episode=ep.id, confidence=b.confidence)
        if b.pinned:
            self.log("pin", bid, ep.date, note=self.d.pin[bid] or None)
        if bid in self.d.forget:
            self.beliefs[bid] = replace(b, status=FORGOTTEN)
            self.log("forget", bid, ep.date, note=self.d.forget[bid] or None)
        return self.beliefs[bid]

    def link(self, b: Belief, i: int, ep: Episode) -> Belief:
        items = b.items if not ep.item or ep.item in b.items else (*b.items, ep.item)
        new = replace(b, episodes=(*b.episodes, ep.id), items=items)
        self.beliefs[b.id] = new
        self.of_episode[i] = b.id
        return new

    def reinforce(self, b: Belief, i: int, ep: Episode, sim: float) -> None:
        c = round(b.confidence + (1 - b.confidence) * self.p.reinforce_step, 6)
        new = replace(self.link(b, i, ep), confidence=c, reinforced=max(b.reinforced, ep.date))
        self.beliefs[b.id] = new
        self.log("reinforce", b.id, ep.date, episode=ep.id, confidence=c, similarity=sim)


def replay(
    episodes: Sequence[Episode],
    vectors: F32,
    *,
    params: ReplayParams,
    decisions: Decisions,
    check: Checker,
    resume: ReplayLog | None = None,
) -> ReplayResult:
    """Replay ``episodes`` (already in time order; ``vectors`` L2-normalised rows). With
    ``resume`` — the log of a replay with the same parameters, decisions and check — the
    episodes before the first changed one take their recorded outcome."""
    st = _State(params, decisions, check)
    fps = [fingerprint(ep) for ep in episodes]
    block = block_rows(len(episodes))
    start = 0
    if resume is not None and resume.block == block:
        same = 0
        for a, b in zip(resume.fingerprints, fps, strict=False):
            if a != b:
                break
            same += 1
        full = same == len(fps) == len(resume.fingerprints)
        start = len(fps) if full else block_start(same, block)
        start = min(start, len(resume.actions), len(resume.cands))
    cands = _candidates(vectors, CANDIDATES, start)
    actions: list[Action] = []
    if resume is not None and start:
        cands[:start] = resume.cands[:start]
        for i in range(start):
            _apply(st, i, episodes[i], resume.actions[i])
            actions.append(resume.actions[i])
    for i in range(start, len(episodes)):
        action = _decide(st, i, episodes[i], vectors, cands[i])
        _apply(st, i, episodes[i], action)
        actions.append(action)
    as_of = max((ep.date for ep in episodes), default=None)
    if as_of is not None:
        _prune(st, to_date(as_of), as_of)
        _insights(st, episodes, vectors, cands, as_of)
    rows = [st.vec_row[b] for b in st.order]
    dim = vectors.shape[1] if vectors.ndim == 2 else 0
    vecs = vectors[rows] if rows else np.zeros((0, dim), dtype=np.float32)
    log = ReplayLog(fps, actions, cands, block)
    return ReplayResult([st.beliefs[b] for b in st.order], st.changes, vecs, as_of, log, start)


def _decide(st: _State, i: int, ep: Episode, vectors: F32, cands: list[int]) -> Action:
    """What episode ``i`` does, given the beliefs of the episodes before it."""
    params, check = st.p, st.check
    scored: dict[str, float] = {}
    for j in cands:
        bid = st.of_episode.get(j)
        if bid is not None and bid not in scored:
            scored[bid] = round(float(vectors[i] @ vectors[st.vec_row[bid]]), 6)
    ranked = sorted(scored.items(), key=lambda kv: (-kv[1], kv[0]))
    forgotten = [(b, s) for b, s in ranked if st.beliefs[b].status == FORGOTTEN]
    active = [(b, s) for b, s in ranked if st.beliefs[b].status == ACTIVE][: params.top_k]
    if active and active[0][1] > params.reinforce:
        best, sim = active[0]
        if check(st.beliefs[best].statement, ep.statement) is None:
            return ("r", best, sim)
    if (
        forgotten
        and forgotten[0][1] > params.reinforce
        and (not active or forgotten[0][1] >= active[0][1])
    ):
        return ("l", forgotten[0][0])
    for bid, sim in active:
        if sim < params.contradict:
            break
        conflict = check(st.beliefs[bid].statement, ep.statement)
        if conflict is not None:
            return ("x", bid, sim, f"{conflict.rule}: {conflict.detail}")
    return ("c",)


def _apply(st: _State, i: int, ep: Episode, action: Action) -> None:
    """Carry out what :func:`_decide` chose (or a log recorded) for episode ``i``."""
    kind = action[0]
    if kind == "r":
        st.reinforce(st.beliefs[action[1]], i, ep, action[2])
    elif kind == "l":
        st.link(st.beliefs[action[1]], i, ep)
    elif kind == "c":
        st.create(i, ep, ep.kind)
    elif kind == "x":
        bid, sim, note = action[1], action[2], action[3]
        old = st.beliefs[bid]
        new = st.create(i, ep, ep.kind)
        if old.pinned:
            st.log("conflict", bid, ep.date, episode=ep.id, other=new.id, similarity=sim,
                   note=note + " (pinned: kept)")  # fmt: skip
        else:
            st.beliefs[bid] = replace(
                old, status=INVALIDATED, contradicted_by=(*old.contradicted_by, ep.id),
                replaced_by=new.id,
            )  # fmt: skip
            st.log("contradict", bid, ep.date, episode=ep.id, other=new.id, similarity=sim,
                   note=note)  # fmt: skip
    else:
        raise ValueError(f"unknown replay action {kind!r}")


def _prune(st: _State, today: date, day: str) -> None:
    for bid in st.order:
        b = st.beliefs[bid]
        if b.status != ACTIVE or b.pinned:
            continue
        eff = effective_confidence(b, today, st.p.half_life_days)
        if bid in st.d.prune or (st.p.auto_prune and eff < st.p.prune_floor):
            st.beliefs[bid] = replace(b, status=PRUNED)
            why = st.d.prune.get(bid) or (
                "decided by a person" if bid in st.d.prune else f"effective confidence {eff:.3f}"
            )
            st.log("prune", bid, day, confidence=round(eff, 6), note=why)


def _insights(
    st: _State, episodes: Sequence[Episode], vectors: F32, cands: list[list[int]], day: str
) -> None:
    facts = {st.vec_row[b]: b for b in st.order
             if st.beliefs[b].status == ACTIVE and st.beliefs[b].type == FACT}  # fmt: skip
    parent = {r: r for r in facts}

    def find(r: int) -> int:
        while parent[r] != r:
            parent[r] = parent[parent[r]]
            r = parent[r]
        return r

    for i in sorted(facts):
        for j in cands[i]:
            if j in facts and float(vectors[i] @ vectors[j]) >= st.p.insight_similarity:
                a, b = find(i), find(j)
                if a != b:
                    parent[max(a, b)] = min(a, b)
    groups: dict[int, list[str]] = {}
    for r in sorted(facts):
        groups.setdefault(find(r), []).append(facts[r])
    for members in groups.values():
        beliefs = [st.beliefs[m] for m in members]
        items = sorted({i for b in beliefs for i in b.items})
        if len(members) < 2 or len(items) < st.p.insight_min_items:
            continue
        lead = sorted(beliefs, key=lambda b: (-b.confidence, -len(b.episodes), b.created, b.id))[0]
        bid = belief_id(INSIGHT, "\0".join(sorted(members)))
        eps = tuple(dict.fromkeys(e for b in sorted(beliefs, key=lambda b: b.created)
                                  for e in b.episodes))  # fmt: skip
        conf = round(sum(b.confidence for b in beliefs) / len(beliefs), 6)
        ins = Belief(
            id=bid, statement=lead.statement, type=INSIGHT, confidence=conf, status=ACTIVE,
            created=max(b.created for b in beliefs), reinforced=max(b.reinforced for b in beliefs),
            episodes=eps, items=tuple(items), pinned=bid in st.d.pin,
        )  # fmt: skip
        if bid in st.d.forget:
            ins = replace(ins, status=FORGOTTEN)
        st.beliefs[bid] = ins
        st.order.append(bid)
        st.vec_row[bid] = st.vec_row[lead.id]
        st.log("create", bid, ins.created, confidence=conf,
               note=f"insight: {len(members)} beliefs from {len(items)} items")  # fmt: skip
        if bid in st.d.forget:
            st.log("forget", bid, day, note=st.d.forget[bid] or None)
