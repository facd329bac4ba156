"""The belief replay on hand-made vectors: every lifecycle rule, decisions and determinism."""

from __future__ import annotations

from datetime import date

import numpy as np
import pytest

from arkai.memory.contradict import check
from arkai.memory.replay import Decisions, ReplayParams, belief_id, effective_confidence, replay
from arkai.model.belief import Episode


def vec(*xs: float) -> np.ndarray:
    v = np.array(xs + (0.0,) * (8 - len(xs)), dtype=np.float32)
    return v / np.linalg.norm(v)


def with_sim(base: np.ndarray, other: np.ndarray, sim: float) -> np.ndarray:
    """A unit vector whose cosine with ``base`` is ``sim`` (``other`` ⟂ ``base``)."""
    return (sim * base + np.sqrt(1 - sim**2) * other).astype(np.float32)


E0, E1, E2, E3 = (vec(*([0.0] * i + [1.0])) for i in range(4))


def ep(n: int, text: str, day: str, item: str = "i1") -> Episode:
    return Episode(id=f"{n:016x}", statement=text, date=day, item=item, position=n)


def run(eps: list[Episode], rows: list[np.ndarray], **kw: object) -> object:
    return replay(
        eps, np.stack(rows), params=ReplayParams(**kw.pop("params", {})),  # type: ignore[arg-type]
        decisions=kw.pop("decisions", Decisions()), check=check,  # type: ignore[arg-type]
    )  # fmt: skip


def test_reinforce_contradict_create() -> None:
    eps = [
        ep(1, "Remote caches make builds faster.", "2026-01-01"),
        ep(2, "Remote caches make builds much faster.", "2026-01-10", "i2"),
        ep(3, "Remote caches make builds slower.", "2026-02-01", "i3"),
        ep(4, "Bees visit lavender in June.", "2026-02-02"),
    ]
    rows = [E0, with_sim(E0, E1, 0.9), with_sim(E0, E2, 0.78), E3]
    res = run(eps, rows)
    by = {b.statement: b for b in res.beliefs}  # type: ignore[attr-defined]
    first = by["Remote caches make builds faster."]
    assert first.status == "invalidated"
    assert first.episodes == (eps[0].id, eps[1].id)
    assert first.confidence == pytest.approx(0.6 + 0.4 * 0.2)
    assert first.reinforced == "2026-01-10"
    assert first.contradicted_by == (eps[2].id,)
    repl = by["Remote caches make builds slower."]
    assert first.replaced_by == repl.id and repl.status == "active" and repl.confidence == 0.6
    kinds = [(c.kind, c.belief) for c in res.changes]  # type: ignore[attr-defined]
    assert kinds == [
        ("create", first.id), ("reinforce", first.id), ("create", repl.id),
        ("contradict", first.id), ("create", by["Bees visit lavender in June."].id),
    ]  # fmt: skip
    contra = res.changes[3]  # type: ignore[attr-defined]
    assert contra.episode == eps[2].id and contra.other == repl.id
    assert contra.note.startswith("antonym")


def test_a_negated_near_copy_never_reinforces() -> None:
    eps = [ep(1, "Caching is safe for builds.", "2026-01-01"),
           ep(2, "Caching is not safe for builds.", "2026-01-02")]  # fmt: skip
    res = run(eps, [E0, with_sim(E0, E1, 0.95)])
    assert [b.status for b in res.beliefs] == ["invalidated", "active"]  # type: ignore[attr-defined]


def test_unrelated_in_band_is_a_new_belief() -> None:
    eps = [ep(1, "Hives are weighed every morning.", "2026-01-01"),
           ep(2, "Hives are painted white in spring.", "2026-01-02")]  # fmt: skip
    res = run(eps, [E0, with_sim(E0, E1, 0.75)])
    assert [b.status for b in res.beliefs] == ["active", "active"]  # type: ignore[attr-defined]


def test_forget_sticks_and_pin_blocks_invalidation() -> None:
    eps = [ep(1, "Remote caches make builds faster.", "2026-01-01"),
           ep(2, "Remote caches make builds faster indeed.", "2026-01-05"),
           ep(3, "Remote caches make builds slower.", "2026-01-06")]  # fmt: skip
    rows = [E0, with_sim(E0, E1, 0.95), with_sim(E0, E2, 0.8)]
    bid = belief_id("fact", eps[0].id)
    res = run(eps, rows, decisions=Decisions(forget={bid: "wrong"}))
    first = res.beliefs[0]  # type: ignore[attr-defined]
    assert first.status == "forgotten" and first.episodes == (eps[0].id, eps[1].id)
    assert len(res.beliefs) == 2  # the near-copy was absorbed, not re-created  # type: ignore[attr-defined]
    res = run(eps, rows, decisions=Decisions(pin={bid: ""}))
    first = res.beliefs[0]  # type: ignore[attr-defined]
    assert first.pinned and first.status == "active"
    assert "conflict" in [c.kind for c in res.changes]  # type: ignore[attr-defined]


def test_decay_prune_and_insight() -> None:
    eps = [ep(1, "Old news about hives.", "2025-01-01"),
           ep(2, "Hash every raw sensor export.", "2026-01-01", "a"),
           ep(3, "Hash each raw sensor export first.", "2026-01-02", "b")]  # fmt: skip
    rows = [E0, E1, with_sim(E1, E2, 0.82)]
    assert run(eps, rows).beliefs[0].status == "active"  # type: ignore[attr-defined]
    res = run(eps, rows, params={"auto_prune": True})
    old = res.beliefs[0]  # type: ignore[attr-defined]
    assert old.status == "pruned"  # 0.6 · 0.5^(366/30) < 0.05
    insight = [b for b in res.beliefs if b.type == "insight"]  # type: ignore[attr-defined]
    assert len(insight) == 1 and insight[0].items == ("a", "b")
    assert set(insight[0].episodes) == {eps[1].id, eps[2].id}
    b = res.beliefs[1]  # type: ignore[attr-defined]
    assert effective_confidence(b, date(2026, 1, 31), 30) == pytest.approx(0.3)
    assert effective_confidence(b, date(2025, 12, 1), 30) == pytest.approx(0.6)


def test_replay_is_deterministic() -> None:
    rng = np.random.default_rng(7)
    rows = rng.normal(size=(300, 8)).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    eps = [ep(i, f"statement {i % 17} about topic {i % 5}", f"2026-01-{1 + i % 28:02d}")
           for i in range(300)]  # fmt: skip
    a, b = run(eps, list(rows)), run(eps, list(rows))
    assert [x.to_dict() for x in a.beliefs] == [x.to_dict() for x in b.beliefs]  # type: ignore[attr-defined]
    assert [x.to_dict() for x in a.changes] == [x.to_dict() for x in b.changes]  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("old", "new", "rule"),
    [
        ("Caching is safe for builds.", "Caching isn't safe for builds.", "negation"),
        ("Remote caches make builds faster.", "Remote caches make builds slower.", "antonym"),
        (
            "The bug made hives read 1.5 degrees warm.",
            "The bug made hives read 2.5 degrees warm.",
            "numbers",
        ),
        ("The firmware bug was found in 2021.", "The firmware bug was found in 2022.", "numbers"),
        ("Coverage rose to 30% last year.", "Coverage rose to 45 percent last year.", "numbers"),
    ],
)
def test_conflict_rules(old: str, new: str, rule: str) -> None:
    got = check(old, new)
    assert got is not None and got.rule == rule


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("In 2022, a clean build took 14 minutes.", "A clean build still takes 12 minutes."),
        ("Remote caches make builds faster.", "Bees visit lavender in June."),
        ("Caching is safe for builds.", "Caching is safe for builds."),
        ("Caching is not cheap.", "Caching is not cheap at scale."),
    ],
)
def test_no_conflict(old: str, new: str) -> None:
    assert check(old, new) is None


def test_a_reinforced_belief_is_the_one_replace_makes() -> None:
    """``Belief.reinforced_by`` names every field (a field added to ``Belief`` and not to it
    fails here): the belief ``dataclasses.replace`` gives, for a later and an earlier date."""
    import dataclasses

    from arkai.model.belief import Belief

    values: dict[str, object] = {
        "id": "b1", "statement": "s", "type": "fact", "confidence": 0.5, "status": "active",
        "created": "2026-01-01", "reinforced": "2026-02-01", "episodes": ("e1",),
        "items": ("i1",), "contradicted_by": ("e2",), "replaced_by": "b2", "pinned": True,
    }  # fmt: skip
    assert [f.name for f in dataclasses.fields(Belief)] == list(values)
    b = Belief(**values)  # type: ignore[arg-type]
    for day in ("2026-03-01", "2025-12-31"):
        want = dataclasses.replace(b, confidence=0.75, reinforced=max(b.reinforced, day))
        assert b.reinforced_by(0.75, day) == want


def test_reinforcements_held_while_replaying_reach_the_belief() -> None:
    """The replay holds a belief's reinforcements aside while it replays and writes them at the
    end: twice reinforced then contradicted, the invalidated belief has both (confidence and
    latest date); its replacement, made after, has none of them."""
    eps = [
        ep(1, "Remote caches make builds faster.", "2026-01-01"),
        ep(2, "Remote caches make builds much faster.", "2026-01-10", "i2"),
        ep(3, "Remote caches make the builds faster.", "2026-01-20", "i3"),
        ep(4, "Remote caches make builds slower.", "2026-02-01", "i4"),
    ]
    rows = [E0, with_sim(E0, E1, 0.9), with_sim(E0, E2, 0.92), with_sim(E0, E3, 0.78)]
    res = run(eps, rows)
    by = {b.statement: b for b in res.beliefs}  # type: ignore[attr-defined]
    first = by["Remote caches make builds faster."]
    assert first.status == "invalidated"
    assert first.confidence == pytest.approx(round(0.68 + 0.32 * 0.2, 6))
    assert first.reinforced == "2026-01-20"
    assert first.episodes == (eps[0].id, eps[1].id, eps[2].id)
    repl = by["Remote caches make builds slower."]
    assert (repl.confidence, repl.reinforced) == (0.6, "2026-02-01")
    confs = [c.confidence for c in res.changes if c.kind == "reinforce"]  # type: ignore[attr-defined]
    assert confs == [0.68, round(0.68 + 0.32 * 0.2, 6)]


def test_a_reinforcement_change_is_the_one_its_class_makes() -> None:
    """The replay makes its reinforcement changes without ``Change.__init__`` (half the
    cost): each is equal to the one the class makes, with every field set (a field added to
    ``Change`` and not to the replay fails here)."""
    import dataclasses

    from arkai.memory.replay import _State
    from arkai.model.belief import Change

    st = _State(ReplayParams(), Decisions(), check, 0)
    st.log("create", "b0", "2026-01-01", episode="e0", confidence=0.6)
    st.log_reinforce("b1", "2026-01-02", "e1", 0.68, 0.91)
    made = st.changes[-1]
    want = Change(2, "reinforce", "b1", "2026-01-02", episode="e1", confidence=0.68,
                  similarity=0.91)  # fmt: skip
    assert made == want and made.to_dict() == want.to_dict()
    assert [getattr(made, f.name) for f in dataclasses.fields(Change)] == [
        getattr(want, f.name) for f in dataclasses.fields(Change)
    ]
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.seq = 3  # type: ignore[misc]


def test_a_belief_made_again_starts_without_the_earlier_reinforcements() -> None:
    """A belief made again (a second episode with its seed: the replay's input is not
    deduplicated here) starts at ``new_confidence``: the reinforcements held for the one
    before are not written to it."""
    eps = [
        ep(1, "Remote caches make builds faster.", "2026-01-01"),
        ep(2, "Remote caches make builds much faster.", "2026-01-10", "i2"),
        ep(1, "Bees visit lavender in June.", "2026-02-01", "i3"),
    ]
    res = run(eps, [E0, with_sim(E0, E1, 0.9), E3])
    kinds = [c.kind for c in res.changes]  # type: ignore[attr-defined]
    assert kinds == ["create", "reinforce", "create"]
    (b,) = set(res.beliefs)  # type: ignore[attr-defined]  (listed at each making)
    assert (b.statement, b.confidence, b.reinforced) == ("Bees visit lavender in June.", 0.6,
                                                         "2026-02-01")  # fmt: skip
