"""``arkai extract``, ``arkai validate``, ``arkai runs``, ``arkai status``."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

import click

from arkai.cli.common import get_repo, json_option, quiet_option
from arkai.cli.output import emit_json, progress_bar, say, stdout
from arkai.errors import EXIT_ERROR
from arkai.ops.runs import list_runs, run_status
from arkai.ops.validate import UNREADABLE, ItemReport, ValidateResult, validate_one
from arkai.ops.validate import validate as validate_op

if TYPE_CHECKING:
    # (The extract operation is imported when `arkai extract` runs: the validate stage,
    # which shows its result with this module, does without it; ≈ 0.1 s of its start.)
    from arkai.ops.extract import ExtractSummary, ProgressFn, Stats


def extract_progress(bar: Callable[[int, int, str], None]) -> ProgressFn:
    """The extract operation's progress (with the provider's figures) on a progress bar."""

    def progress(done: int, total: int, what: str, stats: Stats) -> None:
        bar(done, total, f"{stats.calls} calls, {stats.cache_hits} cached, "
                         f"{stats.failures} failed {what}")  # fmt: skip

    return progress


def show_extract(summary: ExtractSummary, *, as_json: bool = False, quiet: bool = False) -> int:
    if as_json:
        emit_json(summary.to_dict())
    elif not quiet:
        st = summary.stats
        say(
            f"extract: {summary.extracted} extracted, {summary.skipped} unchanged, "
            f"{summary.removed} removed, {summary.claims} claims; provider calls {st.calls}, "
            f"cache hits {st.cache_hits}, retries {st.retries}, failures {st.failures}"
        )
    return 0


def _extract(ctx: click.Context, ids: Iterable[str] | None, force: bool, refresh: bool,
             as_json: bool, quiet: bool, executor: str | None = None) -> None:  # fmt: skip
    from arkai.ops.extract import run_extract

    with progress_bar("extract", quiet=quiet) as bar:
        summary = run_extract(get_repo(ctx), only=ids, force=force, refresh=refresh,
                              progress=extract_progress(bar), executor=executor)  # fmt: skip
    show_extract(summary, as_json=as_json, quiet=quiet)


@click.command()
@click.option("--force", is_flag=True, help="Re-extract even when nothing changed.")
@click.option("--refresh", is_flag=True, help="Ignore cached provider responses.")
@click.option("--only", "only", multiple=True, help="Content ID (or prefix) to extract.")
@click.option("--executor", type=click.Choice(["local", "ray"]), default=None,
              help="Where items are computed this run (default: extract.executor).")  # fmt: skip
@json_option
@quiet_option
@click.pass_context
def extract(
    ctx: click.Context, force: bool, refresh: bool, only: tuple[str, ...],
    executor: str | None, as_json: bool, quiet: bool,
) -> None:  # fmt: skip
    """Run the extract stage: patterns through the provider for every changed item —
    claims, entities, wisdom, summary — every quote resolved to transcript bytes."""
    _extract(ctx, only or None, force, refresh, as_json, quiet, executor)


@click.command()
@click.argument("content_id")
@click.option("--keep-cache", is_flag=True, help="Reuse cached provider responses.")
@json_option
@quiet_option
@click.pass_context
def reprocess(
    ctx: click.Context, content_id: str, keep_cache: bool, as_json: bool, quiet: bool
) -> None:
    """Force one item through extraction again (fresh provider calls unless --keep-cache)."""
    _extract(ctx, [content_id], True, not keep_cache, as_json, quiet)


def _print_reports(reports: list[ItemReport], verbose: bool) -> None:
    for r in reports:
        if r.ok and not verbose:
            continue
        mark = (
            "ok     " if r.ok else "INVALID" if r.invalid else "ERROR  " if r.error
            else "STALE  " if r.extracted else "NEW    "
        )  # fmt: skip
        say(
            f"{mark} {r.content_id}  valid {r.valid}  stale {r.stale}  unverified {r.unverified}"
            f"  unresolved {r.unresolved}  invalid {r.invalid}  {r.title}"
        )
        if r.error:
            say(f"      {r.error}")
        elif not r.extracted:
            stdout.print("      not extracted yet (run `dvc repro` or `arkai extract`)")
        for key in r.orphaned_reviews:
            say(
                f"      review {key} in {r.path}/review.yaml matches no claim "
                "(kept; re-file or delete it)"
            )
        if r.extracted and not r.digest_ok:
            stdout.print("      transcript.md changed since extraction")
        grouped: dict[tuple[str, str, str], list[str]] = {}
        for p in r.problems:
            grouped.setdefault((p.kind, p.record, p.file), []).append(p.problem)
        for (kind, record, file), found in grouped.items():
            fix = f" (repair: arkai evidence reanchor {r.content_id})" if kind == "stale" else ""
            why = "; ".join(found)
            say(f"      {kind} {record} in {file}: {why}{fix}")


@click.command()
@click.option("--report", type=click.Path(dir_okay=False, path_type=Path),
              help="Also write the summary as JSON here (a DVC metric).")  # fmt: skip
@click.option("--verbose", "-v", is_flag=True, help="List every item, not only failing ones.")
@click.option("--full", is_flag=True, help="Re-check every span from scratch (what CI runs).")
@json_option
@click.pass_context
def validate(
    ctx: click.Context, report: Path | None, verbose: bool, full: bool, as_json: bool
) -> None:
    """Re-check every transcript digest and span hash in the library; exit 1 on stale spans."""
    result = validate_op(get_repo(ctx), report=report, full=full)
    ctx.exit(show_validate(result, verbose, as_json))


def show_validate(result: ValidateResult, verbose: bool = False, as_json: bool = False) -> int:
    """Print the validation (text or JSON) and say why it fails; the exit code."""
    summary, reports, problems = result.summary, result.reports, result.problems
    if as_json:
        emit_json(result.to_dict())
    else:
        _print_reports(reports, verbose)
        for p in problems:
            say(f"ERROR {p.error}")
        stdout.print(
            f"validate: {summary['items']} items, {summary['valid']} valid, "
            f"{summary['stale']} stale, {summary['unverified']} unverified, "
            f"{summary['unresolved']} unresolved, {summary['invalid']} invalid, "
            f"{summary['not_extracted']} not extracted, {summary['errors']} unreadable or failed, "
            f"{summary['orphaned_reviews']} orphaned reviews"
        )
    failure = result.failure()
    if failure is None:
        return 0
    if not as_json:
        if failure == UNREADABLE:
            for r in reports:
                if r.error:  # each unreadable item named on stderr, like any error
                    click.echo(f"arkai: error: {r.error}", err=True)
        click.echo(f"arkai: error: {failure} (see above)", err=True)
    return EXIT_ERROR


def validate_item(ctx: click.Context, content_id: str, as_json: bool) -> None:
    """Shared by ``arkai evidence validate``."""
    result = validate_one(get_repo(ctx), content_id)
    reports = result.reports
    if as_json:
        emit_json({"summary": result.summary, "items": [r.to_dict() for r in reports]})
    else:
        _print_reports(reports, True)
    if not reports[0].ok:
        ctx.exit(EXIT_ERROR)


@click.command()
@click.option("--limit", "-n", default=20, show_default=True, help="Show the newest N runs.")
@json_option
@click.pass_context
def runs(ctx: click.Context, limit: int, as_json: bool) -> None:
    """List recent runs (from .arkai/runs)."""
    rows = list_runs(get_repo(ctx), limit)
    if as_json:
        emit_json({"runs": [r.to_dict() for r in rows]})
        return
    for r in rows:
        stdout.print(f"{r.short_id}  {r.pipeline:<10} {r.status:<10} {r.started}")


@click.command()
@click.argument("run_id", required=False)
@json_option
@click.pass_context
def status(ctx: click.Context, run_id: str | None, as_json: bool) -> None:
    """Show one run's events (RUN_ID: the short ID `arkai runs` shows, or the full ID;
    default the latest run)."""
    info = run_status(get_repo(ctx), run_id)
    if as_json:
        emit_json(info.to_dict())
        return
    stdout.print(f"run {info.run_id}: {info.status}")
    for e in info.events:
        detail = {k: v for k, v in e.items() if k not in ("type", "timestamp", "run_id")}
        stdout.print(f"  {e.get('timestamp')}  {e.get('type'):<18} {detail}")
