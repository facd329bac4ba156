"""``arkai feedback QUERY ID --up|--down``: explicit relevance votes, kept as files in the repo
(seed 003, "Feedback"), and the net votes that search turns into a bounded boost
(:func:`arkai.search.blend.boost_feedback`).

Storage: ``feedback/<digest>.jsonl``, one file per query, where ``digest`` is the first 16 hex
digits of the SHA-256 of the normalised query (lower case, whitespace collapsed), one JSON line
per vote: ``{"at", "content_id", "query", "vote": 1 | -1}``. Why this shape:

- **merge-friendly** — votes on different queries never touch the same file, and arkai writes
  ``feedback/.gitattributes`` with ``*.jsonl merge=union``, so two branches that both voted on
  the same query merge without a conflict (git keeps both sides' lines);
- **order-free** — an item's standing under a query is the *sum* of its votes, which does not
  depend on the order of the lines, so a union merge gives the same result whichever way it
  interleaves them; a later ``--down`` cancels an earlier ``--up``;
- **readable and reviewable** — a person can read, diff or delete a vote with any editor, and the
  query's text is on every line.

Search reads only the file of the query it runs (one small read). A line that cannot be read is
skipped with a warning naming the file and the line; nothing is ever rewritten.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arkai.adapters.events import utc_now
from arkai.adapters.fs import append_bytes, atomic_write_text, read_repo_file
from arkai.adapters.repo import Repo
from arkai.adapters.store import iter_jsonl
from arkai.core import canonjson
from arkai.errors import InvalidInputError
from arkai.model.record import AsDict

__all__ = ["FEEDBACK", "Feedback", "feedback", "feedback_path", "net_votes", "normalise_query"]

FEEDBACK = "feedback"
GITATTRIBUTES = "*.jsonl merge=union\n"
MAX_QUERY_CHARS = 2000


def normalise_query(query: str) -> str:
    """The query as feedback keys it: lower case, whitespace collapsed."""
    return " ".join(query.lower().split())


def feedback_path(root: Path, query: str) -> Path:
    """``feedback/<digest>.jsonl`` for ``query`` (normalised first)."""
    digest = hashlib.sha256(normalise_query(query).encode("utf-8")).hexdigest()[:16]
    return root / FEEDBACK / f"{digest}.jsonl"


@dataclass(frozen=True)
class Feedback(AsDict):
    """What one vote did."""

    query: str
    content_id: str
    title: str
    vote: int
    net: int
    """The item's net votes under this query, this one included."""
    path: str
    """The file the vote went to, relative to the repo root."""


def net_votes(root: Path, query: str, warnings: list[str] | None = None) -> dict[str, int]:
    """Content ID → up votes minus down votes under ``query`` (items with no votes absent).

    Lines that are not votes are skipped; each is named in ``warnings`` when given.
    """
    path = feedback_path(root, query)
    data = read_repo_file(path, root, missing_ok=True)
    if data is None:
        return {}
    net: dict[str, int] = {}
    bad: list[str] = []
    for cid, vote in iter_jsonl(data, path.relative_to(root), "not a feedback vote", _vote, bad):
        net[cid] = net.get(cid, 0) + vote
    if warnings is not None:
        warnings.extend(f"{problem}; ignored" for problem in bad)
    return {cid: v for cid, v in net.items() if v}


def _vote(rec: dict[str, Any]) -> tuple[str, int]:
    cid, vote = rec["content_id"], rec["vote"]
    if not isinstance(cid, str) or vote not in (1, -1) or isinstance(vote, bool):
        raise ValueError("needs a content_id and a vote of 1 or -1")
    return cid, int(vote)


def feedback(repo: Repo, query: str, ident: str, vote: int, *, now: str | None = None) -> Feedback:
    """Record a vote (``1`` up, ``-1`` down) for the item ``ident`` (content ID, prefix or source
    ID) under ``query``. Raises :class:`NotFoundError` for an unknown item."""
    if vote not in (1, -1):
        raise InvalidInputError(f"a vote is 1 (up) or -1 (down), got {vote!r}")
    text = normalise_query(query)
    if not text:
        raise InvalidInputError("feedback needs the query it is about")
    if len(text) > MAX_QUERY_CHARS:
        raise InvalidInputError(f"the query is longer than {MAX_QUERY_CHARS} characters")
    item = repo.item(ident)
    root = repo.root
    path = feedback_path(root, text)
    attributes = root / FEEDBACK / ".gitattributes"
    if read_repo_file(attributes, root, missing_ok=True) is None:
        atomic_write_text(attributes, GITATTRIBUTES)
    record = {"at": now or utc_now(), "content_id": item.id, "query": text, "vote": vote}
    append_bytes(path, canonjson.dumps_line(record).encode("utf-8"))
    return Feedback(
        query=text,
        content_id=item.id,
        title=item.title,
        vote=vote,
        net=net_votes(root, text).get(item.id, 0),
        path=str(path.relative_to(root)),
    )
