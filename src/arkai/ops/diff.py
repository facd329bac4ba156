"""``arkai diff``: what changed in the library between two revisions (DESIGN §9).

Both sides are read through :mod:`arkai.adapters.gitrepo` snapshots (a commit's tree or the
working tree): nothing is checked out and nothing on disk is written. Items are matched by
content ID (a renamed folder is the same item), claims by evidence ID, entities by name and
type. A claim is *changed* when the same evidence ID has another status, span, validity,
review, verdict or wording; an evidence line that disappears while one with the same quote and
claim appears under another ID (its span moved: the transcript was edited) is *moved*.

Each side's validity is recomputed from that side's own files (slice hashes of its transcript),
so a diff shows the claims a transcript edit made stale; the library-wide figures recorded in
``reports/validation.json`` are compared as committed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arkai.adapters import review as review_file
from arkai.adapters.gitrepo import (
    WORKTREE,
    EmptySnapshot,
    ItemRef,
    Snapshot,
    list_items,
    parse_json_object,
)
from arkai.adapters.layout import (
    ENTITIES,
    EVIDENCE,
    EXTRACTED,
    EXTRACTION,
    LIBRARY,
    MIN_PREFIX,
    REVIEW,
    TRANSCRIPT,
)
from arkai.adapters.repo import Repo
from arkai.adapters.review import review_for, review_key
from arkai.adapters.store import evidence_line, iter_jsonl
from arkai.core.hashing import digest
from arkai.core.receipts import span_is_valid
from arkai.model.record import AsDict

VALIDATION_REPORT = "reports/validation.json"


# -- one item at one revision ------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ClaimState:
    """One evidence line as one revision has it, with its recomputed validity."""

    id: str
    claim: str
    quote_sha256: str
    extractor: str
    status: str
    span: tuple[int, int] | None
    line: int | None
    artifact: str
    valid: bool | None
    """Slice hash matches this revision's transcript (None: no span)."""
    review: dict[str, str] | None
    """The ``review.yaml`` entry for this claim (exact ID or ID prefix), if any."""
    verdict: str | None

    def to_dict(self, item_path: str) -> dict[str, Any]:
        return {
            "id": self.id,
            "claim": self.claim,
            "status": self.status,
            "line": self.line,
            "valid": self.valid,
            "review": self.review,
            "verdict": self.verdict,
            "file": f"{item_path}/{self.artifact}",
        }

    def compare(self, other: ClaimState) -> dict[str, list[Any]]:
        """Fields that differ: name → [self's value, other's value]."""
        out: dict[str, list[Any]] = {}
        pairs: list[tuple[str, Any, Any]] = [
            ("status", self.status, other.status),
            ("span", _span_list(self.span), _span_list(other.span)),
            ("line", self.line, other.line),
            ("valid", self.valid, other.valid),
            ("review", self.review, other.review),
            ("verdict", self.verdict, other.verdict),
            ("claim", self.claim, other.claim),
        ]
        for name, a, b in pairs:
            if a != b:
                out[name] = [a, b]
        return out


def _span_list(span: tuple[int, int] | None) -> list[int] | None:
    return list(span) if span else None


@dataclass
class ItemState:
    """An item's files at one revision, parsed leniently (history is not validated)."""

    ref: ItemRef
    files: dict[str, str]
    """``library/…`` and ``extracted/…`` file names (relative to the item folder, prefixed
    ``library:`` / ``extracted:``) → file id."""
    claims: dict[str, ClaimState]
    entities: dict[tuple[str, str], int]
    """(name, type) → mention count."""
    reviews: dict[str, dict[str, str]]
    extracted: bool
    digest_ok: bool | None
    """The transcript is the one the evidence was resolved against (None: not extracted)."""
    warnings: list[str] = field(default_factory=list)

    @property
    def path(self) -> str:
        return self.ref.library_path

    def counts(self) -> dict[str, int]:
        valid = sum(1 for c in self.claims.values() if c.valid is True)
        stale = sum(1 for c in self.claims.values() if c.valid is False)
        unresolved = sum(1 for c in self.claims.values() if c.span is None)
        return {
            "claims": len(self.claims),
            "valid": valid,
            "stale": stale,
            "unresolved": unresolved,
        }

    def validation(self) -> dict[str, Any]:
        return {**self.counts(), "digest_ok": self.digest_ok, "extracted": self.extracted}


def parse_review(data: bytes | None) -> dict[str, dict[str, str]]:
    """``review.yaml`` bytes from a revision → key → entry, leniently (bad entries skipped)."""
    return review_file.parse_review(data, Path(REVIEW), strict=False)


def line_of(data: bytes, offset: int) -> int:
    return data.count(b"\n", 0, max(0, min(offset, len(data)))) + 1


def load_item(snap: Snapshot, ref: ItemRef) -> ItemState:
    """Read one item's library and extraction files from ``snap``."""
    lib = ref.library_path
    ext = f"{EXTRACTED}/{ref.rel}"
    files = {f"library:{k}": v for k, v in snap.file_ids(lib).items()}
    files.update({f"extracted:{k}": v for k, v in snap.file_ids(ext).items()})
    warnings: list[str] = []
    transcripts: dict[str, bytes] = {}

    def artifact(name: str) -> bytes:
        if name not in transcripts:
            transcripts[name] = snap.read(f"{lib}/{name}") or b""
        return transcripts[name]

    reviews = parse_review(snap.read(f"{lib}/{REVIEW}"))
    claims: dict[str, ClaimState] = {}
    raw = snap.read(f"{ext}/{EVIDENCE}") or b""
    label = f"{ext}/{EVIDENCE}"
    for line in iter_jsonl(raw, label, "unreadable evidence line", evidence_line, warnings):
        span = line.span
        valid: bool | None = None
        lineno: int | None = None
        name = span.artifact if span else TRANSCRIPT
        if span is not None:
            data = artifact(name)
            valid = span_is_valid(data, span)
            lineno = span.line if span.line is not None else line_of(data, span.start)
        claims[line.id] = ClaimState(
            id=line.id,
            claim=line.claim,
            quote_sha256=line.quote_sha256,
            extractor=line.extractor,
            status=line.status,
            span=(span.start, span.end) if span else None,
            line=lineno,
            artifact=name,
            valid=valid,
            review=review_for(reviews, line.id, review_key(line)),
            verdict=line.verdict.verdict if line.verdict else None,
        )
    entities: dict[tuple[str, str], int] = {}
    doc = parse_json_object(snap.read(f"{ext}/{ENTITIES}"))
    for ent in (doc or {}).get("entities") or []:
        if isinstance(ent, dict) and ent.get("name"):
            key = (str(ent["name"]), str(ent.get("type", "concept")))
            entities[key] = entities.get(key, 0) + len(ent.get("mentions") or [])
    extraction = parse_json_object(snap.read(f"{ext}/{EXTRACTION}"))
    digest_ok: bool | None = None
    if extraction and extraction.get("transcript_digest"):
        digest_ok = extraction["transcript_digest"] == digest(artifact(TRANSCRIPT))
    return ItemState(
        ref=ref,
        files=files,
        claims=claims,
        entities=entities,
        reviews=reviews,
        extracted=extraction is not None,
        digest_ok=digest_ok,
        warnings=warnings,
    )


# -- comparing ----------------------------------------------------------------------------


@dataclass
class ClaimsDiff:
    added: list[ClaimState] = field(default_factory=list)
    removed: list[ClaimState] = field(default_factory=list)
    changed: list[tuple[ClaimState, ClaimState, dict[str, list[Any]]]] = field(default_factory=list)
    moved: list[tuple[ClaimState, ClaimState, dict[str, list[Any]]]] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.added or self.removed or self.changed or self.moved)


@dataclass
class EntitiesDiff:
    added: list[tuple[str, str, int]] = field(default_factory=list)
    removed: list[tuple[str, str, int]] = field(default_factory=list)
    changed: list[tuple[str, str, int, int]] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.added or self.removed or self.changed)


def _by_position(c: ClaimState) -> tuple[int, int, str]:
    return (c.span is None, c.span[0] if c.span else 0, c.id)


def diff_claims(left: dict[str, ClaimState], right: dict[str, ClaimState]) -> ClaimsDiff:
    """Claims only-left / only-right / changed (same ID) / moved (same quote and claim)."""
    out = ClaimsDiff()
    only_left = sorted((c for k, c in left.items() if k not in right), key=_by_position)
    only_right = sorted((c for k, c in right.items() if k not in left), key=_by_position)
    for eid in sorted(set(left) & set(right), key=lambda k: _by_position(right[k])):
        changes = left[eid].compare(right[eid])
        if changes:
            out.changed.append((left[eid], right[eid], changes))
    pending: dict[tuple[str, str, str], list[ClaimState]] = {}
    for c in only_right:
        pending.setdefault((c.extractor, c.quote_sha256, c.claim), []).append(c)
    for c in only_left:
        candidates = pending.get((c.extractor, c.quote_sha256, c.claim))
        if candidates:
            new = candidates.pop(0)
            changes = {k: v for k, v in c.compare(new).items() if k not in ("span", "line")}
            out.moved.append((c, new, changes))
        else:
            out.removed.append(c)
    moved_ids = {new.id for _, new, _ in out.moved}
    out.added = [c for c in only_right if c.id not in moved_ids]
    return out


def diff_entities(
    left: dict[tuple[str, str], int], right: dict[tuple[str, str], int]
) -> EntitiesDiff:
    out = EntitiesDiff()
    for key in sorted(set(left) | set(right), key=lambda k: (k[1], k[0].lower(), k[0])):
        name, typ = key
        if key not in left:
            out.added.append((name, typ, right[key]))
        elif key not in right:
            out.removed.append((name, typ, left[key]))
        elif left[key] != right[key]:
            out.changed.append((name, typ, left[key], right[key]))
    return out


def diff_files(left: dict[str, str], right: dict[str, str]) -> list[dict[str, str]]:
    """Files that differ: the item's own (``library``) first, then its ``extracted`` ones."""
    out = []
    for key in sorted(set(left) | set(right), key=lambda k: (not k.startswith("library:"), k)):
        tree, _, name = key.partition(":")
        if key not in left:
            change = "added"
        elif key not in right:
            change = "removed"
        elif left[key] != right[key]:
            change = "modified"
        else:
            continue
        out.append({"tree": tree, "path": name, "change": change})
    return out


@dataclass
class ItemDiff:
    """One item that was added, removed or changed."""

    content_id: str
    state: str
    """``added`` | ``removed`` | ``changed``."""
    left: ItemState | None
    right: ItemState | None
    files: list[dict[str, str]]
    claims: ClaimsDiff
    entities: EntitiesDiff

    @property
    def current(self) -> ItemState:
        state = self.right or self.left
        assert state is not None
        return state

    @property
    def title(self) -> str:
        return self.current.ref.title

    @property
    def path(self) -> str:
        return self.current.path

    @property
    def renamed(self) -> bool:
        return bool(self.left and self.right and self.left.ref.rel != self.right.ref.rel)

    @property
    def validation_changed(self) -> bool:
        if self.left is None or self.right is None:
            return False
        return self.left.validation() != self.right.validation()

    def warnings(self) -> list[str]:
        return [
            *(self.left.warnings if self.left else []),
            *(self.right.warnings if self.right else []),
        ]

    def to_dict(self) -> dict[str, Any]:
        def side(state: ItemState | None) -> dict[str, Any] | None:
            if state is None:
                return None
            return {"path": state.path, "title": state.ref.title, **state.validation()}

        lp = self.left.path if self.left else ""
        rp = self.right.path if self.right else ""
        return {
            "content_id": self.content_id,
            "state": self.state,
            "title": self.title,
            "path": self.path,
            "left": side(self.left),
            "right": side(self.right),
            "files": self.files,
            "claims": {
                "added": [c.to_dict(rp) for c in self.claims.added],
                "removed": [c.to_dict(lp) for c in self.claims.removed],
                "changed": [
                    {"id": b.id, "left": a.to_dict(lp), "right": b.to_dict(rp), "changes": ch}
                    for a, b, ch in self.claims.changed
                ],
                "moved": [
                    {"left": a.to_dict(lp), "right": b.to_dict(rp), "changes": ch}
                    for a, b, ch in self.claims.moved
                ],
            },
            "entities": {
                "added": [{"name": n, "type": t, "mentions": m} for n, t, m in self.entities.added],
                "removed": [
                    {"name": n, "type": t, "mentions": m} for n, t, m in self.entities.removed
                ],
                "changed": [
                    {"name": n, "type": t, "mentions": [a, b]}
                    for n, t, a, b in self.entities.changed
                ],
            },
            "warnings": self.warnings(),
        }


def diff_item(cid: str, left: ItemState | None, right: ItemState | None) -> ItemDiff | None:
    """How one item differs; None when it does not (or is on neither side)."""
    if left is None and right is None:
        return None
    state = "added" if left is None else "removed" if right is None else "changed"
    files = diff_files(left.files if left else {}, right.files if right else {})
    claims = diff_claims(left.claims if left else {}, right.claims if right else {})
    entities = diff_entities(left.entities if left else {}, right.entities if right else {})
    d = ItemDiff(cid, state, left, right, files, claims, entities)
    if state == "changed" and not (files or claims or entities or d.renamed):
        return None
    return d


@dataclass
class Side(AsDict):
    rev: str
    """What the user asked for (``HEAD``, ``main``, ``WORKTREE``…)."""
    label: str
    commit: str | None


@dataclass
class LibraryDiff:
    left: Side
    right: Side
    items: list[ItemDiff]
    unchanged: int
    validation_left: dict[str, Any] | None
    validation_right: dict[str, Any] | None
    prefix: str = ""
    """The knowledge repo's folder inside the git work tree ('' at the top), for links."""

    def validation_changes(self) -> list[tuple[str, Any, Any]]:
        a, b = self.validation_left or {}, self.validation_right or {}
        keys = sorted(set(a) | set(b))
        return [(k, a.get(k), b.get(k)) for k in keys if a.get(k) != b.get(k)]

    def counts(self) -> dict[str, dict[str, int]]:
        items = {"added": 0, "removed": 0, "changed": 0, "unchanged": self.unchanged}
        claims = {"added": 0, "removed": 0, "changed": 0, "moved": 0}
        ents = {"added": 0, "removed": 0, "changed": 0}
        for d in self.items:
            items[d.state] += 1
            for kind in claims:
                claims[kind] += len(getattr(d.claims, kind))
            for kind in ents:
                ents[kind] += len(getattr(d.entities, kind))
        return {"items": items, "claims": claims, "entities": ents}

    @property
    def empty(self) -> bool:
        return not self.items and not self.validation_changes()

    def to_dict(self) -> dict[str, Any]:
        return {
            "left": self.left.to_dict(),
            "right": self.right.to_dict(),
            "counts": self.counts(),
            "validation": {
                "report": VALIDATION_REPORT,
                "left": self.validation_left,
                "right": self.validation_right,
                "changes": [
                    {"key": k, "left": a, "right": b} for k, a, b in self.validation_changes()
                ],
            },
            "items": [d.to_dict() for d in self.items],
        }


def _same_item(left: Snapshot, right: Snapshot, a: ItemRef, b: ItemRef) -> bool:
    """Cheap check that an item's folders are identical on both sides."""
    if a.rel != b.rel:
        return False
    for base in (LIBRARY, EXTRACTED):
        fa, fb = left.folder_id(f"{base}/{a.rel}"), right.folder_id(f"{base}/{b.rel}")
        if fa is not None and fb is not None:
            if fa != fb:
                return False
            continue
        if left.file_ids(f"{base}/{a.rel}") != right.file_ids(f"{base}/{b.rel}"):
            return False
    return True


def diff_snapshots(
    left: Snapshot,
    right: Snapshot,
    *,
    left_rev: str,
    right_rev: str,
    items_left: dict[str, ItemRef] | None = None,
    items_right: dict[str, ItemRef] | None = None,
) -> LibraryDiff:
    """Compare two snapshots of a knowledge repo."""
    il = items_left if items_left is not None else list_items(left)
    ir = items_right if items_right is not None else list_items(right)
    diffs: list[ItemDiff] = []
    unchanged = 0
    for cid in sorted(set(il) | set(ir)):
        a, b = il.get(cid), ir.get(cid)
        if a is not None and b is not None and _same_item(left, right, a, b):
            unchanged += 1
            continue
        d = diff_item(
            cid,
            load_item(left, a) if a is not None else None,
            load_item(right, b) if b is not None else None,
        )
        if d is None:
            unchanged += 1
        else:
            diffs.append(d)
    diffs.sort(key=lambda d: (d.path, d.content_id))
    return LibraryDiff(
        left=_side(left, left_rev),
        right=_side(right, right_rev),
        items=diffs,
        unchanged=unchanged,
        validation_left=parse_json_object(left.read(VALIDATION_REPORT)),
        validation_right=parse_json_object(right.read(VALIDATION_REPORT)),
    )


def _side(snap: Snapshot, rev: str) -> Side:
    info = snap.commit
    return Side(rev=rev, label=snap.label, commit=info.id if info else None)


def diff_revisions(repo: Repo, rev_a: str | None = None, rev_b: str | None = None) -> LibraryDiff:
    """``arkai diff [REV_A] [REV_B]``: defaults HEAD vs the working tree.

    ``REV_A`` may be a range, ``A...B`` (from the merge base of A and B to B, as a pull
    request shows it) or ``A..B``; ``WORKTREE`` names the working tree on either side.
    """
    git = repo.git
    left: Snapshot
    if rev_a and rev_b is None and ".." in rev_a:
        three = "..." in rev_a
        a_part, b_part = rev_a.split("..." if three else "..", 1)
        left_id, right_id = git.resolve_range(rev_a)
        left, right = git.snapshot(left_id), git.snapshot(right_id)
        a, b = a_part or "HEAD", b_part or "HEAD"
        left_rev = f"merge-base({a}, {b})" if three else a
    else:
        a = left_rev = rev_a or "HEAD"
        b = rev_b or WORKTREE
        unborn = a == "HEAD" and git.head() is None
        left = EmptySnapshot() if unborn else git.snapshot(a)
        right = git.snapshot(b)
    result = diff_snapshots(
        left,
        right,
        left_rev=left_rev,
        right_rev=b,
        items_left=git.items(left),
        items_right=git.items(right),
    )
    result.prefix = git.prefix
    return result


# -- rendering ----------------------------------------------------------------------------


def short(eid: str) -> str:
    return eid[:MIN_PREFIX]


def clip(text: str, width: int = 100) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1].rstrip() + "…"


def fmt_value(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "valid" if value else "STALE"
    if isinstance(value, dict):
        text = str(value.get("status", "?"))
        if value.get("by"):
            text += f" by {value['by']}"
        if value.get("note"):
            text += f", note: {clip(str(value['note']), 60)}"
        return text
    if isinstance(value, list):
        return "–".join(str(v) for v in value)
    return str(value)


def describe_changes(changes: dict[str, list[Any]]) -> str:
    """``status resolved → ambiguous; review – → rejected by ana`` (the wording is not shown)."""
    parts = []
    for key in ("status", "valid", "review", "verdict", "line", "span"):
        if key in changes:
            a, b = changes[key]
            name = "validity" if key == "valid" else key
            parts.append(f"{name} {fmt_value(a)} → {fmt_value(b)}")
    if "claim" in changes:
        parts.append("claim reworded")
    return "; ".join(parts)
