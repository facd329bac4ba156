"""Helpers shared by the command modules."""

from __future__ import annotations

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
