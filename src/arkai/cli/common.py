"""Helpers shared by the command modules."""

from __future__ import annotations

from datetime import UTC, date, datetime

import click

from arkai.ops import Repo

json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON on stdout.")
quiet_option = click.option("--quiet", "-q", is_flag=True, help="No progress bars or chatter.")


def get_repo(ctx: click.Context) -> Repo:
    """The knowledge repo from ``--repo`` / ``$ARKAI_REPO`` / the current folder, built once
    per invocation (so params are read once)."""
    obj = ctx.find_root().ensure_object(dict)
    if "repo_obj" not in obj:
        obj["repo_obj"] = Repo.open(obj.get("repo"))
    repo: Repo = obj["repo_obj"]
    return repo


def parse_day(as_of: str | None) -> date:
    """``--as-of YYYY-MM-DD``, or today (UTC) when not given."""
    try:
        return date.fromisoformat(as_of) if as_of else datetime.now(UTC).date()
    except ValueError:
        raise click.BadParameter(
            f"{as_of!r} is not a date YYYY-MM-DD", param_hint="--as-of"
        ) from None
