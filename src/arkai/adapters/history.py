"""Reads of the knowledge repo's git history with pygit2, never touching the work tree.

``library_at(root, cutoff)`` answers "which items were in ``library/`` then?" for ``asof:``
queries: it walks the commits reachable from ``HEAD`` newest first (by committer time), takes the
first one committed before ``cutoff``, and lists the ``library/**/metadata.json`` blobs of its
tree — no checkout, no subprocess.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pygit2

from arkai.adapters.layout import LIBRARY, METADATA
from arkai.errors import InvalidInputError, LibraryError

__all__ = ["Snapshot", "library_at", "open_repo"]


@dataclass(frozen=True, slots=True)
class Snapshot:
    """The library as one commit recorded it."""

    commit: str
    """The commit's hex ID."""
    committed_at: datetime
    """Its committer time (UTC)."""
    items: dict[str, str]
    """Content ID → item folder relative to ``library/`` (``transcripts/Title (id)``)."""


def open_repo(root: Path) -> pygit2.Repository:
    """The git repository holding ``root``; :class:`InvalidInputError` when there is none."""
    found = pygit2.discover_repository(str(root))
    if not found:
        raise InvalidInputError(
            f"asof: needs git history, but {root} is not in a git repository",
            hint="commit the library (git add library && git commit) or drop asof:",
        )
    try:
        return pygit2.Repository(found)
    except pygit2.GitError as exc:
        raise LibraryError(f"cannot open the git repository at {found}: {exc}") from None


def _prefix(repo: pygit2.Repository, root: Path) -> str:
    """``root`` relative to the repository's work tree, as a tree path ('' at the top)."""
    workdir = repo.workdir
    if not workdir:
        return ""
    try:
        rel = root.resolve().relative_to(Path(workdir).resolve())
    except ValueError:
        return ""
    return rel.as_posix() if rel.parts else ""


def library_at(root: Path, cutoff: datetime) -> Snapshot | None:
    """The library at the newest commit (reachable from ``HEAD``) committed before ``cutoff``.

    ``None`` when every commit is at or after ``cutoff`` (the library did not exist yet).
    Raises :class:`InvalidInputError` when ``root`` has no git history at all.
    """
    repo = open_repo(root)
    if repo.head_is_unborn:
        raise InvalidInputError(
            f"asof: needs git history, but the repository at {root} has no commits yet",
            hint="commit the library first",
        )
    limit = (
        cutoff.astimezone(UTC).timestamp()
        if cutoff.tzinfo
        else cutoff.replace(tzinfo=UTC).timestamp()
    )
    chosen: pygit2.Commit | None = None
    for commit in repo.walk(repo.head.target, pygit2.enums.SortMode.TIME):
        if commit.commit_time < limit:
            chosen = commit
            break
    if chosen is None:
        return None
    prefix = _prefix(repo, root)
    path = f"{prefix}/{LIBRARY}" if prefix else LIBRARY
    items: dict[str, str] = {}
    try:
        lib = chosen.tree[path]
    except KeyError:
        lib = None
    if isinstance(lib, pygit2.Tree):
        _collect(repo, lib, "", items)
    return Snapshot(
        commit=str(chosen.id),
        committed_at=datetime.fromtimestamp(chosen.commit_time, tz=UTC),
        items=items,
    )


def _collect(repo: pygit2.Repository, tree: pygit2.Tree, rel: str, out: dict[str, str]) -> None:
    for entry in tree:
        name = entry.name or ""
        if isinstance(entry, pygit2.Tree):
            _collect(repo, entry, f"{rel}/{name}" if rel else name, out)
        elif name == METADATA and isinstance(entry, pygit2.Blob) and rel:
            meta = _parse(entry.data)
            if meta is not None and isinstance(meta.get("id"), str):
                out[meta["id"]] = rel


def _parse(data: bytes) -> dict[str, Any] | None:
    """A committed ``metadata.json``; unreadable ones are skipped (history is not validated)."""
    try:
        obj = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None
    return obj if isinstance(obj, dict) else None
