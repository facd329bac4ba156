"""The one runner of the DVC stage scripts (``stages/*.py``).

A stage script names the operation it runs and how its result is shown::

    raise SystemExit(run_stage("index", lambda repo, progress: run_index(repo, progress=progress),
                               show_index))

:func:`run_stage` opens the repo (``$ARKAI_REPO`` or the current folder), shows a progress bar
on stderr when attached to a terminal, calls the operation, renders its result and maps
errors to exit codes exactly as the CLI does (:func:`arkai.cli.guarded`) — without going
through the CLI's argument parsing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from arkai.cli import guarded
from arkai.cli.output import progress_bar
from arkai.ops import Repo

T = TypeVar("T")


def run_stage(
    name: str,
    op: Callable[[Repo, Callable[..., None]], T],
    show: Callable[[T], int],
) -> int:
    """Run stage ``name``: ``op(repo, progress)``, then ``show(result)``; the exit code."""

    def body() -> int:
        repo = Repo.open()
        with progress_bar(name, quiet=False) as bar:

            def progress(done: int, total: int, what: str = "", *_: Any) -> None:
                bar(done, total, what)

            result = op(repo, progress)
        return show(result)

    return guarded(body)
