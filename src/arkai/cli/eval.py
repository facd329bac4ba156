"""``arkai eval retrieval``: nDCG@10 / recall@100 / MRR@10 per search mode on BEIR data."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.table import Table

from arkai.cli.common import json_option, quiet_option
from arkai.cli.output import emit_json, progress_status, say, stderr, stdout

if TYPE_CHECKING:
    from arkai.ops.eval import RetrievalReport


@click.group(name="eval")
def eval_() -> None:
    """Measure search quality on labelled data."""


@eval_.command()
@click.option(
    "--corpus",
    "corpus",
    required=True,
    type=click.Path(path_type=Path),
    help="BEIR folder: corpus.jsonl, queries.jsonl, qrels/<split>.tsv.",
)
@click.option("--split", default="train", show_default=True, help="Which qrels file to use.")
@click.option(
    "--modes",
    default="lexical,vector,rrf,hybrid",
    show_default=True,
    help="Comma-separated: lexical, vector, rrf (plain RRF k=60), hybrid (the product's).",
)
@click.option("--limit-queries", type=int, default=None, help="Evaluate the first N queries.")
@click.option(
    "--half",
    type=click.Choice(["a", "b"]),
    default=None,
    help="Evaluate one half of a fixed 50/50 split of the queries (tune on a, report b).",
)
@click.option(
    "--embedder",
    default=None,
    help="Embedder for the vector lane (default: the one the hybrid was tuned with, minilm).",
)
@click.option("--no-cache", is_flag=True, help="Do not read or write cached corpus embeddings.")
@json_option
@quiet_option
def retrieval(
    corpus: Path,
    split: str,
    modes: str,
    limit_queries: int | None,
    half: str | None,
    embedder: str | None,
    no_cache: bool,
    as_json: bool,
    quiet: bool,
) -> None:
    """Score each search mode on CORPUS's SPLIT: nDCG@10, recall@100, MRR@10, queries/s."""
    from arkai.ops.eval import retrieval as run_retrieval

    with progress_status("eval retrieval", quiet=quiet or as_json) as say:
        out = run_retrieval(
            corpus,
            split,
            modes,
            limit_queries=limit_queries,
            half=half,
            embedder=embedder,
            cache=not no_cache,
            progress=say,
        )
    if not quiet:
        for p in out.problems[:10]:
            stderr.print(f"skipped {p}")
        if len(out.problems) > 10:
            stderr.print(f"… and {len(out.problems) - 10} more skipped lines")
    if as_json:
        emit_json(out.to_dict())
        return
    _print_table(out)


def _print_table(out: RetrievalReport) -> None:
    half = f", half {out.half}" if out.half else ""
    table = Table(
        title=f"{out.dataset} — split {out.split}{half}: "
        f"{out.queries} queries, {out.documents} documents",
        title_justify="left",
    )
    for col in ("mode", "nDCG@10", "recall@100", "MRR@10", "queries/s", "q/s w/o embed"):
        table.add_column(col, justify="left" if col == "mode" else "right")
    for mode, m in out.modes.items():
        table.add_row(
            mode,
            f"{m['ndcg@10']:.4f}",
            f"{m['recall@100']:.4f}",
            f"{m['mrr@10']:.4f}",
            f"{m['qps']:.1f}",
            f"{m['search_qps']:.1f}",
        )
    stdout.print(table)
    build = out.build
    parts = []
    if "lexical_seconds" in build:
        parts.append(f"BM25 build {build['lexical_seconds']:.2f}s")
    if "vector_seconds" in build:
        how = "cached" if build.get("vector_cached") else "computed"
        parts.append(f"embeddings ({build['embedder']}, {how}) {build['vector_seconds']:.2f}s")
    if parts:
        say("index: " + "; ".join(parts))
    if out.query_embedding_seconds is not None:
        say(
            f"query embedding: {out.query_embedding_seconds:.2f}s for {out.queries} "
            "queries (counted in queries/s of vector, rrf and hybrid)"
        )


@eval_.command()
@click.option("--corpus", "corpus", required=True, type=click.Path(path_type=Path),
              help="SciFact corpus.jsonl (or the folder holding it).")  # fmt: skip
@click.option("--claims", "claims", required=True, type=click.Path(path_type=Path),
              help="SciFact claims file (claims_train.jsonl, claims_dev.jsonl).")  # fmt: skip
@click.option("--predictions", type=click.Path(path_type=Path), default=None,
              help="Write the predictions here, in the SciFact evaluator's format.")  # fmt: skip
@click.option("-k", "k", type=click.IntRange(1, 50), default=None,
              help="Abstracts per claim (default: the tuned value).")  # fmt: skip
@click.option("--half", type=click.Choice(["a", "b"]), default=None,
              help="Score one half of a fixed 50/50 split of the claims.")  # fmt: skip
@click.option("--limit", type=click.IntRange(1), default=None, help="Score the first N claims.")
@json_option
@quiet_option
def verify(
    corpus: Path,
    claims: Path,
    predictions: Path | None,
    k: int | None,
    half: str | None,
    limit: int | None,
    as_json: bool,
    quiet: bool,
) -> None:
    """Run arkai ask's researcher and validator (builtin provider) over SciFact claims: the
    evaluator's abstract- and sentence-level F1, retrieval recall@k, and the share of quotes
    that resolve to bytes."""
    from arkai.ops.verify import VerifySettings
    from arkai.ops.verify import verify as run_verify

    settings = VerifySettings() if k is None else VerifySettings(k=k)
    with progress_status("eval verify", quiet=quiet or as_json) as say:
        report = run_verify(
            corpus, claims, settings=settings, predictions=predictions, half=half, limit=limit,
            progress=lambda n, total: say(f"{n}/{total} claims"),
        )  # fmt: skip
    out = report.to_dict()
    if as_json:
        emit_json(out)
        return
    table = Table(title=f"SciFact: {out['claims']} claims", title_justify="left")
    for col in ("metric", "precision", "recall", "F1"):
        table.add_column(col, justify="left" if col == "metric" else "right")
    rows = [("abstract: label only", out["abstract_level"]["label_only"]),
            ("abstract: label + rationale", out["abstract_level"]["label_rationale"]),
            ("sentence: selection", out["sentence_level"]["selection"]),
            ("sentence: selection + label", out["sentence_level"]["selection_label"])]  # fmt: skip
    for name, m in rows:
        table.add_row(name, f"{m['precision']:.3f}", f"{m['recall']:.3f}", f"{m['f1']:.3f}")
    stdout.print(table)
    recall = ", ".join(f"{k_}: {v:.3f}" for k_, v in out["retrieval_recall"].items())
    say(f"retrieval {recall}")
    say(
        f"quotes resolved to bytes: {out['quotes_resolved']}/{out['quotes']} "
        f"({out['quotes_resolved_fraction']:.3f}); {out['seconds']}s"
    )
