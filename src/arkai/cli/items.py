"""``arkai init``, ``arkai add``, ``arkai remember``, ``arkai ingest``."""

from __future__ import annotations

import sys
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import click

from arkai.cli.common import get_repo, json_option, quiet_option
from arkai.cli.output import emit_json, progress_bar, say
from arkai.errors import EXIT_USAGE, InvalidInputError
from arkai.ops.add import AddRequest, AddResult
from arkai.ops.add import add as add_op
from arkai.ops.add import ingest as ingest_op
from arkai.ops.init import init_repo
from arkai.ops.remember import remember as remember_op


@click.command()
@click.argument("directory", default=".", type=click.Path(file_okay=False, path_type=Path))
@click.option("--no-git", is_flag=True, help="Do not run git init / dvc init.")
@json_option
def init(directory: Path, no_git: bool, as_json: bool) -> None:
    """Scaffold a knowledge repo in DIRECTORY (git, DVC, pipeline, params, patterns)."""
    result = init_repo(directory, git=not no_git)
    if as_json:
        emit_json(result.to_dict())
        return
    say(f"Knowledge repo ready in {result.path}")
    for name in result.created:
        say(f"  created  {name}")
    for name in result.kept:
        say(f"  kept     {name} (already there, not overwritten)")
    say("Next: `arkai add FILE…` then `dvc repro`.")


def add_options(f: click.decorators.FC) -> click.decorators.FC:
    """Options shared by ``add`` and ``ingest``."""
    for opt in reversed(
        [
            click.argument("inputs", nargs=-1, type=str),
            click.option("--from", "from_file", type=click.Path(dir_okay=False, path_type=Path),
                         help="Read inputs from FILE: a URL/path per line, then tags."),
            click.option("--tags", "-t", multiple=True, help="Comma-separated tags (repeatable)."),
            click.option("--title", help="Title for the item (one input only)."),
            click.option("--type", "content_type",
                         help="Source kind (youtube, podcast, article, pdf, chat, "
                              "transcript, note) or library folder."),
            click.option("--transcript", type=click.Path(path_type=Path),
                         help="Attach a local VTT/SRT/JSON to a URL's identity (offline)."),
            click.option("--episode", "episodes", multiple=True,
                         help="Feeds: episode number, GUID, 'latest' or 'all' (repeatable)."),
            click.option("--all-branches", is_flag=True,
                         help="Chat exports: keep every branch, not only the active one."),
            click.option("--redact/--no-redact", default=None,
                         help="Redact secrets and personal data (default: on for chat exports)."),
            click.option("--explain", is_flag=True, help="Show how each input was routed."),
            json_option,
            quiet_option,
        ]
    ):  # fmt: skip
        f = opt(f)
    return f


def _request(kw: dict[str, Any]) -> AddRequest:
    if not kw["inputs"] and kw["from_file"] is None:
        raise click.UsageError("give at least one URL or path, or --from FILE")
    return AddRequest(
        inputs=tuple(str(i) for i in kw["inputs"]),
        from_file=kw["from_file"],
        tags=tuple(kw["tags"]),
        title=kw["title"],
        content_type=kw["content_type"],
        transcript=kw["transcript"],
        episodes=tuple(str(e) for e in kw["episodes"]),
        all_branches=bool(kw["all_branches"]),
        redact=kw["redact"],
        explain=bool(kw["explain"]),
    )


_LABEL = {
    "added": "added   ",
    "updated": "updated ",
    "exists": "exists  ",
    "kept": "kept    ",
    "skipped": "skipped ",
}


def report(results: list[AddResult], *, as_json: bool, quiet: bool, explain: bool) -> None:
    if as_json:
        emit_json({"results": [r.to_dict() for r in results]})
        return
    for r in results:
        if explain and "route" in r.details:
            rt = r.details["route"]
            say(f"route    {r.source} → {rt['source']} ({rt['layer']}: {rt['reason']})")
        if r.status == "failed":
            click.echo(f"arkai: error: {r.error}", err=True)
        elif r.status == "skipped":
            say(f"skipped  {r.error}")
        else:
            note = {
                "exists": " (already in the library; nothing written)",
                "kept": f" ({r.details.get('reason', '')}; nothing written)",
            }.get(r.status, "")
            say(f"{_LABEL[r.status]} {r.id}  {r.path}{note}")
    if len(results) > 1 and not quiet:
        counts = {s: sum(r.status == s for r in results) for s in _LABEL} | {
            "failed": sum(r.status == "failed" for r in results)
        }
        say(
            f"{counts['added']} added, {counts['updated']} updated, "
            f"{counts['exists']} already present, {counts['kept']} kept (edited here), "
            f"{counts['skipped']} skipped, {counts['failed']} failed"
        )
        for r in results:
            if r.status == "failed":
                say(f"  failed: {r.error}")


def _exit_code(results: list[AddResult]) -> int:
    failed = [r for r in results if r.status == "failed"]
    return failed[0].exit_code if failed else 0


@click.command()
@add_options
@click.pass_context
def add(ctx: click.Context, /, **kw: Any) -> None:
    """Add sources: local files (.vtt .srt .json .txt .md .html .pdf, chat exports .json/.zip,
    feeds .rss/.xml), folders of them, or URLs (YouTube, podcast feeds, web articles, PDFs).

    Each input is routed to its kind automatically (--explain shows how); the same input twice
    is the same item. One failing input never stops or undoes the others.
    """
    request, quiet = _request(kw), bool(kw["quiet"])
    with progress_bar("add", quiet=quiet) as bar:
        results = add_op(get_repo(ctx), request, progress=bar)
    report(results, as_json=bool(kw["as_json"]), quiet=quiet, explain=request.explain)
    ctx.exit(_exit_code(results))


@click.command()
@add_options
@click.pass_context
def ingest(ctx: click.Context, /, **kw: Any) -> None:
    """`arkai add` then `dvc repro`: add sources and build everything from them."""
    request, quiet = _request(kw), bool(kw["quiet"])
    with ExitStack() as bar_open:
        bar = bar_open.enter_context(progress_bar("add", quiet=quiet))

        def added(results: list[AddResult]) -> None:
            bar_open.close()  # the bar goes before the report and the pipeline's output
            report(results, as_json=bool(kw["as_json"]), quiet=quiet, explain=request.explain)

        # PipelineError → exit 3 (resumable)
        results = ingest_op(
            get_repo(ctx),
            request,
            progress=bar,
            added=added,
            notice=lambda line: click.echo(line, err=True),
        )
    ctx.exit(_exit_code(results))


@click.command()
@click.argument("text", nargs=-1, required=True)
@click.option("--title", help="Title (default: the first line).")
@click.option("--tags", "-t", multiple=True, help="Comma-separated tags (repeatable).")
@click.option("--redact/--no-redact", default=False, help="Redact secrets and personal data.")
@json_option
@click.pass_context
def remember(
    ctx: click.Context,
    text: tuple[str, ...],
    title: str | None,
    tags: tuple[str, ...],
    redact: bool,
    as_json: bool,
) -> None:
    """Write a note (an episode) into library/notes: `arkai remember "what I learned"`.

    Use `-` to read the note from standard input.
    """
    body = sys.stdin.read() if text == ("-",) else " ".join(text)
    try:
        result = remember_op(get_repo(ctx), body, title=title, tags=tags, redact=redact)
    except InvalidInputError as exc:  # an empty note: shown with the usage line
        raise click.UsageError(str(exc)) from None
    report([result], as_json=as_json, quiet=True, explain=False)
    if result.status == "failed":
        ctx.exit(EXIT_USAGE)
