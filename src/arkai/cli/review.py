"""``arkai diff``, ``arkai log``, ``arkai review``: git-native review of the library."""

from __future__ import annotations

import sys

import click

from arkai.cli.common import get_repo, json_option
from arkai.cli.diffrender import FORMATS, render, render_history
from arkai.cli.output import emit_json
from arkai.errors import EXIT_ERROR
from arkai.ops.diff import clip, diff_revisions
from arkai.ops.history import history
from arkai.ops.review import pending_report, review_claim

#: Claims listed per item and kind in Markdown unless --limit says otherwise (PR comments and
#: step summaries have size limits).
MARKDOWN_LIMIT = 50


def _write(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()


@click.command()
@click.argument("rev_a", required=False)
@click.argument("rev_b", required=False)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMATS),
    default="text",
    show_default=True,
    help="text for a terminal, json for programs, markdown for PR comments.",
)
@json_option
@click.option(
    "--limit",
    type=int,
    default=None,
    help=f"Claims listed per item and kind (0: all; default all, {MARKDOWN_LIMIT} in markdown).",
)
@click.option(
    "--link-base",
    default="",
    metavar="URL",
    help="Prefix for Markdown line links; {rev} becomes the side's commit ID, "
    "e.g. https://github.com/OWNER/REPO/blob/{rev}/ (default: relative).",
)
@click.option("--exit-code", is_flag=True, help="Exit 1 when the library differs.")
@click.pass_context
def diff(
    ctx: click.Context,
    rev_a: str | None,
    rev_b: str | None,
    fmt: str,
    as_json: bool,
    limit: int | None,
    link_base: str,
    exit_code: bool,
) -> None:
    """Items, claims, entities and validation that differ between two revisions.

    REV_A defaults to HEAD, REV_B to the working tree (WORKTREE names it explicitly). REV_A
    may be a range: BASE...HEAD compares HEAD with its merge base, as a pull request does.
    Reads git objects only: nothing is checked out or written.
    """
    result = diff_revisions(get_repo(ctx), rev_a, rev_b)
    fmt = "json" if as_json else fmt
    if limit is None:
        limit = MARKDOWN_LIMIT if fmt == "markdown" else 0
    _write(render(result, fmt, limit=limit, link_base=link_base))
    if exit_code and not result.empty:
        ctx.exit(EXIT_ERROR)


@click.command(name="log")
@click.argument("ident", metavar="ID")
@click.option("--limit", "-n", type=int, default=0, help="Show the newest N entries (0: all).")
@click.option("--reverse", is_flag=True, help="Oldest first.")
@click.option(
    "--rev",
    default="HEAD",
    show_default=True,
    help="Walk back from this revision (uncommitted changes: only from HEAD).",
)
@click.option("--no-worktree", is_flag=True, help="Leave out uncommitted changes.")
@json_option
@click.pass_context
def log(
    ctx: click.Context,
    ident: str,
    limit: int,
    reverse: bool,
    rev: str,
    no_worktree: bool,
    as_json: bool,
) -> None:
    """History of an item or a claim: when it appeared, changed status, was reviewed, went.

    ID is a content ID, a source ID, an evidence ID, or a prefix of at least 8 characters;
    items and claims no longer in the library are found in the history.
    """
    h = history(get_repo(ctx), ident, rev=rev, worktree=not no_worktree)
    if limit > 0:
        h.entries = h.entries[:limit]
    if reverse:
        h.entries.reverse()
    if as_json:
        emit_json(h.to_dict())
    else:
        _write(render_history(h))


@click.command()
@click.argument("evidence_id", required=False, metavar="ID")
@click.option("--accept", is_flag=True, help="Accept the claim.")
@click.option("--reject", is_flag=True, help="Reject the claim.")
@click.option("--note", help="Why (stored with the review).")
@click.option("--by", "by", help="Reviewer (default: git config user.name).")
@click.option("--pending", "show_pending", is_flag=True, help="List claims not yet reviewed.")
@click.option("--item", "item_id", help="With --pending: only this item.")
@json_option
@click.pass_context
def review(
    ctx: click.Context,
    evidence_id: str | None,
    accept: bool,
    reject: bool,
    note: str | None,
    by: str | None,
    show_pending: bool,
    item_id: str | None,
    as_json: bool,
) -> None:
    """Accept or reject a claim in its item's review.yaml, or list pending claims.

    arkai review ID --accept|--reject [--note TEXT]: ID is an evidence ID or a prefix of at
    least 8 characters. Other entries, comments and layout of review.yaml are kept. Run
    `dvc repro` afterwards to mark the claim in evidence.jsonl.
    """
    if accept and reject:
        raise click.UsageError("--accept and --reject are exclusive: give one")
    decision = "accepted" if accept else "rejected" if reject else None
    repo = get_repo(ctx)
    if show_pending:
        if evidence_id or decision or note or by:
            raise click.UsageError("--pending takes no ID, --accept/--reject, --note or --by")
        listing = pending_report(repo, item_id)
        rows = listing.pending
        if as_json:
            emit_json(listing.to_dict())
            return
        current = None
        for row in rows:
            if row.content_id != current:
                current = row.content_id
                click.echo(f"{row.content_id}  {row.title}")
            where = f"L{row.line}" if row.line is not None else "L–"
            click.echo(f"  {row.id}  {where:<5} {row.status:<10} {clip(row.claim, 80)}")
        click.echo(f"{len(rows)} claim{'s' if len(rows) != 1 else ''} pending review")
        for lost in listing.orphaned:
            click.echo(
                f"orphaned review {lost.key} ({lost.review.get('status')}) in {lost.file}: "
                "matches no current claim; kept — re-file it under a claim ID or delete it"
            )
        return
    if item_id:
        raise click.UsageError("--item goes with --pending")
    if not evidence_id or not decision:
        raise click.UsageError("give an evidence ID and --accept or --reject (or --pending)")
    result = review_claim(repo, evidence_id, decision, note=note, by=by)
    if as_json:
        emit_json(result.to_dict())
        return
    was = f" (was {result.previous.get('status')})" if result.previous else ""
    click.echo(f"{decision} {result.evidence_id}{was}: {clip(result.claim, 80)}")
    click.echo(f"  written to {result.file}; `dvc repro` applies it to evidence.jsonl")
