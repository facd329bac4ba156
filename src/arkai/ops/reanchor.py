"""``arkai evidence reanchor``: repair stale spans of every output of an item after a transcript
edit, and ``--accept`` a re-anchor suggestion after a person has checked it.

Every span-bearing output is repaired together — ``evidence.jsonl``, the mentions in
``entities.json``, the quotes in ``wisdom.json`` and in ``condensed/…/condensed.json`` — and
``claims.md`` / ``wisdom.md`` are rendered again from them, so links never point at old
lines. A quote found verbatim again is ``resolved`` / ``ambiguous``; one found only
approximately is a *suggestion* (``reanchored_fuzzy``), shown with a word diff of the old and
new text and never counted as valid.
Accepting a suggestion makes the quote the text now at the span (so the receipt is an exact
match again, method ``reanchor_accepted``, the old quote kept under ``reanchor``) and records
the acceptance in the item's ``review.yaml`` through :func:`arkai.ops.review.review_claim`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from arkai.adapters import events
from arkai.adapters.fs import write_if_changed
from arkai.adapters.layout import ENTITIES, EVIDENCE, EXTRACTION, REVIEW, Item
from arkai.adapters.repo import Repo
from arkai.adapters.review import apply_review, load_review
from arkai.adapters.shards import CONDENSED_FILE, read_condensed, write_condensed
from arkai.adapters.store import read_entities, read_evidence, read_json, write_evidence, write_json
from arkai.core.document import Document
from arkai.core.evidence import evidence_from_match
from arkai.core.hashing import digest, text_digest
from arkai.core.reanchor import reanchor_quote, word_diff
from arkai.core.receipts import (
    Receipt,
    check_receipt,
    iter_quote_records,
    receipt_from_dict,
    span_is_valid,
)
from arkai.core.resolve import Match, all_occurrences, make_span
from arkai.errors import ArkaiError, InvalidInputError
from arkai.model.entity import Mention
from arkai.model.evidence import EvidenceLine, Resolution, Span
from arkai.model.record import AsDict
from arkai.model.status import (
    AMBIGUOUS,
    METHOD_REANCHOR_ACCEPTED,
    REANCHORED_FUZZY,
    REASON_MULTIPLE,
    RESOLVED,
    UNRESOLVED,
)
from arkai.ops.evidence import find_evidence
from arkai.ops.review import review_claim
from arkai.ops.validate import WISDOM
from arkai.site.render_item import render_claims_md, render_wisdom_md


def _text_at(data: bytes, span: Span | None) -> str | None:
    if span is None:
        return None
    return data[span.start : span.end].decode("utf-8", errors="replace")


@dataclass(frozen=True)
class Change:
    """One evidence line re-anchored: its old and new ID, status and text; ``diff`` is the
    word diff of a suggestion (``reanchored_fuzzy``), waiting for a person."""

    old_id: str
    new_id: str
    status: str
    claim: str
    old_text: str
    new_text: str | None
    score: float | None
    diff: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out = {k: v for k, v in vars(self).items() if k != "diff"}
        return out | ({"diff": self.diff} if self.diff is not None else {})


def _change(old: EvidenceLine, new: EvidenceLine, data: bytes) -> Change:
    new_text = _text_at(data, new.span)
    diff = None
    if new.status == REANCHORED_FUZZY and new_text is not None:
        diff = word_diff(old.quote, new_text)
    score = new.resolution.score
    return Change(old.id, new.id, new.status, old.claim, old.quote, new_text, score, diff)


@dataclass(frozen=True)
class ItemReanchor:
    """What ``arkai evidence reanchor`` did to one item."""

    content_id: str
    unchanged: int
    mentions_reanchored: int
    wisdom_reanchored: int
    condensed_reanchored: int
    changes: list[Change]

    @property
    def reanchored(self) -> int:
        return sum(c.status in (RESOLVED, AMBIGUOUS) for c in self.changes)

    @property
    def suggested(self) -> int:
        return sum(c.status == REANCHORED_FUZZY for c in self.changes)

    @property
    def unresolved(self) -> int:
        return sum(c.status == UNRESOLVED for c in self.changes)

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in vars(self).items() if k != "changes"} | {
            "reanchored": self.reanchored, "suggested": self.suggested,
            "unresolved": self.unresolved, "changes": [c.to_dict() for c in self.changes],
        }  # fmt: skip


@dataclass(frozen=True)
class Accepted(AsDict):
    """``arkai evidence reanchor --accept``: the suggestion that became an exact receipt."""

    content_id: str
    old_id: str
    new_id: str
    status: str
    old_text: str
    new_text: str
    diff: str
    review_file: str


def render_outputs(item: Item, data: bytes) -> None:
    """Render ``claims.md`` and ``wisdom.md`` again from the stored records."""
    out = item.extracted
    lines = read_evidence(out / EVIDENCE)
    write_if_changed(out / "claims.md", render_claims_md(item, lines, data).encode("utf-8"))
    sections = read_json(out / WISDOM)
    if sections is not None:
        write_if_changed(out / "wisdom.md", render_wisdom_md(item, sections).encode("utf-8"))


def reanchor_item(
    root: Path, item: Item, *, threshold: float, only: str | None = None
) -> ItemReanchor:
    """Repair stale spans of one item's outputs in place; returns counts and the changes."""
    data = item.transcript_bytes()
    doc = Document(data)
    lines = read_evidence(item.extracted / EVIDENCE)
    out: list[EvidenceLine] = []
    changed: list[Change] = []
    kept = 0
    with events.run(root, "reanchor", content_id=item.id) as log:
        for line in lines:
            stale = line.span is not None and (
                not span_is_valid(data, line.span) or _drifted(doc, line)
            )
            if not stale or (only is not None and line.id != only):
                out.append(line)
                kept += 1
                continue
            match = reanchor_quote(doc, line.quote, line.span, threshold=threshold)
            new = evidence_from_match(
                content_id=line.content_id,
                claim=line.claim,
                quote=line.quote,
                confidence=line.confidence,
                extractor=line.extractor,
                ts=line.ts,
                match=match,
            )
            extra = {k: v for k, v in line.extra.items() if k != "verdict"}
            if new.verified and "verdict" in line.extra:
                extra["verdict"] = line.extra["verdict"]
            new = replace(new, extra={**extra, "reanchored_from": line.id})
            out.append(new)
            changed.append(_change(line, new, data))
            log.emit(
                "EvidenceResolved",
                evidence_id=new.id,
                previous_id=line.id,
                old_status="stale",
                new_status=new.status,
                method=new.resolution.method,
            )
    write_evidence(item.extracted / EVIDENCE, out)
    mentions = wisdom = condensed = 0
    if only is None:
        mentions = reanchor_mentions(item, doc, threshold)
        wisdom = reanchor_wisdom(item, doc, threshold)
        condensed = reanchor_condensed(item, doc, threshold)
    meta = read_json(item.extracted / EXTRACTION)
    if meta is not None and (changed or mentions or wisdom):
        meta["transcript_digest"] = digest(data)
        meta["reanchored"] = True
        write_json(item.extracted / EXTRACTION, meta)
    render_outputs(item, data)
    return ItemReanchor(item.id, kept, mentions, wisdom, condensed, changed)


def _drifted(doc: Document, line: EvidenceLine) -> bool:
    """The span's bytes are intact but an edit changed what they resolve to (another
    occurrence of the quote, lines added above)."""
    receipt = Receipt(line.quote, line.status, line.resolution, line.span, line.quote_sha256)
    found = check_receipt(doc, receipt)
    return bool(found) and all(f.drift for f in found)


def _reanchored_mention(doc: Document, raw: dict[str, Any], threshold: float) -> Mention | None:
    """The repaired mention for a stored record, or None when its span is still good."""
    mention = Mention.from_dict(raw)
    if mention.span is None:
        return None
    if span_is_valid(doc.data, mention.span):
        receipt = receipt_from_dict(raw)
        found = check_receipt(doc, receipt)
        if not found or not all(f.drift for f in found):
            return None
    match = reanchor_quote(doc, mention.quote, mention.span, threshold=threshold)
    return Mention(mention.quote, text_digest(mention.quote), match.resolution, match.span)


def reanchor_mentions(item: Item, doc: Document, threshold: float) -> int:
    """Repair stale entity-mention spans in ``entities.json``; returns how many changed."""
    path = item.extracted / ENTITIES
    document = read_entities(path)
    fixed = 0
    for entity in document["entities"]:
        for n, raw in enumerate(entity.get("mentions", [])):
            new = _reanchored_mention(doc, raw, threshold)
            if new is not None:
                entity["mentions"][n] = new.to_dict()
                fixed += 1
    if fixed:
        write_json(path, document)
    return fixed


def reanchor_wisdom(item: Item, doc: Document, threshold: float) -> int:
    """Repair stale quote spans in ``wisdom.json``; returns how many changed."""
    path = item.extracted / WISDOM
    sections = read_json(path)
    if sections is None:
        return 0
    fixed = 0
    for _, record in iter_quote_records(sections):
        new = _reanchored_mention(doc, record, threshold)
        if new is not None:
            record.update(new.to_dict())
            fixed += 1
    if fixed:
        write_json(path, sections)
    return fixed


def reanchor_condensed(item: Item, doc: Document, threshold: float) -> int:
    """Repair stale quote spans of the item's condensed chunks; returns how many changed. (The
    chunks' own byte ranges are brought up to date by the next ``arkai condense``, which redoes
    an item whose transcript changed.)"""
    path = item.condensed / CONDENSED_FILE
    record = read_condensed(path, item.root)
    if record is None:
        return 0
    fixed = 0
    chunks = []
    for chunk in record.chunks:
        findings = []
        for f in chunk.findings:
            digest_of_quote = f.quote_sha256 or text_digest(f.quote)
            raw: dict[str, Any] = {"quote": f.quote, "status": f.status,
                                   "quote_sha256": digest_of_quote}  # fmt: skip
            if f.resolution is not None:
                raw["resolution"] = f.resolution.to_dict()
            if f.span is not None:
                raw["span"] = {"utf8_byte_offset": list(f.span), "slice_sha256": f.slice_sha256,
                               "line": f.line, "video_timestamp": f.video_timestamp}  # fmt: skip
            new = _reanchored_mention(doc, raw, threshold)
            if new is not None:
                sp = new.span
                f = replace(f, status=new.resolution.status, resolution=new.resolution,
                            span=(sp.start, sp.end) if sp else None,
                            slice_sha256=sp.slice_sha256 if sp else None,
                            line=sp.line if sp else None,
                            video_timestamp=sp.video_timestamp if sp else None)  # fmt: skip
                fixed += 1
            findings.append(f)
        chunks.append(replace(chunk, findings=tuple(findings)))
    if fixed:
        write_condensed(path, replace(record, chunks=tuple(chunks)))
    return fixed


def accept_reanchor(
    repo: Repo, ident: str, *, by: str | None = None, note: str | None = None
) -> Accepted:
    """Accept the re-anchor suggestion ``ident`` (an evidence ID or prefix): the quote becomes
    the text at the suggested span, the line an exact match, and ``review.yaml`` records the
    acceptance."""
    loc = find_evidence(repo, ident)
    item, line = loc.item, loc.line
    if line.status != REANCHORED_FUZZY or line.span is None:
        raise InvalidInputError(
            f"evidence {line.id} is {line.status}, not a re-anchor suggestion "
            f"({REANCHORED_FUZZY}); nothing to accept"
        )
    data = item.transcript_bytes()
    span = line.span
    if not span_is_valid(data, span):
        raise InvalidInputError(
            f"evidence {line.id}: {item.transcript} changed since the suggestion was made",
            hint=f"run arkai evidence reanchor {item.id} again, then accept",
        )
    piece = data[span.start : span.end]
    try:
        new_quote = piece.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidInputError(
            f"evidence {line.id}: the suggested span of {item.transcript} is not UTF-8 text"
        ) from None
    doc = Document(data)
    hits = all_occurrences(data, piece)
    count = len(hits)
    resolution = Resolution(
        RESOLVED if count == 1 else AMBIGUOUS,
        METHOD_REANCHOR_ACCEPTED,
        count,
        hits.index(span.start) + 1,
        None if count == 1 else REASON_MULTIPLE,
    )
    match = Match(resolution, make_span(doc, span.start, span.end, span.artifact, digest(piece)))
    new = evidence_from_match(
        content_id=line.content_id,
        claim=line.claim,
        quote=new_quote,
        confidence=line.confidence,
        extractor=line.extractor,
        ts=line.ts,
        match=match,
    )
    previous = {"previous_id": line.id, "previous_quote": line.quote,
                "score": line.resolution.score}  # fmt: skip
    extra = {k: v for k, v in line.extra.items() if k not in ("review", "verdict")}
    new = replace(new, extra={**extra, "reanchor": previous})
    lines = [new if ln.id == line.id else ln for ln in read_evidence(item.extracted / EVIDENCE)]
    write_evidence(item.extracted / EVIDENCE, lines)
    why = f"re-anchor accepted: {line.quote!r} -> {new_quote!r}"
    result = review_claim(repo, new.id, "accepted", note=f"{why}; {note}" if note else why, by=by)
    lines = apply_review(read_evidence(item.extracted / EVIDENCE), load_review(item.path / REVIEW))
    write_evidence(item.extracted / EVIDENCE, lines)
    render_outputs(item, data)
    return Accepted(item.id, line.id, new.id, new.status, line.quote, new_quote,
                    word_diff(line.quote, new_quote), result.file)  # fmt: skip


def reanchor(
    repo: Repo,
    ident: str | None = None,
    *,
    all_items: bool = False,
    threshold: float | None = None,
) -> list[ItemReanchor]:
    """``arkai evidence reanchor``: repair every item (``all_items``), one item (a content ID)
    or one claim (an evidence ID); ``threshold`` defaults to ``extract.fuzzy_threshold``."""
    thr = threshold if threshold is not None else float(repo.param("extract.fuzzy_threshold"))
    only = None
    if all_items:
        items = list(repo.items())
    elif ident:
        try:
            items = [repo.item(ident)]
        except ArkaiError:
            loc = find_evidence(repo, ident)
            items, only = [loc.item], loc.line.id
    else:
        raise InvalidInputError("give a content ID, an evidence ID, or --all")
    return [reanchor_item(repo.root, item, threshold=thr, only=only) for item in items]
