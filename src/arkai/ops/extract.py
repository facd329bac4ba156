"""The ``extract`` stage: patterns → provider (through the runner) → claims, entities, wisdom and
summary, every quote resolved to bytes of ``transcript.md`` (DESIGN §4–5).

One stage over the whole library, incremental inside: an item's key is the digest of its
transcript, its ``review.yaml``, the provider, model, pattern digests and extract params; an
unchanged key is skipped. ``extraction.json`` is written last, so an interrupted run redoes only
unfinished items; a failed item is recorded (``status: failed``), the others go on, and the
stage ends with a PipelineError (exit 3) so ``dvc repro`` can simply be re-run.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from arkai.adapters import events, interrupt, manifest, raytasks
from arkai.adapters.beside import Beside
from arkai.adapters.fs import write_if_changed
from arkai.adapters.layout import (
    ENTITIES,
    EVIDENCE,
    EXTRACTED,
    EXTRACTION,
    LIBRARY,
    METADATA,
    REVIEW,
    Item,
    ItemProblem,
    load_items,
    scan_items,
)
from arkai.adapters.repo import Repo
from arkai.adapters.review import match_reviews, parse_review
from arkai.adapters.store import evidence_bytes, json_bytes, read_evidence, read_json, write_json
from arkai.core import canonjson
from arkai.core.document import Document
from arkai.core.entities import entities_document, resolve_entities
from arkai.core.evidence import evidence_from_match
from arkai.core.hashing import digest, sha256_hex, text_digest
from arkai.core.resolve import resolve_quote
from arkai.errors import ArkaiError, PipelineError
from arkai.model.entity import Mention
from arkai.model.evidence import EvidenceLine, Verdict
from arkai.patterns import OutputError, Pattern, claims_input, get_pattern
from arkai.providers.base import ProviderError
from arkai.providers.runner import (
    RESPONSES,
    CircuitOpen,
    Runner,
    ShippingStore,
    make_runner,
    provider_of,
)
from arkai.providers.runner import Stats as Stats
from arkai.site.render_item import render_claims_md, render_wisdom_md

#: 3: shared quotes merged visibly, verdicts only on exact matches, wisdom quotes as receipts,
#: escaped Markdown.
STAGE_VERSION = "3"
CLAIMS = "extract_claims"
ENTITY_PATTERN = "extract_entities"
VERIFY = "validate_claims"
#: Extract params that change how a run goes, never what it writes: not part of an item's key
#: (a run on Ray redoes nothing a local run finished, and the other way round).
NOT_IN_KEY = ("concurrency", "progress", "executor", "ray")


@dataclass
class ExtractSummary:
    """Counts for one run of the stage."""

    items: int = 0
    extracted: int = 0
    skipped: int = 0
    failed: dict[str, str] = field(default_factory=dict)
    removed: int = 0
    claims: int = 0
    stats: Stats = field(default_factory=Stats)
    unreadable: list[ItemProblem] = field(default_factory=list)
    """Item folders that could not be read (bad or linked ``metadata.json``): skipped."""
    orphaned_reviews: dict[str, list[str]] = field(default_factory=dict)
    """Content ID → ``review.yaml`` keys that matched no claim of this extraction."""
    executor: str = "local"
    """Where the items were computed: ``local`` or ``ray`` (``extract.executor``)."""

    def to_dict(self) -> dict[str, Any]:
        out = {k: v for k, v in vars(self).items() if k != "stats"}
        return out | {"unreadable": [p.to_dict() for p in self.unreadable]} | self.stats.to_dict()


def patterns_for(item: Item, xp: dict[str, Any]) -> list[str]:
    """Pattern names for an item's content type (``extract.patterns`` in params)."""
    table = xp.get("patterns") or {}
    top = item.rel.parts[0] if item.rel.parts else ""
    names = table.get(top) or table.get("default") or [CLAIMS, ENTITY_PATTERN]
    return [str(n) for n in names]


@dataclass
class Plan:
    """What one item's extraction depends on."""

    item: Item
    transcript: bytes
    patterns: list[Pattern]
    key: str
    review: bytes | None = None
    """``review.yaml`` as read when planning (the key covers exactly these bytes)."""


def plan_item(
    item: Item,
    root: Path,
    params: dict[str, Any],
    provider: str,
    model: str | None,
    patterns: dict[str, Pattern] | None = None,
) -> Plan:
    """The item's patterns and incremental key; ``patterns`` caches loaded patterns by name."""
    cache = patterns if patterns is not None else {}

    def load(name: str) -> Pattern:
        if name not in cache:
            cache[name] = get_pattern(name, root)
        return cache[name]

    xp = params["extract"]
    data = item.transcript_bytes()
    chosen = [load(n) for n in patterns_for(item, xp)]
    if xp.get("verify") and CLAIMS in {p.name for p in chosen}:
        chosen.append(load(VERIFY))
    review = item.read(REVIEW, missing_ok=True)
    parse_review(review, item.path / REVIEW)  # a malformed file fails this item, not the run
    blob = canonjson.dumps(
        {
            "stage": STAGE_VERSION,
            "transcript": digest(data),
            "review": digest(review) if review is not None else None,
            "provider": provider,
            "model": model,
            "patterns": {p.name: p.digest for p in chosen},
            "params": {k: v for k, v in xp.items() if k not in NOT_IN_KEY},
        }
    )
    return Plan(item, data, chosen, "sha256:" + sha256_hex(blob.encode("utf-8")),
                review=review)  # fmt: skip


def previous_evidence(item: Item) -> list[EvidenceLine]:
    """The item's current ``evidence.jsonl``; a torn or unreadable one counts as none (it is
    rebuilt, which is what ``arkai extract --only ID --force`` is for)."""
    try:
        return read_evidence(item.extracted / EVIDENCE)
    except (ArkaiError, OSError):
        return []


def is_current(plan: Plan) -> bool:
    try:
        meta = read_json(plan.item.extracted / EXTRACTION)
    except (ArkaiError, OSError):
        return False  # a torn marker: redo the item
    return bool(
        meta is not None
        and meta.get("key") == plan.key
        and meta.get("status") == "ok"
        and (plan.item.extracted / EVIDENCE).exists()
    )


def _claims(
    plan: Plan,
    doc: Document,
    value: Any,
    xp: dict[str, Any],
    now: str,
    before: list[EvidenceLine],
) -> list[EvidenceLine]:
    """One evidence line per distinct quote. Claims that share a quote share its ID (the seed's
    ID is content + extractor + quote + span), so they are merged *visibly*: the first claim
    is the line's ``claim``, the others are listed in its ``merged_claims`` (never dropped)."""
    previous = {ln.id: ln for ln in before}
    lines: dict[str, EvidenceLine] = {}
    merged: dict[str, list[str]] = {}
    for claim in value if isinstance(value, list) else []:
        quote = str(claim.get("quote", ""))
        match = resolve_quote(
            doc, quote, mode=str(xp["match_mode"]), fuzzy_threshold=float(xp["fuzzy_threshold"])
        )
        line = evidence_from_match(
            content_id=plan.item.id,
            claim=str(claim.get("claim") or quote),
            quote=quote,
            confidence=float(claim.get("confidence", 0.5)),
            extractor=CLAIMS,
            ts=now,
            match=match,
        )
        first = lines.get(line.id)
        if first is not None:
            others = merged.setdefault(line.id, [])
            if line.claim != first.claim and line.claim not in others:
                others.append(line.claim)
            if line.confidence > first.confidence:
                lines[line.id] = replace(first, confidence=line.confidence)
            continue
        old = previous.get(line.id)
        if old is not None and old.quote == line.quote:
            line = replace(line, ts=old.ts)
        lines[line.id] = line
    out = []
    for eid, line in lines.items():
        if merged.get(eid):
            line = replace(line, extra={**line.extra, "merged_claims": merged[eid]})
        out.append(line)
    return out


def _with_verdicts(lines: list[EvidenceLine], value: Any) -> list[EvidenceLine]:
    """Attach the model's verdicts, only ever to claims whose quote matched exactly: a verdict
    on an unverified quote would lend it a credibility its receipt does not have."""
    verdicts = {
        str(v.get("id")): {"verdict": v.get("verdict"), "note": v.get("note", "")}
        for v in (value if isinstance(value, list) else [])
        if isinstance(v, dict)
    }
    out = []
    for line in lines:
        if line.verified and line.id in verdicts:
            line = replace(line, verdict=Verdict.from_dict(verdicts[line.id]))
        out.append(line)
    return out


@dataclass(frozen=True)
class Prior:
    """What an item's previous extraction carries into the next: its evidence (timestamps and
    review matches are kept) and its entities document (``extracted_at`` kept when unchanged)."""

    evidence: list[EvidenceLine]
    entities: dict[str, Any] | None


def read_prior(item: Item) -> Prior:
    """The item's previous outputs, read by the driver (a remote worker may not see them)."""
    return Prior(previous_evidence(item), read_json(item.extracted / ENTITIES))


@dataclass(frozen=True)
class ItemOutput:
    """One item's extraction as the bytes of its files, in the order they are written
    (``extraction.json`` last, the marker of a finished item), and what the run reports."""

    files: tuple[tuple[str, bytes], ...]
    lines: tuple[EvidenceLine, ...]
    orphans: tuple[str, ...]


def compute_item(
    plan: Plan, runner: Runner, params: dict[str, Any], now: str, prior: Prior
) -> ItemOutput:
    """Run every pattern for one item (through ``runner``) and build its files; writes
    nothing under ``extracted/``, so it runs as well on a remote worker as here."""
    item, xp = plan.item, params["extract"]
    text = plan.transcript.decode("utf-8", errors="replace")
    doc = Document(plan.transcript)
    variables = {k: str(v) for k, v in (xp.get("variables") or {}).items()}
    options = {"variables": variables, "content_type": item.metadata.get("content_type")}
    results: dict[str, Any] = {}
    calls: dict[str, dict[str, Any]] = {}
    for pattern in plan.patterns:
        if pattern.name == VERIFY:
            continue
        res = runner.run(pattern, text, options)
        results[pattern.name] = res.value
        calls[pattern.name] = {"version": pattern.version, "digest": pattern.digest,
                               "chunks": res.chunks, "keys": res.keys}  # fmt: skip
    before = prior.evidence
    lines = _claims(plan, doc, results.get(CLAIMS, []), xp, now, before)
    verify = next((p for p in plan.patterns if p.name == VERIFY), None)
    checkable = [ln for ln in lines if ln.verified]
    if verify is not None and checkable:
        payload = claims_input(
            [{"id": ln.id, "claim": ln.claim, "quote": ln.quote} for ln in checkable], text
        )
        res = runner.run(verify, payload, options)
        lines = _with_verdicts(lines, res.value)
        calls[VERIFY] = {"version": verify.version, "digest": verify.digest,
                         "chunks": res.chunks, "keys": res.keys}  # fmt: skip
    matched = match_reviews(lines, parse_review(plan.review, item.path / REVIEW), before)
    lines = matched.lines
    raw_entities = (results.get(ENTITY_PATTERN) or {}).get("entities", [])
    entities = entities_document(
        resolve_entities(doc, raw_entities, mode=str(xp["match_mode"])),
        extracted_by=ENTITY_PATTERN,
        extracted_at=now,
    )
    old = prior.entities
    if old is not None and old.get("entities") == entities["entities"]:
        entities["extracted_at"] = old.get("extracted_at", now)
    wisdom = {k: v for k, v in results.items() if k not in (CLAIMS, ENTITY_PATTERN)}
    sections = resolve_sections(doc, wisdom)
    counts = Counter(line.status for line in lines)
    marker = {
        "schema_version": 2,
        "content_id": item.id,
        "key": plan.key,
        "transcript_digest": digest(plan.transcript),
        "provider": runner.provider.name,
        "model": runner.model,
        "patterns": calls,
        "counts": {
            **{s: counts.get(s, 0) for s in ("resolved", "ambiguous", "unresolved")},
            "unverified": sum(1 for ln in lines if not ln.verified and ln.status != "unresolved"),
            "claims": len(lines),
            "entities": len(entities["entities"]),
            "rejected": sum(1 for ln in lines if ln.rejected),
        },
        "orphaned_reviews": sorted(matched.orphans),
        "status": "ok",
    }
    files = (
        (EVIDENCE, evidence_bytes(lines)),
        (ENTITIES, json_bytes(entities)),
        ("wisdom.json", json_bytes(sections)),
        ("wisdom.md", render_wisdom_md(item, sections).encode("utf-8")),
        ("claims.md", render_claims_md(item, lines, plan.transcript).encode("utf-8")),
        (EXTRACTION, json_bytes(marker)),
    )
    return ItemOutput(files, tuple(lines), tuple(sorted(matched.orphans)))


def write_item(item: Item, output: ItemOutput, log: events.RunLog) -> tuple[int, list[str]]:
    """Write one item's files (each atomically, only when changed; ``extraction.json`` last)
    — the one writer of ``extracted/``, whichever executor computed them; returns the claim
    count and the ``review.yaml`` keys that matched no claim (kept in the file, reported)."""
    out = item.extracted
    out.mkdir(parents=True, exist_ok=True)
    for name, data in output.files:
        write_if_changed(out / name, data)
    for line in output.lines:
        log.emit("EvidenceAppended", content_id=item.id, evidence_id=line.id,
                 status=line.status, extractor=line.extractor)  # fmt: skip
    return len(output.lines), list(output.orphans)


def extract_item(
    plan: Plan, runner: Runner, params: dict[str, Any], now: str, log: events.RunLog
) -> tuple[int, list[str]]:
    """Extract one item here and write its files (:func:`compute_item`, :func:`write_item`)."""
    output = compute_item(plan, runner, params, now, read_prior(plan.item))
    return write_item(plan.item, output, log)


def resolve_sections(doc: Document, sections: dict[str, Any]) -> dict[str, Any]:
    """Pattern outputs with every ``quote`` (and every string in a ``quotes`` list) resolved:
    each becomes a receipt ``{quote, quote_sha256, status, resolution, span}`` (the fields of an
    entity mention) so pages can link and validation can re-check it."""

    def walk(value: Any, key: str = "") -> Any:
        if isinstance(value, dict):
            out = {k: walk(v, k) for k, v in value.items() if k != "span"}
            if isinstance(value.get("quote"), str):
                quote = value["quote"]
                m = resolve_quote(doc, quote)
                out.update(Mention(quote, text_digest(quote), m.resolution, m.span).to_dict())
            return out
        if isinstance(value, list):
            if key == "quotes":
                return [walk({"quote": v}) if isinstance(v, str) else walk(v) for v in value]
            return [walk(v, key) for v in value]
        return value

    return {k: walk(v, k) for k, v in sorted(sections.items())}


def remove_orphans(root: Path, keep: set[Path], under: Iterable[Path] | None = None) -> int:
    """Delete ``extracted/`` folders whose item is gone (only folders this stage wrote) —
    under the folders ``under`` only, when given (the items that changed)."""
    removed = 0
    base = root / EXTRACTED
    if not base.is_dir():
        return 0
    markers = [m for u in under for m in u.rglob(EXTRACTION)] if under is not None else list(
        base.rglob(EXTRACTION))  # fmt: skip
    for marker in sorted(markers):
        kept = any(folder in keep for folder in (marker.parent, *marker.parent.parents))
        if not kept and marker.exists():  # (exists: not in a folder removed just before)
            shutil.rmtree(marker.parent)
            removed += 1
    return removed


def record_failure(plan: Plan, runner: Runner, error: str) -> None:
    """Mark the item failed (previous outputs, if any, are left as they were)."""
    record_item_failure(plan.item, runner, error, key=plan.key)


def record_item_failure(item: Item, runner: Runner, error: str, *, key: str | None = None) -> None:
    write_json(
        item.extracted / EXTRACTION,
        {
            "schema_version": 2,
            "content_id": item.id,
            "key": key,
            "provider": runner.provider.name,
            "model": runner.model,
            "status": "failed",
            "error": error,
        },
    )


ProgressFn = Callable[[int, int, str, Stats], None]


#: How many times one run lists the library again for items that arrived while it ran.
MAX_ROUNDS = 5


def _todo(
    root: Path,
    params: dict[str, Any],
    runner: Runner,
    loaded: dict[str, Pattern],
    summary: ExtractSummary,
    seen: dict[str, str],
    only: set[str] | None,
    force: bool,
    changes: manifest.Changes | None = None,
) -> list[Plan]:
    """List the library (with ``changes``, only the items it names) and plan every item not
    yet handled in this run (``seen``: content ID → key handled). Unreadable folders and items
    that cannot be planned are recorded."""
    items, problems = _listed(root, changes)
    known = {p.path for p in summary.unreadable}
    summary.unreadable.extend(p for p in problems if p.path not in known)
    plans: list[Plan] = []
    for item in items:
        if only is not None and item.id not in only:
            if item.id not in seen:
                seen[item.id] = ""
                summary.skipped += 1
            continue
        try:
            plan = plan_item(item, root, params, runner.provider.name, runner.model, loaded)
        except (ArkaiError, OSError, UnicodeError, ValueError) as exc:
            if item.id not in summary.failed:
                summary.failed[item.id] = str(exc)
                record_item_failure(item, runner, str(exc))
            seen[item.id] = ""
            continue
        if seen.get(item.id) == plan.key:
            continue
        first = item.id not in seen
        seen[item.id] = plan.key
        if first and not force and is_current(plan):
            summary.skipped += 1
        elif not first and is_current(plan):
            continue
        else:
            plans.append(plan)
    summary.items = len(seen) + len(summary.unreadable) + (changes.done if changes else 0)
    return plans


def _listed(root: Path, changes: manifest.Changes | None) -> tuple[list[Item], list[ItemProblem]]:
    """Every item of the library, or only those in the folders ``changes`` names."""
    return scan_items(root) if changes is None else load_items(root, changes.folders)


@dataclass(frozen=True)
class RemoteJob:
    """One item for a Ray worker: everything :func:`compute_item` needs, read by the driver."""

    plan: Plan
    prior: Prior
    params: dict[str, Any]
    now: str
    refresh: bool
    root: str
    """The repo on the driver: a worker that sees this path reads its response store."""


@dataclass(frozen=True)
class RemoteResult:
    """What a worker sends back: the item's files, its runner's figures, and the responses it
    got from the provider (the driver stores them: the worker writes nothing)."""

    output: ItemOutput
    stats: Stats
    responses: dict[str, dict[str, Any]]


def compute_remote(job: RemoteJob) -> RemoteResult:
    """A Ray task: :func:`compute_item` with a runner built on the worker."""
    store = ShippingStore(Path(job.root) / RESPONSES)
    runner = make_runner(Path(job.root), job.params, refresh=job.refresh, now=job.now, store=store)
    output = compute_item(job.plan, runner, job.params, job.now, job.prior)
    return RemoteResult(output, runner.stats, store.new)


def _on_ray(
    plans: list[Plan], runner: Runner, params: dict[str, Any], now: str, refresh: bool,
    root: Path, cfg: raytasks.RayConfig, in_flight: int,
) -> Iterator[tuple[Plan, Future[ItemOutput]]]:  # fmt: skip
    """Each plan with its computed output, computed by Ray tasks (the driver reads each item's
    previous outputs first, and stores the responses the workers got)."""
    jobs: list[RemoteJob] = []
    for plan in plans:
        try:
            jobs.append(RemoteJob(plan, read_prior(plan.item), params, now, refresh, str(root)))
        except (ArkaiError, OSError) as exc:
            failed: Future[ItemOutput] = Future()
            failed.set_exception(exc)
            yield plan, failed
    for job, fut in raytasks.completed(
        jobs, compute_remote, in_flight=in_flight, cfg=cfg, name="arkai-extract"
    ):
        out: Future[ItemOutput] = Future()
        try:
            result = fut.result()
        except (ProviderError, OutputError) as exc:
            try:  # the breaker counts across every worker, as one runner's does locally
                runner.remote_outcome(failed=True)
                out.set_exception(exc)
            except CircuitOpen as tripped:
                tripped.__cause__ = exc
                out.set_exception(tripped)
        except Exception as exc:
            out.set_exception(exc)
        else:
            runner.remote_outcome(failed=False)
            runner.stats.add(result.stats)
            for key, record in result.responses.items():
                runner.store.put(key, record)
            out.set_result(result.output)
        yield job.plan, out


def run_extract(
    repo: Repo,
    *,
    now: str | None = None,
    only: Iterable[str] | None = None,
    force: bool = False,
    refresh: bool = False,
    progress: ProgressFn | None = None,
    executor: str | None = None,
    changes: manifest.Changes | None = None,
) -> ExtractSummary:
    """Extract every item whose key changed (or, with ``force``, those in ``only``).

    After the planned items are done the library is listed again, and items that arrived (or
    changed) meanwhile — an ``arkai add`` while ``dvc repro`` runs — are extracted in the same
    run, so the stage ends having seen every item present at its end. Folders that cannot be
    read and items that fail are reported, skipped, and make the run end with a
    :class:`PipelineError` after every other item is done. ``only`` names items by content
    ID, ≥ 8-character prefix or source ID. ``executor`` (``local`` or ``ray``) overrides
    ``extract.executor`` for this run; either way only this process writes ``extracted/``.
    With ``changes`` (the stage after a complete run) only the items in the folders it names
    are read and planned — the others are known done — and the library is not listed again.
    """
    root = repo.root
    now = now or events.utc_now()
    only = {repo.item(i).id for i in only} if only is not None else None
    params = repo.params
    xp = params["extract"]
    where = raytasks.executor_of(xp, executor)
    cluster = raytasks.RayConfig.from_params(xp.get("ray")) if where == "ray" else None
    runner = make_runner(root, params, refresh=refresh, now=now)
    summary = ExtractSummary(stats=runner.stats, executor=where)
    loaded: dict[str, Pattern] = {}
    seen: dict[str, str] = {}
    summary.skipped = changes.done if changes else 0
    plans = _todo(root, params, runner, loaded, summary, seen, only, force, changes)
    workers = 1 if runner.provider.name == "builtin" else max(1, int(xp.get("concurrency", 4)))
    done = summary.skipped
    with (
        events.run(root, "extract", items=summary.items, todo=len(plans), executor=where) as log,
        interrupt.stop_on_signals(),
        ExitStack() as connection,
    ):
        if progress:
            progress(done, summary.items, "", runner.stats)

        def work(plan: Plan) -> tuple[int, list[str]]:
            with log.step("extract", content_id=plan.item.id) as info:
                claims, orphans = extract_item(plan, runner, params, now, log)
                info["claims"] = claims
                return claims, orphans

        connected: list[bool] = []

        def finished(todo: list[Plan]) -> Iterator[tuple[Plan, Future[tuple[int, list[str]]]]]:
            if cluster is None:
                yield from raytasks.completed_locally(todo, work, workers)
                return
            if not connected:  # on first use: a run with nothing to do never connects
                connection.enter_context(raytasks.session(cluster))
                # ray.init installs its own SIGTERM handler: arkai's go back on top.
                connection.enter_context(interrupt.stop_on_signals())
                connected.append(True)
            in_flight = max(1, int(xp.get("concurrency", 4)))
            computed_items = _on_ray(todo, runner, params, now, refresh, root, cluster, in_flight)
            for plan, computed in computed_items:
                written: Future[tuple[int, list[str]]] = Future()
                try:
                    with log.step("extract", content_id=plan.item.id, executor=where) as info:
                        claims, orphans = write_item(plan.item, computed.result(), log)
                        info["claims"] = claims
                    written.set_result((claims, orphans))
                except Exception as exc:  # KeyboardInterrupt (a signal) propagates at once
                    written.set_exception(exc)
                yield plan, written

        rounds = 0
        while plans:
            rounds += 1
            for plan, fut in finished(plans):
                done += 1
                try:
                    claims, orphans = fut.result()
                    summary.claims += claims
                    summary.extracted += 1
                    summary.failed.pop(plan.item.id, None)
                    if orphans:
                        summary.orphaned_reviews[plan.item.id] = orphans
                except interrupt.Interrupted:
                    raise
                except CircuitOpen as exc:
                    summary.failed[plan.item.id] = str(exc)
                    record_failure(plan, runner, str(exc))
                    raise
                except (ArkaiError, OSError, UnicodeError, ValueError) as exc:
                    summary.failed[plan.item.id] = str(exc)
                    record_failure(plan, runner, str(exc))
                if progress:
                    progress(done, summary.items, plan.item.title, runner.stats)
            if only is not None or changes is not None or rounds >= MAX_ROUNDS:
                break
            plans = _todo(root, params, runner, loaded, summary, seen, only, force)
        if only is None:
            items, problems = _listed(root, changes)
            keep = {item.extracted for item in items}
            # Outputs of folders that could not be read this time are kept, not removed.
            for p in problems:
                folder = p.path.parent if p.path.name == METADATA else p.path
                if folder != root / LIBRARY and folder.is_relative_to(root / LIBRARY):
                    keep.add(root / EXTRACTED / folder.relative_to(root / LIBRARY))
            under = [root / EXTRACTED / f for f in changes.folders] if changes else None
            summary.removed = remove_orphans(root, keep, under)
        # Inside the run: its RunCompleted says `failed`.
        problems_text = [f"{p.path}: {p.error}" if not p.error.startswith(str(p.path)) else p.error
                         for p in summary.unreadable]  # fmt: skip
        if summary.failed or problems_text:
            parts = [f"{k}: {v}" for k, v in sorted(summary.failed.items())] + problems_text
            raise PipelineError(
                f"extract failed for {len(summary.failed) + len(problems_text)} of {summary.items} "
                "items: " + "; ".join(parts),
                hint="fix the cause and re-run `dvc repro`; finished items are not redone",
            )
    return summary


#: The folders whose manifests the ``extract`` stage writes (``index/manifests/``): the stages
#: after it depend on these instead of the folders (docs/scale.md).
MANIFESTS = ("library", "extracted")


def _stage_inputs(repo: Repo) -> dict[str, Any] | None:
    """What every item's key depends on besides the item's own files: the stage version, the
    extract params that shape the output, the provider settings (and the model named in the
    environment) and the digest of every pattern an item can use. None when a pattern cannot
    be loaded (the run reports it)."""
    xp = repo.params["extract"]
    names = {CLAIMS, ENTITY_PATTERN, VERIFY}
    for listed in (xp.get("patterns") or {}).values():
        names.update(str(n) for n in listed or ())
    try:
        patterns = {n: get_pattern(n, repo.root).digest for n in sorted(names)}
    except (ArkaiError, OSError):
        return None
    return {
        "stage": STAGE_VERSION,
        "params": {k: v for k, v in xp.items() if k not in NOT_IN_KEY},
        "providers": repo.params.get("providers"),
        "model_env": os.environ.get("ARKAI_OPENAI_MODEL"),
        "patterns": patterns,
    }


@dataclass(frozen=True, slots=True)
class _Plan:
    """What the stage's walk found: the manifests now (None when nothing changed: then they
    are published already), and — when the stage's inputs are known — the items changed
    since its last complete run (None: plan every item) and how many items that run saw
    (None: no such run)."""

    before: manifest.Snapshot | None
    changes: manifest.Changes | None
    sealed_items: int | None


def _plan(root: Path, inputs: dict[str, Any] | None) -> _Plan:
    before = manifest.snapshot(root, MANIFESTS, inputs)
    if inputs is None:
        return _Plan(before, None, None)
    sealed = manifest.sealed_run(root, "extract", before)
    changes = manifest.changes(sealed, before)
    if sealed is not None and changes is not None and not changes.folders:
        before.publish(root)  # (only a deleted manifest is written again)
        return _Plan(None, changes, sealed.items)
    return _Plan(before, changes, None if sealed is None else sealed.items)


def _walked(
    repo: Repo, inputs: dict[str, Any] | None, *, preload: bool
) -> tuple[_Plan, threading.Thread | None]:
    """The stage's walk and plan (:func:`_plan`: the manifests of :data:`MANIFESTS` from a
    ``stat`` of every file, compared with the last complete run's) and, with ``preload``, the
    thread loading the provider's engines meanwhile (:func:`_preload`): the walk runs in a
    forked child (:mod:`arkai.adapters.beside`) while this process loads them (issue 17: at
    10,000 items the walk ≈ 0.45 s and spaCy's import and load ≈ 0.6 s, one after the other
    before). The plan is made in the child too, and with nothing changed the manifests are
    published there: this process, its one core shared with the loading thread (a thread that
    waits on a file or pipe there waits for the interpreter's lock too), only waits. Where it
    cannot fork, the walk runs here and nothing is preloaded: the first call that needs the
    engines loads them, as before."""
    walk = Beside("walk", lambda _report: _plan(repo.root, inputs))
    with walk:
        walk.start()
        loading = _preload(repo) if preload and walk.forked else None
        return walk.join(), loading


def _preload(repo: Repo) -> threading.Thread | None:
    """A daemon thread running the extract provider's ``preload`` (the builtin provider's:
    its engines and spaCy's pipeline) when this process will make its calls (the ``local``
    executor; Ray's workers load their own). A failure there is left to the first call that
    needs what it loads, which reports it as the run's error."""
    xp = repo.params.get("extract") or {}
    try:
        if raytasks.executor_of(xp) != "local":
            return None
        load = getattr(provider_of(repo.params), "preload", None)
    except (ArkaiError, KeyError):
        return None  # (the run reports a bad provider or executor)
    if load is None:
        return None

    def quietly() -> None:
        with contextlib.suppress(Exception):
            load()

    thread = threading.Thread(target=quietly, name="arkai-preload", daemon=True)
    thread.start()
    return thread


def extract_stage(
    repo: Repo, *, progress: ProgressFn | None = None, preload: bool = False
) -> ExtractSummary:
    """The DVC stage ``extract``: :func:`run_extract` over the whole library, then the manifests
    of library/ and extracted/ (:data:`MANIFESTS`).

    DVC runs the stage on every ``dvc repro`` (``always_changed``: it does not walk the
    folders, docs/scale.md), so it plans only what changed: when :func:`_stage_inputs` are
    those of the last complete run, only the items whose lines in the manifests (from a stat
    walk) differ from that run's — added, removed, edited, their extraction deleted or edited
    by hand — are read and planned; the others are known done. With none, nothing is read and
    the manifests are only written again if one was deleted. After such a run the manifest of
    extracted/ is brought up to date by walking the planned items' folders alone
    (:func:`arkai.adapters.manifest.published`), and the run is sealed with the manifest of
    library/ it planned from (a file changed meanwhile differs from it: the next run plans its
    item). A run that planned every item is complete (sealed) when no item failed and the
    library did not change while it ran (an item added meanwhile is then extracted next time);
    a run that is not leaves the last seal, so the next one plans again every item changed
    since it (the failed ones included).

    ``preload`` (the DVC stage's script): the provider's engines are loaded while the walk
    runs (:func:`_walked`). When nothing changed the stage returns without waiting for that
    load: its process ends at once (:func:`arkai.cli.stage.exit_stage`), so a caller that goes
    on in the same process leaves it false.
    """
    root = repo.root
    inputs = _stage_inputs(repo)
    plan, loading = _walked(repo, inputs, preload=preload)
    before, changes, done = plan.before, plan.changes, plan.sealed_items
    del plan
    if before is None:  # nothing changed (the manifests published by the walk)
        assert done is not None
        return ExtractSummary(items=done, skipped=done)
    if loading is not None:
        loading.join()  # (one import at a time: spaCy's hides torch while it imports)
    if changes is not None:
        # Only the changed items are planned: the manifests are published as planned, and
        # extracted/'s is brought up to date after the run by walking the folders of those
        # items alone (manifest.published). The run is sealed with library/'s as planned: a
        # file changed after the walk differs from the sealed line, so the next run plans its
        # item (docs/scale.md, "The walks after the work").
        before.publish(root)
        del before
        summary = run_extract(repo, progress=progress, changes=changes)
        after = manifest.published(root, MANIFESTS, inputs, fresh={"extracted": changes.folders})
        after.publish(root, "extracted")
        manifest.seal(root, "extract", after, summary.items)
        return summary
    # Through the run only a digest of library/'s manifest is kept, not the manifests: at
    # 100,000 items they are ≈ 100 MB, and the run ends by making them again (docs/scale.md,
    # "Manifests in bounded memory").
    library = sha256_hex(before.manifests["library"])
    del before
    summary = run_extract(repo, progress=progress, changes=changes)
    after = manifest.snapshot(root, MANIFESTS, inputs)
    after.publish(root)
    if inputs is not None and sha256_hex(after.manifests["library"]) == library:
        manifest.seal(root, "extract", after, summary.items)
    return summary
