"""The ``extract`` stage: claims with resolved spans for every item, incrementally.

This is the foundation's minimal built-in extractor — salient verbatim sentences become claims —
so the whole path (library → evidence → validation) runs offline. Each item's work is keyed by
its transcript digest, the extractor version and the extract params; an unchanged key is skipped.
"""

from __future__ import annotations

import math
import re
import shutil
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arkai.adapters import events
from arkai.adapters.fs import write_if_changed
from arkai.adapters.layout import (
    ENTITIES,
    EVIDENCE,
    EXTRACTED,
    EXTRACTION,
    Item,
    iter_items,
)
from arkai.adapters.params import load_params
from arkai.adapters.store import read_evidence, read_json, write_evidence, write_json
from arkai.core import canonjson
from arkai.core.document import Document
from arkai.core.entities import entities_document
from arkai.core.evidence import build_evidence
from arkai.core.hashing import digest, sha256_hex
from arkai.core.sentences import is_claim_like, iter_sentences
from arkai.errors import ArkaiError, PipelineError
from arkai.model.evidence import EvidenceLine

EXTRACTOR = "extract_claims"
PROVIDER = "builtin"
PROVIDER_VERSION = "minimal-1"
_WORD = re.compile(r"[A-Za-zÀ-ÿ][A-Za-zÀ-ÿ'’-]{3,}")
_STOP = frozenset(
    [
        "that",
        "this",
        "with",
        "have",
        "from",
        "they",
        "there",
        "their",
        "what",
        "which",
        "would",
        "could",
        "should",
        "about",
        "these",
        "those",
        "were",
        "been",
        "being",
        "into",
        "than",
        "then",
        "them",
        "when",
        "where",
        "while",
        "also",
        "just",
        "like",
        "really",
        "very",
        "much",
        "some",
        "more",
        "most",
        "other",
        "such",
        "only",
        "over",
        "your",
        "yours",
        "ours",
        "here",
        "because",
        "going",
        "think",
        "know",
    ]
)


@dataclass
class ExtractSummary:
    """Counts for one run of the stage."""

    items: int = 0
    extracted: int = 0
    skipped: int = 0
    failed: dict[str, str] = field(default_factory=dict)
    removed: int = 0
    claims: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "items": self.items,
            "extracted": self.extracted,
            "skipped": self.skipped,
            "failed": self.failed,
            "removed": self.removed,
            "claims": self.claims,
        }


def select_claims(text: str, *, max_claims: int, min_words: int, max_words: int) -> list[str]:
    """Up to ``max_claims`` salient declarative sentences, verbatim, in document order.

    Salience: how many of the transcript's frequent content words a sentence carries,
    normalised for length, so central sentences win over incidental ones.
    """
    sentences = [s.text for s in iter_sentences(text)]
    freq = Counter(w.lower() for w in _WORD.findall(text) if w.lower() not in _STOP)
    seen: set[str] = set()
    scored: list[tuple[float, int, str]] = []
    for pos, sent in enumerate(sentences):
        key = sent.lower()
        if key in seen or not is_claim_like(sent, min_words=min_words, max_words=max_words):
            continue
        seen.add(key)
        words = {w.lower() for w in _WORD.findall(sent)} - _STOP
        if not words:
            continue
        score = sum(math.log1p(freq[w]) for w in words) / math.sqrt(len(sent.split()))
        scored.append((score, pos, sent))
    best = sorted(scored, key=lambda t: (-t[0], t[1]))[:max_claims]
    return [s for _, _, s in sorted(best, key=lambda t: t[1])]


def item_key(transcript_digest: str, extract_params: dict[str, Any]) -> str:
    """The incremental key of one item's extraction."""
    blob = canonjson.dumps(
        {
            "transcript": transcript_digest,
            "provider": PROVIDER,
            "version": PROVIDER_VERSION,
            "params": extract_params,
        }
    )
    return "sha256:" + sha256_hex(blob.encode("utf-8"))


def render_claims_md(item: Item, lines: list[EvidenceLine]) -> str:
    """A readable list: claim, status badge, quote, link to the transcript line."""
    out = [f"# Claims — {item.title}", ""]
    if not lines:
        out.append("_No claims extracted._")
    for line in lines:
        where = ""
        if line.span is not None and line.span.line is not None:
            rel = f"../../../library/{item.rel.as_posix()}/transcript.md"
            where = f" — [transcript.md#L{line.span.line}](<{rel}#L{line.span.line}>)"
        stamp = f" `{line.span.video_timestamp}`" if line.span and line.span.video_timestamp else ""
        out.append(f"- **{line.claim}** `[{line.status}]` `{line.id}`{stamp}{where}")
        out.append(f"  > {line.quote}")
    return "\n".join(out) + "\n"


def extract_item(item: Item, params: dict[str, Any], now: str, log: events.RunLog) -> int:
    """(Re)extract one item; returns its claim count."""
    xp = params["extract"]
    data = item.transcript.read_bytes()
    doc = Document(data)
    text = data.decode("utf-8", errors="replace")
    previous = {line.id: line for line in read_evidence(item.extracted / EVIDENCE)}
    quotes = select_claims(
        text,
        max_claims=int(xp["max_claims"]),
        min_words=int(xp["min_words"]),
        max_words=int(xp["max_words"]),
    )
    lines: list[EvidenceLine] = []
    for quote in quotes:
        line = build_evidence(
            doc,
            content_id=item.id,
            claim=quote,
            quote=quote,
            confidence=0.5,
            extractor=EXTRACTOR,
            ts=now,
            mode=str(xp["match_mode"]),
            fuzzy_threshold=float(xp["fuzzy_threshold"]),
        )
        old = previous.get(line.id)
        if old is not None and old.quote == line.quote:
            # Same claim at the same span: keep its original timestamp so re-runs are stable.
            line = EvidenceLine.from_dict({**line.to_dict(), "ts": old.ts})
        lines.append(line)
    out = item.extracted
    out.mkdir(parents=True, exist_ok=True)
    write_evidence(out / EVIDENCE, lines)
    entities = entities_document([], extracted_by="extract_entities", extracted_at=now)
    old_entities = read_json(out / ENTITIES)
    if old_entities is not None and old_entities.get("entities") == entities["entities"]:
        entities["extracted_at"] = old_entities.get("extracted_at", now)
    write_json(out / ENTITIES, entities)
    write_if_changed(out / "claims.md", render_claims_md(item, lines).encode("utf-8"))
    counts = Counter(line.status for line in lines)
    write_json(
        out / EXTRACTION,
        {
            "schema_version": 1,
            "content_id": item.id,
            "key": item_key(digest(data), xp),
            "transcript_digest": digest(data),
            "provider": PROVIDER,
            "provider_version": PROVIDER_VERSION,
            "model": None,
            "patterns": {EXTRACTOR: PROVIDER_VERSION},
            "counts": {s: counts.get(s, 0) for s in ("resolved", "ambiguous", "unresolved")},
            "status": "ok",
        },
    )
    for line in lines:
        log.emit(
            "EvidenceAppended",
            content_id=item.id,
            evidence_id=line.id,
            status=line.status,
            extractor=line.extractor,
        )
    return len(lines)


def is_current(item: Item, params: dict[str, Any]) -> bool:
    meta = read_json(item.extracted / EXTRACTION)
    if meta is None or not (item.extracted / EVIDENCE).exists():
        return False
    key = item_key(digest(item.transcript.read_bytes()), params["extract"])
    return bool(meta.get("key") == key and meta.get("status") == "ok")


def remove_orphans(root: Path, keep: set[Path]) -> int:
    """Delete ``extracted/`` folders whose item is gone (only folders this stage wrote)."""
    removed = 0
    base = root / EXTRACTED
    if not base.is_dir():
        return 0
    for marker in sorted(base.rglob(EXTRACTION)):
        folder = marker.parent
        if folder not in keep:
            shutil.rmtree(folder)
            removed += 1
    return removed


def run_extract(
    root: Path,
    *,
    now: str,
    only: set[str] | None = None,
    force: bool = False,
    progress: Callable[[int, int, str], None] | None = None,
) -> ExtractSummary:
    """Extract every item whose key changed (or those in ``only`` when ``force``)."""
    params = load_params(root)
    items = list(iter_items(root))
    summary = ExtractSummary(items=len(items))
    with events.run(root, "extract", items=len(items)) as log:
        for n, item in enumerate(items, 1):
            if progress:
                progress(n, len(items), item.title)
            wanted = only is None or item.id in only
            if not wanted or (not force and is_current(item, params)):
                summary.skipped += 1
                continue
            try:
                with log.step("extract", content_id=item.id) as info:
                    info["claims"] = extract_item(item, params, now, log)
                summary.extracted += 1
                summary.claims += info["claims"]
            except (ArkaiError, OSError, UnicodeError) as exc:
                summary.failed[item.id] = str(exc)
        if only is None:
            summary.removed = remove_orphans(root, {item.extracted for item in items})
    if summary.failed:
        raise PipelineError(
            f"extract failed for {len(summary.failed)} of {len(items)} items: "
            + "; ".join(f"{k}: {v}" for k, v in sorted(summary.failed.items())),
            hint="fix the cause and re-run `dvc repro`; finished items are not redone",
        )
    return summary
