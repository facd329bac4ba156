"""``arkai log ID``: the history of one item or one claim, from git (pygit2, no checkout).

Every commit reachable from the start revision is visited parents first; at each one the item's
two folders (``library/<item>`` and ``extracted/<item>``) are fingerprinted by their tree IDs. A
commit enters the log when its fingerprint differs from every parent's — the commits that touch
the item's files, with git's own history simplification for merges (a merge that takes one
side's version unchanged is not listed; the commit that made that version is). What changed is
worked out with the same comparison as ``arkai diff``. Uncommitted changes in the working tree
come first, as a pseudo-commit.

A claim's history is its item's history seen through one evidence ID: when it appeared, when its
status, span or validity changed, when ``review.yaml`` accepted or rejected it, and when it went
(moved to another ID when the transcript was edited, or removed).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pygit2

from arkai.adapters.gitrepo import (
    CommitInfo,
    GitRepo,
    ItemRef,
    Snapshot,
    WorkTreeSnapshot,
    parse_json_object,
)
from arkai.adapters.layout import EVIDENCE, EXTRACTED, LIBRARY, METADATA, MIN_PREFIX, REVIEW
from arkai.adapters.repo import Repo
from arkai.adapters.review import review_for
from arkai.errors import AmbiguousIdError, InvalidInputError, NotFoundError
from arkai.ops.diff import (
    ClaimState,
    ItemDiff,
    ItemState,
    describe_changes,
    diff_item,
    fmt_value,
    load_item,
    short,
)

#: How many commits to search for an ID that is not in the working tree any more.
SEARCH_LIMIT = 5000


@dataclass(frozen=True, slots=True)
class Target:
    """What ``arkai log`` was asked about."""

    kind: str
    """``item`` or ``claim``."""
    content_id: str
    evidence_id: str | None
    title: str
    path: str
    """The item folder (``library/…``) where it was last seen."""


@dataclass
class LogEntry:
    """One commit (or the working tree) that changed the item or claim."""

    commit: CommitInfo | None
    changes: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        head: dict[str, Any] = (
            self.commit.to_dict()
            if self.commit
            else {
                "commit": None,
                "short": None,
                "author": None,
                "email": None,
                "date": None,
                "subject": "uncommitted changes in the working tree",
                "merge": False,
            }
        )
        return {**head, "changes": self.changes}


@dataclass
class History:
    target: Target
    entries: list[LogEntry]
    """Newest first."""

    def to_dict(self) -> dict[str, Any]:
        t = self.target
        return {
            "kind": t.kind,
            "id": t.evidence_id if t.kind == "claim" else t.content_id,
            "content_id": t.content_id,
            "title": t.title,
            "path": t.path,
            "entries": [e.to_dict() for e in self.entries],
        }


# -- finding the ID ---------------------------------------------------------------------


def _evidence_ids(data: bytes | None) -> list[str]:
    """The ID of every readable line of an ``evidence.jsonl``."""
    out: list[str] = []
    for text in (data or b"").decode("utf-8", errors="replace").split("\n"):
        obj = parse_json_object(text.encode("utf-8")) if text.strip() else None
        if obj and isinstance(obj.get("id"), str):
            out.append(obj["id"])
    return out


def _matches(snap: Snapshot, ident: str, items: dict[str, ItemRef]) -> set[Target]:
    found: set[Target] = set()
    for cid, ref in items.items():
        exact = cid == ident or ref.metadata.get("source_id") == ident
        if exact or (len(ident) >= MIN_PREFIX and cid.startswith(ident)):
            found.add(Target("item", cid, None, ref.title, ref.library_path))
    if len(ident) < MIN_PREFIX:
        return found
    for cid, ref in items.items():
        for eid in _evidence_ids(snap.read(f"{EXTRACTED}/{ref.rel}/{EVIDENCE}")):
            if eid.startswith(ident):
                found.add(Target("claim", cid, eid, ref.title, ref.library_path))
    return found


def resolve_target(repo: GitRepo, ident: str) -> Target:
    """The item (content ID, ≥ 8-character prefix, or source ID) or claim (evidence ID or
    ≥ 8-character prefix) named ``ident``: looked up in the working tree, then in history."""
    ident = ident.strip()
    if not ident:
        raise InvalidInputError("give an item or evidence ID")
    work = WorkTreeSnapshot(repo.root)
    found = _matches(work, ident, repo.items(work))
    if not found:
        head = repo.head()
        if head is not None:
            seen: set[str] = set()
            for n, commit in enumerate(repo.repo.walk(head.id, pygit2.enums.SortMode.TIME)):
                if n >= SEARCH_LIMIT:
                    break
                if str(commit.tree_id) in seen:
                    continue
                seen.add(str(commit.tree_id))
                snap = repo.snapshot_of(commit)
                found = _matches(snap, ident, repo.items(snap))
                if found:
                    break
    if len(found) == 1:
        return next(iter(found))
    if found:
        names = ", ".join(sorted(f"{t.kind} {t.evidence_id or t.content_id}" for t in found)[:5])
        raise AmbiguousIdError(
            f"{ident!r} matches {len(found)} things: {names}", hint="give more characters"
        )
    if len(ident) < MIN_PREFIX:
        raise InvalidInputError(
            f"no item with ID {ident!r}", hint=f"ID prefixes need at least {MIN_PREFIX} characters"
        )
    raise NotFoundError(
        f"no item or evidence line with ID {ident!r}, now or in the history",
        hint="`arkai library` lists items, `arkai review --pending` claims",
    )


# -- walking ------------------------------------------------------------------------------

Fingerprint = tuple[str, tuple[tuple[str, str], ...]] | None


class _Walker:
    """Finds one item in snapshots and caches its parsed states by fingerprint."""

    def __init__(self, repo: GitRepo, cid: str, rel_hint: str | None) -> None:
        self.repo = repo
        self.cid = cid
        self.hint = rel_hint
        self.states: dict[Fingerprint, ItemState] = {}

    def ref(self, snap: Snapshot) -> ItemRef | None:
        if self.hint is not None:
            meta = parse_json_object(snap.read(f"{LIBRARY}/{self.hint}/{METADATA}"))
            if meta is not None and meta.get("id") == self.cid:
                return ItemRef(self.cid, self.hint, meta)
        ref = self.repo.items(snap).get(self.cid)
        if ref is not None:
            self.hint = ref.rel
        return ref

    def fingerprint(
        self, snap: Snapshot, ref: ItemRef | None, *, by_files: bool = False
    ) -> Fingerprint:
        """The item's folder path and contents; equal fingerprints, equal files. Commits use
        tree IDs (free); the working tree, or ``by_files``, lists file IDs."""
        if ref is None:
            return None
        parts: list[tuple[str, str]] = []
        for base in (LIBRARY, EXTRACTED):
            folder = f"{base}/{ref.rel}"
            fid = None if by_files else snap.folder_id(folder)
            if fid is None:
                ids = snap.file_ids(folder)
                fid = "files:" + ",".join(f"{k}={v}" for k, v in sorted(ids.items())) if ids else ""
            parts.append((base, fid))
        return (ref.rel, tuple(parts))

    def state(self, snap: Snapshot, ref: ItemRef | None, fp: Fingerprint) -> ItemState | None:
        if ref is None:
            return None
        if fp not in self.states:
            if len(self.states) > 256:
                self.states.clear()
            self.states[fp] = load_item(snap, ref)
        return self.states[fp]


def _review_changes(left: ItemState | None, right: ItemState | None) -> list[dict[str, Any]]:
    a = left.reviews if left else {}
    b = right.reviews if right else {}
    out = []
    for key in sorted(set(a) | set(b)):
        if a.get(key) != b.get(key):
            out.append({"id": key, "from": a.get(key), "to": b.get(key)})
    return out


def _review_text(entry: dict[str, Any]) -> str:
    to = entry["to"]
    if to is None:
        return f"{short(entry['id'])} review removed"
    return f"{short(entry['id'])} {fmt_value(to)}"


def item_changes(d: ItemDiff) -> list[dict[str, Any]]:
    """An item's changes in one commit, each with a one-line ``text``."""
    out: list[dict[str, Any]] = []
    left, right = d.left, d.right
    if d.state == "added" and right is not None:
        note = "" if right.extracted else " (not extracted)"
        out.append({"kind": "added", "path": right.path, "text": f"added {right.path}{note}"})
    elif d.state == "removed" and left is not None:
        out.append({"kind": "removed", "path": left.path, "text": f"removed {left.path}"})
    if d.renamed and left and right:
        out.append(
            {
                "kind": "renamed",
                "from": left.path,
                "to": right.path,
                "text": f"moved {left.path} → {right.path}",
            }
        )
    if d.state == "changed":
        lib = [f for f in d.files if f["tree"] == "library" and f["path"] != REVIEW]
        for f in lib:
            what = "edited" if f["change"] == "modified" else f["change"]
            out.append(
                {
                    "kind": "file",
                    "path": f["path"],
                    "change": f["change"],
                    "text": f"{f['path']} {what}",
                }
            )
    reviews = _review_changes(left, right) if right is not None else []
    if reviews:
        out.append(
            {
                "kind": "review",
                "entries": reviews,
                "text": "review.yaml: " + ", ".join(_review_text(r) for r in reviews),
            }
        )
    extracted = [f["path"] for f in d.files if f["tree"] == "extracted"]
    if extracted:
        cl, en = d.claims, d.entities
        claims = {k: len(getattr(cl, k)) for k in ("added", "removed", "changed", "moved")}
        ents = {k: len(getattr(en, k)) for k in ("added", "removed", "changed")}
        parts = []
        if cl:
            moved = f" >{claims['moved']}" if claims["moved"] else ""
            parts.append(
                f"claims +{claims['added']} -{claims['removed']} ~{claims['changed']}{moved}"
            )
        if en:
            parts.append(f"entities +{ents['added']} -{ents['removed']} ~{ents['changed']}")
        if not parts:
            parts.append(", ".join(extracted) + " rewritten")
        out.append(
            {
                "kind": "extracted",
                "claims": claims,
                "entities": ents,
                "files": extracted,
                "text": "extracted: " + ", ".join(parts),
            }
        )
    if d.validation_changed and left and right:
        a, b = left.validation(), right.validation()
        keys = [k for k in ("valid", "stale", "unresolved") if a[k] != b[k]]
        if keys:
            out.append(
                {
                    "kind": "validation",
                    "from": {k: a[k] for k in keys},
                    "to": {k: b[k] for k in keys},
                    "text": "validation: " + ", ".join(f"{k} {a[k]} → {b[k]}" for k in keys),
                }
            )
    return out


def claim_changes(
    eid: str, left: ItemState | None, right: ItemState | None
) -> list[dict[str, Any]]:
    """One claim's changes between two states of its item."""
    a: ClaimState | None = left.claims.get(eid) if left else None
    b: ClaimState | None = right.claims.get(eid) if right else None
    out: list[dict[str, Any]] = []
    if a is None and b is not None:
        where = f"L{b.line}" if b.line is not None else "no span"
        rev = f", {b.review['status']}" if b.review else ""
        origin = _twin(b, left, right) if left is not None else None
        moved = f" (moved from {origin.id}, L{origin.line})" if origin else ""
        out.append(
            {
                "kind": "appeared",
                "status": b.status,
                "line": b.line,
                "claim": b.claim,
                "from": origin.id if origin else None,
                "text": f"appeared{moved}: {b.status}{rev}, {where}: {b.claim}",
            }
        )
    elif a is not None and b is None:
        if right is None:
            out.append({"kind": "removed", "text": "removed with its item"})
        else:
            twin = _twin(a, right, left)
            if twin is not None:
                out.append(
                    {
                        "kind": "moved",
                        "to": twin.id,
                        "text": f"moved to {twin.id} (L{a.line} → L{twin.line})",
                    }
                )
            else:
                out.append({"kind": "removed", "text": "removed (no longer extracted)"})
    elif a is not None and b is not None:
        changes = a.compare(b)
        review = changes.pop("review", None)
        if changes:
            out.append({"kind": "changed", "changes": changes, "text": describe_changes(changes)})
        if review is not None:
            out.append(_claim_review(review[0], review[1]))
        return out
    # Reviews of a claim that is not (or no longer) in evidence.jsonl still count.
    ra = review_for(left.reviews, eid) if left else None
    rb = review_for(right.reviews, eid) if right else None
    if ra != rb and right is not None and not (a is None and b is not None and b.review == rb):
        out.append(_claim_review(ra, rb))
    return out


def _twin(c: ClaimState, there: ItemState, here: ItemState | None) -> ClaimState | None:
    """The claim in ``there`` with ``c``'s quote and wording under another ID that ``here``
    does not have: where ``c`` moved to (or came from) when the transcript was edited."""
    key = (c.extractor, c.quote_sha256, c.claim)
    for other in sorted(there.claims.values(), key=lambda x: x.id):
        if (other.extractor, other.quote_sha256, other.claim) == key and (
            here is None or other.id not in here.claims
        ):
            return other
    return None


def _claim_review(before: dict[str, str] | None, after: dict[str, str] | None) -> dict[str, Any]:
    if after is None:
        text = "review removed"
    elif before is None:
        text = f"reviewed: {fmt_value(after)}"
    else:
        text = f"review changed: {fmt_value(before)} → {fmt_value(after)}"
    return {"kind": "review", "from": before, "to": after, "text": text}


def history(library: Repo, ident: str, *, rev: str = "HEAD", worktree: bool = True) -> History:
    """``arkai log ID``: every commit that changed the item or claim, newest first."""
    repo = library.git
    target = resolve_target(repo, ident)
    rel_hint = target.path.removeprefix(f"{LIBRARY}/")
    walker = _Walker(repo, target.content_id, rel_hint)
    entries: list[LogEntry] = []

    def changes(left: ItemState | None, right: ItemState | None) -> list[dict[str, Any]]:
        if target.kind == "claim":
            assert target.evidence_id is not None
            return claim_changes(target.evidence_id, left, right)
        d = diff_item(target.content_id, left, right)
        return item_changes(d) if d is not None else []

    known: dict[str, tuple[Fingerprint, Snapshot, ItemRef | None]] = {}
    head_key: tuple[Fingerprint, Snapshot, ItemRef | None] | None = None
    start = None if rev == "HEAD" and repo.head() is None else repo.resolve_commit(rev)
    if start is not None:
        for commit in repo.walk(start):
            snap = repo.snapshot_of(commit)
            ref = walker.ref(snap)
            fp = walker.fingerprint(snap, ref)
            known[str(commit.id)] = (fp, snap, ref)
            parents = [known[str(p)] for p in commit.parent_ids if str(p) in known]
            if any(p[0] == fp for p in parents) or (not parents and fp is None):
                continue
            before = parents[0] if parents else (None, snap, None)
            left = walker.state(before[1], before[2], before[0])
            right = walker.state(snap, ref, fp)
            found = changes(left, right)
            if found:
                entries.append(LogEntry(repo.snapshot_of(commit).commit, found))
        head_key = known.get(str(start.id))
    if worktree and rev == "HEAD":
        work = WorkTreeSnapshot(repo.root)
        ref = walker.ref(work)
        fp = walker.fingerprint(work, ref)
        base_fp, base_snap, base_ref = head_key if head_key else (None, work, None)
        if walker.fingerprint(base_snap, base_ref, by_files=True) != fp:
            left = walker.state(base_snap, base_ref, base_fp)
            found = changes(left, walker.state(work, ref, fp))
            if found:
                entries.append(LogEntry(None, found))
    entries.reverse()
    return History(target, entries)
