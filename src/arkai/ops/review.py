"""``arkai review``: accept or reject claims in ``library/<item>/review.yaml``; list pending ones.

The file keeps the format :mod:`arkai.adapters.review` reads, one claim per line, sorted by
stable claim ID (so two branches reviewing different claims rarely touch the same lines)::

    claims:
      75cb019d446cb067: {status: rejected, note: "misquotes the speaker", by: ana, at: 2026-11-22}
      9f150a5cbb6c4973: {status: accepted, by: ana, at: 2026-11-22}

Only the reviewed claim's line is replaced or inserted; every other line — other entries,
comments, blank lines — is kept byte for byte. (A file whose ``claims`` mapping is written in
flow style, or is empty, is rewritten in the form above.) The write is atomic.

A review changes ``review.yaml``, an input of the ``extract`` stage: ``dvc repro`` (or ``arkai
extract``) then marks the claim in ``evidence.jsonl`` and leaves rejected claims out of indexes.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pygit2
import yaml

from arkai.adapters.fs import atomic_write_text, read_repo_text
from arkai.adapters.gitrepo import GitRepo
from arkai.adapters.layout import EVIDENCE, MIN_PREFIX, REVIEW
from arkai.adapters.repo import Repo
from arkai.adapters.review import (
    REVIEW_STATUSES,
    load_item_review,
    match_reviews,
    review_key,
)
from arkai.adapters.store import read_evidence
from arkai.errors import ArkaiError, InvalidInputError, LibraryError
from arkai.model.record import AsDict
from arkai.ops.evidence import find_evidence

#: Key order inside one entry; other keys follow, sorted.
ENTRY_KEYS = ("status", "note", "by", "at")
_PLAIN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 ._@+-]*$")
_UNPRINTABLE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u2028\u2029\ufeff\ufffe\uffff]")


def today_utc() -> str:
    return datetime.now(UTC).date().isoformat()


def git_user_name(root: Path) -> str | None:
    """``git config user.name`` for the repo (or the global one outside a repo)."""
    try:
        return GitRepo(root).user_name()
    except ArkaiError:
        pass
    try:
        value = pygit2.Config.get_global_config()["user.name"]
    except (KeyError, OSError, pygit2.GitError):
        return None
    return str(value).strip() or None


# -- writing one line ----------------------------------------------------------------------


def yaml_scalar(value: str, *, quote: bool = False) -> str:
    """``value`` as a YAML flow scalar that reads back as the same string: plain when that is
    safe (``ana``, ``2026-11-22``), else double-quoted with escapes."""
    if not quote and _PLAIN.match(value) and value == value.strip():
        try:
            back = yaml.safe_load(f"{{k: {value}}}")
        except yaml.YAMLError:
            back = None
        if isinstance(back, dict) and str(back.get("k")) == value:
            return value
    text = json.dumps(value, ensure_ascii=False)
    return _UNPRINTABLE.sub(lambda m: f"\\u{ord(m.group(0)):04x}", text)


def entry_line(eid: str, entry: dict[str, Any], indent: int = 2) -> str:
    """``  <id>: {status: …, note: "…", by: …, at: …}`` (one line, no newline)."""
    keys = [k for k in ENTRY_KEYS if k in entry] + sorted(k for k in entry if k not in ENTRY_KEYS)
    parts = []
    for k in keys:
        v = entry[k]
        if v is None:
            continue
        text = v.isoformat() if isinstance(v, date) else str(v)
        parts.append(f"{yaml_scalar(str(k))}: {yaml_scalar(text, quote=k == 'note')}")
    return f"{' ' * indent}{yaml_scalar(eid)}: {{{', '.join(parts)}}}"


def canonical_review(entries: dict[str, dict[str, Any]], other: dict[str, Any] | None) -> str:
    """A whole ``review.yaml``: other top-level keys (kept), then ``claims``, sorted."""
    head = ""
    if other:
        head = yaml.safe_dump(other, sort_keys=False, allow_unicode=True, width=100)
    lines = [entry_line(k, entries[k]) for k in sorted(entries)]
    if not lines:
        return head + "claims: {}\n"
    return head + "claims:\n" + "".join(f"{ln}\n" for ln in lines)


def _entries(raw: Any) -> dict[str, dict[str, Any]]:
    claims = raw.get("claims") if isinstance(raw, dict) else None
    out: dict[str, dict[str, Any]] = {}
    for k, v in (claims if isinstance(claims, dict) else {}).items():
        out[str(k)] = dict(v) if isinstance(v, dict) else {"status": v}
    return out


def _last_line(node: yaml.Node) -> int:
    """The last line (0-based) a node's text is on. Block collections end where their last
    child ends (their own end mark is the next token, often on the next entry's line)."""
    if isinstance(node, yaml.CollectionNode) and not node.flow_style and node.value:
        children: list[yaml.Node] = []
        for child in node.value:
            children.extend(child if isinstance(child, tuple) else (child,))
        return max(_last_line(c) for c in children)
    end = node.end_mark
    return int(end.line if end.column > 0 else max(node.start_mark.line, end.line - 1))


def set_entry(text: str, eid: str, entry: dict[str, Any], drop: set[str]) -> str:
    """``review.yaml`` text with ``eid``'s entry set to ``entry`` and the keys in ``drop``
    removed, changing only those lines when the file has the usual block layout."""
    try:
        root = yaml.compose(text)
    except yaml.YAMLError as exc:
        raise LibraryError(f"{REVIEW}: not valid YAML ({exc})") from None
    if root is None:
        prefix = text if text.endswith("\n") or not text else text + "\n"
        return prefix + "claims:\n" + entry_line(eid, entry) + "\n"
    if not isinstance(root, yaml.MappingNode):
        raise LibraryError(f"{REVIEW}: expected a mapping 'claims: {{evidence_id: {{…}}}}'")
    pair = next(
        ((k, v) for k, v in root.value if isinstance(k, yaml.ScalarNode) and k.value == "claims"),
        None,
    )
    if pair is None:
        sep = "" if text.endswith("\n") else "\n"
        return text + sep + "claims:\n" + entry_line(eid, entry) + "\n"
    node = pair[1]
    if not isinstance(node, yaml.MappingNode) or node.flow_style or not node.value:
        raw = yaml.safe_load(text)
        entries = {k: v for k, v in _entries(raw).items() if k not in drop}
        entries[eid] = entry
        other = {k: v for k, v in raw.items() if k != "claims"} if isinstance(raw, dict) else {}
        return canonical_review(entries, other)
    lines = text.splitlines(keepends=True)
    indent = node.value[0][0].start_mark.column
    spans: list[tuple[str, int, int]] = []
    for key, value in node.value:
        first = key.start_mark.line
        spans.append((str(key.value), first, max(first, _last_line(value))))
    keep = [s for s in spans if s[0] not in drop and s[0] != eid]
    removed = {i for s in spans if s not in keep for i in range(s[1], s[2] + 1)}
    new_line = entry_line(eid, entry, indent) + "\n"
    after = next((s for s in keep if s[0] > eid), None)
    if after is not None:
        at = after[1]
    elif keep:
        at = keep[-1][2] + 1
    else:
        at = min(s[1] for s in spans)
    out: list[str] = []
    for i, line in enumerate(lines):
        if i == at:
            out.append(new_line)
        if i not in removed:
            out.append(line)
    if at >= len(lines):
        if out and not out[-1].endswith(("\n", "\r")):
            out[-1] += "\n"
        out.append(new_line)
    return "".join(out)


# -- operations ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ReviewResult:
    evidence_id: str
    content_id: str
    title: str
    claim: str
    file: str
    entry: dict[str, str]
    previous: dict[str, str] | None
    key: str = ""
    """The stable claim ID the entry is filed under in ``review.yaml``."""

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["id"], d["review"] = d.pop("evidence_id"), d.pop("entry")
        return d


def review_claim(
    repo: Repo,
    ident: str,
    status: str,
    *,
    note: str | None = None,
    by: str | None = None,
    at: str | None = None,
) -> ReviewResult:
    """Record ``status`` (accepted / rejected) for the evidence line ``ident`` names."""
    root = repo.root
    if status not in REVIEW_STATUSES:
        raise InvalidInputError(f"review status must be one of {', '.join(REVIEW_STATUSES)}")
    loc = find_evidence(repo, ident)
    item, line = loc.item, loc.line
    path = item.path / REVIEW
    text = read_repo_text(path, root, missing_ok=True) or ""
    current = load_item_review(item)  # validates the file as the pipeline will read it
    key = review_key(line)
    evidence = read_evidence(item.extracted / EVIDENCE)
    previous = match_reviews([line], current, evidence).lines[0].review
    previous_entry = (
        None if previous is None else {k: v for k, v in previous.to_dict().items() if k != "key"}
    )
    # The entry is written under the stable key; an older key (the span-tier ID, or a prefix)
    # that names this claim only is replaced by it.
    names_line = {line.id, key} | ({previous.key} if previous and previous.key else set())

    def claims_named(prefix: str) -> set[str]:
        return {
            review_key(ln)
            for ln in evidence
            if ln.id.startswith(prefix) or review_key(ln).startswith(prefix)
        }

    drop = {
        k
        for k in current
        if k != key
        and (
            k == line.id
            or (
                (
                    k in names_line
                    or (len(k) >= MIN_PREFIX and (line.id.startswith(k) or key.startswith(k)))
                )
                and claims_named(k) <= {key}
            )
        )
    }
    entry: dict[str, str] = {"status": status}
    if note:
        entry["note"] = " ".join(note.split()) if "\n" in note else note
    who = by if by is not None else git_user_name(root)
    if who:
        entry["by"] = who
    entry["at"] = at or today_utc()
    new = set_entry(text, key, entry, drop)
    try:
        check = _entries(yaml.safe_load(new))
    except yaml.YAMLError:
        check = {}
    got = {
        k: (v.isoformat() if isinstance(v, date) else str(v)) for k, v in check.get(key, {}).items()
    }
    if got != entry or any(k in check for k in drop):
        raw = yaml.safe_load(text) if text.strip() else {}
        entries = {k: v for k, v in _entries(raw).items() if k not in drop}
        entries[key] = entry
        other = {k: v for k, v in raw.items() if k != "claims"} if isinstance(raw, dict) else {}
        new = canonical_review(entries, other)
    atomic_write_text(path, new)
    load_item_review(item)
    return ReviewResult(
        evidence_id=line.id,
        content_id=item.id,
        title=item.title,
        claim=line.claim,
        file=str(path.relative_to(root)),
        entry=entry,
        previous=previous_entry,
        key=key,
    )


@dataclass(frozen=True)
class PendingClaim(AsDict):
    """A claim with no ``review.yaml`` entry."""

    id: str
    content_id: str
    title: str
    claim: str
    quote: str
    status: str
    line: int | None
    file: str


@dataclass(frozen=True)
class OrphanedReview(AsDict):
    """A ``review.yaml`` entry that names no claim of the item's current extraction."""

    key: str
    content_id: str
    title: str
    review: dict[str, Any]
    file: str


@dataclass(frozen=True)
class PendingReport:
    """``arkai review --pending``: claims awaiting review and orphaned entries."""

    pending: list[PendingClaim]
    orphaned: list[OrphanedReview]

    def to_dict(self) -> dict[str, Any]:
        return {"count": len(self.pending), "pending": [p.to_dict() for p in self.pending],
                "orphaned": [o.to_dict() for o in self.orphaned]}  # fmt: skip


def pending_report(repo: Repo, item_id: str | None = None) -> PendingReport:
    """``arkai review --pending``: claims with no ``review.yaml`` entry (item by item, in span
    order), and entries that name no claim of the item's current extraction — kept in the
    file (never dropped), listed so a person can re-file or delete them."""
    root = repo.root
    report = PendingReport([], [])
    for item in [repo.item(item_id)] if item_id else repo.items():
        lines = read_evidence(item.extracted / EVIDENCE)
        matched = match_reviews(lines, load_item_review(item), lines)
        for line in matched.lines:
            if line.review is not None:
                continue
            span = line.span
            path = item.path / (span.artifact if span else "transcript.md")
            report.pending.append(PendingClaim(
                line.id, item.id, item.title, line.claim, line.quote, line.status,
                span.line if span else None, str(path.relative_to(root)),
            ))  # fmt: skip
        file = str((item.path / REVIEW).relative_to(root))
        for key, entry in sorted(matched.orphans.items()):
            report.orphaned.append(OrphanedReview(key, item.id, item.title, entry, file))
    return report
