"""``arkai task …`` and ``arkai goal …``: tasks and goals as files, and which task to do next.

``suggest`` ranks open tasks by a documented, deterministic score (see :func:`score`): the
priority, how close the due date is (the clock is passed in), whether the task serves an open
goal, and how much checked evidence stands behind it — a linked claim whose receipt still holds
adds weight, a claim a person rejected in review is called out and adds none.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import date
from typing import Any

from arkai.adapters import tasks as store
from arkai.adapters.events import utc_now
from arkai.adapters.repo import Repo
from arkai.adapters.review import apply_review, load_item_review
from arkai.errors import InvalidInputError, NotFoundError
from arkai.model.task import (
    Goal,
    Task,
    TaskFieldError,
    check_due,
    check_evidence,
    check_priority,
    check_title,
)
from arkai.ops.evidence import describe, find_evidence

PRIORITY_WEIGHT = {"high": 3.0, "medium": 2.0, "low": 1.0}
#: Due-date urgency: overdue, due within 3 days, within 7 days.
DUE_WEIGHT = (3.0, 2.0, 1.0)
GOAL_WEIGHT = 1.0
#: Each linked claim whose receipt holds adds this much, up to EVIDENCE_CAP.
EVIDENCE_WEIGHT = 0.5
EVIDENCE_CAP = 1.5
#: A linked claim that supports an active belief of the memory adds this times the belief's
#: effective confidence (the strongest one counts).
BELIEF_WEIGHT = 1.0


def _fields(fn: Any, *args: Any) -> Any:
    try:
        return fn(*args)
    except TaskFieldError as exc:
        raise InvalidInputError(str(exc)) from None


def _check_goal(repo: Repo, goal: str | None) -> str | None:
    if not goal:
        return None
    return store.find(repo.root, Goal, goal).id


def _check_evidence_ids(repo: Repo, ids: list[str]) -> tuple[str, ...]:
    """Full evidence IDs for the given IDs or prefixes (each must exist)."""
    found: tuple[str, ...] = _fields(check_evidence, [find_evidence(repo, i).line.id for i in ids])
    return found


def add_task(
    repo: Repo,
    title: str | None,
    *,
    priority: str = "medium",
    due: str | None = None,
    goal: str | None = None,
    evidence: list[str] | None = None,
    from_evidence: str | None = None,
    description: str | None = None,
    now: str | None = None,
) -> Task:
    """Create a task; ``from_evidence`` makes one from an extracted claim (its text, its ID)."""
    ids = list(evidence or [])
    if from_evidence:
        loc = find_evidence(repo, from_evidence)
        ids.insert(0, loc.line.id)
        title = title or loc.line.claim
        description = description or f"From “{loc.item.title}”: “{loc.line.quote}”"
    if not title:
        raise InvalidInputError("a task needs a title (or --from-evidence ID)")
    created = now or utc_now()
    clean = _fields(check_title, title)
    taken = {t.id for t in store.load_all(repo.root, Task)}
    task = Task(
        id=store.new_id("task", clean, created, taken),
        title=clean,
        priority=_fields(check_priority, priority),
        due=_fields(check_due, due),
        goal=_check_goal(repo, goal),
        evidence=_check_evidence_ids(repo, ids),
        description=description,
        created_at=created,
    )
    store.save(repo.root, task)
    return task


def list_tasks(repo: Repo, *, status: str | None = None) -> list[Task]:
    tasks = store.load_all(repo.root, Task)
    return [t for t in tasks if status in (None, "all", t.status)]


def set_done(repo: Repo, ident: str, done: bool, *, now: str | None = None) -> Task:
    """Mark a task done (or reopen it)."""
    task = store.find(repo.root, Task, ident)
    new = replace(
        task,
        status="done" if done else "open",
        completed_at=(now or utc_now()) if done else None,
    )
    if new != task:
        store.save(repo.root, new)
    return new


def edit_task(
    repo: Repo,
    ident: str,
    *,
    title: str | None = None,
    priority: str | None = None,
    due: str | None = None,
    goal: str | None = None,
    description: str | None = None,
) -> Task:
    """Change the given fields (``due=""`` / ``goal=""`` clears them); the ID stays."""
    task = store.find(repo.root, Task, ident)
    changes: dict[str, Any] = {}
    if title is not None:
        changes["title"] = _fields(check_title, title)
    if priority is not None:
        changes["priority"] = _fields(check_priority, priority)
    if due is not None:
        changes["due"] = _fields(check_due, due)
    if goal is not None:
        changes["goal"] = _check_goal(repo, goal)
    if description is not None:
        changes["description"] = description or None
    if not changes:
        raise InvalidInputError("nothing to change: give --title, --priority, --due or --goal")
    new = replace(task, **changes)
    if new != task:
        store.save(repo.root, new)
    return new


def add_goal(repo: Repo, title: str, *, description: str | None = None) -> Goal:
    created = utc_now()
    clean = _fields(check_title, title)
    taken = {g.id for g in store.load_all(repo.root, Goal)}
    goal = Goal(
        id=store.new_id("goal", clean, created, taken),
        title=clean,
        description=description,
        created_at=created,
    )
    store.save(repo.root, goal)
    return goal


def list_goals(repo: Repo, *, status: str | None = None) -> list[Goal]:
    return [g for g in store.load_all(repo.root, Goal) if status in (None, "all", g.status)]


def goal_done(repo: Repo, ident: str) -> Goal:
    goal = store.find(repo.root, Goal, ident)
    new = replace(goal, status="done", completed_at=goal.completed_at or utc_now())
    if new != goal:
        store.save(repo.root, new)
    return new


@dataclass(frozen=True, slots=True)
class Suggestion:
    task: Task
    score: float
    reasons: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"task": self.task.to_dict(), "score": self.score, "reasons": list(self.reasons)}


@dataclass(frozen=True, slots=True)
class EvidenceState:
    """What a linked claim says today: its receipt holds, and what review decided."""

    holds: bool
    review: str | None


def _evidence_state(repo: Repo, eid: str) -> EvidenceState | None:
    try:
        loc = find_evidence(repo, eid)
    except NotFoundError:
        return None
    span = describe(loc).span
    line = apply_review([loc.line], load_item_review(loc.item))[0]
    status = line.review.status if line.review is not None else None
    holds = span is not None and span.valid and not span.problems
    return EvidenceState(holds=holds, review=status)


def score(
    task: Task,
    *,
    today: date,
    open_goals: dict[str, Goal],
    evidence: dict[str, EvidenceState | None],
    beliefs: dict[str, tuple[str, str, float]] | None = None,
) -> Suggestion:
    """The task's rank score and the reasons, each term documented above."""
    total = PRIORITY_WEIGHT[task.priority]
    reasons = [f"priority {task.priority} (+{PRIORITY_WEIGHT[task.priority]:g})"]
    if task.due:
        days = (date.fromisoformat(task.due) - today).days
        bonus = DUE_WEIGHT[0] if days < 0 else DUE_WEIGHT[1] if days <= 3 else (
            DUE_WEIGHT[2] if days <= 7 else 0.0)  # fmt: skip
        if bonus:
            when = f"overdue by {-days} d" if days < 0 else f"due in {days} d"
            reasons.append(f"{when} (+{bonus:g})")
            total += bonus
    if task.goal and task.goal in open_goals:
        total += GOAL_WEIGHT
        reasons.append(f"serves goal “{open_goals[task.goal].title}” (+{GOAL_WEIGHT:g})")
    backed = 0.0
    for eid in task.evidence:
        state = evidence.get(eid)
        if state is None:
            reasons.append(f"evidence {eid[:8]} is gone from the library")
        elif state.review == "rejected":
            reasons.append(f"evidence {eid[:8]} was rejected in review")
        elif not state.holds:
            reasons.append(f"evidence {eid[:8]} no longer matches its transcript")
        else:
            backed += EVIDENCE_WEIGHT
    if backed:
        backed = min(backed, EVIDENCE_CAP)
        total += backed
        reasons.append(f"backed by checked evidence (+{backed:g})")
    held = [beliefs[e] for e in task.evidence if beliefs and e in beliefs]
    if held:
        bid, statement, eff = max(held, key=lambda h: (h[2], h[0]))
        bonus = round(BELIEF_WEIGHT * eff, 3)
        total += bonus
        reasons.append(
            f"supports belief {bid[:8]} “{statement}” at confidence {eff:.2f} (+{bonus:g})"
        )
    return Suggestion(task=task, score=round(total, 3), reasons=tuple(reasons))


def _beliefs_by_episode(repo: Repo, today: date) -> dict[str, tuple[str, str, float]]:
    """Evidence ID → (belief ID, statement, effective confidence) of the active beliefs it
    supports (empty before the memory's first replay)."""
    from arkai.ops.memory import load

    try:
        st = load(repo)
    except NotFoundError:
        return {}
    out: dict[str, tuple[str, str, float]] = {}
    for b in st.beliefs:
        if b.status != "active":
            continue
        eff = st.effective(b, today)
        for eid in b.episodes:
            if eid not in out or out[eid][2] < eff:
                out[eid] = (b.id, b.statement, eff)
    return out


def advice(repo: Repo, ranked: list[Suggestion], *, today: date) -> str | None:
    """Prose advice from ``tasks.provider`` (the ``suggest_tasks`` pattern, fed the ranked
    tasks and the memory context for their titles), or None with the builtin provider."""
    import json

    from arkai.adapters.events import utc_now
    from arkai.errors import ArkaiError, PipelineError
    from arkai.ops.memory import memory_context
    from arkai.patterns import get_pattern
    from arkai.providers.runner import make_runner

    name = str(repo.param("tasks.provider") or "builtin")
    if name == "builtin" or not ranked:
        return None
    params = dict(repo.params)
    model = repo.param("tasks.model") or params["extract"].get("model")
    params["extract"] = dict(params["extract"], provider=name, model=model)
    tasks = [
        {"id": s.task.id, "title": s.task.title, "priority": s.task.priority, "due": s.task.due,
         "goal": s.task.goal, "score": s.score, "reasons": list(s.reasons)}
        for s in ranked
    ]  # fmt: skip
    try:
        memory = memory_context(repo, " ".join(s.task.title for s in ranked), as_of=today).markdown
    except NotFoundError:
        memory = "(no beliefs yet)\n"
    text = f"TASKS:\n{json.dumps(tasks, ensure_ascii=False)}\n\nMEMORY:\n{memory}"
    runner = make_runner(repo.root, params, refresh=False, now=utc_now())
    try:
        out = runner.run(get_pattern("suggest_tasks", repo.root), text, {}).value
    except ArkaiError as exc:
        raise PipelineError(f"suggest_tasks via {name}: {exc}") from None
    if not isinstance(out, dict) or not str(out.get("advice") or "").strip():
        raise PipelineError(f"suggest_tasks via {name}: no advice in {str(out)[:200]!r}")
    return str(out["advice"]).strip()


def suggest(repo: Repo, *, today: date, limit: int = 10) -> list[Suggestion]:
    """Open tasks, best first (score, then due date, then age)."""
    goals = {g.id: g for g in store.load_all(repo.root, Goal) if g.status == "open"}
    tasks = [t for t in store.load_all(repo.root, Task) if t.status == "open"]
    states = {eid: _evidence_state(repo, eid) for t in tasks for eid in t.evidence}
    held = _beliefs_by_episode(repo, today)
    ranked = [score(t, today=today, open_goals=goals, evidence=states, beliefs=held) for t in tasks]
    ranked.sort(key=lambda s: (-s.score, s.task.due or "9999-12-31", s.task.created_at or ""))
    return ranked[:limit]
