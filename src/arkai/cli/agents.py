"""``arkai feedback`` and ``arkai log-turn``: the agent harness's feedback votes and
conversation logs (seed 003)."""

from __future__ import annotations

import sys

import click

from arkai.cli.common import get_repo, json_option
from arkai.cli.output import emit_json, say
from arkai.errors import EXIT_ERROR, InvalidInputError


@click.command()
@click.argument("query")
@click.argument("ident", metavar="ID")
@click.option("--up", "vote", flag_value=1, help="ID is a good result for QUERY.")
@click.option("--down", "vote", flag_value=-1, help="ID is a bad result for QUERY.")
@json_option
@click.pass_context
def feedback(ctx: click.Context, query: str, ident: str, vote: int | None, as_json: bool) -> None:
    """Vote item ID (content ID, prefix or source ID) up or down as a result for QUERY. Votes
    are kept in feedback/ (one JSONL file per query, in git) and give the item a small, capped
    boost when that query is searched again."""
    from arkai.ops.feedback import feedback as run_feedback

    if vote is None:
        raise click.UsageError("say --up or --down")
    result = run_feedback(get_repo(ctx), query, ident, vote)
    if as_json:
        emit_json(result.to_dict())
        return
    word = "up" if vote > 0 else "down"
    say(f"voted {word}: {result.title} ({result.content_id}) for {result.query!r}; "
        f"net {result.net:+d} ({result.path})")  # fmt: skip


@click.command("log-turn")
@click.option("--session", metavar="ID", help="The conversation to append to.")
@click.option("--role", type=click.Choice(["user", "assistant", "tool"]), help="Who spoke.")
@click.option("--text", help="The turn's text (default: read from standard input).")
@click.option("--show", "show", metavar="SESSION", help="Replay SESSION's turns instead.")
@json_option
@click.pass_context
def log_turn(ctx: click.Context, session: str | None, role: str | None, text: str | None,
             show: str | None, as_json: bool) -> None:  # fmt: skip
    """Append one agent conversation turn to .arkai/agent-logs/SESSION.jsonl (redacted before
    it is written), or replay a session with --show SESSION."""
    from arkai.ops.agentlog import log_turn as run_log
    from arkai.ops.agentlog import replay

    repo = get_repo(ctx)
    if show is not None:
        if session or role or text is not None:
            raise click.UsageError("--show replays a session; it takes no --session/--role/--text")
        log = replay(repo, show)
        if as_json:
            emit_json(log.to_dict())
        else:
            for t in log.turns:
                say(f"[{t.n}] {t.at} {t.role}:")
                for line in t.text.splitlines() or [""]:
                    say(f"    {line}")
        for problem in log.problems:
            click.echo(f"arkai: error: {problem} (left out)", err=True)
        if log.problems:
            ctx.exit(EXIT_ERROR)
        return
    if not session or not role:
        raise click.UsageError("give --session and --role (or --show SESSION)")
    if text is None:
        if sys.stdin.isatty():
            raise InvalidInputError("no --text and nothing on standard input")
        text = sys.stdin.read()
    turn = run_log(repo, session, role, text)
    if as_json:
        emit_json(turn.to_dict())
        return
    hidden = sum(turn.redacted.values())
    note = f"; {hidden} secret{'s' if hidden != 1 else ''} redacted" if hidden else ""
    say(f"logged turn {turn.n} of {session} ({role}){note}")
