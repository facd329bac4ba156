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
(its :data:`Action`), the belief it joined, and its candidates. Given the log of an earlier
replay with the same parameters, decisions and check, :func:`replay` decides afresh only the
episodes whose outcome can differ: the changed ones, and a later one only when its candidates
change (a changed episode is nearer to it than its weakest candidate, or a removed one was among
them) or when one of its candidates' beliefs was made, unmade or invalidated differently. Every
other episode takes its recorded outcome, so the result equals a replay from scratch. That rests
on candidates being a function of the vectors alone, not of how the search is blocked: they are
ranked by similarity on an exact integer grid (:func:`grid`), ties broken by the earlier row.
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
#: Similarity cells computed at once (rows × earlier rows): 2^23 float32 = 32 MB and its
#: partitioned copy — a block of 2^25 cells with an int64 ranking peaked at ≈ 550 MB (issue 17).
BLOCK_CELLS = 1 << 23
#: The exact grid: a unit vector's components times 2^20, rounded. A product of two is below
#: 2^40 and a dot product of up to 4,096 of them below 2^52, so float64 arithmetic on the grid
#: is exact in any order: the same pair gives the same number in any block, on any BLAS.
GRID = float(1 << 20)
MAX_DIM = 4096
#: Exact-grid pairs gathered at once (each pair 2 × dim float64).
PAIR_CHUNK = 1 << 13


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
    """What a replay did per episode, so a later one decides afresh only what can differ."""

    fingerprints: list[str]
    actions: list[Action]
    owners: list[str]
    """The belief each episode joined: created, reinforced, or was absorbed by."""
    cands: list[list[int]]
    kth: list[int]
    """The weakest candidate's similarity on the exact grid (0 for fewer than ``CANDIDATES``)."""


@dataclass(frozen=True, slots=True)
class ReplayResult:
    beliefs: list[Belief]
    changes: list[Change]
    vectors: F32
    """One row per belief (the vector of the statement it holds), in ``beliefs`` order."""
    as_of: str | None
    log: ReplayLog | None = None
    resumed_at: int = 0
    """Episodes before the first changed one (their recorded outcome re-applied unchecked)."""
    decided: int = 0
    """Episodes decided afresh (the others took their recorded outcome)."""


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


def grid(vectors: F32) -> npt.NDArray[np.float64]:
    """``vectors`` (L2-normalised rows) on the exact grid: integers held as float64."""
    if vectors.ndim == 2 and vectors.shape[1] > MAX_DIM:
        raise ValueError(f"belief vectors of {vectors.shape[1]} dimensions (at most {MAX_DIM})")
    return np.rint(vectors.astype(np.float64) * GRID)


def _margin(dim: int) -> float:
    """Twice the most a float32 cosine of two unit vectors can differ from the exact grid's
    (rounding in a ``dim``-term float32 sum, plus each component's rounding to the grid)."""
    float32 = dim * 2.0**-23
    rounding = (math.sqrt(dim) + dim / (4 * GRID)) / GRID
    return 2 * (float32 + rounding)


def _candidates(vectors: F32, k: int, rows: Sequence[int]) -> dict[int, tuple[list[int], int]]:
    """For each of ``rows``: up to ``k`` earlier rows, the most similar on the exact grid first
    (ties: the earlier row), and the last one's exact similarity (0 when fewer than ``k``).

    A blocked float32 matmul finds, per row, every earlier row within :func:`_margin` of its
    ``k``-th best; only those are ranked on the grid, so the result does not depend on the
    block height or the BLAS."""
    out: dict[int, tuple[list[int], int]] = {}
    todo = sorted({int(r) for r in rows if r > 0})
    for r in rows:
        if r == 0:
            out[0] = ([], 0)
    if not todo:
        return out
    eps = _margin(vectors.shape[1])
    a = 0
    while a < len(todo):
        b = a + 1
        while b < len(todo) and (b + 1 - a) * todo[b] <= BLOCK_CELLS:
            b += 1
        idx = np.asarray(todo[a:b])
        hi = int(idx[-1])
        sims = vectors[idx] @ vectors[:hi].T
        later = np.arange(hi)[None, :] >= idx[:, None]
        sims[later] = -np.inf
        if hi > k:
            floor = -np.partition(-sims, k - 1, axis=1)[:, k - 1] - eps
            pool = (sims >= floor[:, None]) & ~later
        else:
            pool = ~later
        del sims, later
        rr, jj = np.nonzero(pool)
        del pool
        exact = np.empty(len(rr), dtype=np.float64)
        for lo in range(0, len(rr), PAIR_CHUNK):
            part = slice(lo, lo + PAIR_CHUNK)
            left = grid(vectors[idx[rr[part]]])
            exact[part] = np.einsum("ij,ij->i", left, grid(vectors[jj[part]]))
        order = np.lexsort((jj, -exact, rr))
        starts = np.searchsorted(rr[order], np.arange(len(idx) + 1))
        for r, i in enumerate(idx):
            top = order[starts[r] : starts[r + 1]][:k]
            cand = [int(j) for j in jj[top]]
            out[int(i)] = (cand, int(exact[top[-1]]) if len(cand) == k else 0)
        a = b
    return out


class _State:
    def __init__(self, params: ReplayParams, decisions: Decisions, check: Checker) -> None:
        self.p = params
        self.d = decisions
        self.check = check
        self.beliefs: dict[str, Belief] = {}
        """During the episodes a belief's ``episodes`` and ``items`` are kept in ``members`` and
        ``sources`` (appending to a tuple per link was quadratic); :meth:`finish` writes them."""
        self.order: list[str] = []
        self.vec_row: dict[str, int] = {}
        """Belief → the episode row whose vector it holds."""
        self.of_episode: dict[int, str] = {}
        self.rows_of: dict[str, list[int]] = {}
        self.members: dict[str, list[str]] = {}
        self.sources: dict[str, dict[str, None]] = {}
        self.changes: list[Change] = []

    def log(self, kind: str, belief: str, day: str, **kw: Any) -> None:
        self.changes.append(Change(len(self.changes) + 1, kind, belief, day, **kw))

    def _join(self, bid: str, i: int, ep: Episode) -> None:
        self.of_episode[i] = bid
        self.rows_of.setdefault(bid, []).append(i)
        self.members.setdefault(bid, []).append(ep.id)
        if ep.item:
            self.sources.setdefault(bid, {})[ep.item] = None

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
        self.members[bid], self.sources[bid] = [], {}
        self._join(bid, i, ep)
        self.log("create", bid, ep.date, episode=ep.id, confidence=b.confidence)
        if b.pinned:
            self.log("pin", bid, ep.date, note=self.d.pin[bid] or None)
        if bid in self.d.forget:
            self.beliefs[bid] = replace(b, status=FORGOTTEN)
            self.log("forget", bid, ep.date, note=self.d.forget[bid] or None)
        return self.beliefs[bid]

    def link(self, b: Belief, i: int, ep: Episode) -> None:
        self._join(b.id, i, ep)

    def reinforce(self, b: Belief, i: int, ep: Episode, sim: float) -> None:
        self._join(b.id, i, ep)
        c = round(b.confidence + (1 - b.confidence) * self.p.reinforce_step, 6)
        self.beliefs[b.id] = replace(b, confidence=c, reinforced=max(b.reinforced, ep.date))
        self.log("reinforce", b.id, ep.date, episode=ep.id, confidence=c, similarity=sim)

    def finish(self) -> None:
        """Write each belief's episodes and items (after the last episode)."""
        for bid, eps in self.members.items():
            b = self.beliefs[bid]
            self.beliefs[bid] = replace(b, episodes=tuple(eps), items=tuple(self.sources[bid]))


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
    ``resume`` — the log of a replay with the same parameters, decisions and check — only the
    episodes whose outcome can differ are decided afresh (:class:`_Resume`)."""
    st = _State(params, decisions, check)
    fps = [fingerprint(ep) for ep in episodes]
    n = len(episodes)
    cands: list[list[int]] = [[] for _ in range(n)]
    kth = [0] * n
    old = _Resume.plan(resume, fps, vectors) if resume is not None else None
    todo = old.reuse_candidates(cands, kth) if old is not None else range(n)
    for i, (cand, weakest) in _candidates(vectors, CANDIDATES, todo).items():
        cands[i], kth[i] = cand, weakest
    actions: list[Action] = []
    decided = 0
    for i in range(n):
        action = old.recorded(st, i, cands[i]) if old is not None else None
        if action is None:
            action = _decide(st, i, episodes[i], vectors, cands[i])
            decided += 1
        _apply(st, i, episodes[i], action)
        actions.append(action)
        if old is not None:
            old.settle(st, i, action)
    st.finish()
    as_of = max((ep.date for ep in episodes), default=None)
    if as_of is not None:
        _prune(st, to_date(as_of), as_of)
        _insights(st, episodes, vectors, cands, as_of)
    rows = [st.vec_row[b] for b in st.order]
    dim = vectors.shape[1] if vectors.ndim == 2 else 0
    vecs = vectors[rows] if rows else np.zeros((0, dim), dtype=np.float32)
    owners = [st.of_episode[i] for i in range(n)]
    log = ReplayLog(fps, actions, owners, cands, kth)
    first = old.first if old is not None else 0
    beliefs = [st.beliefs[b] for b in st.order]
    return ReplayResult(beliefs, st.changes, vecs, as_of, log, first, decided)


def _made(action: Action, owner: str) -> set[str]:
    """The beliefs an action creates or invalidates (what a later decision reads of a belief —
    whether it exists, its status, statement and vector — changes only through these)."""
    kind = action[0]
    if kind == "c":
        return {owner}
    if kind == "x":
        return {owner, str(action[1])}
    return set()


class _Resume:
    """An earlier replay's log matched to the episodes now, row by row.

    Episode ``i``'s decision reads only its candidate rows, which belief each of them joined,
    and those beliefs' existence, status, statement and vector. So a kept episode takes its
    recorded outcome when its candidates are the recorded ones (mapped to the new rows) and no
    candidate row is marked: a row is marked when it joined a different belief than recorded,
    or joined a belief that was made or unmade differently (``dirty_beliefs``). Marks only
    grow, and a mark set too early only costs a fresh decision, never a wrong one."""

    def __init__(self, log: ReplayLog, old_of: list[int], vectors: F32) -> None:
        self.log = log
        self.old_of = old_of
        self.vectors = vectors
        self.new_of = [-1] * len(log.fingerprints)
        for i, o in enumerate(old_of):
            if o >= 0:
                self.new_of[o] = i
        self.first = next((i for i, o in enumerate(old_of) if o != i), len(old_of))
        self.from_log = [False] * len(old_of)
        """Rows whose candidates were taken from the log (the others were searched)."""
        self.dirty_rows: set[int] = set()
        self.dirty_beliefs: set[str] = set()
        for o, i in enumerate(self.new_of):
            if i < 0:  # removed: what it made is gone
                self.dirty_beliefs |= _made(log.actions[o], log.owners[o])

    @classmethod
    def plan(cls, log: ReplayLog, fps: list[str], vectors: F32) -> _Resume | None:
        """None when the log cannot be matched row for row (a repeated fingerprint, or kept
        episodes in another order)."""
        at = {f: o for o, f in enumerate(log.fingerprints)}
        if len(at) != len(log.fingerprints):
            return None
        old_of = [at.get(f, -1) for f in fps]
        last = -1
        for o in old_of:
            if o >= 0:
                if o <= last:
                    return None
                last = o
        return cls(log, old_of, vectors)

    def _mapped(self, i: int) -> list[int] | None:
        """Episode ``i``'s recorded candidates as rows now (None if one was removed)."""
        new_of = self.new_of
        out = [new_of[j] for j in self.log.cands[self.old_of[i]]]
        return None if -1 in out else out

    def reuse_candidates(self, cands: list[list[int]], kth: list[int]) -> list[int]:
        """Fill in every recorded candidate list that still holds; return the rows to search.

        A kept row keeps its list when no candidate was removed and every changed row before
        it is, on the exact grid, less similar to it than its weakest candidate (float32 first
        picks the rows that could be near enough; only those are scored on the grid)."""
        log, n = self.log, len(self.old_of)
        changed = [i for i, o in enumerate(self.old_of) if o < 0]
        todo = list(changed)
        check: list[int] = []
        for i in range(n):
            o = self.old_of[i]
            if o < 0:
                continue
            mapped = self._mapped(i) if i >= self.first else log.cands[o]
            if mapped is None or (i >= self.first and len(mapped) < CANDIDATES and changed):
                todo.append(i)
                continue
            cands[i], kth[i] = mapped, log.kth[o]
            self.from_log[i] = True
            if i >= self.first and changed and len(mapped) == CANDIDATES:
                check.append(i)
        if check:
            cols = np.asarray(changed)
            targets, exact_targets = self.vectors[cols], grid(self.vectors[cols])
            eps = _margin(self.vectors.shape[1])
            step = max(1, BLOCK_CELLS // len(changed))
            for lo in range(0, len(check), step):
                rows = np.asarray(check[lo : lo + step])
                weakest = np.asarray([kth[i] for i in rows], dtype=np.float64)
                near = self.vectors[rows] @ targets.T >= (weakest / GRID**2 - eps)[:, None]
                near &= cols[None, :] < rows[:, None]
                maybe = np.nonzero(near.any(axis=1))[0]
                if not len(maybe):
                    continue
                exact = grid(self.vectors[rows[maybe]]) @ exact_targets.T
                exact[cols[None, :] >= rows[maybe][:, None]] = -np.inf
                hit = (exact >= weakest[maybe][:, None]).any(axis=1)
                for i in rows[maybe][hit]:
                    todo.append(int(i))
                    self.from_log[int(i)] = False
        return sorted(todo)

    def recorded(self, st: _State, i: int, cands: list[int]) -> Action | None:
        """Episode ``i``'s recorded outcome when its decision would read the same, else None."""
        o = self.old_of[i]
        if o < 0:
            return None
        action = self.log.actions[o]
        if len(action) > 1 and action[1] not in st.beliefs:
            return None  # a log that does not fit the replay it claims to record
        if i >= self.first:
            if not self.from_log[i] and cands != self._mapped(i):
                return None
            if not self.dirty_rows.isdisjoint(cands):
                return None
        return action

    def settle(self, st: _State, i: int, action: Action) -> None:
        """After episode ``i``'s action: mark what now differs from the recorded replay."""
        o = self.old_of[i]
        if o < 0 or action != self.log.actions[o]:
            self.dirty_rows.add(i)
            made = _made(action, st.of_episode[i])
            if o >= 0:
                made |= _made(self.log.actions[o], self.log.owners[o])
            for bid in made - self.dirty_beliefs:
                self.dirty_beliefs.add(bid)
                self.dirty_rows.update(st.rows_of.get(bid, ()))
        elif st.of_episode[i] in self.dirty_beliefs:
            self.dirty_rows.add(i)


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
