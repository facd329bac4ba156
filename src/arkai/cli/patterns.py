"""``arkai patterns list|show|run``."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from arkai.cli.common import get_repo, json_option
from arkai.cli.output import emit_json, say
from arkai.errors import LibraryError
from arkai.ops import Repo
from arkai.ops.patterns import list_patterns, run_pattern, show_pattern


def _repo(ctx: click.Context) -> Repo | None:
    try:
        return get_repo(ctx)
    except LibraryError:
        return None  # outside a knowledge repo: user patterns only, default params


@click.group()
def patterns() -> None:
    """Prompt patterns: the repo's patterns/, then $ARKAI_PATTERNS_PATH, then fabric's."""


@patterns.command(name="list")
@json_option
@click.pass_context
def list_(ctx: click.Context, as_json: bool) -> None:
    """List every pattern found, where it comes from, and its version."""
    found = list_patterns(_repo(ctx))
    rows = [
        {"name": p.name, "version": p.version, "source": p.source, "path": str(p.path),
         "description": p.description}
        for p in found
    ]  # fmt: skip
    if as_json:
        emit_json({"patterns": rows})
        return
    for r in rows:
        say(f"{r['name']:<22} v{r['version']:<4} {r['source']:<5} {r['description']}")  # fmt: skip


@patterns.command()
@click.argument("name")
@json_option
@click.pass_context
def show(ctx: click.Context, name: str, as_json: bool) -> None:
    """Print a pattern's system prompt (and its output schema with --json)."""
    p = show_pattern(_repo(ctx), name)
    if as_json:
        emit_json({"name": p.name, "version": p.version, "digest": p.digest, "path": str(p.path),
                   "schema": p.schema, "variables": p.variables, "system": p.system})  # fmt: skip
        return
    sys.stdout.write(p.system if p.system.endswith("\n") else p.system + "\n")


@patterns.command()
@click.argument("name")
@click.argument("source", default="-")
@click.option("--provider", help="Provider to use (default: extract.provider in params).")
@click.option("--model", help="Model for remote providers.")
@click.option("--var", "variables", multiple=True, help="NAME=VALUE for {{NAME}} (repeatable).")
@click.pass_context
def run(
    ctx: click.Context, name: str, source: str, provider: str | None, model: str | None,
    variables: tuple[str, ...],
) -> None:  # fmt: skip
    """Run pattern NAME on FILE, or on standard input with `-` (like fabric); print the
    validated JSON output."""
    text = sys.stdin.read() if source == "-" else Path(source).read_text(encoding="utf-8")
    values = dict(v.split("=", 1) for v in variables if "=" in v)
    done = run_pattern(_repo(ctx), name, text, provider=provider, model=model, variables=values)
    emit_json(done.value)
