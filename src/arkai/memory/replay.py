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

import hashlib
import math
from array import array
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import date, datetime
from typing import Any

import numpy as np
import numpy.typing as npt

from arkai.adapters.fs import ReadRows, Reindexed
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
#: The statement vectors, one row an episode: in memory, or read by row from a file.
Rows = F32 | ReadRows
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
#: Earlier rows scored at once against a block of rows (6 MB at width 384): from a
#: :class:`~arkai.adapters.fs.ReadRows`, the rows read for one pass. A block then holds up to
#: ``BLOCK_CELLS / COLUMN_ROWS`` = 2,048 rows, so a replay from scratch reads the file once
#: per 2,048 episodes.
COLUMN_ROWS = 1 << 12
#: Facts whose candidate pairs the insight step reads and scores at once.
INSIGHT_ROWS = 1 << 10
#: Rows whose recorded candidates are scored at once when a changed row is near them
#: (:meth:`_Resume._near_changed`): their candidates' grid rows, 256 × 32 × 384 float64 at
#: most, ≈ 25 MB.
NEAR_ROWS = 1 << 8


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
#: The actions' kinds as a log holds them (one byte an episode: the position here).
KINDS = ("c", "r", "l", "x")
_CODE = {kind: n for n, kind in enumerate(KINDS)}
#: A log's fingerprint of an episode: the first 16 bytes of a SHA-256.
FINGERPRINT = np.dtype("S16")
#: Candidate rows of a log episode with fewer than :data:`CANDIDATES` are padded with this.
NONE = -1
#: Rows of candidates remapped or checked at once when a replay resumes.
ROW_CHUNK = 1 << 13


@dataclass(frozen=True, slots=True, eq=False)
class ReplayLog:
    """What a replay did per episode, so a later one decides afresh only what can differ.

    Arrays with one row an episode, and one table of belief IDs the rows name by number: as
    Python lists and tuples the log took ≈ 1.5 KB an episode at 80,000 episodes and reading it
    from disk more than twice that at its peak (issue 17); as arrays ≈ 160 bytes, read from
    the file a buffer an array (:mod:`arkai.memory.resume`). ``action(o)``, ``owner(o)``
    and ``candidates(o)`` give episode ``o``'s as values.
    """

    fingerprints: npt.NDArray[Any]
    """``S16``: each episode's :func:`fingerprint`."""
    kinds: npt.NDArray[np.uint8]
    """The action's kind (its position in :data:`KINDS`)."""
    targets: npt.NDArray[np.int32]
    """The belief the action names (``ids`` number; :data:`NONE` for a creation)."""
    scores: npt.NDArray[np.float64]
    """The action's similarity (reinforce, conflict; 0 for the others)."""
    notes: dict[int, str]
    """Episode → its conflict's note (conflicts only)."""
    owners: npt.NDArray[np.int32]
    """The belief each episode joined (created, reinforced, or was absorbed by)."""
    ids: Sequence[str]
    """Belief number → belief ID."""
    cands: npt.NDArray[np.int32]
    """``(episodes, CANDIDATES)``: the candidate rows, nearest first, padded with :data:`NONE`."""
    kth: npt.NDArray[np.int64]
    """The weakest candidate's similarity on the exact grid (0 for fewer than ``CANDIDATES``)."""

    def __len__(self) -> int:
        return len(self.kinds)

    def action(self, o: int) -> Action:
        kind = KINDS[self.kinds[o]]
        if kind == "c":
            return ("c",)
        target = self.ids[int(self.targets[o])]
        if kind == "l":
            return ("l", target)
        if kind == "r":
            return ("r", target, float(self.scores[o]))
        return ("x", target, float(self.scores[o]), self.notes[o])

    def owner(self, o: int) -> str:
        return self.ids[int(self.owners[o])]

    def candidates(self, o: int) -> list[int]:
        row = self.cands[o]
        return [int(j) for j in row[row != NONE]]

    def __eq__(self, other: object) -> bool:
        """The same episodes, outcomes and candidates (belief numbers compared as IDs)."""
        if not isinstance(other, ReplayLog):
            return NotImplemented
        n = len(self)
        return (
            len(other) == n
            and np.array_equal(self.fingerprints, other.fingerprints)
            and np.array_equal(self.kinds, other.kinds)
            and np.array_equal(self.scores, other.scores)
            and self.notes == other.notes
            and np.array_equal(self.cands, other.cands)
            and np.array_equal(self.kth, other.kth)
            and all(self.owner(o) == other.owner(o) for o in range(n))
            and all(self.action(o) == other.action(o) for o in range(n))
        )

    __hash__ = None  # type: ignore[assignment]

    @classmethod
    def of(
        cls,
        fingerprints: Sequence[bytes],
        actions: Sequence[Sequence[Any]],
        owners: Sequence[str],
        cands: Sequence[Sequence[int]],
        kth: Sequence[int],
    ) -> ReplayLog:
        """A log from one list per field (a test's, or an older log file's); ValueError when
        they do not describe one (lengths differ, a malformed action, a candidate that is not
        an earlier episode, more than :data:`CANDIDATES` of them)."""
        n = len(fingerprints)
        if not n == len(actions) == len(owners) == len(cands) == len(kth):
            raise ValueError("the log's lists differ in length")
        if not all(isinstance(f, bytes) and len(f) == FINGERPRINT.itemsize for f in fingerprints):
            raise ValueError("a fingerprint is not 16 bytes")
        ids: list[str] = []
        number: dict[str, int] = {}

        def num(bid: Any) -> int:
            if not isinstance(bid, str):
                raise ValueError(f"belief {bid!r} is not an ID")
            if bid not in number:
                number[bid] = len(ids)
                ids.append(bid)
            return number[bid]

        kinds = np.zeros(n, dtype=np.uint8)
        targets = np.full(n, NONE, dtype=np.int32)
        scores = np.zeros(n, dtype=np.float64)
        notes: dict[int, str] = {}
        owned = np.zeros(n, dtype=np.int32)
        rows = np.full((n, CANDIDATES), NONE, dtype=np.int32)
        for o in range(n):
            action = tuple(actions[o])
            if not _well_formed(action):
                raise ValueError(f"episode {o}: malformed action {action!r}")
            kinds[o] = _CODE[action[0]]
            if len(action) > 1:
                targets[o] = num(action[1])
            if len(action) > 2:
                scores[o] = action[2]
            if len(action) > 3:
                notes[o] = action[3]
            owned[o] = num(owners[o])
            cand = cands[o]
            if not isinstance(cand, list | tuple) or len(cand) > CANDIDATES:
                raise ValueError(f"episode {o}: candidates {cand!r}")
            if not all(type(j) is int and 0 <= j < o for j in cand):
                raise ValueError(f"episode {o}: a candidate that is not an earlier episode")
            rows[o, : len(cand)] = cand
        if not all(type(v) is int for v in kth):
            raise ValueError("a weakest similarity that is not an integer")
        prints = np.frombuffer(b"".join(fingerprints), dtype=FINGERPRINT) if n else None
        return cls(
            prints if prints is not None else np.zeros(0, dtype=FINGERPRINT), kinds, targets,
            scores, notes, owned, ids, rows, np.asarray(kth, dtype=np.int64).reshape(n),
        )  # fmt: skip


#: Each action's fields after its kind (see :data:`Action`).
_SHAPES: dict[str, tuple[type, ...]] = {
    "c": (), "r": (str, float), "l": (str,), "x": (str, float, str),
}  # fmt: skip


def _well_formed(action: tuple[Any, ...]) -> bool:
    shape = _SHAPES.get(action[0]) if action and isinstance(action[0], str) else None
    if shape is None or len(action) != 1 + len(shape):
        return False
    if not all(isinstance(v, t) for v, t in zip(action[1:], shape, strict=True)):
        return False
    return len(action) < 3 or math.isfinite(action[2])


def _picked(source: Rows, rows: npt.NDArray[np.int64]) -> Reindexed:
    """Rows ``rows`` of ``source``, read when indexed: the beliefs' vectors, written a block at
    a time, never held together (one a belief: ≈ 1.2 GB for 800,000)."""
    return Reindexed(source.__getitem__, rows, source.shape[1] if source.ndim == 2 else 0)


@dataclass(frozen=True, slots=True)
class ReplayResult:
    beliefs: list[Belief]
    changes: list[Change]
    vectors: Reindexed
    """One row per belief (the vector of the statement it holds), in ``beliefs`` order, read
    when sliced."""
    as_of: str | None
    log: ReplayLog | None = None
    resumed_at: int = 0
    """Episodes before the first changed one (their recorded outcome re-applied unchecked)."""
    decided: int = 0
    """Episodes decided afresh (the others took their recorded outcome)."""


def fingerprint(ep: Episode) -> bytes:
    """Everything of an episode the replay reads (its vector follows from the statement)."""
    fields = (ep.id, ep.statement, ep.date, ep.item or "", str(ep.position), ep.kind)
    return hashlib.sha256("\0".join(fields).encode("utf-8")).digest()[:16]


def fingerprints(episodes: Sequence[Episode]) -> npt.NDArray[Any]:
    """Each episode's :func:`fingerprint`, as the log holds them."""
    if not episodes:
        return np.zeros(0, dtype=FINGERPRINT)
    return np.frombuffer(b"".join(map(fingerprint, episodes)), dtype=FINGERPRINT)


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


def _candidates(vectors: Rows, k: int, rows: Sequence[int]) -> dict[int, tuple[list[int], int]]:
    """For each of ``rows``: up to ``k`` earlier rows, the most similar on the exact grid first
    (ties: the earlier row), and the last one's exact similarity (0 when fewer than ``k``):
    :func:`_each_candidates` as a dictionary of lists."""
    return {i: (cand.tolist(), weakest) for i, cand, weakest in _each_candidates(vectors, k, rows)}


def _each_candidates(
    vectors: Rows, k: int, rows: Sequence[int]
) -> Iterator[tuple[int, npt.NDArray[np.int64], int]]:
    """For each of ``rows`` in order: the row, up to ``k`` earlier rows, the most similar on
    the exact grid first (ties: the earlier row), and the last one's exact similarity (0 when
    fewer than ``k``) — a block of rows at a time, so a caller that keeps them in arrays holds
    no list per row (as a dictionary of lists: ≈ 1.3 KB a row, 200 MB for a first build's
    159,000 episodes; issue 17).

    A blocked float32 matmul finds, per row, every earlier row within :func:`_margin` of its
    ``k``-th best; only those are ranked on the grid, so the result does not depend on the
    block height or the BLAS. The earlier rows are scored :data:`COLUMN_ROWS` at a time (a
    row's pool keeps what is within the margin of its best ``k`` so far, and is cut to the
    margin of its final ``k``-th at the end): with the rows in a file, a pass holds that many
    of them, not every one."""
    todo = sorted({int(r) for r in rows if r > 0})
    if any(r == 0 for r in rows):
        yield 0, np.zeros(0, dtype=np.int64), 0
    if not todo:
        return
    eps = _margin(vectors.shape[1])
    a = 0
    while a < len(todo):
        b = a + 1
        while b < len(todo) and (b + 1 - a) * min(todo[b], COLUMN_ROWS) <= BLOCK_CELLS:
            b += 1
        idx = np.asarray(todo[a:b])
        hi = int(idx[-1])
        block = np.array(vectors[idx], dtype=np.float32)
        best = np.full((len(idx), 0), -np.inf, dtype=np.float32)
        """Each row's best ``k`` similarities so far (fewer columns until ``k`` are seen)."""
        found: list[tuple[npt.NDArray[np.intp], npt.NDArray[np.intp], F32]] = []
        first = int(idx[0])
        for lo in range(0, hi, COLUMN_ROWS):
            top = min(hi, lo + COLUMN_ROWS)
            sims = block @ np.asarray(vectors[lo:top]).T
            # Only a chunk reaching the block's first row holds rows not before every row.
            later = np.arange(lo, top)[None, :] >= idx[:, None] if top > first else None
            if later is not None:
                sims[later] = -np.inf
            cut = sims.shape[1] - k
            chunk_best = np.partition(sims, cut, axis=1)[:, cut:] if cut > 0 else sims
            both = np.concatenate([best, chunk_best], axis=1)
            cut = both.shape[1] - k
            best = np.partition(both, cut, axis=1)[:, cut:] if cut > 0 else both
            if best.shape[1] == k:
                pool = sims >= (best.min(axis=1) - eps)[:, None]
                if later is not None:
                    pool &= ~later
            else:
                pool = np.ones(sims.shape, dtype=bool) if later is None else ~later
            rr, jj = np.nonzero(pool)
            found.append((rr, jj + lo, sims[rr, jj]))
            del sims, later, both, pool, chunk_best
        rr = np.concatenate([f[0] for f in found])
        jj = np.concatenate([f[1] for f in found])
        if best.shape[1] == k:
            sims_kept = np.concatenate([f[2] for f in found])
            keep = sims_kept >= (best.min(axis=1) - eps)[rr]
            rr, jj = rr[keep], jj[keep]
            del sims_kept, keep
        del found
        exact = np.empty(len(rr), dtype=np.float64)
        for lo in range(0, len(rr), PAIR_CHUNK):
            part = slice(lo, lo + PAIR_CHUNK)
            exact[part] = np.einsum("ij,ij->i", grid(block[rr[part]]), grid(vectors[jj[part]]))
        order = np.lexsort((jj, -exact, rr))
        starts = np.searchsorted(rr[order], np.arange(len(idx) + 1))
        for r, i in enumerate(idx.tolist()):
            top_r = order[starts[r] : starts[r + 1]][:k]
            yield i, jj[top_r], int(exact[top_r[-1]]) if len(top_r) == k else 0
        a = b


#: A change's fields set in place (its slots' own setters, which a frozen class's
#: ``__setattr__`` does not stand in front of), in :class:`~arkai.model.belief.Change`'s order.
(_SEQ, _KIND, _BELIEF, _DATE, _EPISODE, _OTHER, _CONFIDENCE, _SIMILARITY, _NOTE) = (
    getattr(Change, name).__set__ for name in Change.__slots__
)


class _State:
    def __init__(
        self, params: ReplayParams, decisions: Decisions, check: Checker, episodes: int
    ) -> None:
        self.p = params
        self.d = decisions
        self.check = check
        self.beliefs: dict[str, Belief] = {}
        """During the episodes a belief's ``episodes`` and ``items`` are its rows' (its creating
        row and ``joined``; appending to a tuple per link was quadratic): :meth:`finish` writes
        them."""
        self.order: list[str] = []
        self.pos: dict[str, int] = {}
        """Belief → its place in ``order`` (its number in the log)."""
        self.vec_rows = array("q")
        """Per place in ``order``, the episode row whose vector the belief holds (the row that
        created it; :meth:`vec_row`): 8 bytes a belief, where a dict by ID took ≈ 100."""
        self.of_episode: list[str | None] = [None] * episodes
        """Episode row → the belief it joined."""
        self.joined: dict[str, list[int]] = {}
        """Belief → the rows that joined it besides the one that created it. Most beliefs have
        none: a list and a dict entry per belief, and per-belief copies of its episodes and
        items, were ≈ 500 bytes an episode (issue 17)."""
        self.changes: list[Change] = []
        self.conf: dict[str, float] = {}
        """Belief → its base confidence after the reinforcements since it was last made, and
        ``last`` the latest of their dates: held here while the episodes are replayed and
        written to the belief by :meth:`finish` (nothing reads them before). A belief made
        afresh per reinforcing episode was ≈ 2 µs: 0.17 s at 80,000 episodes (issue 17)."""
        self.last: dict[str, str] = {}
        self.items: tuple[str, ...] = ()
        """The last created belief's ``items``: the next one of the same item shares the tuple
        (episodes come an item at a time; ≈ 50 bytes a belief, 40 MB at 800,000)."""

    def log(self, kind: str, belief: str, day: str, **kw: Any) -> None:
        self.changes.append(Change(len(self.changes) + 1, kind, belief, day, **kw))

    def log_reinforce(self, belief: str, day: str, episode: str, conf: float, sim: float) -> None:
        """:meth:`log` of a reinforcement, the change made without its class's frozen
        ``__init__`` (half its cost; once per reinforcing episode): equal to it (tested)."""
        c = object.__new__(Change)
        _SEQ(c, len(self.changes) + 1)
        _KIND(c, "reinforce")
        _BELIEF(c, belief)
        _DATE(c, day)
        _EPISODE(c, episode)
        _OTHER(c, None)
        _CONFIDENCE(c, conf)
        _SIMILARITY(c, sim)
        _NOTE(c, None)
        self.changes.append(c)

    def _join(self, bid: str, i: int) -> None:
        self.of_episode[i] = bid
        if i != self.vec_row(bid):
            self.joined.setdefault(bid, []).append(i)

    def vec_row(self, bid: str) -> int:
        """The episode row whose vector ``bid`` holds (for a belief made twice, the later)."""
        return self.vec_rows[self.pos[bid]]

    def rows(self, bid: str) -> list[int]:
        """The rows that joined ``bid`` so far (none for a belief not made: while the episodes
        are replayed, before insights)."""
        if bid not in self.pos:
            return []
        return [self.vec_row(bid), *self.joined.get(bid, ())]

    def create(
        self, i: int, ep: Episode, kind: str = FACT, seed: str | None = None, logged: str = ""
    ) -> Belief:
        """``logged``: the ID the earlier log records this row's belief under; when it is the
        one made, that string is used, so the two are one while the log is held (≈ 70 bytes
        a belief, 55 MB at 800,000)."""
        bid = belief_id(kind, seed or ep.id)
        if bid == logged:
            bid = logged
        if ep.item and self.items != (ep.item,):
            self.items = (ep.item,)
        b = Belief(
            id=bid, statement=ep.statement, type=kind, confidence=self.p.new_confidence,
            status=ACTIVE, created=ep.date, reinforced=ep.date, episodes=(ep.id,),
            items=self.items if ep.item else (), pinned=bid in self.d.pin,
        )  # fmt: skip
        self.beliefs[bid] = b
        self.conf.pop(bid, None)  # (made again: its reinforcements so far are the old one's)
        self.last.pop(bid, None)
        if bid in self.pos:  # made again: its earlier rows stay its rows, not its episodes
            self.joined.setdefault(bid, []).append(self.vec_row(bid))
        self.pos[bid] = len(self.order)
        self.order.append(bid)
        self.vec_rows.append(i)
        self._join(bid, i)
        self.log("create", bid, ep.date, episode=ep.id, confidence=b.confidence)
        if b.pinned:
            self.log("pin", bid, ep.date, note=self.d.pin[bid] or None)
        if bid in self.d.forget:
            self.beliefs[bid] = replace(b, status=FORGOTTEN)
            self.log("forget", bid, ep.date, note=self.d.forget[bid] or None)
        return self.beliefs[bid]

    def link(self, b: Belief, i: int) -> None:
        self._join(b.id, i)

    def reinforce(self, b: Belief, i: int, ep: Episode, sim: float) -> None:
        bid = b.id
        self._join(bid, i)
        now = self.conf.get(bid, b.confidence)
        c = round(now + (1 - now) * self.p.reinforce_step, 6)
        self.conf[bid] = c
        self.last[bid] = max(self.last.get(bid, b.reinforced), ep.date)
        self.log_reinforce(bid, ep.date, ep.id, c, sim)

    def finish(self, episodes: Sequence[Episode]) -> None:
        """Write each belief's reinforcements (:attr:`conf`), episodes and items (after the
        last episode): those of its rows from the one that last created it on. A belief no
        other row joined has them from its creation already."""
        for bid, c in self.conf.items():
            self.beliefs[bid] = self.beliefs[bid].reinforced_by(c, self.last[bid])
        self.conf.clear()
        self.last.clear()
        for bid, more in self.joined.items():
            first = self.vec_row(bid)
            rows = [first, *(r for r in more if r > first)]
            if len(rows) == 1:
                continue
            eps = tuple(episodes[r].id for r in rows)
            items = tuple(dict.fromkeys(it for r in rows if (it := episodes[r].item)))
            self.beliefs[bid] = replace(self.beliefs[bid], episodes=eps, items=items)


def replay(
    episodes: Sequence[Episode],
    vectors: Rows,
    *,
    params: ReplayParams,
    decisions: Decisions,
    check: Checker,
    resume: ReplayLog | None = None,
    prints: npt.NDArray[Any] | None = None,
) -> ReplayResult:
    """Replay ``episodes`` (already in time order; ``vectors`` L2-normalised rows, in memory
    or read by row from files: :class:`~arkai.adapters.fs.ReadRows`). With
    ``resume`` — the log of a replay with the same parameters, decisions and check — only the
    episodes whose outcome can differ are decided afresh (:class:`_Resume`); its candidates
    are let go once the candidates now are known, the rest once the episodes are replayed
    (pass it without keeping a reference to save its memory).
    ``prints``: the episodes' :func:`fingerprints` when the caller has them already."""
    st = _State(params, decisions, check, len(episodes))
    fps = fingerprints(episodes) if prints is None else prints
    n = len(episodes)
    cands = np.full((n, CANDIDATES), NONE, dtype=np.int32)
    kth = np.zeros(n, dtype=np.int64)
    old = _Resume.plan(resume, fps, vectors) if resume is not None else None
    del resume  # (held by ``old`` from here on, as much of it as is read)
    todo = old.reuse_candidates(cands, kth) if old is not None else range(n)
    for i, cand, weakest in _each_candidates(vectors, CANDIDATES, todo):
        cands[i, : len(cand)], kth[i] = cand, weakest
    if old is not None:
        old.compare_searched(cands)
    kinds = np.zeros(n, dtype=np.uint8)
    targets = np.full(n, NONE, dtype=np.int32)
    scores = np.zeros(n, dtype=np.float64)
    notes: dict[int, str] = {}
    owners = np.zeros(n, dtype=np.int32)
    decided = 0
    for i in range(n):
        action = old.recorded(st, i, cands[i]) if old is not None else None
        fresh = action is None
        if action is None:
            row = cands[i]
            action = _decide(st, i, episodes[i], vectors, row[row != NONE].tolist())
            decided += 1
        logged = old.logged_owner(i) if old is not None and action[0] in ("c", "x") else ""
        _apply(st, i, episodes[i], action, logged)
        kinds[i] = _CODE[action[0]]
        if len(action) > 1:
            targets[i] = st.pos[action[1]]
            if len(action) > 2:
                scores[i] = action[2]
                if len(action) > 3:
                    notes[i] = action[3]
        owners[i] = st.pos[_owner(st, i)]
        if old is not None:
            old.settle(st, i, action, fresh)
    first = old.first if old is not None else 0
    # The rest of the earlier log is not read after the episodes: gone before the result is
    # made, when the caller holds no other reference to it.
    del old
    st.finish(episodes)
    as_of = max((ep.date for ep in episodes), default=None)
    if as_of is not None:
        _prune(st, to_date(as_of), as_of)
        _insights(st, episodes, vectors, cands, as_of)
    # (As an array: a list of ints was ≈ 40 bytes a belief, after the episodes' peak.)
    vecs = _picked(vectors, np.fromiter(map(st.vec_row, st.order), np.int64, len(st.order)))
    log = ReplayLog(fps, kinds, targets, scores, notes, owners, st.order, cands, kth)
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

    def __init__(self, log: ReplayLog, old_of: npt.NDArray[np.int64], vectors: Rows) -> None:
        self.log = log
        self.old_of = old_of
        """Row now → its row in the log (-1: changed or new)."""
        self.vectors = vectors
        n = len(old_of)
        self.new_of = np.full(len(log), -1, dtype=np.int64)
        kept = np.flatnonzero(old_of >= 0)
        self.new_of[old_of[kept]] = kept
        moved = np.flatnonzero(old_of != np.arange(n))
        self.first = int(moved[0]) if len(moved) else n
        self.from_log = np.zeros(n, dtype=bool)
        """Rows whose candidates are the recorded ones: taken from the log, or searched and
        found the same (:meth:`compare_searched`)."""
        self.dirty: set[int] = set()
        """The marked rows (a set: a row's candidates are looked up in it once per episode,
        ≈ 1 µs; a boolean array gathered at them was ≈ 4)."""
        self.dirty_beliefs: set[str] = set()
        for o in np.flatnonzero(self.new_of < 0).tolist():  # removed: what it made is gone
            self.dirty_beliefs |= _made(log.action(o), log.owner(o))

    @classmethod
    def plan(cls, log: ReplayLog, fps: npt.NDArray[Any], vectors: Rows) -> _Resume | None:
        """None when the log cannot be matched row for row (a repeated fingerprint, or kept
        episodes in another order)."""
        order = np.argsort(log.fingerprints, kind="stable")
        known = log.fingerprints[order]
        if len(known) > 1 and bool((known[1:] == known[:-1]).any()):
            return None
        old_of = np.full(len(fps), -1, dtype=np.int64)
        if len(known) and len(fps):
            at = np.minimum(np.searchsorted(known, fps), len(known) - 1)
            hit = known[at] == fps
            old_of[hit] = order[at[hit]]
        kept = old_of[old_of >= 0]
        if len(kept) > 1 and bool((np.diff(kept) <= 0).any()):
            return None
        return cls(log, old_of, vectors)

    def _remap(
        self, old: npt.NDArray[np.int32]
    ) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.bool_]]:
        """Recorded candidate rows (a block of log rows) as rows now, and whether each log
        row named a removed episode."""
        named = old != NONE
        mapped = np.where(named, self.new_of[np.where(named, old, 0)], NONE).astype(np.int32)
        return mapped, (named & (mapped == NONE)).any(axis=1)

    def reuse_candidates(
        self, cands: npt.NDArray[np.int32], kth: npt.NDArray[np.int64]
    ) -> list[int]:
        """Fill in every recorded candidate list that still holds; return the rows to search.

        A kept row keeps its list when no candidate was removed and every changed row before
        it is, on the exact grid, less similar to it than its weakest candidate (float32 first
        picks the rows that could be near enough; only those are scored on the grid). Rows
        before the first change are the log's own, their candidates too."""
        log, first = self.log, self.first
        changed = np.flatnonzero(self.old_of < 0)
        todo = [changed]
        cands[:first], kth[:first] = log.cands[:first], log.kth[:first]
        self.from_log[:first] = True
        rest = first + np.flatnonzero(self.old_of[first:] >= 0)
        checks = []
        for lo in range(0, len(rest), ROW_CHUNK):
            rows = rest[lo : lo + ROW_CHUNK]
            olds = self.old_of[rows]
            mapped, removed = self._remap(log.cands[olds])
            full = mapped[:, -1] != NONE
            bad = removed | (~full if len(changed) else False)
            todo.append(rows[bad])
            good = ~bad
            cands[rows[good]], kth[rows[good]] = mapped[good], log.kth[olds[good]]
            self.from_log[rows[good]] = True
            if len(changed):
                checks.append(rows[good & full])
        check = np.concatenate(checks) if checks else np.zeros(0, dtype=np.int64)
        if len(check):
            self._near_changed(check, changed, cands, kth)
        return sorted(np.concatenate(todo).tolist())

    def _near_changed(
        self, check: npt.NDArray[np.int64], changed: npt.NDArray[np.int64],
        cands: npt.NDArray[np.int32], kth: npt.NDArray[np.int64],
    ) -> npt.NDArray[np.int64]:  # fmt: skip
        """The rows of ``check`` (kept rows whose recorded candidates were taken, a full list
        of them, none removed) that a changed row before them is, on the exact grid, at least
        as similar to as their weakest candidate: their candidates are those rows and their
        recorded ones ranked together (``cands`` and ``kth`` set; their ``from_log``
        cleared); returned. The recorded list is the best ``k`` of the rows before the row in
        the recorded replay, none of them removed, so it is the best ``k`` of the kept rows
        before it, and a changed row less similar than its weakest cannot enter it: ranking
        the two together gives what a search over every earlier row gives (a search per such
        row was ≈ 4 s when an item was added at 10,000 items: 2,000 rows, each against up to
        80,000; issue 17). The changed rows are taken :data:`COLUMN_ROWS` at a time — with
        every row new but a few (a library grown ten-fold in one run) their vectors and grid
        copies at once were ≈ 4.6 KB a row, 826 MB at 10,000 items."""
        eps = _margin(self.vectors.shape[1])
        near: list[tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[Any]]] = []
        for c0 in range(0, len(changed), COLUMN_ROWS):
            cols = changed[c0 : c0 + COLUMN_ROWS]
            if not (check > cols[0]).any():
                break  # the changed rows from here on come after every row checked
            targets = np.asarray(self.vectors[cols], dtype=np.float32)
            exact_targets = grid(targets)
            step = max(1, min(BLOCK_CELLS // len(cols), ROW_CHUNK))
            for lo in range(0, len(check), step):
                rows = check[lo : lo + step]
                rows = rows[rows > cols[0]]
                if not len(rows):
                    continue
                weakest = kth[rows].astype(np.float64)
                close = self.vectors[rows] @ targets.T >= (weakest / GRID**2 - eps)[:, None]
                close &= cols[None, :] < rows[:, None]
                maybe = np.flatnonzero(close.any(axis=1))
                if not len(maybe):
                    continue
                exact = grid(self.vectors[rows[maybe]]) @ exact_targets.T
                exact[cols[None, :] >= rows[maybe][:, None]] = -np.inf
                ri, ci = np.nonzero(exact >= weakest[maybe][:, None])
                near.append((rows[maybe][ri], cols[ci], exact[ri, ci]))
            del targets, exact_targets
        if not near:
            return np.zeros(0, dtype=np.int64)
        rr = np.concatenate([x[0] for x in near])
        cc = np.concatenate([x[1] for x in near])
        ee = np.concatenate([x[2] for x in near])
        del near
        hit = np.unique(rr)
        order = np.argsort(rr, kind="stable")
        rr, cc, ee = rr[order], cc[order], ee[order]
        starts = np.searchsorted(rr, hit)
        ends = np.searchsorted(rr, hit, side="right")
        k = cands.shape[1]
        # The recorded candidates' similarities on the grid, for :data:`NEAR_ROWS` rows at
        # once: their vectors read together (a read per row was ≈ 0.1 s when 2,400 rows had a
        # changed row near, at 10,000 items). Exact, so the same numbers as one at a time.
        for lo in range(0, len(hit), NEAR_ROWS):
            part = hit[lo : lo + NEAR_ROWS]
            kept_rows = cands[part].astype(np.int64)
            need = np.unique(np.concatenate([kept_rows.ravel(), part]))
            exact_rows = grid(np.asarray(self.vectors[need], dtype=np.float32))
            mine = exact_rows[np.searchsorted(need, part)]
            kept_exact = np.einsum("pkd,pd->pk", exact_rows[np.searchsorted(need, kept_rows)], mine)
            del exact_rows, mine
            for j, (r, s, e) in enumerate(
                zip(part.tolist(), starts[lo : lo + NEAR_ROWS].tolist(),
                    ends[lo : lo + NEAR_ROWS].tolist(), strict=True)
            ):  # fmt: skip
                rows_all = np.concatenate([kept_rows[j], cc[s:e]])
                sims_all = np.concatenate([kept_exact[j], ee[s:e]])
                best = np.lexsort((rows_all, -sims_all))[:k]  # most similar first, ties: earlier
                cands[r], kth[r] = rows_all[best], int(sims_all[best[-1]])
        self.from_log[hit] = False
        return hit

    def compare_searched(self, cands: npt.NDArray[np.int32]) -> None:
        """Once every row's candidates are known (``cands``): mark as the log's
        (``from_log``) each kept row searched afresh whose recorded candidates, mapped to the
        rows now and none removed, are the ones found. Then let go of what only the
        candidates read — the log's candidates, weakest similarities and fingerprints, and
        the map of its rows (≈ 160 bytes an episode, 130 MB at 800,000, held through the
        episodes before): the episodes read its outcomes only."""
        rows = np.flatnonzero(~self.from_log & (self.old_of >= 0))
        for lo in range(0, len(rows), ROW_CHUNK):
            part = rows[lo : lo + ROW_CHUNK]
            mapped, removed = self._remap(self.log.cands[self.old_of[part]])
            self.from_log[part[~removed & (mapped == cands[part]).all(axis=1)]] = True
        self.log = replace(
            self.log, fingerprints=np.zeros(0, dtype=FINGERPRINT), kth=np.zeros(0, dtype=np.int64),
            cands=np.zeros((0, CANDIDATES), dtype=np.int32),
        )  # fmt: skip
        del self.new_of

    def recorded(self, st: _State, i: int, cands: npt.NDArray[np.int32]) -> Action | None:
        """Episode ``i``'s recorded outcome when its decision would read the same, else None."""
        o = int(self.old_of[i])
        if o < 0:
            return None
        action = self.log.action(o)
        if len(action) > 1 and action[1] not in st.beliefs:
            return None  # a log that does not fit the replay it claims to record
        if i >= self.first:
            if not self.from_log[i]:
                return None  # other candidates than recorded
            if self.dirty and not self.dirty.isdisjoint(cands.tolist()):
                return None  # (NONE, the padding, is no row: never marked)
        return action

    def logged_owner(self, i: int) -> str:
        """The ID of the belief row ``i`` joined in the log ("" for a row not in it)."""
        o = int(self.old_of[i])
        return self.log.owner(o) if o >= 0 else ""

    def _mark(self, rows: Sequence[int]) -> None:
        self.dirty.update(rows)

    def settle(self, st: _State, i: int, action: Action, fresh: bool) -> None:
        """After episode ``i``'s action (``fresh``: decided, not taken from the log): mark
        what now differs from the recorded replay."""
        o = int(self.old_of[i])
        if fresh and (o < 0 or action != self.log.action(o)):
            self._mark([i])
            made = _made(action, _owner(st, i))
            if o >= 0:
                made |= _made(self.log.action(o), self.log.owner(o))
            for bid in made - self.dirty_beliefs:
                self.dirty_beliefs.add(bid)
                self._mark(st.rows(bid))
        elif _owner(st, i) in self.dirty_beliefs:
            self._mark([i])


def _owner(st: _State, i: int) -> str:
    """The belief episode ``i`` joined (an episode before the one being decided)."""
    bid = st.of_episode[i]
    assert bid is not None
    return bid


def _decide(st: _State, i: int, ep: Episode, vectors: Rows, cands: list[int]) -> Action:
    """What episode ``i`` does, given the beliefs of the episodes before it."""
    params, check = st.p, st.check
    bids = list(dict.fromkeys(_owner(st, j) for j in cands))
    scored: dict[str, float] = {}
    if bids:
        rows = vectors[np.asarray([i, *(st.vec_row(b) for b in bids)])]  # one read
        for n, bid in enumerate(bids, 1):
            scored[bid] = round(float(rows[0] @ rows[n]), 6)
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


def _apply(st: _State, i: int, ep: Episode, action: Action, logged: str = "") -> None:
    """Carry out what :func:`_decide` chose (or a log recorded) for episode ``i``
    (``logged``: :meth:`_State.create`'s)."""
    kind = action[0]
    if kind == "r":
        st.reinforce(st.beliefs[action[1]], i, ep, action[2])
    elif kind == "l":
        st.link(st.beliefs[action[1]], i)
    elif kind == "c":
        st.create(i, ep, ep.kind, logged=logged)
    elif kind == "x":
        bid, sim, note = action[1], action[2], action[3]
        old = st.beliefs[bid]
        new = st.create(i, ep, ep.kind, logged=logged)
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
    st: _State, episodes: Sequence[Episode], vectors: Rows, cands: npt.NDArray[np.int32], day: str
) -> None:
    # Active facts by the row whose vector each holds (the row that made it, so the belief is
    # that row's); a union-find over only the rows some pair joins: one entry per fact in
    # dicts was ≈ 300 bytes an episode at its peak.
    is_fact = np.zeros(len(episodes), dtype=bool)
    is_fact[np.fromiter((st.vec_row(b) for b in st.order
                         if st.beliefs[b].status == ACTIVE and st.beliefs[b].type == FACT),
                        np.int64)] = True  # fmt: skip
    parent: dict[int, int] = {}

    def find(r: int) -> int:
        while parent.get(r, r) != r:
            parent[r] = parent.get(parent[r], parent[r])
            r = parent[r]
        return r

    facts = np.flatnonzero(is_fact)
    for lo in range(0, len(facts), INSIGHT_ROWS):  # the pairs' rows read a batch at a time
        pairs = []
        for i in facts[lo : lo + INSIGHT_ROWS].tolist():
            row = cands[i]
            pairs += [(i, j) for j in row[row != NONE].tolist() if is_fact[j]]
        need = sorted({r for pair in pairs for r in pair})
        if not need:
            continue
        at = {r: n for n, r in enumerate(need)}
        rows = vectors[np.asarray(need)]
        for i, j in pairs:
            if float(rows[at[i]] @ rows[at[j]]) >= st.p.insight_similarity:
                a, b = find(i), find(j)
                if a != b:
                    parent[max(a, b)] = min(a, b)
    groups: dict[int, list[str]] = {}
    for r in sorted({*parent, *parent.values()}):  # the rows of groups of two or more
        groups.setdefault(find(r), []).append(_owner(st, r))
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
        row = st.vec_row(lead.id)
        st.pos[bid] = len(st.order)
        st.order.append(bid)
        st.vec_rows.append(row)
        st.log("create", bid, ins.created, confidence=conf,
               note=f"insight: {len(members)} beliefs from {len(items)} items")  # fmt: skip
        if bid in st.d.forget:
            st.log("forget", bid, day, note=st.d.forget[bid] or None)
