"""``arkai condense``: the ``condense`` stage — transcripts cut into chunks at message
boundaries, each condensed (summary, decisions, discoveries, procedures with byte-exact quotes),
then the shards in ``index/shards/`` (docs/answers.md)."""

from __future__ import annotations

from typing import Any

import click

from arkai.cli.common import get_repo, json_option, quiet_option
from arkai.cli.output import emit_json, progress_bar, say
from arkai.ops.condense import condense as condense_op
from arkai.ops.extract import Stats


@click.command()
@click.option("--force", is_flag=True, help="Condense again even when nothing changed.")
@click.option("--refresh", is_flag=True, help="Ignore cached provider responses.")
@click.option("--only", "only", multiple=True, help="Content ID (or prefix) to condense.")
@click.option(
    "--no-shards", "no_shards", is_flag=True,
    help="Leave index/shards/ alone (the index stage builds them under dvc repro).",
)  # fmt: skip
@json_option
@quiet_option
@click.pass_context
def condense(
    ctx: click.Context, force: bool, refresh: bool, only: tuple[str, ...], no_shards: bool,
    as_json: bool, quiet: bool,
) -> None:  # fmt: skip
    """Condense every changed item into chunks of about condense.chunk_tokens tokens, then
    bring the shards (index/shards/) up to date."""
    repo = get_repo(ctx)
    ids = {repo.item(i).id for i in only} if only else None
    with progress_bar("condense", quiet=quiet or as_json) as bar:

        def progress(done: int, total: int, what: str, stats: Stats) -> None:
            bar(done, total, f"{stats.calls} calls, {stats.cache_hits} cached {what}")

        summary = condense_op(repo, only=ids, force=force,
                              refresh=refresh, shards=not no_shards, progress=progress)  # fmt: skip
    show_condense(summary, as_json=as_json, quiet=quiet)


def show_condense(summary: Any, *, as_json: bool = False, quiet: bool = False) -> int:
    """Render a condense summary (the CLI and the DVC stage)."""
    if as_json:
        emit_json(summary.to_dict())
        return 0
    if quiet:
        return 0
    st = summary.stats
    say(
        f"condense: {summary.condensed} condensed ({summary.chunks} chunks), {summary.skipped} "
        f"unchanged, {summary.removed} removed; provider calls {st.calls}, cache hits "
        f"{st.cache_hits}"
    )
    for o in summary.oversized:
        say(
            f"oversized: item {o['item']} chunk {o['chunk']} is one message of {o['tokens']} "
            "tokens, longer than condense.chunk_tokens (kept whole)"
        )
    sh = summary.shards
    if sh is not None:
        if sh.resharded:
            say(f"shards: {sh.resharded}")
        say(
            f"shards: {sh.shards} ({sh.chunks} chunks, {sh.tokens} tokens); written "
            f"{', '.join(sh.written) or 'none'}; unchanged {len(sh.kept)}"
        )
    return 0
