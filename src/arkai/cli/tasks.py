"""``arkai task …`` and ``arkai goal …``: tasks and goals kept as files in the knowledge repo."""

from __future__ import annotations

import click

from arkai.cli.common import get_repo, json_option, parse_day
from arkai.cli.output import emit_json, say, show_rows
from arkai.errors import EXIT_NO_RESULTS
from arkai.model.task import PRIORITIES, Goal, Task
from arkai.ops import tasks as ops

STATUS_CHOICE = click.Choice(["open", "done", "all"])


def _task_line(t: Task) -> str:
    bits = [t.id[:8], "[x]" if t.status == "done" else "[ ]", t.priority.ljust(6), t.title]
    if t.due:
        bits.append(f"(due {t.due})")
    if t.goal:
        bits.append(f"(goal {t.goal[:8]})")
    if t.evidence:
        bits.append(f"(evidence {', '.join(e[:8] for e in t.evidence)})")
    return " ".join(bits)


def _goal_line(g: Goal) -> str:
    return f"{g.id[:8]} {'[x]' if g.status == 'done' else '[ ]'} {g.title}"


def _show(t: Task | Goal, as_json: bool, verb: str) -> None:
    if as_json:
        emit_json(t.to_dict())
    else:
        say(f"{verb} {'task' if isinstance(t, Task) else 'goal'} {t.id[:8]}: {t.title}")


@click.group()
def task() -> None:
    """Tasks: things to do, with priority, due date, goal and the evidence behind them."""


@task.command("add")
@click.argument("title", nargs=-1)
@click.option("--priority", type=click.Choice(PRIORITIES), default="medium", show_default=True)
@click.option("--due", metavar="YYYY-MM-DD", help="Due date.")
@click.option("--goal", metavar="ID", help="The goal this task rolls up to (ID or prefix).")
@click.option("--evidence", "evidence", multiple=True, metavar="ID", help="A claim behind it.")
@click.option("--from-evidence", metavar="ID", help="Make the task from an extracted claim.")
@click.option("--description", help="Longer text.")
@json_option
@click.pass_context
def task_add(
    ctx: click.Context,
    title: tuple[str, ...],
    priority: str,
    due: str | None,
    goal: str | None,
    evidence: tuple[str, ...],
    from_evidence: str | None,
    description: str | None,
    as_json: bool,
) -> None:
    """Add a task: `arkai task add "Try the retrieval trick" --priority high --due 2026-12-01`."""
    t = ops.add_task(
        get_repo(ctx), " ".join(title) or None, priority=priority, due=due, goal=goal,
        evidence=list(evidence), from_evidence=from_evidence, description=description,
    )  # fmt: skip
    _show(t, as_json, "added")


@task.command("list")
@click.option("--status", type=STATUS_CHOICE, default="open", show_default=True)
@json_option
@click.pass_context
def task_list(ctx: click.Context, status: str, as_json: bool) -> None:
    """List tasks (exit 5 when there are none)."""
    found = ops.list_tasks(get_repo(ctx), status=status)
    show_rows(
        found, as_json, "tasks", _task_line, f"no {'' if status == 'all' else status + ' '}tasks"
    )


def _set_done(name: str, done: bool, verb: str, doc: str) -> None:
    @task.command(name, help=doc)
    @click.argument("ident", metavar="ID")
    @json_option
    @click.pass_context
    def command(ctx: click.Context, ident: str, as_json: bool) -> None:
        _show(ops.set_done(get_repo(ctx), ident, done), as_json, verb)


_set_done("done", True, "done:", "Mark a task done.")
_set_done("reopen", False, "reopened", "Open a done task again.")


@task.command("edit")
@click.argument("ident", metavar="ID")
@click.option("--title")
@click.option("--priority", type=click.Choice(PRIORITIES))
@click.option("--due", metavar="YYYY-MM-DD", help="New due date ('' clears it).")
@click.option("--goal", metavar="ID", help="New goal ('' clears it).")
@click.option("--description")
@json_option
@click.pass_context
def task_edit(
    ctx: click.Context,
    ident: str,
    title: str | None,
    priority: str | None,
    due: str | None,
    goal: str | None,
    description: str | None,
    as_json: bool,
) -> None:
    """Change a task's title, priority, due date, goal or description (its ID stays)."""
    t = ops.edit_task(
        get_repo(ctx), ident, title=title, priority=priority, due=due, goal=goal,
        description=description,
    )  # fmt: skip
    _show(t, as_json, "edited")


@task.command("suggest")
@click.option("--as-of", metavar="YYYY-MM-DD", help="Rank as of this day (default: today, UTC).")
@click.option("--limit", type=click.IntRange(1, 1000), default=10, show_default=True)
@json_option
@click.pass_context
def task_suggest(ctx: click.Context, as_of: str | None, limit: int, as_json: bool) -> None:
    """Which open task to do next, with the reasons (exit 5 when none is open)."""
    today = parse_day(as_of)
    repo = get_repo(ctx)
    ranked = ops.suggest(repo, today=today, limit=limit)
    advice = ops.advice(repo, ranked, today=today)
    if as_json:
        out = {"as_of": today.isoformat(), "suggestions": [s.to_dict() for s in ranked]}
        emit_json(out | ({"advice": advice} if advice else {}))
    else:
        for n, s in enumerate(ranked, 1):
            say(f"{n}. {_task_line(s.task)}  score {s.score:g}")
            say("   " + "; ".join(s.reasons))
        if advice:
            say("")
            say(advice)
        if not ranked:
            say("no open tasks")
    if not ranked:
        ctx.exit(EXIT_NO_RESULTS)


@click.group()
def goal() -> None:
    """Goals: larger objectives that tasks roll up to."""


@goal.command("add")
@click.argument("title", nargs=-1, required=True)
@click.option("--description", help="Longer text.")
@json_option
@click.pass_context
def goal_add(
    ctx: click.Context, title: tuple[str, ...], description: str | None, as_json: bool
) -> None:
    """Add a goal."""
    _show(ops.add_goal(get_repo(ctx), " ".join(title), description=description), as_json, "added")


@goal.command("list")
@click.option("--status", type=STATUS_CHOICE, default="open", show_default=True)
@json_option
@click.pass_context
def goal_list(ctx: click.Context, status: str, as_json: bool) -> None:
    """List goals (exit 5 when there are none)."""
    found = ops.list_goals(get_repo(ctx), status=status)
    show_rows(found, as_json, "goals", _goal_line, "no goals")


@goal.command("done")
@click.argument("ident", metavar="ID")
@json_option
@click.pass_context
def goal_done(ctx: click.Context, ident: str, as_json: bool) -> None:
    """Mark a goal done."""
    _show(ops.goal_done(get_repo(ctx), ident), as_json, "done:")
