"""The ``extract`` stage: patterns → provider (through the runner) → claims, entities, wisdom and
summary, every quote resolved to bytes of ``transcript.md`` (DESIGN §4–5).

One stage over the whole library, incremental inside: an item's key is the digest of its
transcript, its ``review.yaml``, the provider, model, pattern digests and extract params; an
unchanged key is skipped. ``extraction.json`` is written last, so an interrupted run redoes only
unfinished items; a failed item is recorded (``status: failed``), the others go on, and the
stage ends with a PipelineError (exit 3) so ``dvc repro`` can simply be re-run.
"""

from __future__ import annotations

import shutil
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arkai.adapters import events, interrupt
from arkai.adapters.fs import write_if_changed
from arkai.adapters.layout import (
    ENTITIES,
    EVIDENCE,
    EXTRACTED,
    EXTRACTION,
    REVIEW,
    Item,
    iter_items,
)
from arkai.adapters.params import load_params
from arkai.adapters.review import apply_review, load_review
from arkai.adapters.store import read_evidence, read_json, write_evidence, write_json
from arkai.core import canonjson
from arkai.core.document import Document
from arkai.core.entities import entities_document, resolve_entities
from arkai.core.evidence import evidence_from_match
from arkai.core.hashing import digest, sha256_hex
from arkai.core.resolve import resolve_quote
from arkai.errors import ArkaiError, PipelineError
from arkai.model.evidence import EvidenceLine
from arkai.ops.render_item import render_claims_md, render_wisdom_md
from arkai.ops.runner import CircuitOpen, ResponseStore, Runner, RunnerConfig, Stats
from arkai.patterns import Pattern, claims_input, get_pattern
from arkai.providers.registry import get_provider

STAGE_VERSION = "2"
#: The response store: a local, content-addressed cache (not in git, not a DVC output, so a
#: fresh clone's `dvc repro` is a no-op; extraction results themselves are in git).
RESPONSES = Path(".arkai") / "responses"
CLAIMS = "extract_claims"
ENTITY_PATTERN = "extract_entities"
VERIFY = "validate_claims"


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

    def to_dict(self) -> dict[str, Any]:
        return {
            "items": self.items,
            "extracted": self.extracted,
            "skipped": self.skipped,
            "failed": self.failed,
            "removed": self.removed,
            "claims": self.claims,
            **self.stats.to_dict(),
        }


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
    data = item.transcript.read_bytes()
    chosen = [load(n) for n in patterns_for(item, xp)]
    if xp.get("verify") and CLAIMS in {p.name for p in chosen}:
        chosen.append(load(VERIFY))
    review = item.path / REVIEW
    blob = canonjson.dumps(
        {
            "stage": STAGE_VERSION,
            "transcript": digest(data),
            "review": digest(review.read_bytes()) if review.is_file() else None,
            "provider": provider,
            "model": model,
            "patterns": {p.name: p.digest for p in chosen},
            "params": {k: v for k, v in xp.items() if k not in ("concurrency", "progress")},
        }
    )
    return Plan(item, data, chosen, "sha256:" + sha256_hex(blob.encode("utf-8")))


def is_current(plan: Plan) -> bool:
    meta = read_json(plan.item.extracted / EXTRACTION)
    return bool(
        meta is not None
        and meta.get("key") == plan.key
        and meta.get("status") == "ok"
        and (plan.item.extracted / EVIDENCE).exists()
    )


def _claims(
    plan: Plan, doc: Document, value: Any, xp: dict[str, Any], now: str
) -> list[EvidenceLine]:
    previous = {ln.id: ln for ln in read_evidence(plan.item.extracted / EVIDENCE)}
    lines: dict[str, EvidenceLine] = {}
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
        old = previous.get(line.id)
        if old is not None and old.quote == line.quote:
            line = EvidenceLine.from_dict({**line.to_dict(), "ts": old.ts})
        lines.setdefault(line.id, line)
    return list(lines.values())


def _with_verdicts(lines: list[EvidenceLine], value: Any) -> list[EvidenceLine]:
    verdicts = {
        str(v.get("id")): {"verdict": v.get("verdict"), "note": v.get("note", "")}
        for v in (value if isinstance(value, list) else [])
        if isinstance(v, dict)
    }
    out = []
    for line in lines:
        if line.id in verdicts:
            line = EvidenceLine.from_dict({**line.to_dict(), "verdict": verdicts[line.id]})
        out.append(line)
    return out


def extract_item(
    plan: Plan, runner: Runner, params: dict[str, Any], now: str, log: events.RunLog
) -> int:
    """Run every pattern for one item and write its files; returns the claim count."""
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
    lines = _claims(plan, doc, results.get(CLAIMS, []), xp, now)
    verify = next((p for p in plan.patterns if p.name == VERIFY), None)
    if verify is not None and lines:
        payload = claims_input(
            [{"id": ln.id, "claim": ln.claim, "quote": ln.quote} for ln in lines], text
        )
        res = runner.run(verify, payload, options)
        lines = _with_verdicts(lines, res.value)
        calls[VERIFY] = {"version": verify.version, "digest": verify.digest,
                         "chunks": res.chunks, "keys": res.keys}  # fmt: skip
    lines = apply_review(lines, load_review(item.path / REVIEW))
    out = item.extracted
    out.mkdir(parents=True, exist_ok=True)
    write_evidence(out / EVIDENCE, lines)
    raw_entities = (results.get(ENTITY_PATTERN) or {}).get("entities", [])
    entities = entities_document(
        resolve_entities(doc, raw_entities, mode=str(xp["match_mode"])),
        extracted_by=ENTITY_PATTERN,
        extracted_at=now,
    )
    old = read_json(out / ENTITIES)
    if old is not None and old.get("entities") == entities["entities"]:
        entities["extracted_at"] = old.get("extracted_at", now)
    write_json(out / ENTITIES, entities)
    wisdom = {k: v for k, v in results.items() if k not in (CLAIMS, ENTITY_PATTERN)}
    write_json(out / "wisdom.json", resolve_sections(doc, wisdom))
    write_if_changed(out / "wisdom.md", render_wisdom_md(item, doc, wisdom).encode("utf-8"))
    write_if_changed(out / "claims.md", render_claims_md(item, lines).encode("utf-8"))
    counts = Counter(line.status for line in lines)
    write_json(
        out / EXTRACTION,
        {
            "schema_version": 2,
            "content_id": item.id,
            "key": plan.key,
            "transcript_digest": digest(plan.transcript),
            "provider": runner.provider.name,
            "model": runner.model,
            "patterns": calls,
            "counts": {
                **{s: counts.get(s, 0) for s in ("resolved", "ambiguous", "unresolved")},
                "claims": len(lines),
                "entities": len(entities["entities"]),
                "rejected": sum(
                    1 for ln in lines if (ln.extra.get("review") or {}).get("status") == "rejected"
                ),
            },
            "status": "ok",
        },
    )
    for line in lines:
        log.emit("EvidenceAppended", content_id=item.id, evidence_id=line.id,
                 status=line.status, extractor=line.extractor)  # fmt: skip
    return len(lines)


def resolve_sections(doc: Document, sections: dict[str, Any]) -> dict[str, Any]:
    """Pattern outputs with every ``quote`` (and every string in a ``quotes`` list) resolved:
    each becomes ``{quote, status, span}`` so pages can link and validation can re-check."""

    def walk(value: Any, key: str = "") -> Any:
        if isinstance(value, dict):
            out = {k: walk(v, k) for k, v in value.items()}
            if isinstance(value.get("quote"), str):
                m = resolve_quote(doc, value["quote"])
                out["status"] = m.resolution.status
                out["span"] = m.span.to_dict() if m.span else None
            return out
        if isinstance(value, list):
            if key == "quotes":
                return [walk({"quote": v}) if isinstance(v, str) else walk(v) for v in value]
            return [walk(v, key) for v in value]
        return value

    return {k: walk(v, k) for k, v in sorted(sections.items())}


def remove_orphans(root: Path, keep: set[Path]) -> int:
    """Delete ``extracted/`` folders whose item is gone (only folders this stage wrote)."""
    removed = 0
    base = root / EXTRACTED
    if not base.is_dir():
        return 0
    for marker in sorted(base.rglob(EXTRACTION)):
        if marker.parent not in keep:
            shutil.rmtree(marker.parent)
            removed += 1
    return removed


def record_failure(plan: Plan, runner: Runner, error: str) -> None:
    """Mark the item failed (previous outputs, if any, are left as they were)."""
    write_json(
        plan.item.extracted / EXTRACTION,
        {
            "schema_version": 2,
            "content_id": plan.item.id,
            "key": plan.key,
            "provider": runner.provider.name,
            "model": runner.model,
            "status": "failed",
            "error": error,
        },
    )


def make_runner(root: Path, params: dict[str, Any], *, refresh: bool, now: str) -> Runner:
    xp = params["extract"]
    name = str(xp["provider"])
    config = dict((params.get("providers") or {}).get(name) or {})
    model = xp.get("model") or config.get("model")
    provider = get_provider(name, config)
    cfg = RunnerConfig.from_params(xp)
    return Runner(
        provider=provider,
        store=ResponseStore(root / RESPONSES),
        config=cfg,
        model=str(model) if model else None,
        refresh=refresh,
        now=lambda: now,
    )


ProgressFn = Callable[[int, int, str, Stats], None]


def run_extract(
    root: Path,
    *,
    now: str,
    only: set[str] | None = None,
    force: bool = False,
    refresh: bool = False,
    progress: ProgressFn | None = None,
) -> ExtractSummary:
    """Extract every item whose key changed (or, with ``force``, those in ``only``)."""
    params = load_params(root)
    xp = params["extract"]
    runner = make_runner(root, params, refresh=refresh, now=now)
    items = list(iter_items(root))
    summary = ExtractSummary(items=len(items), stats=runner.stats)
    plans: list[Plan] = []
    loaded: dict[str, Pattern] = {}
    for item in items:
        plan = plan_item(item, root, params, runner.provider.name, runner.model, loaded)
        if (only is not None and item.id not in only) or (not force and is_current(plan)):
            summary.skipped += 1
        else:
            plans.append(plan)
    workers = 1 if runner.provider.name == "builtin" else max(1, int(xp.get("concurrency", 4)))
    done = summary.skipped
    with (
        events.run(root, "extract", items=len(items), todo=len(plans)) as log,
        interrupt.stop_on_signals(),
    ):
        if progress:
            progress(done, len(items), "", runner.stats)

        def work(plan: Plan) -> int:
            with log.step("extract", content_id=plan.item.id) as info:
                info["claims"] = extract_item(plan, runner, params, now, log)
                return int(info["claims"])

        with ThreadPoolExecutor(max_workers=workers) as pool:
            futures = {pool.submit(work, p): p for p in plans}
            try:
                for fut in as_completed(futures):
                    plan = futures[fut]
                    done += 1
                    try:
                        summary.claims += fut.result()
                        summary.extracted += 1
                    except interrupt.Interrupted:
                        raise
                    except CircuitOpen as exc:
                        summary.failed[plan.item.id] = str(exc)
                        record_failure(plan, runner, str(exc))
                        for other in futures:
                            other.cancel()
                        raise
                    except (ArkaiError, OSError, UnicodeError, ValueError) as exc:
                        summary.failed[plan.item.id] = str(exc)
                        record_failure(plan, runner, str(exc))
                    if progress:
                        progress(done, len(items), plan.item.title, runner.stats)
            except BaseException:
                for other in futures:
                    other.cancel()
                raise
        if only is None:
            summary.removed = remove_orphans(root, {item.extracted for item in items})
    if summary.failed:
        raise PipelineError(
            f"extract failed for {len(summary.failed)} of {len(items)} items: "
            + "; ".join(f"{k}: {v}" for k, v in sorted(summary.failed.items())),
            hint="fix the cause and re-run `dvc repro`; finished items are not redone",
        )
    return summary
