"""The ``condense`` stage (``arkai condense``): every item's transcript cut into chunks at message
boundaries, each chunk condensed by the ``condense_chat`` pattern into a summary plus decisions,
discoveries and procedures whose quotes are resolved to bytes of ``transcript.md`` — then the
shards (seed 001; docs/answers.md).

Per item: ``condensed/<type>/<Title (id)>/condensed.json`` (:class:`CondensedFile`), incremental
like ``extract``: the item's key is the digest of its transcript, the provider, model, pattern
digest and the ``condense`` / ``extract`` params that shape the output; an unchanged key is
skipped. A failed item (a provider error, output that does not fit the pattern) is recorded with
``status: failed`` — its previous chunks are kept — the others go on, and the run ends with a
PipelineError (exit 3) so it can simply be re-run. An oversized chunk (one message longer than
``chunk_tokens``) is kept whole, logged as ``ChunkOversized`` and listed in the summary.

Then :func:`arkai.ops.shards.build_shards` brings ``index/shards/`` up to date (under DVC the
``index`` stage does this step, which owns ``index/``).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arkai.adapters import events, interrupt, manifest, raytasks
from arkai.adapters.layout import CONDENSED, LIBRARY, TRANSCRIPT, Item, load_items
from arkai.adapters.repo import Repo
from arkai.adapters.shards import CONDENSED_FILE, CondensedFile, read_condensed, write_condensed
from arkai.core import canonjson
from arkai.core.document import Document
from arkai.core.hashing import digest, sha256_hex, text_digest
from arkai.core.itemdate import item_date
from arkai.core.resolve import prefer_within, resolve_quote
from arkai.core.tokens import count_tokens
from arkai.errors import ArkaiError, LibraryError, PipelineError
from arkai.model.shard import CondensedChunk, Finding
from arkai.ops.shards import ShardSummary, shard_library
from arkai.patterns import Pattern, get_pattern
from arkai.providers.runner import CircuitOpen, Runner, Stats, make_runner
from arkai.search.condense_chunks import TextChunk, chunk_messages, condense_params

STAGE_VERSION = "1"
PATTERN = "condense_chat"

ProgressFn = Callable[[int, int, str, Stats], None]


@dataclass
class CondenseSummary:
    """Counts for one run of ``condense``."""

    items: int = 0
    condensed: int = 0
    skipped: int = 0
    failed: dict[str, str] = field(default_factory=dict)
    removed: int = 0
    chunks: int = 0
    """Chunks condensed in this run."""
    oversized: list[dict[str, Any]] = field(default_factory=list)
    """``{item, chunk, tokens}`` of each chunk that is one message longer than the target."""
    stats: Stats = field(default_factory=Stats)
    shards: ShardSummary | None = None
    unreadable: list[str] = field(default_factory=list)
    """Item folders that could not be read (named with their problem): skipped."""

    def to_dict(self) -> dict[str, Any]:
        out = {k: v for k, v in vars(self).items() if k not in ("stats", "shards")}
        shards = self.shards.to_dict() if self.shards is not None else None
        return out | self.stats.to_dict() | {"shards": shards}


def item_key(data: bytes, params: dict[str, Any], runner: Runner, pattern: Pattern) -> str:
    """The incremental key: what the item's condensed chunks depend on."""
    xp = params["extract"]
    blob = canonjson.dumps(
        {
            "stage": STAGE_VERSION,
            "transcript": digest(data),
            "provider": runner.provider.name,
            "model": runner.model,
            "pattern": pattern.digest,
            "chunk_tokens": condense_params(params)[0],
            "match_mode": xp.get("match_mode"),
            "fuzzy_threshold": xp.get("fuzzy_threshold"),
            "variables": xp.get("variables"),
        }
    )
    return "sha256:" + sha256_hex(blob.encode("utf-8"))


def _findings(doc: Document, chunk: TextChunk, value: Any, xp: dict[str, Any]) -> list[Finding]:
    """The pattern's decisions, discoveries and procedures with resolved quotes."""
    out: list[Finding] = []
    value = value if isinstance(value, dict) else {}
    kinds = (("decisions", "decision", "decision", "rationale"),
             ("discoveries", "discovery", "discovery", "implication"),
             ("procedures", "procedure", "name", None))  # fmt: skip
    for key, kind, text_key, detail_key in kinds:
        for raw in value.get(key) or []:
            if not isinstance(raw, dict):
                continue
            quote = str(raw.get("quote", ""))
            match = resolve_quote(doc, quote, mode=str(xp["match_mode"]),
                                  fuzzy_threshold=float(xp["fuzzy_threshold"]))  # fmt: skip
            match = prefer_within(doc, match, chunk.start, chunk.end)
            span = match.span
            detail = raw.get(detail_key) if detail_key else None
            steps = raw.get("steps") if kind == "procedure" else None
            out.append(
                Finding(
                    kind=kind,
                    text=str(raw.get(text_key, "")),
                    quote=quote,
                    detail=str(detail) if detail is not None else None,
                    steps=tuple(str(s) for s in steps or ()),
                    span=(span.start, span.end) if span is not None else None,
                    slice_sha256=span.slice_sha256 if span is not None else None,
                    status=match.resolution.status,
                    quote_sha256=text_digest(quote),
                    resolution=match.resolution,
                    line=span.line if span is not None else None,
                    video_timestamp=span.video_timestamp if span is not None else None,
                )
            )
    return out


def _condensed_tokens(summary: str, findings: list[Finding]) -> int:
    parts = [summary]
    for f in findings:
        parts += [f.text, f.detail or "", *f.steps]
    return count_tokens("\n".join(p for p in parts if p))


def condense_item(
    item: Item, data: bytes, runner: Runner, pattern: Pattern, params: dict[str, Any],
    log: events.RunLog,
) -> tuple[CondensedChunk, ...]:  # fmt: skip
    """Chunk and condense one item (raises on a provider or output error)."""
    xp = params["extract"]
    try:
        text = data.decode("utf-8")  # strict: chunk offsets must be the file's bytes
    except UnicodeDecodeError as exc:
        raise LibraryError(
            f"{item.transcript}: not valid UTF-8 ({exc.reason} at byte {exc.start})"
        ) from None
    doc = Document(data)
    variables = {k: str(v) for k, v in (xp.get("variables") or {}).items()}
    options = {"variables": variables, "content_type": item.metadata.get("content_type")}
    transcript = str((item.path / TRANSCRIPT).relative_to(item.root))
    out: list[CondensedChunk] = []
    for chunk in chunk_messages(text, condense_params(params)[0]):
        res = runner.run(pattern, chunk.text, options)
        value = res.value if isinstance(res.value, dict) else {}
        summary = str(value.get("summary", "")).strip()
        findings = _findings(doc, chunk, value, xp)
        if chunk.oversized:
            log.emit("ChunkOversized", content_id=item.id, chunk=chunk.chunk, tokens=chunk.tokens,
                     target=condense_params(params)[0])  # fmt: skip
        out.append(
            CondensedChunk(
                item=item.id,
                chunk=chunk.chunk,
                transcript=transcript,
                start=chunk.start,
                end=chunk.end,
                tokens=chunk.tokens,
                condensed_tokens=_condensed_tokens(summary, findings),
                summary=summary,
                title=item.title,
                date=item_date(item.metadata),
                messages=chunk.messages,
                findings=tuple(findings),
                oversized=chunk.oversized,
            )
        )
    return tuple(out)


def _previous(item: Item) -> CondensedFile | None:
    try:
        return read_condensed(item.condensed / CONDENSED_FILE, item.root)
    except (ArkaiError, OSError):
        return None  # a torn or unreadable file counts as none: the item is redone


def remove_orphans(root: Path, keep: set[Path], under: Iterable[Path] | None = None) -> int:
    """Delete ``condensed/`` folders whose item is gone (only folders this stage wrote) —
    under the folders ``under`` only, when given (the items that changed)."""
    base = root / CONDENSED
    removed = 0
    if not base.is_dir():
        return 0
    markers = [m for u in under for m in u.rglob(CONDENSED_FILE)] if under is not None else list(
        base.rglob(CONDENSED_FILE))  # fmt: skip
    for marker in sorted(markers):
        if marker.parent not in keep:
            shutil.rmtree(marker.parent)
            removed += 1
    return removed


def condense(
    repo: Repo,
    *,
    now: str | None = None,
    only: set[str] | None = None,
    force: bool = False,
    refresh: bool = False,
    shards: bool = True,
    progress: ProgressFn | None = None,
    changes: manifest.Changes | None = None,
) -> CondenseSummary:
    """Condense every item whose key changed (with ``force``, every item in ``only`` or all),
    then rebuild the shards unless ``shards`` is False. With ``changes`` (the stage after a
    complete run) only the items in the folders it names are read and planned; the others
    are known done."""
    root, params = repo.root, repo.params
    condense_params(params)  # a bad value fails before any work
    runner = make_runner(root, params, refresh=refresh, now=now or events.utc_now())
    pattern = get_pattern(PATTERN, root)
    summary = CondenseSummary(stats=runner.stats)
    (root / CONDENSED).mkdir(exist_ok=True)  # the DVC output exists even for an empty library
    items, problems = repo.scan() if changes is None else load_items(root, changes.folders)
    summary.items = len(items) + (changes.done if changes else 0)
    summary.skipped = changes.done if changes else 0
    todo: list[tuple[Item, bytes, str]] = []
    for item in items:
        if only is not None and item.id not in only:
            summary.skipped += 1
            continue
        try:
            data = item.transcript_bytes()
        except (ArkaiError, OSError) as exc:
            summary.failed[item.id] = str(exc)
            continue
        key = item_key(data, params, runner, pattern)
        prev = _previous(item)
        current = prev is not None and prev.key == key and prev.status == "ok"
        if current and not force:
            summary.skipped += 1
        else:
            todo.append((item, data, key))
    workers = 1 if runner.provider.name == "builtin" else max(
        1, int(params["extract"].get("concurrency", 4)))  # fmt: skip
    with (
        events.run(root, "condense", items=summary.items, todo=len(todo)) as log,
        interrupt.stop_on_signals(),
    ):
        done = summary.skipped

        def work(job: tuple[Item, bytes, str]) -> tuple[CondensedChunk, ...]:
            item = job[0]
            with log.step("condense", content_id=item.id) as info:
                chunks = condense_item(item, job[1], runner, pattern, params, log)
                info["chunks"] = len(chunks)
                return chunks

        for job, fut in raytasks.completed_locally(todo, work, workers):
            item, data, key = job
            done += 1
            try:
                chunks = fut.result()
            except interrupt.Interrupted:
                raise
            except CircuitOpen as exc:
                _record_failure(item, runner, key, str(exc))
                summary.failed[item.id] = str(exc)
                raise
            except (ArkaiError, OSError, UnicodeError, ValueError) as exc:
                _record_failure(item, runner, key, str(exc))
                summary.failed[item.id] = str(exc)
            else:
                write_condensed(
                    item.condensed / CONDENSED_FILE,
                    CondensedFile(content_id=item.id, key=key, status="ok", chunks=chunks,
                                  provider=runner.provider.name, model=runner.model,
                                  transcript_digest=digest(data)),
                )  # fmt: skip
                summary.condensed += 1
                summary.chunks += len(chunks)
                summary.oversized += [{"item": item.id, "chunk": c.chunk, "tokens": c.tokens}
                                      for c in chunks if c.oversized]  # fmt: skip
            if progress:
                progress(done, summary.items, item.title, runner.stats)
        if only is None:
            keep = {item.condensed for item in items}
            # Outputs of folders that could not be read this time are kept, not removed.
            for p in problems:
                folder = p.path.parent if p.path.name == "metadata.json" else p.path
                if folder.is_relative_to(root / LIBRARY) and folder != root / LIBRARY:
                    keep.add(root / CONDENSED / folder.relative_to(root / LIBRARY))
            under = [root / CONDENSED / f for f in changes.folders] if changes else None
            summary.removed = remove_orphans(root, keep, under)
        unreadable = [p.error if p.error.startswith(str(p.path)) else f"{p.path}: {p.error}"
                      for p in problems]  # fmt: skip
        summary.unreadable = unreadable
        if shards and not unreadable:
            # (With an item folder unreadable the shards are left as they are, rather than
            # rebuilt without its chunks and rebuilt again once it is fixed.)
            with log.step("shards") as info:
                summary.shards = shard_library(repo, log)
                info.update(summary.shards.to_dict())
        if summary.failed or unreadable:
            parts = [f"{k}: {v}" for k, v in sorted(summary.failed.items())] + unreadable
            raise PipelineError(
                f"condense failed for {len(summary.failed) + len(unreadable)} of "
                f"{summary.items + len(unreadable)} items: " + "; ".join(parts),
                hint="fix the cause and re-run; finished items are not redone"
                + ("; the shards were left as they were" if unreadable and shards else ""),
            )
    return summary


def _record_failure(item: Item, runner: Runner, key: str, error: str) -> None:
    """Mark the item failed, keeping whatever chunks it had (nothing is lost)."""
    prev = _previous(item)
    write_condensed(
        item.condensed / CONDENSED_FILE,
        CondensedFile(content_id=item.id, key=key, status="failed",
                      chunks=prev.chunks if prev is not None else (), error=error,
                      provider=runner.provider.name, model=runner.model),
    )  # fmt: skip


def _stage_inputs(repo: Repo) -> dict[str, Any] | None:
    """What every item's key depends on besides its transcript (:func:`item_key`): the stage
    version, the params, the provider settings (and the model named in the environment) and
    the pattern's digest. None when the pattern cannot be loaded (the run reports it)."""
    try:
        pattern = get_pattern(PATTERN, repo.root).digest
    except (ArkaiError, OSError):
        return None
    return {
        "stage": STAGE_VERSION,
        "condense": repo.params.get("condense"),
        "extract": repo.params.get("extract"),
        "providers": repo.params.get("providers"),
        "model_env": os.environ.get("ARKAI_OPENAI_MODEL"),
        "pattern": pattern,
    }


def _library(root: Path) -> bytes | None:
    """The manifest of library/ that the ``extract`` stage wrote before this one ran."""
    try:
        return (root / manifest.PATHS[LIBRARY]).read_bytes()
    except OSError:
        return None


def condense_stage(repo: Repo, *, progress: ProgressFn | None = None) -> CondenseSummary:
    """The DVC stage ``condense``: :func:`condense` without the shards (the ``index`` stage
    builds them), then the manifest of condensed/.

    Like ``extract`` (:func:`arkai.ops.extract.extract_stage`) DVC runs it on every
    ``dvc repro``, after ``extract`` (it depends on the manifest of library/, which it reads
    the transcripts through). When :func:`_stage_inputs` are those of its last complete run,
    only the items whose lines in that manifest of library/ or in condensed/'s (from a stat
    walk) differ from that run's are read and planned; with none, nothing is; the manifest of
    condensed/ is then brought up to date by walking the planned items' folders alone
    (:func:`arkai.adapters.manifest.published`), and the run sealed with the manifest of
    library/ it planned from. Otherwise (every item planned) a run is sealed as complete when
    no item failed and the library, walked again at its end, is what that manifest says; one
    that is not leaves the last seal.
    """
    root = repo.root
    inputs = _stage_inputs(repo)
    library = _library(root)
    given = {LIBRARY: library} if library is not None else None
    before = manifest.snapshot(root, (CONDENSED,), inputs, given=given)
    changes = None
    if inputs is not None and library is not None:
        sealed = manifest.sealed_run(root, "condense", before)
        changes = manifest.changes(sealed, before)
        if sealed is not None and changes is not None and not changes.folders:
            before.publish(root, CONDENSED)
            return CondenseSummary(items=sealed.items, skipped=sealed.items)
        del sealed
    if changes is not None:
        # Only the changed items planned (as extract does): condensed/'s manifest published
        # as planned, then brought up to date by walking those items' folders alone; sealed
        # with library/'s manifest as planned (a transcript changed since differs from it, so
        # the next run plans its item) — no walk of library/ (docs/scale.md).
        before.publish(root, CONDENSED)
        planned_from = sha256_hex(before.manifests[LIBRARY])
        del before, given, library
        summary = condense(repo, shards=False, progress=progress, changes=changes)
        planned = _library(root)
        after = manifest.published(root, (CONDENSED,), inputs, given={LIBRARY: planned or b""},
                                   fresh={CONDENSED: changes.folders})  # fmt: skip
        after.publish(root, CONDENSED)
        if planned is not None and sha256_hex(planned) == planned_from:
            manifest.seal(root, "condense", after, summary.items)
        return summary
    # As extract does: the manifests are not held through the run, library/'s digest is.
    held = None if library is None else sha256_hex(library)
    del before, given, library
    summary = condense(repo, shards=False, progress=progress, changes=changes)
    library_after = _library(root)
    after = manifest.snapshot(root, (CONDENSED,), inputs, given={LIBRARY: library_after or b""})
    after.publish(root, CONDENSED)
    if (inputs is not None and library_after is not None and sha256_hex(library_after) == held
            and manifest.up_to_date(root, LIBRARY)):  # fmt: skip
        manifest.seal(root, "condense", after, summary.items)
    return summary
