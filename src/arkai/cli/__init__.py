"""The ``arkai`` command line. Each command group lives in its own module and calls one
operation; errors are mapped to exit codes here, in one place."""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Callable, Sequence

import click

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
from arkai.core.redact import scrub
from arkai.errors import EXIT_ERROR, EXIT_USAGE, ArkaiError


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


INTERRUPTED = "arkai: interrupted (finished work is kept; run the command again to resume)"


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; return the exit code (0 ok, 1 error, 2 usage, 3 pipeline, 4 limit, 5 none)."""
    args = list(sys.argv[1:] if argv is None else argv)
    # Outside standalone mode click returns the code given to ``ctx.exit`` (or None).
    return guarded(lambda: cli.main(args=args, prog_name="arkai", standalone_mode=False))


def guarded(run: Callable[[], object]) -> int:
    """Call ``run`` and map what it raises to an exit code and one line on stderr: the one
    place where errors become exit codes (the CLI and the DVC stage scripts use it)."""
    try:
        code = run()
    except click.exceptions.Exit as exc:
        return int(exc.exit_code)
    except click.exceptions.Abort as exc:
        # click turns Ctrl-C / SIGTERM (a KeyboardInterrupt) into Abort.
        if isinstance(exc.__cause__, KeyboardInterrupt):
            click.echo(INTERRUPTED, err=True)
        else:
            click.echo("aborted", err=True)
        return 130
    except click.ClickException as exc:
        exc.show()
        return EXIT_USAGE if isinstance(exc, click.UsageError) else exc.exit_code
    except ArkaiError as exc:
        click.echo(f"arkai: error: {scrub(str(exc))}", err=True)
        return exc.exit_code
    except KeyboardInterrupt:
        click.echo(INTERRUPTED, err=True)
        return 130
    except OSError as exc:  # the system said no (disk full, permissions, a closed stdin)
        where = f"{exc.filename}: " if exc.filename else ""
        click.echo(f"arkai: error: {where}{exc.strerror or exc}", err=True)
        return EXIT_ERROR
    except Exception as exc:  # the last line of defence: one line unless ARKAI_DEBUG=1
        if os.environ.get("ARKAI_DEBUG") == "1":
            traceback.print_exc()
        else:
            click.echo(
                f"arkai: unexpected error: {type(exc).__name__}: {scrub(str(exc))} "
                "(ARKAI_DEBUG=1 for details)",
                err=True,
            )
        return EXIT_ERROR
    return code if isinstance(code, int) else 0
