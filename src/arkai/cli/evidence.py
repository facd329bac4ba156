"""``arkai evidence show|open|validate|reanchor``."""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

import click

from arkai.cli.common import get_repo, json_option
from arkai.cli.output import emit_json, say, stdout
from arkai.cli.pipeline import validate_item
from arkai.core.grammar import format_page
from arkai.errors import EXIT_NO_RESULTS, ArkaiError
from arkai.model.status import MODES
from arkai.ops import evidence as evidence_op
from arkai.ops.reanchor import accept_reanchor
from arkai.ops.reanchor import reanchor as reanchor_op


@click.group()
def evidence() -> None:
    """Look up, open, validate and repair evidence (claims pinned to transcript bytes)."""


@evidence.command()
@click.argument("evidence_id")
@json_option
@click.pass_context
def show(ctx: click.Context, evidence_id: str, as_json: bool) -> None:
    """Claim, status, resolution, file, line:col, the quoted slice and its timestamp."""
    info = evidence_op.show(get_repo(ctx), evidence_id)
    if as_json:
        emit_json(info.to_dict())
        return
    stdout.print(info.claim, style="bold")
    res = info.resolution
    say(
        f"status     {info.status} (method {res['method']}, "
        f"match {res['match_rank']}/{res['match_count']}, reason {res['reason']})"
    )
    say(f"evidence   {info.id}  item {info.content_id}  {info.title}")
    sp = info.span
    if sp is not None:
        page = f"  ({format_page(sp.page)})" if sp.page else ""
        say(f"location   {info.file}:{sp.line}:{sp.column}{page}")
        if sp.video_timestamp:
            say(f"timestamp  {sp.video_timestamp}")
        state = "valid" if sp.valid else "STALE (transcript changed under this span)"
        if sp.valid and not info.verified:
            state = f"UNVERIFIED ({info.status}: not an exact match of the quote)"
        if sp.problems:
            state = "INVALID: " + "; ".join(sp.problems)
        offsets = list(sp.utf8_byte_offset)
        say(f"span       bytes {offsets} — {state}")
        say(f"slice      {sp.slice}")
    else:
        say(f"location   {info.file} (no span: quote not found verbatim)")
        say(f"quote      {info.quote}")


@evidence.command(name="open")
@click.argument("evidence_id")
@click.option("--print", "print_only", is_flag=True, help="Print the editor command, don't run it.")
@click.pass_context
def open_(ctx: click.Context, evidence_id: str, print_only: bool) -> None:
    """Open the transcript in $EDITOR (or VS Code: code -g path:line:col) at the span."""
    cmd = evidence_op.open_command(get_repo(ctx), evidence_id)
    click.echo(shlex.join(cmd))  # quoted: paste it into a shell as is
    if print_only:
        return
    try:
        subprocess.run(cmd, check=False)
    except FileNotFoundError:
        raise ArkaiError(
            f"editor not found: {cmd[0]}", hint="set $EDITOR, or use --print"
        ) from None


@evidence.command(name="validate")
@click.argument("content_id")
@json_option
@click.pass_context
def validate_cmd(ctx: click.Context, content_id: str, as_json: bool) -> None:
    """Check one item: transcript digest and every slice hash (valid / stale / unresolved)."""
    validate_item(ctx, content_id, as_json)


@evidence.command()
@click.argument("ident", required=False)
@click.option("--all", "all_items", is_flag=True, help="Repair every item in the library.")
@click.option("--threshold", type=float, help="Fuzzy threshold 0-100 (default: params).")
@click.option(
    "--accept",
    "accept",
    metavar="EVIDENCE_ID",
    help="Accept a re-anchor suggestion (reanchored_fuzzy) after checking its diff.",
)
@click.option("--note", help="With --accept: why (stored in review.yaml).")
@json_option
@click.pass_context
def reanchor(
    ctx: click.Context,
    ident: str | None,
    all_items: bool,
    threshold: float | None,
    accept: str | None,
    note: str | None,
    as_json: bool,
) -> None:
    """Repair stale spans from their quote and anchor text after a transcript edit.

    IDENT is a content ID or an evidence ID (or a prefix of ≥ 8 characters). Every output of
    the item is repaired (evidence, entity mentions, wisdom quotes, claims.md, wisdom.md). A
    quote found verbatim again is resolved/ambiguous; one found only approximately becomes a
    suggestion (reanchored_fuzzy, unverified) shown with a word diff ([-old-]{+new+}); one not
    found becomes unresolved (never dropped). --accept ID turns a checked suggestion into an
    exact receipt of the new text and records the acceptance in the item's review.yaml.
    """
    repo = get_repo(ctx)
    if accept is not None:
        if ident or all_items:
            raise click.UsageError("--accept takes the evidence ID alone")
        done = accept_reanchor(repo, accept, note=note)
        if as_json:
            emit_json(done.to_dict())
            return
        say(f"{done.old_id} → {done.new_id} ({done.status}), accepted in {done.review_file}")
        say(f"  {done.diff}")
        return
    if not all_items and not ident:
        raise click.UsageError("give a content ID, an evidence ID, or --all")
    results = reanchor_op(repo, ident, all_items=all_items, threshold=threshold)
    if as_json:
        emit_json({"items": [r.to_dict() for r in results]})
        return
    for r in results:
        say(
            f"{r.content_id}: {r.reanchored} re-anchored exactly, {r.suggested} suggested "
            f"(unverified), {r.unresolved} now unresolved, {r.unchanged} unchanged"
        )
        for c in r.changes:
            say(f"  {c.old_id} → {c.new_id} ({c.status})")
            if c.diff is not None:
                say(f"    {c.diff}")
                say(f"    check it, then: arkai evidence reanchor --accept {c.new_id}")


@evidence.command()
@click.argument("target")
@click.argument("quote")
@click.option(
    "--match-mode",
    type=click.Choice(MODES),
    default="exact",
    show_default=True,
    help="exact is V1; insensitive and fuzzy give their own (unverified) statuses.",
)
@click.option("--threshold", type=float, help="Fuzzy threshold 0-100 (default: params).")
@json_option
@click.pass_context
def resolve(
    ctx: click.Context,
    target: str,
    quote: str,
    match_mode: str,
    threshold: float | None,
    as_json: bool,
) -> None:
    """Resolve QUOTE against an item's transcript (TARGET = content ID) or a file path.

    Read-only: prints the resolution and span; exits 5 when the quote is unresolved.
    """
    repo = None if Path(target).is_file() else get_repo(ctx)
    found = evidence_op.resolve(repo, target, quote, mode=match_mode, threshold=threshold)
    match = found.match
    info = found.to_dict()
    if as_json:
        emit_json(info)
    else:
        res = match.resolution
        say(f"{res.status} (method {res.method}, reason {res.reason})")
        if match.span is not None:
            sp = match.span
            say(
                f"bytes [{sp.start}, {sp.end}) line {sp.line} column {sp.column}"
                + (f" ({format_page(sp.page)})" if sp.page else "")
                + (f" at {sp.video_timestamp}" if sp.video_timestamp else "")
            )
            say(found.slice)
    if match.span is None:
        ctx.exit(EXIT_NO_RESULTS)
