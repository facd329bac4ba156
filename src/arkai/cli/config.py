"""``arkai config``: the effective parameters and where each value came from."""

from __future__ import annotations

import json

import click

from arkai.cli.common import get_repo, json_option
from arkai.cli.output import emit_json
from arkai.ops.config import config as effective_config


@click.command()
@click.argument("key", required=False)
@json_option
@click.pass_context
def config(ctx: click.Context, key: str | None, as_json: bool) -> None:
    """Show the effective parameters (params.yaml over arkai's defaults, then environment
    overrides) with where each value came from; KEY limits the list to one key or section
    (e.g. `extract` or `extract.provider`). Exits 5 when KEY matches nothing."""
    settings = effective_config(get_repo(ctx), key)
    if as_json:
        emit_json({"params": [{"key": s.key, "value": s.value, "source": s.source}
                              for s in settings]})  # fmt: skip
        return
    width = max(len(s.key) for s in settings) if settings else 0
    for s in settings:
        value = json.dumps(s.value, ensure_ascii=False)
        click.echo(f"{s.key:<{width}}  {value}  ({s.source})")
