"""A replay resumed from its log equals a replay from scratch (issue 17): the episodes before
the first changed one take their recorded outcome, the rest are replayed."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from arkai.memory import replay as rp
from arkai.memory.contradict import check
from arkai.memory.replay import Decisions, ReplayParams, ReplayResult, replay
from arkai.model.belief import Episode

TOPICS = [
    ("Remote build caches cut the clean build time to {n} minutes.", "caches"),
    ("The hive sensors report their weight every {n} minutes.", "hives"),
    ("Lavender near the apiary blooms in week {n} of summer.", "lavender"),
    ("Our nightly backups finish within {n} hours.", "backups"),
]


def library(n: int, seed: int = 3) -> tuple[list[Episode], np.ndarray]:
    """``n`` episodes on a few topics: near-copies reinforce, changed numbers contradict."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(len(TOPICS), 16))
    eps, rows = [], []
    for i in range(n):
        t = int(rng.integers(len(TOPICS)))
        number = int(rng.choice([5, 5, 5, 9]))
        eps.append(ep(i, TOPICS[t][0].format(n=number), f"2026-{1 + i * 12 // n:02d}-01"))
        rows.append(centres[t] + rng.normal(scale=0.15, size=16) + (number == 9) * 0.3)
    return eps, unit(np.stack(rows))


def ep(i: int, text: str, day: str) -> Episode:
    return Episode(id=f"{i:016x}", statement=text, date=day, item=f"item{i % 7}", position=i)


def unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def run(eps: list[Episode], rows: np.ndarray, resume: rp.ReplayLog | None = None,
        checker: Callable[[str, str], object] = check) -> ReplayResult:  # fmt: skip
    return replay(eps, rows, params=ReplayParams(), decisions=Decisions(), check=checker,  # type: ignore[arg-type]
                  resume=resume)  # fmt: skip


def same(a: ReplayResult, b: ReplayResult) -> None:
    assert [x.to_dict() for x in a.beliefs] == [x.to_dict() for x in b.beliefs]
    assert [x.to_dict() for x in a.changes] == [x.to_dict() for x in b.changes]
    assert a.vectors.tobytes() == b.vectors.tobytes() and a.as_of == b.as_of
    assert a.log == b.log


@pytest.fixture(autouse=True)
def small_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Candidate blocks of 16 rows, so a resume starts at a block boundary, not at row 1."""
    monkeypatch.setattr(rp, "BLOCK_CELLS", 4000)  # 16 rows for 199 to 201 episodes


def edits() -> dict[str, Callable[[list[Episode], np.ndarray], tuple[list[Episode], np.ndarray]]]:
    def change(eps: list[Episode], rows: np.ndarray) -> tuple[list[Episode], np.ndarray]:
        e = eps[100]
        eps = [*eps[:100], Episode(e.id, "Remote build caches never cut build times.", e.date,
                                   e.item, e.position), *eps[101:]]  # fmt: skip
        rows = rows.copy()
        rows[100] = rows[3]
        return eps, rows

    def insert(eps: list[Episode], rows: np.ndarray) -> tuple[list[Episode], np.ndarray]:
        new = Episode("f" * 16, "Our nightly backups finish within 9 hours.", eps[120].date,
                      "item-new", 10_000)  # fmt: skip
        return [*eps[:121], new, *eps[121:]], np.insert(rows, 121, rows[7], axis=0)

    def remove(eps: list[Episode], rows: np.ndarray) -> tuple[list[Episode], np.ndarray]:
        return [*eps[:90], *eps[91:]], np.delete(rows, 90, axis=0)

    def append(eps: list[Episode], rows: np.ndarray) -> tuple[list[Episode], np.ndarray]:
        new = Episode("e" * 16, eps[5].statement, "2027-01-01", "item-new", 0)
        return [*eps, new], np.vstack([rows, rows[5:6]])

    return {"change": change, "insert": insert, "remove": remove, "append": append}


@pytest.mark.parametrize("edit", sorted(edits()))
def test_resumed_replay_equals_a_replay_from_scratch(edit: str) -> None:
    eps, rows = library(200)
    before = run(eps, rows)
    assert before.log is not None
    kinds = {a[0] for a in before.log.actions}
    assert kinds >= {"c", "r", "x"}, kinds  # the data exercises create, reinforce, contradict
    eps2, rows2 = edits()[edit](eps, rows)
    calls: list[str] = []

    def counted(old: str, new: str) -> object:
        calls.append(new)
        return check(old, new)

    resumed = run(eps2, rows2, before.log, counted)
    resumed_calls = len(calls)
    scratch = run(eps2, rows2, None, counted)
    same(resumed, scratch)
    assert resumed_calls < len(calls) - resumed_calls  # the reused prefix asked nothing
    assert resumed.beliefs != before.beliefs or edit == "remove"
    first_changed = next(
        (i for i, (a, b) in enumerate(zip(eps, eps2, strict=False)) if a != b), len(eps)
    )
    assert 0 < resumed.resumed_at <= first_changed
    assert first_changed - resumed.resumed_at < 16  # at most one block replayed before it


def test_nothing_changed_replays_nothing() -> None:
    eps, rows = library(200)
    before = run(eps, rows)

    def refuse(old: str, new: str) -> object:
        raise AssertionError("an unchanged library needs no contradiction check")

    again = run(eps, rows, before.log, refuse)
    assert again.resumed_at == len(eps)
    same(again, before)


def test_a_log_from_other_blocks_is_not_used(monkeypatch: pytest.MonkeyPatch) -> None:
    eps, rows = library(200)
    before = run(eps, rows)
    monkeypatch.setattr(rp, "BLOCK_CELLS", 200 * 64)
    again = run(eps, rows, before.log)
    assert again.resumed_at == 0
    same(again, run(eps, rows))


def test_candidates_do_not_depend_on_the_block_height(monkeypatch: pytest.MonkeyPatch) -> None:
    """Smaller blocks (less memory) rank the same earlier rows, nearest first."""
    rng = np.random.default_rng(7)
    vecs = rng.normal(size=(300, 16)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    got = []
    for cells in (1 << 25, 300 * 64, 300 * 2):
        monkeypatch.setattr(rp, "BLOCK_CELLS", cells)
        got.append(rp._candidates(vecs, 8))
    assert got[0] == got[1] == got[2]
    brute = vecs @ vecs.T
    for i in (1, 41, 299):
        want = sorted(range(i), key=lambda j: (-float(brute[i, j]), j))[:8]
        assert [round(float(brute[i, j]), 5) for j in got[0][i]] == [
            round(float(brute[i, j]), 5) for j in want
        ]
