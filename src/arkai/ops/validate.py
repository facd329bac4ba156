"""``arkai validate`` / ``arkai evidence validate``: recompute every receipt of every output.

Each span-bearing file of an item is listed in :data:`SPAN_FILES` (evidence, entity mentions,
wisdom quotes); a new output that pins quotes to spans adds one entry and is checked from then
on. Every record is re-derived from its quote and the current transcript
(:func:`arkai.core.receipts.check_receipt`):

- a span whose bytes no longer hash to ``slice_sha256`` is **stale** (the transcript was edited:
  re-extract or ``arkai evidence reanchor``), and so is a record whose counts, rank, line or
  timestamp no longer recompute when the transcript changed since extraction (a new occurrence
  of the quote, a line added above);
- any other disagreement — a quote that is not the bytes at its span, a wrong digest, ID, count,
  rank, line, column or timestamp, an unknown status — is **invalid**: the file was edited by
  hand or written by a bug, and the record is named (file, ID or path, problem);
- spans that are not exact matches (``matched_case_insensitive``, ``matched_fuzzy``,
  ``reanchored_fuzzy``) are counted as **unverified**, never as valid; an evidence line that is
  a re-anchor suggestion is also **pending** until a person accepts it.

Incremental (the ``validate`` stage): an item's verdict is kept in one table for the whole
library (:class:`arkai.adapters.itemtable.ItemTable`, ``.arkai/index-cache/validation.tsv``)
under a key made of the SHA-256 of every file the check reads (:func:`checked_files`, their paths
included), the table carrying the validator's version; an unchanged item costs a ``lstat`` of
its files when their size, mtime, ctime and inode are what they were when last hashed
(:func:`arkai.adapters.itemtable.stat_digest`; files changed within
:data:`arkai.adapters.itemcache.SETTLED_NS` of a run are hashed again next time), else
reading and hashing them — not resolving its spans again. Any
changed byte, a moved folder, a damaged row or a new validator version re-checks the item.
``full=True`` (``arkai validate --full``, what CI runs) ignores the table and re-checks every
span from scratch.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arkai import __version__
from arkai.adapters import events, manifest
from arkai.adapters.fs import read_repo_file
from arkai.adapters.itemtable import ItemTable, stat_digest
from arkai.adapters.layout import (
    ENTITIES,
    EVIDENCE,
    EXTRACTION,
    REVIEW,
    TRANSCRIPT,
    Item,
    ItemProblem,
    load_items,
)
from arkai.adapters.repo import Repo
from arkai.adapters.review import load_item_review, match_reviews
from arkai.adapters.shards import CONDENSED_FILE, read_condensed
from arkai.adapters.store import read_entities, read_evidence, read_json, write_json
from arkai.core import canonjson
from arkai.core.document import Document
from arkai.core.hashing import digest, sha256_hex
from arkai.core.receipts import (
    Receipt,
    check_receipt,
    evidence_receipt,
    iter_quote_records,
    receipt_from_dict,
    span_is_valid,
)
from arkai.errors import ArkaiError, LibraryError
from arkai.model.evidence import Resolution, Span
from arkai.model.record import AsDict
from arkai.model.status import REANCHORED_FUZZY, UNRESOLVED, VERIFIED

WISDOM = "wisdom.json"

#: What a span-bearing file yields: ``(label, receipt)`` per record; ``label`` names the record
#: (an evidence ID, an entity mention, a JSON path).
Reader = Callable[[Item, Path], Iterator[tuple[str, Receipt]]]


def _evidence_receipts(item: Item, path: Path) -> Iterator[tuple[str, Receipt]]:
    for line in read_evidence(path):
        yield line.id, evidence_receipt(line, item.id)


def _record(path: Path, label: str, raw: Any) -> Receipt:
    if not isinstance(raw, dict):
        raise LibraryError(f"{path}: {label}: expected an object")
    try:
        return receipt_from_dict(raw)
    except (ValueError, KeyError, TypeError) as exc:
        raise LibraryError(f"{path}: {label}: malformed record ({exc})") from None


def _mention_receipts(item: Item, path: Path) -> Iterator[tuple[str, Receipt]]:
    for entity in read_entities(path)["entities"]:
        name = str(entity.get("name", "?")) if isinstance(entity, dict) else "?"
        mentions = entity.get("mentions", []) if isinstance(entity, dict) else []
        for n, raw in enumerate(mentions if isinstance(mentions, list) else []):
            label = f"entity {name!r} mention {n + 1}"
            yield label, _record(path, label, raw)


def _wisdom_receipts(item: Item, path: Path) -> Iterator[tuple[str, Receipt]]:
    for label, raw in iter_quote_records(read_json(path) or {}):
        yield label, _record(path, label, raw)


def _condensed_receipts(item: Item, path: Path) -> Iterator[tuple[str, Receipt]]:
    """The quote of every decision, discovery and procedure of the item's condensed chunks."""
    record = read_condensed(path, item.root)
    if record is None:
        return
    if record.content_id != item.id:
        raise LibraryError(f"{path}: written for item {record.content_id}, not {item.id}")
    for c in record.chunks:
        for n, f in enumerate(c.findings, 1):
            label = f"chunk {c.chunk} {f.kind} {n}"
            span = None
            if f.span is not None:
                if f.slice_sha256 is None:
                    raise LibraryError(f"{path}: {label}: a span without slice_sha256")
                start, end = f.span
                span = Span(TRANSCRIPT, start, end, f.slice_sha256, line=f.line,
                            video_timestamp=f.video_timestamp)  # fmt: skip
            resolution = f.resolution or Resolution.from_dict(f.status, {})
            receipt = Receipt(
                quote=f.quote,
                status=f.status,
                resolution=resolution,
                span=span,
                quote_sha256=f.quote_sha256,
                counted=f.resolution is not None,
            )
            yield label, receipt


#: Every span-bearing output of an item: (file name, kind, reader); the file lives in
#: ``extracted/<item>/`` but for condensed chunks (``condensed/<item>/``, :func:`span_file`).
SPAN_FILES: tuple[tuple[str, str, Reader], ...] = (
    (EVIDENCE, "evidence", _evidence_receipts),
    (ENTITIES, "mentions", _mention_receipts),
    (WISDOM, "wisdom", _wisdom_receipts),
    (CONDENSED_FILE, "condensed", _condensed_receipts),
)


def span_file(item: Item, name: str) -> Path:
    """Where the item's span-bearing output ``name`` lives."""
    return (item.condensed if name == CONDENSED_FILE else item.extracted) / name


@dataclass(frozen=True, slots=True)
class Problem(AsDict):
    """One record whose receipt does not hold."""

    file: str
    """Path of the output file, relative to the repo root."""
    record: str
    """The evidence ID, or the entity mention / JSON path."""
    problem: str
    kind: str
    """``stale`` (transcript edited under the span), ``invalid`` (the record is wrong) or
    ``pending`` (a re-anchor suggestion nobody has accepted yet)."""


@dataclass
class Counts(AsDict):
    valid: int = 0
    stale: int = 0
    invalid: int = 0
    unverified: int = 0
    unresolved: int = 0


@dataclass
class ItemReport:
    """Validation of one item's span-bearing outputs against its current transcript."""

    content_id: str
    title: str
    path: str
    digest_ok: bool
    """Current ``transcript.md`` digest equals the one the evidence was resolved against."""
    edited_since_add: bool
    """``transcript.md`` differs from the digest recorded in ``metadata.json`` at add time."""
    extracted: bool
    counts: dict[str, Counts] = field(default_factory=dict)
    """Per kind of output (``evidence``, ``mentions``, ``wisdom``)."""
    problems: list[Problem] = field(default_factory=list)
    error: str | None = None
    """Why the item could not be checked (an unreadable file, a failed extraction); the item is
    skipped and validation fails."""
    orphaned_reviews: list[str] = field(default_factory=list)
    """``review.yaml`` keys that name no claim of the current extraction (kept, reported)."""

    def _of(self, kind: str) -> Counts:
        return self.counts.setdefault(kind, Counts())

    @property
    def valid(self) -> int:
        return self._of("evidence").valid

    @property
    def stale(self) -> int:
        return self._of("evidence").stale

    @property
    def unresolved(self) -> int:
        return self._of("evidence").unresolved

    @property
    def unverified(self) -> int:
        return self._of("evidence").unverified

    @property
    def invalid(self) -> int:
        return sum(c.invalid for c in self.counts.values())

    @property
    def mentions_valid(self) -> int:
        return self._of("mentions").valid

    @property
    def mentions_stale(self) -> int:
        return self._of("mentions").stale

    @property
    def stale_ids(self) -> list[str]:
        return [p.record for p in self.problems if p.kind == "stale" and p.file.endswith(EVIDENCE)]

    @property
    def pending(self) -> int:
        return sum(p.kind == "pending" for p in self.problems)

    @property
    def any_stale(self) -> int:
        return sum(c.stale for c in self.counts.values())

    @property
    def ok(self) -> bool:
        return not self.problems and self.extracted and self.error is None

    def to_dict(self) -> dict[str, Any]:
        return {
            "content_id": self.content_id,
            "title": self.title,
            "path": self.path,
            "digest_ok": self.digest_ok,
            "edited_since_add": self.edited_since_add,
            "extracted": self.extracted,
            "valid": self.valid,
            "stale": self.stale,
            "unresolved": self.unresolved,
            "unverified": self.unverified,
            "invalid": self.invalid,
            "mentions_valid": self.mentions_valid,
            "mentions_stale": self.mentions_stale,
            "stale_ids": self.stale_ids,
            "pending": self.pending,
            "files": {k: self._of(k).to_dict() for _, k, _ in SPAN_FILES},
            "problems": [p.to_dict() for p in self.problems],
            "error": self.error,
            "orphaned_reviews": self.orphaned_reviews,
        }


def _tally(report: ItemReport, doc: Document, file: str, kind: str, label: str, r: Receipt) -> None:
    counts = report._of(kind)
    if r.span is not None and r.status != UNRESOLVED and not span_is_valid(doc.data, r.span):
        counts.stale += 1
        report.problems.append(
            Problem(file, label, "the transcript changed under the span", "stale")
        )
        return
    problems = check_receipt(doc, r)
    if problems and not report.digest_ok and all(p.drift for p in problems):
        # The transcript changed since extraction and that explains the difference (an added
        # occurrence, a shifted line): out of date, like a stale span, not a broken record.
        counts.stale += 1
        why = "transcript changed: " + "; ".join(problems)
        report.problems.append(Problem(file, label, why, "stale"))
    elif problems:
        counts.invalid += 1
        report.problems += [Problem(file, label, p, "invalid") for p in problems]
    elif r.status == UNRESOLVED:
        counts.unresolved += 1
    elif r.status in VERIFIED:
        counts.valid += 1
    else:
        counts.unverified += 1
        if r.status == REANCHORED_FUZZY and r.evidence_id is not None:
            why = (
                f"re-anchor suggestion awaiting a person: arkai evidence reanchor --accept {label}"
            )
            report.problems.append(Problem(file, label, why, "pending"))


def validate_item(item: Item) -> ItemReport:
    """Recompute the transcript digest and every receipt of every span-bearing output. An item
    whose files cannot be read (a link, a FIFO, malformed JSON or YAML) is reported with
    ``error``."""
    try:
        return _validate_item(item)
    except (ArkaiError, OSError) as exc:
        return ItemReport(
            content_id=item.id,
            title=item.title,
            path=str(item.path.relative_to(item.root)),
            digest_ok=False,
            edited_since_add=False,
            extracted=False,
            error=str(exc),
        )


def _validate_item(item: Item) -> ItemReport:
    data = item.read(TRANSCRIPT, missing_ok=True) or b""
    doc = Document(data)
    current = digest(data)
    extraction = read_json(item.extracted / EXTRACTION) or {}
    recorded_add = (item.metadata.get("artifact_digests") or {}).get(TRANSCRIPT)
    expected = extraction.get("transcript_digest") or recorded_add
    report = ItemReport(
        content_id=item.id,
        title=item.title,
        path=str(item.path.relative_to(item.root)),
        digest_ok=expected == current,
        edited_since_add=recorded_add is not None and recorded_add != current,
        extracted=extraction.get("status") == "ok",
    )
    if extraction.get("status") == "failed":
        report.error = f"extraction failed: {extraction.get('error')}"
    reviews = load_item_review(item)
    if reviews:
        evidence = read_evidence(item.extracted / EVIDENCE)
        report.orphaned_reviews = sorted(match_reviews(evidence, reviews, evidence).orphans)
    for name, kind, reader in SPAN_FILES:
        path = span_file(item, name)
        file = str(path.relative_to(item.root))
        for label, receipt in reader(item, path):
            _tally(report, doc, file, kind, label, receipt)
    return report


#: Bump when what a check concludes from the same bytes changes: older verdicts are re-checked.
VALIDATOR_VERSION = 1
TABLE = "validation"


def checked_files(item: Item) -> list[Path]:
    """Every file :func:`validate_item` reads for ``item`` (the cache key's inputs)."""
    own = [item.path / name for name in (TRANSCRIPT, "metadata.json", REVIEW)]
    extracted, condensed = item.extracted, item.condensed  # each is worked out from the path
    spans = [
        (condensed if name == CONDENSED_FILE else extracted) / name for name, _, _ in SPAN_FILES
    ]
    return [*own, extracted / EXTRACTION, *spans]


def cache_key(item: Item) -> str | None:
    """The digest of the item's ID and title and the paths and bytes of :func:`checked_files`;
    None when a file cannot be read safely (the item is then checked, and its error reported)."""
    parts = [f"validate\0{item.id}\0{item.title}"]
    try:
        for path in checked_files(item):
            data = read_repo_file(path, item.root, missing_ok=True)
            rel = path.relative_to(item.root).as_posix()
            parts.append(f"{rel}\0{'-' if data is None else sha256_hex(data)}")
    except (ArkaiError, OSError):
        return None
    return "sha256:" + sha256_hex("\n".join(parts).encode("utf-8"))


def _to_cache(rep: ItemReport) -> dict[str, Any]:
    # Field by field (``asdict`` copies recursively: ≈ 0.3 s for the stage's 10,000 verdicts).
    return {
        "content_id": rep.content_id, "title": rep.title, "path": rep.path,
        "digest_ok": rep.digest_ok, "edited_since_add": rep.edited_since_add,
        "extracted": rep.extracted,
        "counts": {k: {"valid": c.valid, "stale": c.stale, "invalid": c.invalid,
                       "unverified": c.unverified, "unresolved": c.unresolved}
                   for k, c in rep.counts.items()},
        "problems": [{"file": p.file, "record": p.record, "problem": p.problem, "kind": p.kind}
                     for p in rep.problems],
        "error": rep.error, "orphaned_reviews": list(rep.orphaned_reviews),
    }  # fmt: skip


def _from_cache(body: bytes) -> ItemReport | None:
    """The report a table row holds; None when it does not have the expected shape."""
    try:
        return _report_of(json.loads(body))
    except ValueError:
        return None


def _report_of(d: Any) -> ItemReport | None:
    """The report of one :func:`_to_cache` dictionary; None when it does not have its shape."""
    try:
        rep = ItemReport(
            content_id=str(d["content_id"]), title=str(d["title"]), path=str(d["path"]),
            digest_ok=bool(d["digest_ok"]), edited_since_add=bool(d["edited_since_add"]),
            extracted=bool(d["extracted"]),
            counts={str(k): Counts(**c) for k, c in d["counts"].items()},
            problems=[Problem(**p) for p in d["problems"]],
            error=None if d["error"] is None else str(d["error"]),
            orphaned_reviews=[str(o) for o in d["orphaned_reviews"]],
        )  # fmt: skip
    except (KeyError, TypeError, ValueError, AttributeError):
        return None
    return rep


def _validate_cached(item: Item, table: ItemTable) -> tuple[ItemReport, bool]:
    """The recorded verdict when the item's files are unchanged: their ``lstat`` as when last
    hashed (nothing read), else their digests (read and hashed); otherwise a fresh check. With
    whether it was checked afresh."""
    stats = stat_digest(checked_files(item))
    row = table.by_stat(item.id, stats[0] if stats is not None else None)
    key = row.key if row is not None else cache_key(item)
    if row is None and key is not None:
        row = table.by_key(item.id, key)
    rep = _from_cache(row.body) if row is not None else None
    if rep is not None and (rep.content_id, rep.path) == (item.id, _rel(item)):
        table.keep(item.id, stats, key, row.body if row is not None else b"")
        return rep, False
    rep = validate_item(item)
    if rep.error is None:
        body = canonjson.dumps_compact(_to_cache(rep)).encode("utf-8")
        table.keep(item.id, stats, key, body)
    return rep, True


def _rel(item: Item) -> str:
    return str(item.path.relative_to(item.root))


#: Items per batch of ``EvidenceValidated`` events (appended together).
EVENT_BATCH = 1000


def _flagged(rep: ItemReport) -> bool:
    """The verdict reports something wrong (what its ``EvidenceValidated`` event counts, or an
    error): logged on every run, checked afresh or not."""
    return (rep.error is not None or not rep.digest_ok
            or bool(rep.stale or rep.unresolved or rep.invalid))  # fmt: skip


def validate_items(
    root: Path,
    items: list[Item],
    *,
    full: bool = True,
    prune: bool = False,
    kept: Sequence[ItemReport] = (),
    table: bool = True,
) -> list[ItemReport]:
    """Validate ``items``; unless ``full``, an item whose checked files are unchanged takes its
    recorded verdict (``prune``: the items are the whole library, records of other items are
    dropped). One ``EvidenceValidated`` event per item checked afresh and per verdict that
    reports a problem, in the report's order — an unchanged, clean item's verdict is not logged
    again on every run (at 10,000 items that was 2.8 MB of log a run); the ``items`` step's
    ``StepCompleted`` counts them (``checked``, ``kept``, ``logged``). ``kept``: the verdicts
    of the other items, taken from the stage's last complete run (:func:`validate`), logged
    after these when they report a problem and counted as kept; not returned. ``table``:
    False checks ``items`` without the verdict table (the stage's changed items, whose files
    changed since their verdicts: loading the table would cost more than it saves)."""
    reports: list[ItemReport] = []
    version = f"validate\0{VALIDATOR_VERSION}\0{__version__}"
    verdicts = None if full or not table else ItemTable(root, TABLE, version)
    with events.run(root, "validate", items=len(items) + len(kept), full=full) as log:
        with log.step("items") as info:
            batch: list[dict[str, Any]] = []
            checked = logged = 0
            for item in items:
                rep, fresh = ((validate_item(item), True) if verdicts is None
                              else _validate_cached(item, verdicts))  # fmt: skip
                reports.append(rep)
                checked += fresh
                if fresh or _flagged(rep):
                    batch.append(_event(rep))
                if len(batch) >= EVENT_BATCH:
                    log.emit_many("EvidenceValidated", batch)
                    logged, batch = logged + len(batch), []
            batch += [_event(rep) for rep in kept if _flagged(rep)]
            log.emit_many("EvidenceValidated", batch)
            info.update(checked=checked, kept=len(reports) + len(kept) - checked,
                        logged=logged + len(batch))  # fmt: skip
        if verdicts is not None:
            verdicts.save(prune=prune)
    return reports


def _event(rep: ItemReport) -> dict[str, Any]:
    return {
        "content_id": rep.content_id, "artifact": TRANSCRIPT, "digest_ok": rep.digest_ok,
        "valid_count": rep.valid, "stale_count": rep.stale, "unresolved_count": rep.unresolved,
        "unverified_count": rep.unverified, "invalid_count": rep.invalid,
    }  # fmt: skip


def summarize(reports: list[ItemReport], problems: Sequence[ItemProblem] = ()) -> dict[str, Any]:
    """Library-wide counts; deterministic (no times) so the DVC metric diffs cleanly."""
    return {
        "items": len(reports) + len(problems),
        "not_extracted": sum(not r.extracted and r.error is None for r in reports),
        "errors": sum(r.error is not None for r in reports) + len(problems),
        "orphaned_reviews": sum(len(r.orphaned_reviews) for r in reports),
        "extracted": sum(r.extracted for r in reports),
        "digest_mismatch": sum(not r.digest_ok for r in reports),
        "edited_since_add": sum(r.edited_since_add for r in reports),
        "valid": sum(r.valid for r in reports),
        "stale": sum(r.stale for r in reports),
        "unresolved": sum(r.unresolved for r in reports),
        "unverified": sum(r.unverified for r in reports),
        "invalid": sum(r.invalid for r in reports),
        "mentions_valid": sum(r.mentions_valid for r in reports),
        "mentions_stale": sum(r.mentions_stale for r in reports),
        "outputs_stale": sum(r.any_stale for r in reports),
        "pending": sum(r.pending for r in reports),
        "ok": all(r.ok for r in reports) and not problems,
    }


#: :meth:`ValidateResult.failure` when items could not be read, failed or are not extracted.
UNREADABLE = "some items are unreadable, failed or not extracted"


@dataclass(frozen=True)
class ValidateResult:
    """``arkai validate``: the summary, one report per item, the unreadable folders, and
    whether stale spans fail the run (``validate.fail_on_stale``)."""

    summary: dict[str, Any]
    reports: list[ItemReport]
    problems: list[ItemProblem]
    fail_on_stale: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "summary": self.summary,
            "items": [r.to_dict() for r in self.reports],
            "unreadable": [p.to_dict() for p in self.problems],
        }

    def failure(self) -> str | None:
        """Why this validation fails the run (exit 1), or None when it passes."""
        s = self.summary
        if s["invalid"]:
            # A receipt that does not recompute is never acceptable, whatever fail_on_stale says.
            return "invalid evidence found"
        if (s["outputs_stale"] or s["pending"]) and self.fail_on_stale:
            found = [
                *(["stale evidence found"] if s["outputs_stale"] else []),
                *(["re-anchor suggestions await acceptance"] if s["pending"] else []),
            ]
            return " and ".join(found)
        if s["errors"] or s["not_extracted"]:
            return UNREADABLE
        return None


def validate(repo: Repo, *, report: Path | None = None, full: bool = False) -> ValidateResult:
    """Validate the whole library; also write the summary to ``report`` (a DVC metric,
    relative to the repo root) when given. Unchanged items take their cached verdict unless
    ``full`` (every span re-checked; the verdicts are the same either way). Run as the DVC
    stage (``repo.stage``), the items are planned from the manifests (:func:`_stage_run`)."""
    if repo.stage == STAGE and not full:
        reports, problems = _stage_run(repo)
    else:
        items, problems = repo.scan()
        reports = validate_items(repo.root, items, full=full, prune=True)
    summary = summarize(reports, problems)
    if report is not None:
        write_json(repo.root / report, summary)
    fail = bool(repo.param("validate.fail_on_stale"))
    return ValidateResult(summary, reports, problems, fail)


#: The DVC stage this module's :func:`validate` runs as (``stages/validate.py``).
STAGE = "validate"
#: The folders whose manifests (written by the stages before it) the stage plans from.
STAGE_FOLDERS = ("library", "extracted", "condensed")
#: Bump when what the stage's sealed result (:func:`_result_bytes`) holds changes.
RESULT_VERSION = 1


def _stage_run(repo: Repo) -> tuple[list[ItemReport], list[ItemProblem]]:
    """The ``validate`` stage: like extract and condense after a complete run
    (:func:`arkai.adapters.manifest.changes`), only the items whose lines in the manifests of
    library/, extracted/ and condensed/ — DVC's dependencies of the stage, written by the
    stages before it in the same ``dvc repro`` — differ from the last complete run's are
    looked at (their verdicts as :func:`validate_items` makes them); the other items' verdicts
    are that run's, sealed with it. Without such a run (a fresh clone, a new arkai, a manifest
    missing or a sealed result damaged), after a run that found something it could not read,
    or when a changed line belongs to no item, every item is looked at. Either way the run is
    sealed with the manifests it planned from and its verdicts. A file changed after the
    manifests were written is seen by the next ``dvc repro`` (whose extract stage walks the
    library again); ``arkai validate`` and CI's ``arkai validate --full`` look at every file
    whatever the manifests say."""
    root = repo.root
    inputs = {"stage": STAGE, "validator": VALIDATOR_VERSION, "result": RESULT_VERSION,
              "arkai": __version__}  # fmt: skip
    plan = manifest.planned(root, STAGE, STAGE_FOLDERS, inputs)
    if plan is None:
        items, problems = repo.scan()
        return validate_items(root, items, full=False, prune=True), problems
    sealed, changes = plan.sealed, plan.changes
    last = _result(root, sealed.result) if sealed is not None and changes is not None else None
    if last is not None and (last[1] or any(r.error is not None for r in last[0])):
        # Something could not be read last time (a link, a file it may not open): what the
        # manifests list (links followed) may not say whether it can be now. Looked at again.
        last = None
    if changes is None or last is None:
        items, problems = repo.scan()
        reports = validate_items(root, items, full=False, prune=True)
    else:
        folders = changes.folders
        old_reports = last[0]
        kept = [r for r in old_reports if _folder(r) not in folders]
        items, found = load_items(root, folders)
        fresh = validate_items(root, items, full=False, kept=kept, table=False)
        reports = sorted([*kept, *fresh], key=lambda r: r.path.split(os.sep))
        problems = sorted(found, key=lambda p: p.path)  # (none was kept: see above)
    manifest.seal(root, STAGE, plan.now, len(reports), _result_bytes(root, reports, problems))
    return reports, problems


def _folder(report: ItemReport) -> str:
    """The item folder of a report (relative to library/, ``/``-separated), as
    :func:`arkai.adapters.manifest.changes` names folders."""
    return "/".join(report.path.split(os.sep)[1:])


def _result_bytes(root: Path, reports: list[ItemReport], problems: list[ItemProblem]) -> bytes:
    """The stage's verdicts as its seal keeps them: each report as the verdict table keeps it
    (:func:`_to_cache`) and each unreadable folder (its path relative to the repo root and
    the error)."""
    doc = {
        "version": RESULT_VERSION,
        "reports": [_to_cache(r) for r in reports],
        "problems": [[p.path.relative_to(root).as_posix(), p.error] for p in problems],
    }
    # (json's C encoder: canonical JSON's writer took ≈ 0.35 s for 10,000 verdicts, and any
    # fixed spelling does for a file only this stage reads.)
    return json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _result(root: Path, data: bytes | None) -> tuple[list[ItemReport], list[ItemProblem]] | None:
    """What :func:`_result_bytes` wrote; None when it is not that (the seal's digest held, so
    only a result written by another version gets here: every item is then looked at)."""
    try:
        doc = json.loads(data or b"")
        if doc["version"] != RESULT_VERSION:
            return None
        reports = [_report_of(d) for d in doc["reports"]]
        problems = [ItemProblem(root / str(path), str(error)) for path, error in doc["problems"]]
    except (ValueError, KeyError, TypeError):
        return None
    if any(r is None for r in reports):
        return None
    return [r for r in reports if r is not None], problems


def validate_one(repo: Repo, ident: str) -> ValidateResult:
    """Validate one item (content ID, ≥ 8-character prefix or source ID)."""
    reports = validate_items(repo.root, [repo.item(ident)])
    fail = bool(repo.param("validate.fail_on_stale"))
    return ValidateResult(summarize(reports), reports, [], fail)
