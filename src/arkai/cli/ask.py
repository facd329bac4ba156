"""``arkai ask QUESTION``: a validated answer whose every citation opens its highlighted bytes."""

from __future__ import annotations

import click

from arkai.cli.common import get_repo, json_option
from arkai.cli.output import emit_json, say, stdout


@click.command()
@click.argument("question", nargs=-1, required=True)
@click.option("--save", is_flag=True, help="Also write answers/<slug>-<id8>.md and .json.")
@json_option
@click.pass_context
def ask(ctx: click.Context, question: tuple[str, ...], save: bool, as_json: bool) -> None:
    """Answer QUESTION from the library: the researcher asks the shards for evidence, the
    synthesizer writes claims citing it, the validator judges each claim (up to 3 rounds).
    Markup: after:DATE, before:DATE, in:DATE (a period), in:TYPE, tag:T. Exits 5 with "no
    evidence" when nothing supports an answer, 3 when a provider fails (re-run to resume)."""
    from arkai.ops.answer_md import render
    from arkai.ops.answer_md import save as save_answer
    from arkai.ops.ask import ask as run_ask

    repo = get_repo(ctx)
    answer = run_ask(repo, " ".join(question))
    saved = save_answer(repo, answer) if save else None
    if as_json:
        record = answer.to_dict()
        if saved is not None:
            record["saved"] = {
                "markdown": saved.markdown.relative_to(repo.root).as_posix(),
                "json": saved.json.relative_to(repo.root).as_posix(),
                "created": saved.created,
            }
        emit_json(record)
        return
    stdout.print(render(answer, repo.root), end="")
    if saved is not None:
        say(f"saved: {saved.markdown.relative_to(repo.root).as_posix()}")
