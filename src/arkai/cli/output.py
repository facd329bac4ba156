"""Printing for the CLI: JSON to stdout for agents, rich text for people, progress on stderr."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import click
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)

from arkai.core import canonjson
from arkai.errors import EXIT_NO_RESULTS

#: What the CLI prints is mostly the user's text — titles, paths, errors, run details — so
#: rich's markup (``[/bold]`` in a file name stopped ``arkai status`` with a MarkupError,
#: ``[draft]`` in a title vanished) and its ``:emoji:`` codes (``:rocket:`` became 🚀) are off
#: on both consoles; styled output asks for them where it prints its own words.
stdout = Console(highlight=False, soft_wrap=True, markup=False, emoji=False)
stderr = Console(stderr=True, highlight=False, soft_wrap=True, markup=False, emoji=False)


def say(text: object = "") -> None:
    """A line of plain text on stdout (no rich markup, emoji codes or highlighting)."""
    stdout.print(text)


def emit_json(obj: Any) -> None:
    """Canonical JSON on stdout (sorted keys, UTF-8)."""
    sys.stdout.write(canonjson.dumps(obj))
    sys.stdout.flush()


def show_rows(
    rows: Sequence[Any], as_json: bool, key: str, line: Callable[[Any], str], empty: str
) -> None:
    """A listing: ``{key: [row.to_dict(), …]}`` as JSON, else ``line(row)`` a row (``empty``
    when there are none); no rows exit 5 (no results) either way."""
    if as_json:
        emit_json({key: [r.to_dict() for r in rows]})
    else:
        for r in rows:
            say(line(r))
        if not rows:
            say(empty)
    if not rows:
        raise click.exceptions.Exit(EXIT_NO_RESULTS)


def show_progress(quiet: bool) -> bool:
    return not quiet and sys.stderr.isatty()


@contextmanager
def progress_bar(label: str, *, quiet: bool) -> Iterator[Any]:
    """A rich progress bar on stderr, or a no-op callback when quiet / not a TTY.

    Yields ``update(done, total, what)``.
    """
    if not show_progress(quiet):
        yield lambda done, total, what: None
        return
    with Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.fields[what]}", style="dim", markup=False),  # an item's title
        console=stderr,
        transient=True,
    ) as prog:
        task = prog.add_task(label, total=None, what="")

        def update(done: int, total: int, what: str) -> None:
            prog.update(task, completed=done, total=total, what=what[:40])

        yield update


@contextmanager
def progress_status(label: str, *, quiet: bool) -> Iterator[Any]:
    """A one-line rich status on stderr (spinner, elapsed time, the latest step), or a no-op
    when quiet / not a TTY. Yields ``say(step)``."""
    if not show_progress(quiet):
        yield lambda step: None
        return
    with Progress(
        SpinnerColumn(),
        TextColumn("[bold]{task.description}"),
        TimeElapsedColumn(),
        TextColumn("{task.fields[step]}", style="dim", markup=False),
        console=stderr,
        transient=True,
    ) as prog:
        task = prog.add_task(label, total=None, step="")

        def say(step: str) -> None:
            prog.update(task, step=step)

        yield say
