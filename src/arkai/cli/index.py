"""``arkai reindex``: the ``index`` stage (catalog, chunks, lexical and vector lanes, topics,
graph) — what ``stages/index.py`` runs under ``dvc repro``."""

from __future__ import annotations

import click

from arkai.cli.common import get_repo, json_option, quiet_option
from arkai.cli.output import emit_json, progress_bar, say
from arkai.ops.index import IndexSummary, run_index


@click.command()
@click.option("--full", is_flag=True, help="Re-embed every chunk and rebuild every index file.")
@click.option(
    "--graph-exports",
    is_flag=True,
    help="Also write index/graph.json and graph.graphml, whatever index.graph.exports says "
    "(the next index run that does not write them removes them).",
)
@json_option
@quiet_option
@click.pass_context
def reindex(
    ctx: click.Context, full: bool, graph_exports: bool, as_json: bool, quiet: bool
) -> None:
    """Bring index/ up to date with the library: catalog, search chunks, the BM25 and vector
    indexes (only new chunks are embedded), the topic index and the knowledge graph."""
    with progress_bar("index", quiet=quiet or as_json) as bar:
        summary = run_index(get_repo(ctx), full=full, progress=bar, graph_exports=graph_exports)
    show_index(summary, as_json=as_json, quiet=quiet)


def show_index(summary: IndexSummary, *, as_json: bool = False, quiet: bool = False) -> int:
    if as_json:
        emit_json(summary.to_dict())
    elif not quiet:
        vectors = (
            f"{summary.embedded} embedded, {summary.reused} reused, {summary.pruned} pruned "
            f"({summary.embedder}, dim {summary.dim})"
            if summary.embedder
            else "vectors off"
        )
        say(
            f"index: {summary.items} items, {summary.chunks} chunks "
            f"({summary.transcript_chunks} transcript, {summary.claim_chunks} claim); {vectors}; "
            f"{summary.topics} topics; graph {summary.nodes} nodes, {summary.edges} edges"
        )
        shards = summary.shards or {}
        if shards.get("resharded"):
            say(f"shards: {shards['resharded']}")
        if summary.beliefs_beside:
            say(f"beliefs, built beside the index: {summary.beliefs_beside}")
    return 0
