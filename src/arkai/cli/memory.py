"""``arkai recall``, ``beliefs``, ``belief``, ``forget``, ``prune``, ``reflect``, ``memory``:
the belief memory replayed from the library (docs/memory.md)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import click

from arkai.cli.common import get_repo, json_option, parse_day, quiet_option
from arkai.cli.output import emit_json, progress_bar, say, show_rows
from arkai.errors import EXIT_NO_RESULTS
from arkai.model.belief import BELIEF_STATUSES, TYPES
from arkai.ops import memory as ops

as_of_option = click.option(
    "--as-of",
    "as_of",
    metavar="YYYY-MM-DD",
    help="Compute effective confidence as of this day (default: today, UTC).",
)


def _line(s: ops.Scored) -> str:
    b = s.belief
    extra = f" score {s.score:.2f} ({s.method})" if s.score is not None else ""
    status = "" if b.status == "active" else f" [{b.status}]"
    pin = " [pinned]" if b.pinned else ""
    return (
        f"{b.id[:8]} {b.type:<7} {s.effective:.2f}{extra}{status}{pin}  {b.statement}"
        f"  ({len(b.episodes)} episode{'s' if len(b.episodes) != 1 else ''})"
    )


@click.command()
@click.argument("query", nargs=-1, required=True)
@click.option("-k", "k", type=click.IntRange(1, 1000), default=10, show_default=True)
@click.option(
    "--threshold", type=click.FloatRange(-1, 1), default=ops.RECALL_THRESHOLD, show_default=True
)
@click.option("--all", "include_all", is_flag=True, help="Include invalidated, forgotten, pruned.")
@as_of_option
@json_option
@click.pass_context
def recall(
    ctx: click.Context,
    query: tuple[str, ...],
    k: int,
    threshold: float,
    include_all: bool,
    as_of: str | None,
    as_json: bool,
) -> None:
    """Beliefs about QUERY: semantic first, lexical when nothing passes the threshold."""
    found = ops.recall(
        get_repo(ctx),
        " ".join(query),
        as_of=parse_day(as_of),
        k=k,
        threshold=threshold,
        include_all=include_all,
    )
    show_rows(found, as_json, "beliefs", _line, "no beliefs match")


@click.command()
@click.option(
    "--status", type=click.Choice([*BELIEF_STATUSES, "all"]), default="active", show_default=True
)
@click.option("--type", "kind", type=click.Choice(TYPES))
@click.option("-n", "limit", type=click.IntRange(1), default=None, help="At most N beliefs.")
@as_of_option
@json_option
@click.pass_context
def beliefs(
    ctx: click.Context,
    status: str,
    kind: str | None,
    limit: int | None,
    as_of: str | None,
    as_json: bool,
) -> None:
    """Beliefs sorted by effective confidence."""
    found = ops.list_beliefs(get_repo(ctx), as_of=parse_day(as_of), status=status, kind=kind)
    show_rows(found[:limit] if limit else found, as_json, "beliefs", _line, "no beliefs")


@click.group()
def belief() -> None:
    """One belief: its history, or pin it."""


@belief.command("history")
@click.argument("ident", metavar="ID")
@as_of_option
@json_option
@click.pass_context
def belief_history(ctx: click.Context, ident: str, as_of: str | None, as_json: bool) -> None:
    """Every change of a belief, with the quotes (receipts) behind it."""
    h = ops.history(get_repo(ctx), ident, as_of=parse_day(as_of))
    if as_json:
        emit_json(h.to_dict())
        return
    say(_line(ops.Scored(h.belief, h.effective)))
    for c in h.changes:
        bits = [f"  {c.date} {c.kind}"]
        if c.belief != h.belief.id:
            bits.append(f"of {c.belief[:8]}")
        if c.other:
            bits.append(f"→ {c.other[:8]}")
        if c.similarity is not None:
            bits.append(f"similarity {c.similarity:.2f}")
        if c.confidence is not None:
            bits.append(f"confidence {c.confidence:.2f}")
        if c.episode:
            bits.append(f"(episode {c.episode[:8]})")
        if c.note:
            bits.append(f"— {c.note}")
        say(" ".join(bits))
    for q in h.quotes:
        if q.get("quote"):
            mark = "" if q.get("valid") else "  [receipt does not hold]"
            say(f"  “{q['quote']}” — {q['title']}, {q['file']}:{q['line']}{mark}")


def _decision(kind: str, doc: str, undo_help: str) -> Callable[..., None]:
    """The command that records (or with --undo removes) a ``kind`` decision on a belief."""

    @click.argument("ident", metavar="ID")
    @click.option("--note", default="", help="Why.")
    @click.option("--undo", is_flag=True, help=undo_help)
    @json_option
    @click.pass_context
    def command(ctx: click.Context, ident: str, note: str, undo: bool, as_json: bool) -> None:
        b = ops.decide(get_repo(ctx), kind, ident, note, undo=undo)
        if as_json:
            emit_json({"belief": b.id, "decision": kind, "undone": undo})
        else:
            what = f"removed the {kind} decision on" if undo else f"{kind}: recorded for"
            say(
                f"{what} belief {b.id[:8]} "
                "(takes effect at the next `dvc repro` / `arkai memory build`)"
            )

    command.__doc__ = doc
    return command


belief_pin = belief.command("pin")(
    _decision("pin", "Pin a belief: it never decays, is never pruned and never invalidated.",
              "Remove the pin.")
)  # fmt: skip
forget = click.command("forget")(
    _decision("forget", "Forget a belief (written to memory/decisions.yaml; the replay "
              "respects it).", "Remove the forget decision.")
)  # fmt: skip


@click.command()
@click.option(
    "--threshold",
    type=click.FloatRange(0, 1),
    default=None,
    help="Effective confidence floor (default: memory.prune_floor).",
)
@click.option("--apply", is_flag=True, help="Record them as prune decisions.")
@as_of_option
@json_option
@click.pass_context
def prune(
    ctx: click.Context, threshold: float | None, apply: bool, as_of: str | None, as_json: bool
) -> None:
    """List the beliefs the next replay drops (below the threshold); --apply records them."""
    repo = get_repo(ctx)
    found = ops.prune_candidates(repo, as_of=parse_day(as_of), threshold=threshold)
    if apply and found:
        ops.apply_prune(
            repo, found, f"arkai prune --threshold {threshold}" if threshold else "arkai prune"
        )
    show_rows(found, as_json, "beliefs", _line, "nothing to prune")


@click.command()
@click.option("--similarity", type=click.FloatRange(0, 1), default=0.8, show_default=True)
@click.option("--stale", type=click.FloatRange(0, 1), default=0.2, show_default=True)
@as_of_option
@json_option
@click.pass_context
def reflect(
    ctx: click.Context, similarity: float, stale: float, as_of: str | None, as_json: bool
) -> None:
    """Near-duplicate belief groups and stale beliefs."""
    r = ops.reflect(get_repo(ctx), as_of=parse_day(as_of), similarity=similarity, stale=stale)
    if as_json:
        emit_json(r.to_dict())
        return
    say(f"{len(r.clusters)} near-duplicate group(s), {len(r.stale)} stale belief(s)")
    for n, c in enumerate(r.clusters, 1):
        say(f"group {n}:")
        for s in c:
            say("  " + _line(s))
    if r.stale:
        say("stale:")
        for s in r.stale:
            say("  " + _line(s))


@click.group()
def memory() -> None:
    """The belief memory: build, context, stats, export, import."""


@memory.command("build")
@quiet_option
@json_option
@click.pass_context
def memory_build(ctx: click.Context, quiet: bool, as_json: bool) -> None:
    """Replay every episode into beliefs/ (what the `beliefs` DVC stage runs)."""
    repo = get_repo(ctx)
    with progress_bar("beliefs", quiet=quiet or as_json) as bar:
        result = ops.build(repo, progress=bar)
    show_build(result, as_json=as_json, quiet=quiet)


def show_build(result: ops.BuildResult, *, as_json: bool = False, quiet: bool = False) -> int:
    """Render a replay's summary (the CLI and the DVC stage)."""
    if as_json:
        emit_json(result.to_dict())
    elif not quiet:
        counts = ", ".join(f"{v} {k}" for k, v in result.by_status.items() if v)
        say(
            f"beliefs: {result.episodes} episodes → {result.beliefs} beliefs ({counts or 'none'}); "
            f"{result.embedded} statements embedded"
        )
    return 0


@memory.command("context")
@click.argument("query", nargs=-1, required=True)
@click.option("-k", "k", type=click.IntRange(1, 100), default=8, show_default=True)
@as_of_option
@json_option
@click.pass_context
def memory_context(
    ctx: click.Context, query: tuple[str, ...], k: int, as_of: str | None, as_json: bool
) -> None:
    """A prompt-ready pack: beliefs by effective confidence, with citations, and recent episodes."""
    pack = ops.memory_context(get_repo(ctx), " ".join(query), as_of=parse_day(as_of), k=k)
    if as_json:
        emit_json(pack.to_dict())
    else:
        click.echo(pack.markdown, nl=False)
    if not pack.beliefs:
        ctx.exit(EXIT_NO_RESULTS)


@memory.command("stats")
@as_of_option
@json_option
@click.pass_context
def memory_stats(ctx: click.Context, as_of: str | None, as_json: bool) -> None:
    """Belief counts by status and type, episodes, average effective confidence."""
    s = ops.stats(get_repo(ctx), as_of=parse_day(as_of)).to_dict()
    if as_json:
        emit_json(s)
        return
    for key, value in s.items():
        say(f"{key}: {value}")


@memory.command("export")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@json_option
@click.pass_context
def memory_export(ctx: click.Context, file: Path, as_json: bool) -> None:
    """Write beliefs, changes and decisions to FILE (JSON)."""
    out = ops.export(get_repo(ctx), file)
    if as_json:
        emit_json(out.to_dict())
    else:
        say(f"exported {out.beliefs} beliefs and {out.changes} changes to {file}")


@memory.command("import")
@click.argument("file", type=click.Path(dir_okay=False, exists=True, path_type=Path))
@json_option
@click.pass_context
def memory_import(ctx: click.Context, file: Path, as_json: bool) -> None:
    """Add an export's beliefs (deduplicated) and decisions (never overwriting yours)."""
    out = ops.import_(get_repo(ctx), file)
    if as_json:
        emit_json(out.to_dict())
    else:
        say(
            f"imported {out.beliefs_added} beliefs ({out.skipped} already known or "
            f"inactive) and {out.decisions_added} decisions; run `dvc repro` to replay"
        )
