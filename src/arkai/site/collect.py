"""Everything the site shows about one item, read from its files, and a JSON summary of it
that the library-wide pages (home, lists, entities, validation) are built from.

Claim statuses on the site: ``resolved`` / ``ambiguous`` / ``unresolved`` as extracted,
``unverified`` for a span that is not an exact match (``matched_case_insensitive``,
``matched_fuzzy``, ``reanchored_fuzzy``: never counted as valid), ``stale`` when the span's
bytes no longer hash to its ``slice_sha256`` (the transcript changed), and ``rejected`` when
``review.yaml`` rejects it (shown apart, never highlighted as a finding).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import unicodedata
from bisect import bisect_right
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arkai.adapters.fs import read_repo_file
from arkai.adapters.layout import ENTITIES, EVIDENCE, EXTRACTION, METADATA, REVIEW, TRANSCRIPT, Item
from arkai.adapters.review import apply_review, is_rejected, parse_review
from arkai.adapters.store import parse_evidence
from arkai.core.document import Document
from arkai.core.escape import one_line, safe_url
from arkai.core.grammar import TIMESTAMP_RE
from arkai.core.hashing import digest
from arkai.core.receipts import span_is_valid
from arkai.errors import LibraryError
from arkai.model.evidence import EvidenceLine
from arkai.model.status import UNRESOLVED
from arkai.site.transcript import speaker_labels

WISDOM = "wisdom.json"
#: The files an item's pages are made from (a change to any of them regenerates the pages).
INPUTS = (
    ("library", METADATA),
    ("library", TRANSCRIPT),
    ("library", REVIEW),
    ("extracted", EVIDENCE),
    ("extracted", ENTITIES),
    ("extracted", WISDOM),
    ("extracted", EXTRACTION),
)
STATUSES = ("resolved", "ambiguous", "unresolved", "unverified", "stale", "rejected")
#: Mentions per entity and item shown with their sentence (the others as line links).
MAX_SAID = 3
#: Characters of context kept on each side of a mention (the summaries of a big library hold
#: these for every entity of every item: keep them short).
SAID_CHARS = 120
_STOP = re.compile(r"[.!?…][\"”’)\]]*\s")


@dataclass(frozen=True, slots=True)
class ClaimView:
    """One evidence line as the site shows it."""

    id: str
    claim: str
    quote: str
    status: str
    """``resolved`` | ``ambiguous`` | ``unresolved`` | ``stale`` (rejection is separate)."""
    rejected: bool
    confidence: float
    start: int | None
    """UTF-8 byte offsets of a valid span (None when unresolved or stale)."""
    end: int | None
    line: int | None
    """1-based transcript line of the span start (the recorded one when stale)."""
    timestamp: str | None
    verdict: str | None
    review_note: str | None
    page: int | None = None
    """The PDF page of the span start (the recorded one when stale)."""


@dataclass(frozen=True, slots=True)
class EntityView:
    """One entity of one item."""

    key: str
    """``<type>:<normalized name>`` — the same entity across items."""
    name: str
    type: str
    mentions: tuple[int | None, ...]
    """The line of each mention (None when unresolved or stale), in file order."""
    stale: int
    said: tuple[tuple[int, int, int], ...] = ()
    """``(line, start, end)`` (UTF-8 byte offsets) of the first :data:`MAX_SAID` mentions
    with a valid span; entity pages show their sentences (:func:`sentence_around`), read
    from the transcript then — kept as text for every entity of every item, they were most
    of a big library's build memory."""


@dataclass(slots=True)
class ItemData:
    """An item's files, parsed and checked against its current transcript."""

    item: Item
    data: bytes
    """``transcript.md`` bytes (empty when missing)."""
    line_starts: list[int]
    claims: list[ClaimView]
    entities: list[EntityView]
    wisdom: dict[str, Any]
    extracted: bool
    digest_ok: bool
    edited: bool
    _speakers: set[str] | None = None
    _doc: Document | None = None

    def page_at(self, offset: int) -> int | None:
        """The PDF page of a byte of the transcript (None for other items)."""
        if self._doc is None:
            self._doc = Document(self.data)
        return self._doc.page_at(offset)

    @property
    def lines(self) -> int:
        if not self.data:
            return 0
        return len(self.line_starts) - (1 if self.data.endswith(b"\n") else 0)

    @property
    def speakers(self) -> set[str]:
        """Speaker labels of the transcript (computed once)."""
        if self._speakers is None:
            lines = self.data.split(b"\n")
            self._speakers = speaker_labels(lines[:-1] if self.data.endswith(b"\n") else lines)
        return self._speakers

    def span_line(self, span: object) -> int | None:
        """The line of a stored span (wisdom items, entity mentions) whose bytes still match.

        When the transcript is the one the extraction was made from (``digest_ok``) its spans
        are taken as they are (bounds checked): re-hashing the thousands of mentions of a big
        library would dominate the build, and ``arkai validate`` checks every one of them.
        Otherwise each span's ``slice_sha256`` is compared.
        """
        if not isinstance(span, dict):
            return None
        offsets = span.get("utf8_byte_offset")
        if not isinstance(offsets, list) or len(offsets) != 2:
            return None
        start, end = offsets
        if not (isinstance(start, int) and isinstance(end, int) and 0 <= start <= end):
            return None
        if end > len(self.data):
            return None
        if not self.digest_ok and span.get("slice_sha256") != digest(self.data[start:end]):
            return None
        return bisect_right(self.line_starts, start)


def entity_key(name: str, etype: str) -> str:
    norm = " ".join(unicodedata.normalize("NFKC", name).casefold().split())
    return f"{etype.strip().lower() or 'other'}:{norm}"


def input_stats(item: Item) -> list[list[int] | None]:
    """``[size, mtime_ns]`` of each input file (None when missing): when these are unchanged
    the files are not read again to recompute :func:`input_digest`. The entry itself is
    looked at (``lstat``): a file swapped for a link to it does not look unchanged (links are
    refused when read)."""
    out: list[list[int] | None] = []
    # Plain strings, not Path objects: this runs for every item on every build.
    library, extracted = str(item.path), str(item.extracted)
    for tree, name in INPUTS:
        try:
            st = os.lstat(os.path.join(library if tree == "library" else extracted, name))
        except (FileNotFoundError, NotADirectoryError):
            out.append(None)
            continue
        out.append([st.st_size, st.st_mtime_ns])
    return out


def _input_paths(item: Item) -> list[Path]:
    return [(item.path if tree == "library" else item.extracted) / name for tree, name in INPUTS]


def read_inputs(item: Item, stats: list[list[int] | None] | None = None) -> dict[str, bytes | None]:
    """The bytes of each input file by name (None when missing; files that
    :func:`input_stats` found missing are not tried again)."""
    out: dict[str, bytes | None] = {}
    for i, ((_, name), path) in enumerate(zip(INPUTS, _input_paths(item), strict=True)):
        if stats is not None and stats[i] is None:
            out[name] = None
            continue
        try:
            out[name] = read_repo_file(path, item.root, missing_ok=True)
        except NotADirectoryError:
            out[name] = None
    return out


def input_digest(blobs: dict[str, bytes | None]) -> str:
    """Digest of every file the item's pages are made from (missing files count too)."""
    h = hashlib.sha256()
    for _, name in INPUTS:
        data = blobs.get(name)
        if data is None:
            h.update(f"{name}:-\n".encode())
            continue
        h.update(f"{name}:{len(data)}:".encode())
        h.update(hashlib.sha256(data).digest())
    return h.hexdigest()


def _json_object(data: bytes | None, path: Path) -> dict[str, Any] | None:
    if data is None:
        return None
    try:
        obj = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise LibraryError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(obj, dict):
        raise LibraryError(f"{path}: expected a JSON object")
    return obj


def _evidence(data: bytes | None, path: Path) -> list[EvidenceLine]:
    """``evidence.jsonl`` from bytes already read (they are hashed too)."""
    return [] if data is None else parse_evidence(data, path)


def load_item(item: Item, blobs: dict[str, bytes | None] | None = None) -> ItemData:
    """Parse and check one item's transcript, evidence, entities and wisdom (``blobs``: the
    files as :func:`read_inputs` returns them, read here when not given)."""
    blobs = blobs if blobs is not None else read_inputs(item)
    data = blobs[TRANSCRIPT] or b""
    doc = Document(data)
    starts = doc.line_starts()
    extraction = _json_object(blobs[EXTRACTION], item.extracted / EXTRACTION) or {}
    current = digest(data)
    recorded = (item.metadata.get("artifact_digests") or {}).get(TRANSCRIPT)
    expected = extraction.get("transcript_digest") or recorded
    lines = _evidence(blobs[EVIDENCE], item.extracted / EVIDENCE)
    if blobs[REVIEW] is not None:
        lines = apply_review(lines, parse_review(blobs[REVIEW], item.path / REVIEW))
    claims = []
    for ev in lines:
        span = ev.span
        status, start, end, line, page = ev.status, None, None, None, None
        if not ev.verified and ev.status != UNRESOLVED:
            status = "unverified"
        if span is not None:
            if span_is_valid(data, span):
                start, end = span.start, span.end
                line, page = bisect_right(starts, span.start), doc.page_at(span.start)
            else:
                status, line, page = "stale", span.line, span.page
        # A model's verdict is shown only beside a quote that matched exactly.
        verdict = ev.verdict.verdict if ev.verdict and ev.verified else None
        claims.append(
            ClaimView(
                id=ev.id,
                claim=ev.claim,
                quote=ev.quote,
                status=status,
                rejected=is_rejected(ev),
                confidence=ev.confidence,
                start=start,
                end=end,
                line=line,
                timestamp=span.video_timestamp if span else None,
                verdict=str(verdict) if verdict else None,
                review_note=ev.review.note if ev.review and ev.review.note else None,
                page=page,
            )
        )
    claims.sort(key=lambda c: (c.start is None, c.start or 0, c.line or 0, c.id))
    data_view = ItemData(
        item,
        data,
        starts,
        claims,
        [],
        {},
        bool(extraction),
        expected == current,
        recorded is not None and recorded != current,
        _doc=doc,
    )
    entities = []
    raw_entities = (_json_object(blobs[ENTITIES], item.extracted / ENTITIES) or {}).get("entities")
    for ent in raw_entities if isinstance(raw_entities, list) else []:
        if not isinstance(ent, dict) or not str(ent.get("name") or "").strip():
            continue
        name, etype = one_line(str(ent["name"])), one_line(str(ent.get("type") or "other"))
        mentions: list[int | None] = []
        said: list[tuple[int, int, int]] = []
        stale = 0
        for m in ent.get("mentions") or []:
            if not isinstance(m, dict):
                continue
            line = data_view.span_line(m.get("span"))
            if m.get("span") and line is None:
                stale += 1
            mentions.append(line)
            if line is not None and len(said) < MAX_SAID:
                start, end = m["span"]["utf8_byte_offset"]
                said.append((line, start, end))
        entities.append(
            EntityView(
                entity_key(name, etype), name, etype.lower(), tuple(mentions), stale, tuple(said)
            )
        )
    data_view.entities = entities
    data_view.wisdom = _json_object(blobs[WISDOM], item.extracted / WISDOM) or {}
    return data_view


def sentence_around(data: bytes, start: int, end: int) -> tuple[str, str, str]:
    """``(before, words, after)``: the sentence holding the bytes ``[start, end)`` of a
    transcript on their line (without the line's timestamp), cut to :data:`SAID_CHARS` on
    each side."""
    ls = data.rfind(b"\n", 0, start) + 1
    le = data.find(b"\n", start)
    le = len(data) if le < 0 else le
    end = min(end, le)
    before = data[ls:start].decode("utf-8", "replace")
    words = data[start:end].decode("utf-8", "replace")
    after = data[end:le].decode("utf-8", "replace")
    before = TIMESTAMP_RE.sub("", before)
    stops = list(_STOP.finditer(before))
    if stops:
        before = before[stops[-1].end() :]
    stop = _STOP.search(after + " ")
    if stop:
        after = after[: stop.start() + 1]
    if len(before) > SAID_CHARS:
        before = "…" + before[-SAID_CHARS:].split(" ", 1)[-1]
    if len(after) > SAID_CHARS:
        after = after[:SAID_CHARS].rsplit(" ", 1)[0] + "…"
    return before.lstrip(), words, after.rstrip()


def summarize_item(d: ItemData) -> dict[str, Any]:
    """The JSON summary the library-wide pages use (cached between builds)."""
    meta = d.item.metadata
    counts = dict.fromkeys(STATUSES, 0)
    issues = []
    for c in d.claims:
        if c.rejected:
            counts["rejected"] += 1
            continue
        counts[c.status] += 1
        if c.status in ("stale", "unresolved", "unverified"):
            issues.append(
                {"id": c.id, "claim": c.claim, "quote": c.quote, "status": c.status, "line": c.line}
            )
    counts["claims"] = sum(counts[s] for s in STATUSES if s != "rejected")
    raw_tags = meta.get("tags")
    tags: list[Any] = raw_tags if isinstance(raw_tags, list) else []
    return {
        "id": d.item.id,
        "title": one_line(d.item.title) or d.item.id,
        "type": one_line(str(meta.get("content_type") or d.item.rel.parts[0])).split("/")[0],
        "subtype": "/".join(str(meta.get("content_type") or "").split("/")[1:]),
        "tags": sorted({one_line(str(t)) for t in tags if str(t).strip()}),
        "created_at": str(meta.get("created_at") or ""),
        "published": str(meta.get("published") or meta.get("created") or ""),
        "url": safe_url(meta.get("url")),
        "path": d.item.path.relative_to(d.item.root).as_posix(),
        "lines": d.lines,
        "counts": counts,
        "extracted": d.extracted,
        "digest_ok": d.digest_ok,
        "edited": d.edited,
        "mentions_stale": sum(e.stale for e in d.entities),
        # [key, name, type, mentions, said]: a list of short strings, not a dict of nested
        # lists (a big library's summaries hold one per entity of every item, and the
        # library-wide pages hold them all): mentions "12 40 0 …" (each mention's line, 0
        # without a valid span), said "line:start:end …".
        "entities": [
            [
                e.key,
                e.name,
                e.type,
                " ".join(str(m or 0) for m in e.mentions),
                " ".join(f"{ln}:{a}:{b}" for ln, a, b in e.said),
            ]
            for e in d.entities
        ],
        "issues": issues,
        "evidence": [c.id for c in d.claims],
        "marked": [c.id for c in d.claims if c.start is not None],
    }
