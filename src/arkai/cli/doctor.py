"""``arkai doctor``: the library's health, item by item."""

from __future__ import annotations

import click

from arkai.cli.common import get_repo, json_option
from arkai.cli.output import emit_json
from arkai.errors import EXIT_ERROR


@click.command()
@click.option("--all", "show_all", is_flag=True, help="List healthy items too.")
@json_option
@click.pass_context
def doctor(ctx: click.Context, show_all: bool, as_json: bool) -> None:
    """One report of the library's health: per item acquired, extracted (ok, failed with the
    recorded error, outdated, not extracted, skipped and why), spans valid, indexed, on the
    site — with what to do. Exits 1 when something needs a person."""
    from arkai.ops.doctor import diagnose

    report = diagnose(get_repo(ctx))
    if as_json:
        emit_json(report.to_dict())
    else:
        for item in report.items:
            if item.healthy and not show_all:
                continue
            flags = [
                f"extraction {item.extraction}",
                "indexed" if item.indexed else "not indexed" if item.indexed is False else "",
                "on site" if item.on_site else "not on site" if item.on_site is False else "",
            ]
            click.echo(f"{item.content_id}  {item.title}  ({', '.join(f for f in flags if f)})")
            for action in item.actions:
                click.echo(f"    - {action}")
        t = report.totals()
        if not report.index_built:
            click.echo("no search index built yet (`dvc repro` builds it)")
        if not report.site_built:
            click.echo("no site built yet (`dvc repro` builds it)")
        if report.site_drift:
            click.echo(f"site/ differs from its manifest ({len(report.site_drift)} files):")
            for line in report.site_drift[:20]:
                click.echo(f"    - {line}")
            click.echo("    rebuild it: `dvc repro --force --single-item site`")
        if report.library_changed:
            n = len(report.library_changed)
            click.echo(f"library/ changed since the last `dvc repro` ({n} files):")
            for line in report.library_changed[:20]:
                click.echo(f"    - {line}")
            click.echo("    `dvc repro` brings the pipeline up to date")
        if report.graph_exports:
            click.echo("the graph exports differ from the index's manifest:")
            for line in report.graph_exports:
                click.echo(f"    - {line}")
            click.echo("    `arkai reindex --graph-exports` writes them again")
        if report.vector_recipes:
            click.echo("vectors made by another export of their model than this arkai's:")
            for line in report.vector_recipes:
                click.echo(f"    - {line}")
            click.echo("    the next `dvc repro` that runs their stage embeds them again, whole "
                       "(`arkai reindex` now)")  # fmt: skip
        for name in report.dvc_torn:
            click.echo(f"{name} is torn (a DVC was killed while writing it): every dvc command "
                       "stops at it")  # fmt: skip
            click.echo("    `arkai run` or `arkai resume` sets it aside first")
        click.echo(
            f"{t['items']} item{'s' * (t['items'] != 1)}: {t['healthy']} healthy, "
            f"{t['needs_attention']} need attention (failed {t['extraction_failed']}, "
            f"outdated {t['extraction_outdated']}, not extracted {t['extraction_not_extracted']}, "
            f"skipped {t['extraction_skipped']}, stale spans {t['stale_spans']}, "
            f"not indexed {t['not_indexed']}, not on site {t['not_on_site']})"
        )
    if not report.healthy:
        ctx.exit(EXIT_ERROR)
