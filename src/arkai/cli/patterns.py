"""``arkai patterns list|show|run``."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from arkai.adapters.events import utc_now
from arkai.adapters.layout import find_root
from arkai.adapters.params import DEFAULTS, load_params
from arkai.cli.common import json_option
from arkai.cli.output import emit_json, stdout
from arkai.core import canonjson
from arkai.errors import LibraryError
from arkai.ops.extract import make_runner
from arkai.patterns import get_pattern, get_patterns


def _root(ctx: click.Context) -> Path | None:
    repo = (ctx.find_root().obj or {}).get("repo")
    try:
        return find_root(Path(repo) if repo else None)
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
    found = get_patterns(_root(ctx))
    rows = [
        {"name": p.name, "version": p.version, "source": p.source, "path": str(p.path),
         "description": p.description}
        for p in found.values()
    ]  # fmt: skip
    if as_json:
        emit_json({"patterns": rows})
        return
    for r in rows:
        stdout.print(f"{r['name']:<22} v{r['version']:<4} {r['source']:<5} {r['description']}",
                     markup=False)  # fmt: skip


@patterns.command()
@click.argument("name")
@json_option
@click.pass_context
def show(ctx: click.Context, name: str, as_json: bool) -> None:
    """Print a pattern's system prompt (and its output schema with --json)."""
    p = get_pattern(name, _root(ctx))
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
    root = _root(ctx)
    params = load_params(root) if root else {k: dict(v) for k, v in DEFAULTS.items()}
    if provider:
        params["extract"]["provider"] = provider
    if model:
        params["extract"]["model"] = model
    text = sys.stdin.read() if source == "-" else Path(source).read_text(encoding="utf-8")
    pattern = get_pattern(name, root)
    # Outside a knowledge repo responses are cached under ~/.cache/arkai, never in the cwd.
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "arkai"
    runner = make_runner(root or cache, params, refresh=False, now=utc_now())
    values = dict(v.split("=", 1) for v in variables if "=" in v)
    result = runner.run(pattern, text, {"variables": values})
    sys.stdout.write(canonjson.dumps(result.value))
