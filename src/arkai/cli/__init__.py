"""The ``arkai`` command line. Each command group lives in its own module and calls one
operation; errors are mapped to exit codes here, in one place."""

from __future__ import annotations

import os
import traceback
from collections.abc import Callable, Sequence
from typing import Any

import click

from arkai.errors import EXIT_ERROR, EXIT_USAGE, ArkaiError

INTERRUPTED = "arkai: interrupted (finished work is kept; run the command again to resume)"


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; return the exit code (0 ok, 1 error, 2 usage, 3 pipeline, 4 limit, 5 none)."""
    from arkai.cli.app import main as run

    return run(argv)


def __getattr__(name: str) -> Any:
    # ``arkai.cli.cli``, the click group, is built on first use (arkai.cli.app).
    if name == "cli":
        from arkai.cli.app import cli

        return cli
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _interrupt_within(exc: BaseException) -> bool:
    """Whether ``exc`` was raised because of a stop signal: a ``KeyboardInterrupt`` among its
    causes. The interpreter wraps what some hooks raise — a signal that lands in a descriptor's
    ``__set_name__`` while a lazily imported module makes a class (``cached_property``'s is
    Python code) comes out as ``RuntimeError: Error calling __set_name__`` — and the run's
    130 became an "unexpected error" (seen once in the suite)."""
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        if isinstance(cur, KeyboardInterrupt):
            return True
        seen.add(id(cur))
        cur = cur.__cause__ or cur.__context__
    return False


def guarded(run: Callable[[], object]) -> int:
    """Call ``run`` and map what it raises to an exit code and one line on stderr: the one
    place where errors become exit codes (the CLI and the DVC stage scripts use it)."""
    try:
        code = run()
    except click.exceptions.Exit as exc:
        return int(exc.exit_code)
    except click.exceptions.Abort as exc:
        # click turns Ctrl-C / SIGTERM (a KeyboardInterrupt) into Abort, and so an EOFError
        # from anywhere in the command; its prompts raise Abort themselves (no cause) at the
        # end of their input. An EOFError of arkai's code or a library's (an empty file
        # numpy or pickle was given) is an error, not the user stopping: "aborted" with 130
        # said nothing of what failed.
        if isinstance(exc.__cause__, KeyboardInterrupt):
            click.echo(INTERRUPTED, err=True)
        elif isinstance(exc.__cause__, EOFError):
            return _unexpected(exc.__cause__)
        else:
            click.echo("aborted", err=True)
        return 130
    except click.ClickException as exc:
        exc.show()
        return EXIT_USAGE if isinstance(exc, click.UsageError) else exc.exit_code
    except ArkaiError as exc:
        from arkai.core.redact import scrub  # (not imported before it is needed: ≈ 0.3 s)

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
        if _interrupt_within(exc):
            click.echo(INTERRUPTED, err=True)
            return 130
        return _unexpected(exc)
    return code if isinstance(code, int) else 0


def _unexpected(exc: BaseException) -> int:
    """An error no part of arkai named: its class and message on one line (the traceback with
    ``ARKAI_DEBUG=1``)."""
    from arkai.core.redact import scrub  # (not imported before it is needed: ≈ 0.3 s)

    if os.environ.get("ARKAI_DEBUG") == "1":
        traceback.print_exception(exc)
    else:
        click.echo(
            f"arkai: unexpected error: {type(exc).__name__}: {scrub(str(exc))} "
            "(ARKAI_DEBUG=1 for details)",
            err=True,
        )
    return EXIT_ERROR
