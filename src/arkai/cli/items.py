"""``arkai init`` and ``arkai add``."""

from __future__ import annotations

from pathlib import Path

import click

from arkai.adapters.events import utc_now
from arkai.cli.common import json_option, quiet_option, repo_root
from arkai.cli.output import emit_json, progress_bar, stdout
from arkai.ops.add import add_paths, check_type, parse_tags
from arkai.ops.init import init_repo


@click.command()
@click.argument("directory", default=".", type=click.Path(file_okay=False, path_type=Path))
@click.option("--no-git", is_flag=True, help="Do not run git init / dvc init.")
@json_option
def init(directory: Path, no_git: bool, as_json: bool) -> None:
    """Scaffold a knowledge repo in DIRECTORY (git, DVC, pipeline, params, patterns)."""
    result = init_repo(directory, git=not no_git)
    if as_json:
        emit_json(result)
        return
    stdout.print(f"Knowledge repo ready in [bold]{result['path']}[/]")
    for name in result["created"]:
        stdout.print(f"  created  {name}")
    for name in result["kept"]:
        stdout.print(f"  kept     {name} (already there, not overwritten)")
    stdout.print("Next: `arkai add FILE…` then `dvc repro`.")


@click.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--tags", "-t", multiple=True, help="Comma-separated tags (repeatable).")
@click.option("--title", help="Title for the item (default: from the file).")
@click.option("--type", "content_type", help="Library folder / content type, e.g. youtube.")
@json_option
@quiet_option
@click.pass_context
def add(
    ctx: click.Context,
    paths: tuple[Path, ...],
    tags: tuple[str, ...],
    title: str | None,
    content_type: str | None,
    as_json: bool,
    quiet: bool,
) -> None:
    """Add local transcripts (.vtt, .srt, youtube-transcript-api .json, .txt, .md)."""
    root = repo_root(ctx)
    if content_type is not None:
        check_type(content_type)
    if title is not None and len(paths) > 1:
        raise click.UsageError("--title applies to one file; give one path with it")
    with progress_bar("add", quiet=quiet) as bar:
        results = add_paths(
            root,
            paths,
            now=utc_now(),
            tags=parse_tags(list(tags)),
            title=title,
            content_type=content_type,
            progress=bar,
        )
    failed = [r for r in results if r.status == "failed"]
    if as_json:
        emit_json({"results": [r.to_dict() for r in results]})
    else:
        for r in results:
            if r.status == "added":
                stdout.print(f"added    {r.id}  {r.path}")
            elif r.status == "exists":
                stdout.print(f"exists   {r.id}  {r.path} (already in the library; nothing written)")
            else:
                click.echo(f"arkai: error: {r.error}", err=True)
        if len(results) > 1 and not quiet:
            counts = {s: sum(r.status == s for r in results) for s in ("added", "exists", "failed")}
            stdout.print(
                f"{counts['added']} added, {counts['exists']} already present, "
                f"{counts['failed']} failed"
            )
    if failed:
        ctx.exit(failed[0].exit_code)
