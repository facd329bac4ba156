"""``library/<item>/review.yaml``: people accept or reject claims — the one reader of the file.

```yaml
claims:
  3f0c9a1e5b7d2c48: {status: rejected, note: "misquotes the speaker", by: ana, at: 2026-11-22}
  9f150a5cbb6c4973: {status: accepted}
```

Keys are **stable claim IDs** (:func:`review_key`): the seed's unresolved-tier evidence ID —
content ID, extractor and quote hash, no byte offsets — so a decision survives edits that move
text around the quote and every re-extraction. Files written before stable keys (keyed by the
span-tier evidence ID, or a ≥ 8-character prefix of either) keep working: such a key is matched
to the claim it named through the previous ``evidence.jsonl``, which records the key it matched.
A key that matches no claim any more is *orphaned*: reported (``arkai validate``, ``arkai review
--pending``), never dropped.

Rejected claims stay in ``evidence.jsonl`` (their ``review.status`` is ``rejected``) and are left
out of indexes and the site's main views. The file is written by people (or ``arkai review``)
and never rewritten by the pipeline.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from arkai.adapters.fs import parse_yaml, read_repo_file
from arkai.adapters.layout import MIN_PREFIX, REVIEW, Item
from arkai.core.hashing import evidence_id
from arkai.errors import LibraryError
from arkai.model.evidence import EvidenceLine, Review

REVIEW_STATUSES = ("accepted", "rejected")
Entries = dict[str, dict[str, str]]


def review_key(line: EvidenceLine) -> str:
    """The stable ID ``review.yaml`` is keyed by (unresolved-tier ID: no offsets)."""
    return evidence_id(line.content_id, line.extractor, line.quote_sha256, None)


def parse_review(data: bytes | None, path: Path, *, strict: bool = True) -> Entries:
    """``review.yaml`` bytes → key → entry (strings). ``None``/empty is no reviews.

    ``strict`` raises :class:`LibraryError` naming ``path`` for a malformed file or entry;
    otherwise (reading old commits) bad entries are skipped.
    """
    if not data:
        return {}
    try:
        raw = parse_yaml(data, path)
    except LibraryError:
        if not strict:
            return {}
        raise
    if raw is None:
        return {}
    claims = raw.get("claims") if isinstance(raw, dict) else None
    if not isinstance(claims, dict):
        if not strict:
            return {}
        raise LibraryError(f"{path}: expected a mapping 'claims: {{claim_id: {{status: …}}}}'")
    out: Entries = {}
    for eid, entry in claims.items():
        if isinstance(entry, str):
            entry = {"status": entry}
        if not isinstance(entry, dict) or entry.get("status") not in REVIEW_STATUSES:
            if not strict:
                continue
            raise LibraryError(
                f"{path}: claim {eid}: status must be one of {', '.join(REVIEW_STATUSES)}"
            )
        out[str(eid)] = {str(k): str(v) for k, v in entry.items() if v is not None}
    return out


def load_review(path: Path, root: Path | None = None) -> Entries:
    """The entries of a ``review.yaml`` on disk, read safely (a link or FIFO is refused); a
    missing file is no reviews, a malformed one a :class:`LibraryError` naming it."""
    return parse_review(read_repo_file(path, root or path.parent, missing_ok=True), path)


def load_item_review(item: Item) -> Entries:
    return load_review(item.path / REVIEW, item.root)


@dataclass(frozen=True, slots=True)
class Matched:
    """Evidence lines with their reviews, and the keys that matched no claim."""

    lines: list[EvidenceLine]
    orphans: dict[str, dict[str, str]]


def _matches(key: str, ident: str) -> bool:
    return ident == key or (len(key) >= MIN_PREFIX and ident.startswith(key))


def match_reviews(
    lines: Sequence[EvidenceLine],
    reviews: Entries,
    previous: Iterable[EvidenceLine] = (),
) -> Matched:
    """Attach each review to the claims it names; collect the orphans.

    A key names a claim when it equals (or is a ≥ 8-character prefix of) the claim's stable ID
    or its evidence ID; failing that, when it named a claim in ``previous`` (the evidence before
    this extraction: by ID, or by the key recorded on its review) whose stable ID is the
    claim's. An exact stable key wins over an older-style key for the same claim.
    """
    if not reviews:
        return Matched(list(lines), {})
    carried: dict[str, set[str]] = {}
    for old in previous:
        for key in reviews:
            recorded = old.review.key if old.review is not None else None
            if recorded == key or _matches(key, old.id):
                carried.setdefault(key, set()).add(review_key(old))
    chosen: dict[int, tuple[int, str]] = {}
    used: set[str] = set()
    for i, line in enumerate(lines):
        stable = review_key(line)
        for key in reviews:
            if key == stable:
                rank = 0
            elif _matches(key, stable) or _matches(key, line.id):
                rank = 1
            elif stable in carried.get(key, ()):
                rank = 2
            else:
                continue
            used.add(key)
            if i not in chosen or rank < chosen[i][0]:
                chosen[i] = (rank, key)
    out = []
    for i, line in enumerate(lines):
        if i in chosen:
            key = chosen[i][1]
            line = replace(line, review=Review.from_dict({**reviews[key], "key": key}))
        elif line.review is not None:
            line = replace(line, review=None)
        out.append(line)
    return Matched(out, {k: v for k, v in reviews.items() if k not in used})


def apply_review(lines: list[EvidenceLine], reviews: Entries) -> list[EvidenceLine]:
    """``lines`` with their reviews attached (see :func:`match_reviews`)."""
    return match_reviews(lines, reviews).lines


def review_for(reviews: Entries, eid: str, stable: str | None = None) -> dict[str, str] | None:
    """The entry for a claim: its stable key ``stable``, else its evidence ID ``eid``, else a key
    of ≥ 8 characters either starts with; ``None`` when no key names it."""
    for ident in (stable, eid):
        if ident is not None and ident in reviews:
            return reviews[ident]
    for key, entry in reviews.items():
        if any(_matches(key, i) for i in (stable, eid) if i is not None):
            return entry
    return None


def is_rejected(line: EvidenceLine) -> bool:
    return line.rejected
