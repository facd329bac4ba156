"""Helpers shared by the command modules."""

from __future__ import annotations

from pathlib import Path

import click

from arkai.adapters.layout import find_root

json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON on stdout.")
quiet_option = click.option("--quiet", "-q", is_flag=True, help="No progress bars or chatter.")


def repo_root(ctx: click.Context) -> Path:
    """The knowledge repo root from ``--repo`` / ``$ARKAI_REPO`` / the current folder."""
    repo = (ctx.find_root().obj or {}).get("repo")
    return find_root(Path(repo) if repo else None)
