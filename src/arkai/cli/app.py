"""The ``arkai`` command group: every command module registered on one click group.

Kept apart from :mod:`arkai.cli` so that importing one command module (what a DVC stage
script does, :mod:`arkai.cli.stage`) does not import every other command and the libraries
behind them; :func:`arkai.cli.main` imports this module when the command line runs."""

from __future__ import annotations

import sys
from collections.abc import Sequence

import click

from arkai.cli import guarded
from arkai.cli.agents import feedback, log_turn
from arkai.cli.ask import ask
from arkai.cli.condense import condense
from arkai.cli.config import config
from arkai.cli.do import do
from arkai.cli.doctor import doctor
from arkai.cli.eval import eval_
from arkai.cli.evidence import evidence
from arkai.cli.index import reindex
from arkai.cli.items import add, ingest, init, remember
from arkai.cli.mcp import agent, mcp
from arkai.cli.memory import belief, beliefs, forget, memory, prune, recall, reflect
from arkai.cli.patterns import patterns
from arkai.cli.pipeline import extract, reprocess, runs, status, validate
from arkai.cli.remote import remote
from arkai.cli.review import diff, log, review
from arkai.cli.run import resume, run_
from arkai.cli.search import context, library, search, show, topics
from arkai.cli.site import site
from arkai.cli.tasks import goal, task


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="arkai")
@click.option(
    "--repo",
    "-C",
    type=click.Path(file_okay=False, path_type=str),
    envvar="ARKAI_REPO",
    help="Knowledge repo to work in (default: the one containing the current folder).",
)
@click.pass_context
def cli(ctx: click.Context, repo: str | None) -> None:
    """arkai: a git repository as a knowledge library whose every claim has a receipt."""
    ctx.ensure_object(dict)
    ctx.obj["repo"] = repo


for command in (
    init, add, ingest, remember, extract, reprocess, validate, evidence, patterns, runs, status,
    reindex, search, context, library, show, topics, eval_, site, diff, log, review, config,
    doctor, run_, resume, condense,
    feedback, log_turn, do, ask, mcp, agent, remote,
    task, goal, recall, beliefs, belief, forget, prune, reflect, memory,
):  # fmt: skip
    cli.add_command(command)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; return the exit code (0 ok, 1 error, 2 usage, 3 pipeline, 4 limit, 5 none)."""
    args = list(sys.argv[1:] if argv is None else argv)
    # Outside standalone mode click returns the code given to ``ctx.exit`` (or None).
    return guarded(lambda: cli.main(args=args, prog_name="arkai", standalone_mode=False))
