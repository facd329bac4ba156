"""Read a knowledge repo as one git revision recorded it — pygit2, no checkout, no subprocess.

Everything that compares revisions (``arkai diff``, ``arkai log``) reads files through one small
interface, :class:`Snapshot`: a commit's tree (:class:`CommitSnapshot`) or the files on disk
(:class:`WorkTreeSnapshot`, the pseudo-revision ``WORKTREE``). Paths are POSIX paths relative to
the knowledge repo root, which may be a sub-folder of the git work tree.

Every file has a *file id*: its git blob ID (for the working tree, the ID the bytes would get as a
blob), so snapshots of any kind compare without reading unchanged files twice.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Protocol

import pygit2

from arkai.adapters.layout import LIBRARY, METADATA
from arkai.errors import InvalidInputError, LibraryError, NotFoundError

__all__ = [
    "WORKTREE",
    "CommitInfo",
    "CommitSnapshot",
    "EmptySnapshot",
    "GitRepo",
    "ItemRef",
    "Snapshot",
    "WorkTreeSnapshot",
    "list_items",
]

#: The pseudo-revision naming the files on disk (committed or not, staged or not).
WORKTREE = "WORKTREE"
_WORKTREE_NAMES = {WORKTREE, "worktree", "working-tree"}
#: Folders never read from the working tree (git's own, tool caches).
_SKIP_DIRS = {".git", ".dvc", ".arkai", "__pycache__"}


@dataclass(frozen=True, slots=True)
class CommitInfo:
    """Who made a commit, when, and why."""

    id: str
    """Full hex ID."""
    short: str
    """Abbreviated hex ID (7 characters)."""
    author: str
    email: str
    date: datetime
    """Author time, in the author's own UTC offset."""
    subject: str
    """First line of the message."""
    parents: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "commit": self.id,
            "short": self.short,
            "author": self.author,
            "email": self.email,
            "date": self.date.isoformat(),
            "subject": self.subject,
            "merge": len(self.parents) > 1,
        }


def commit_info(commit: pygit2.Commit) -> CommitInfo:
    sig = commit.author
    tz = timezone(timedelta(minutes=sig.offset))
    message = commit.message or ""
    return CommitInfo(
        id=str(commit.id),
        short=str(commit.id)[:7],
        author=sig.name or "",
        email=sig.email or "",
        date=datetime.fromtimestamp(sig.time, tz=tz),
        subject=message.strip().splitlines()[0] if message.strip() else "",
        parents=tuple(str(p) for p in commit.parent_ids),
    )


class Snapshot(Protocol):
    """The knowledge repo's files at one revision (read-only)."""

    @property
    def label(self) -> str:
        """Short human name: an abbreviated commit ID, or ``working tree``."""
        ...

    @property
    def commit(self) -> CommitInfo | None:
        """The commit, or None for the working tree."""
        ...

    def read(self, path: str) -> bytes | None:
        """The file's bytes, or None when there is no such file."""
        ...

    def file_ids(self, folder: str) -> dict[str, str]:
        """Every file under ``folder`` (recursively): path relative to ``folder`` → file id."""
        ...

    def folder_id(self, folder: str) -> str | None:
        """A fingerprint of the whole folder (equal fingerprints: equal contents), or None."""
        ...

    def subfolders(self, folder: str) -> list[str]:
        """Names of the direct sub-folders of ``folder``, sorted."""
        ...

    def find(self, folder: str, name: str) -> list[str]:
        """Paths (relative to ``folder``, sorted) of every file called ``name`` below it."""
        ...


class CommitSnapshot:
    """A commit's tree, read through pygit2 (object reads are cached by the repo)."""

    def __init__(self, repo: GitRepo, commit: pygit2.Commit) -> None:
        self._repo = repo
        self._commit = commit
        self._info = commit_info(commit)

    @property
    def label(self) -> str:
        return self._info.short

    @property
    def commit(self) -> CommitInfo:
        return self._info

    @property
    def raw(self) -> pygit2.Commit:
        return self._commit

    def _object(self, path: str) -> pygit2.Object | None:
        full = self._repo.tree_path(path)
        tree = self._commit.tree
        if not full:
            return tree
        try:
            return tree[full]
        except KeyError:
            return None

    def read(self, path: str) -> bytes | None:
        obj = self._object(path)
        if isinstance(obj, pygit2.Blob):
            return self._repo.blob_data(str(obj.id), obj)
        return None

    def folder_id(self, folder: str) -> str | None:
        obj = self._object(folder)
        return str(obj.id) if isinstance(obj, pygit2.Tree) else None

    def file_ids(self, folder: str) -> dict[str, str]:
        obj = self._object(folder)
        out: dict[str, str] = {}
        if isinstance(obj, pygit2.Tree):
            _tree_files(obj, "", out)
        return out

    def subfolders(self, folder: str) -> list[str]:
        obj = self._object(folder)
        if not isinstance(obj, pygit2.Tree):
            return []
        return sorted(e.name or "" for e in obj if isinstance(e, pygit2.Tree))

    def find(self, folder: str, name: str) -> list[str]:
        return sorted(p for p in self.file_ids(folder) if p.rsplit("/", 1)[-1] == name)

    def tree(self, folder: str) -> pygit2.Tree | None:
        obj = self._object(folder)
        return obj if isinstance(obj, pygit2.Tree) else None


def _tree_files(tree: pygit2.Tree, prefix: str, out: dict[str, str]) -> None:
    for entry in tree:
        name = f"{prefix}{entry.name}"
        if isinstance(entry, pygit2.Tree):
            _tree_files(entry, name + "/", out)
        elif isinstance(entry, pygit2.Blob):
            out[name] = str(entry.id)


class WorkTreeSnapshot:
    """The files on disk under the knowledge repo root."""

    def __init__(self, root: Path) -> None:
        self.root = root

    @property
    def label(self) -> str:
        return "working tree"

    @property
    def commit(self) -> None:
        return None

    def _path(self, path: str) -> Path:
        return self.root / path if path else self.root

    def read(self, path: str) -> bytes | None:
        p = self._path(path)
        try:
            return p.read_bytes() if p.is_file() else None
        except OSError:
            return None

    def folder_id(self, folder: str) -> str | None:
        return None

    def file_ids(self, folder: str) -> dict[str, str]:
        base = self._path(folder)
        out: dict[str, str] = {}
        if not base.is_dir():
            return out
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS)
            here = Path(dirpath)
            for name in filenames:
                p = here / name
                if p.is_symlink() or not p.is_file():
                    continue
                try:
                    data = p.read_bytes()
                except OSError:
                    continue
                out[p.relative_to(base).as_posix()] = str(pygit2.hash(data))
        return out

    def subfolders(self, folder: str) -> list[str]:
        base = self._path(folder)
        if not base.is_dir():
            return []
        return sorted(p.name for p in base.iterdir() if p.is_dir() and p.name not in _SKIP_DIRS)

    def find(self, folder: str, name: str) -> list[str]:
        base = self._path(folder)
        if not base.is_dir():
            return []
        return sorted(
            p.relative_to(base).as_posix()
            for p in base.rglob(name)
            if p.is_file() and not _SKIP_DIRS.intersection(p.relative_to(base).parts)
        )


class EmptySnapshot:
    """No files at all: the left side of a repository without commits."""

    @property
    def label(self) -> str:
        return "empty"

    @property
    def commit(self) -> None:
        return None

    def read(self, path: str) -> bytes | None:
        return None

    def folder_id(self, folder: str) -> str | None:
        return None

    def file_ids(self, folder: str) -> dict[str, str]:
        return {}

    def subfolders(self, folder: str) -> list[str]:
        return []

    def find(self, folder: str, name: str) -> list[str]:
        return []


@dataclass(frozen=True, slots=True)
class ItemRef:
    """An item as found in one snapshot."""

    content_id: str
    rel: str
    """Folder relative to ``library/`` (``<type>/<Title (source_id)>``)."""
    metadata: dict[str, Any] = field(compare=False)

    @property
    def library_path(self) -> str:
        return f"{LIBRARY}/{self.rel}"

    @property
    def title(self) -> str:
        return str(self.metadata.get("title") or self.rel.rsplit("/", 1)[-1])


def parse_json_object(data: bytes | None) -> dict[str, Any] | None:
    """A JSON object from bytes; None when missing or unreadable (history is not validated)."""
    if data is None:
        return None
    try:
        obj = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None
    return obj if isinstance(obj, dict) else None


class GitRepo:
    """The git repository holding a knowledge repo, with caches for repeated reads."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        found = pygit2.discover_repository(str(self.root))
        if not found:
            raise InvalidInputError(
                f"{self.root} is not in a git repository",
                hint="run `git init` and commit the library, or compare the working tree only",
            )
        try:
            self.repo = pygit2.Repository(found)
        except pygit2.GitError as exc:
            raise LibraryError(f"cannot open the git repository at {found}: {exc}") from None
        self.prefix = self._prefix()
        self._blobs: dict[str, bytes] = {}
        self._meta: dict[str, dict[str, Any] | None] = {}
        self._type_items: dict[str, dict[str, ItemRef]] = {}

    def _prefix(self) -> str:
        workdir = self.repo.workdir
        if not workdir:
            return ""
        try:
            rel = self.root.relative_to(Path(workdir).resolve())
        except ValueError:
            return ""
        return rel.as_posix() if rel.parts else ""

    def tree_path(self, path: str) -> str:
        """A knowledge-repo path as a path in the commit tree."""
        if not self.prefix:
            return path
        return f"{self.prefix}/{path}" if path else self.prefix

    def blob_data(self, oid: str, blob: pygit2.Blob | None = None) -> bytes:
        data = self._blobs.get(oid)
        if data is None:
            obj = blob if blob is not None else self.repo[oid]
            data = bytes(obj.data) if isinstance(obj, pygit2.Blob) else b""
            if len(self._blobs) > 4096:
                self._blobs.clear()
            self._blobs[oid] = data
        return data

    def metadata(self, oid: str) -> dict[str, Any] | None:
        """Parsed ``metadata.json`` blob (cached by blob ID)."""
        if oid not in self._meta:
            self._meta[oid] = parse_json_object(self.blob_data(oid))
        return self._meta[oid]

    # -- revisions -----------------------------------------------------------------------

    def is_worktree(self, rev: str | None) -> bool:
        return rev is None or rev in _WORKTREE_NAMES

    def resolve_commit(self, rev: str) -> pygit2.Commit:
        """The commit ``rev`` names (anything ``git rev-parse`` takes: HEAD~2, a tag, a hash)."""
        if self.repo.head_is_unborn and rev.startswith("HEAD"):
            raise NotFoundError(
                f"{rev}: the repository has no commits yet", hint="commit the library first"
            )
        try:
            obj = self.repo.revparse_single(rev)
            commit = obj.peel(pygit2.Commit)
        except (KeyError, ValueError, pygit2.GitError, pygit2.InvalidSpecError):
            raise NotFoundError(f"unknown revision {rev!r}", hint="see `git log`") from None
        return commit

    def snapshot(self, rev: str | None) -> Snapshot:
        """A snapshot of ``rev``; ``None`` or ``WORKTREE`` is the working tree."""
        if self.is_worktree(rev):
            return WorkTreeSnapshot(self.root)
        assert rev is not None
        return CommitSnapshot(self, self.resolve_commit(rev))

    def snapshot_of(self, commit: pygit2.Commit) -> CommitSnapshot:
        return CommitSnapshot(self, commit)

    def resolve_range(self, spec: str) -> tuple[str, str]:
        """``A...B`` → (merge base of A and B, B); ``A..B`` → (A, B). Commit IDs come back."""
        if "..." in spec:
            a, b = spec.split("...", 1)
            ca, cb = self.resolve_commit(a or "HEAD"), self.resolve_commit(b or "HEAD")
            base = self.repo.merge_base(ca.id, cb.id)
            if base is None:
                raise NotFoundError(f"{spec}: {a} and {b} have no common ancestor")
            return str(base), str(cb.id)
        a, b = spec.split("..", 1)
        return str(self.resolve_commit(a or "HEAD").id), str(self.resolve_commit(b or "HEAD").id)

    def head(self) -> pygit2.Commit | None:
        if self.repo.head_is_unborn:
            return None
        return self.resolve_commit("HEAD")

    def walk(self, start: pygit2.Commit) -> Iterator[pygit2.Commit]:
        """Every commit reachable from ``start``, parents before children."""
        sort = pygit2.enums.SortMode.TOPOLOGICAL | pygit2.enums.SortMode.REVERSE
        yield from self.repo.walk(start.id, sort)

    def user_name(self) -> str | None:
        """``git config user.name`` (repository, global or system), if set."""
        try:
            value = self.repo.config["user.name"]
        except (KeyError, pygit2.GitError):
            return None
        return str(value).strip() or None

    # -- items ---------------------------------------------------------------------------

    def items(self, snap: Snapshot) -> dict[str, ItemRef]:
        """Content ID → item in ``snap`` (cached per ``library/<type>`` tree for commits)."""
        if not isinstance(snap, CommitSnapshot):
            return list_items(snap)
        out: dict[str, ItemRef] = {}
        for top in snap.subfolders(LIBRARY):
            tree = snap.tree(f"{LIBRARY}/{top}")
            if tree is None:
                continue
            key = str(tree.id)
            found = self._type_items.get(key)
            if found is None:
                found = {}
                self._collect(tree, top, found)
                self._type_items[key] = found
            for cid, ref in found.items():
                out.setdefault(cid, ref)
        return out

    def _collect(self, tree: pygit2.Tree, rel: str, out: dict[str, ItemRef]) -> None:
        meta_entry = None
        for entry in tree:
            if entry.name == METADATA and isinstance(entry, pygit2.Blob):
                meta_entry = entry
        if meta_entry is not None:
            meta = self.metadata(str(meta_entry.id))
            if meta is not None and isinstance(meta.get("id"), str):
                out.setdefault(meta["id"], ItemRef(meta["id"], rel, meta))
        for entry in tree:
            if isinstance(entry, pygit2.Tree):
                self._collect(entry, f"{rel}/{entry.name}", out)


def list_items(snap: Snapshot) -> dict[str, ItemRef]:
    """Content ID → item, found from every ``library/**/metadata.json`` in ``snap``."""
    out: dict[str, ItemRef] = {}
    for path in snap.find(LIBRARY, METADATA):
        if "/" not in path:
            continue
        rel = path.rsplit("/", 1)[0]
        meta = parse_json_object(snap.read(f"{LIBRARY}/{path}"))
        if meta is not None and isinstance(meta.get("id"), str):
            out.setdefault(meta["id"], ItemRef(meta["id"], rel, meta))
    return out
