"""``arkai site build`` and ``arkai site serve``: the library as a MkDocs-Material site."""

from __future__ import annotations

import click

from arkai.cli.common import get_repo, json_option, quiet_option
from arkai.cli.output import emit_json, progress_bar, say
from arkai.ops import site as site_op
from arkai.ops.site import SCOPE_NOTES, SiteReport


@click.group()
def site() -> None:
    """Publish the library as a static site (MkDocs-Material) in site/."""


@site.command()
@click.option("--full", is_flag=True, help="Render every page (no incremental mkdocs build).")
@click.option("--no-mkdocs", is_flag=True, help="Only write the pages and config in .site-build/.")
@click.option("--clean", "clean_first", is_flag=True, help="Delete .site-build/ first.")
@click.option("--verbose", "-v", is_flag=True, help="Show MkDocs' own log.")
@json_option
@quiet_option
@click.pass_context
def build(
    ctx: click.Context, full: bool, no_mkdocs: bool, clean_first: bool, verbose: bool,
    as_json: bool, quiet: bool,
) -> None:  # fmt: skip
    """Generate one page per item, its transcript (claims highlighted), tag, entity, topic
    and validation pages into .site-build/, then run mkdocs build (site/)."""
    with progress_bar("site", quiet=quiet or as_json) as bar:
        report = site_op.build(
            get_repo(ctx),
            clean=clean_first,
            mkdocs=not no_mkdocs,
            full=full,
            verbose=verbose,
            progress=lambda done, total: bar(done, total, "pages"),
        )
    show_site(report, as_json=as_json, quiet=quiet)


def show_site(report: SiteReport, *, as_json: bool = False, quiet: bool = False) -> int:
    if as_json:
        emit_json(report.to_dict())
        return 0
    for warning in report.warnings:
        click.echo(f"arkai: warning: {warning}", err=True)
    if not quiet:
        built = f"; mkdocs ({report.mkdocs}) {report.mkdocs_s:.1f} s → {report.site_dir}"
        say(
            f"site: {report.items} items ({report.items_regenerated} regenerated), "
            f"{report.pages} pages ({report.pages_written} written, {report.pages_removed} "
            f"removed) in {report.generate_s:.1f} s" + (built if report.mkdocs else "")
        )
        if report.search_scope in SCOPE_NOTES:
            say(
                f"site: its search covers {SCOPE_NOTES[report.search_scope]} "
                "(params.yaml site.search_index_mb); `arkai search` searches everything"
            )
    return 0


@site.command()
@click.option("--port", "-p", default=8000, show_default=True, help="Port on 127.0.0.1.")
@click.pass_context
def serve(ctx: click.Context, port: int) -> None:
    """Preview the site: generate the pages, then mkdocs serve on 127.0.0.1 (live reload)."""
    ctx.exit(site_op.serve(get_repo(ctx), port=port))
