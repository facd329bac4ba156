"""The knowledge repo's filesystem layout (DESIGN §2): where items, extractions and logs live."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arkai.adapters.fs import read_repo_file
from arkai.adapters.store import json_object, read_json_as
from arkai.errors import AmbiguousIdError, ArkaiError, LibraryError, NotFoundError

LIBRARY = "library"
EXTRACTED = "extracted"
CONDENSED = "condensed"
INDEX = "index"
METADATA = "metadata.json"
TRANSCRIPT = "transcript.md"
EVIDENCE = "evidence.jsonl"
ENTITIES = "entities.json"
EXTRACTION = "extraction.json"
REVIEW = "review.yaml"
MIN_PREFIX = 8


@dataclass(frozen=True, slots=True)
class Item:
    """One content item: its folder in ``library/`` and its parsed ``metadata.json``."""

    root: Path
    """The knowledge repo root."""
    path: Path
    """``library/<type>/<Title (source_id)>`` (absolute)."""
    metadata: dict[str, Any]
    """Parsed ``metadata.json``."""
    _rel: str | None = field(default=None, init=False, repr=False, compare=False)
    """:attr:`rel` as a string, worked out once: every stage asks each item for its folders
    (pathlib's ``relative_to`` and joins cost more than the ``lstat`` calls they feed)."""

    def __post_init__(self) -> None:
        # The same path relative_to gives, on the strings: a Path's string is normalised.
        top, full = os.fspath(self.root), os.fspath(self.path)
        lib = (top if top.endswith(os.sep) else top + os.sep) + LIBRARY + os.sep
        if full.startswith(lib) and len(full) > len(lib):
            object.__setattr__(self, "_rel", full[len(lib) :])

    @property
    def id(self) -> str:
        return str(self.metadata["id"])

    @property
    def title(self) -> str:
        return str(self.metadata.get("title", self.path.name))

    @property
    def rel(self) -> Path:
        """Path relative to ``library/`` (``<type>/<Title (id)>``)."""
        if self._rel is None:  # not below library/: relative_to's error
            return self.path.relative_to(self.root / LIBRARY)
        return Path(self._rel)

    @property
    def transcript(self) -> Path:
        return self.path / TRANSCRIPT

    def _mirror(self, tree: str) -> Path:
        if self._rel is None:
            return self.root / tree / self.rel
        return Path(os.path.join(self.root, tree, self._rel))

    @property
    def extracted(self) -> Path:
        """The mirrored folder under ``extracted/``."""
        return self._mirror(EXTRACTED)

    @property
    def condensed(self) -> Path:
        """The mirrored folder under ``condensed/`` (the ``condense`` stage's output)."""
        return self._mirror(CONDENSED)

    def read(self, name: str, *, missing_ok: bool = False) -> bytes | None:
        """A file of the item folder, read safely (regular files inside the repo only)."""
        return read_repo_file(self.path / name, self.root, missing_ok=missing_ok)

    def transcript_bytes(self) -> bytes:
        """``transcript.md`` (refused when it is a link or a special file; missing → error)."""
        data = self.read(TRANSCRIPT, missing_ok=True)
        if data is None:
            raise LibraryError(f"{self.transcript}: missing")
        return data


@dataclass(frozen=True, slots=True)
class ItemProblem:
    """An item folder that cannot be read (bad ``metadata.json``, a link, …): reported, skipped."""

    path: Path
    """The file at fault."""
    error: str

    def to_dict(self) -> dict[str, str]:
        return {"path": str(self.path), "error": self.error}


def find_root(start: Path | None = None) -> Path:
    """The knowledge repo containing ``start`` (or ``$ARKAI_REPO``, or the cwd).

    A knowledge repo is a folder with a ``library/`` folder or a ``dvc.yaml`` next to
    ``params.yaml``.
    """
    env = os.environ.get("ARKAI_REPO")
    here = (start or (Path(env) if env else Path.cwd())).resolve()
    for cand in (here, *here.parents):
        if (cand / LIBRARY).is_dir() or (
            (cand / "dvc.yaml").is_file() and (cand / "params.yaml").is_file()
        ):
            return cand
    raise LibraryError(
        f"{here}: not inside an arkai knowledge repo",
        hint="run `arkai init DIR` to create one, or pass --repo",
    )


def load_metadata(folder: Path, root: Path | None = None) -> dict[str, Any]:
    """``metadata.json`` of an item folder, read safely; :class:`LibraryError` names the file."""
    path = folder / METADATA
    obj = read_json_as(path, root or folder, "not an arkai metadata object", _metadata)
    if obj is None:
        raise LibraryError(f"{path}: missing")
    return obj


def _metadata(value: Any) -> dict[str, Any]:
    obj = json_object(value)
    if not isinstance(obj.get("id"), str) or not obj["id"]:
        raise ValueError("no 'id'")
    return obj


def _linked(path: Path) -> ItemProblem:
    """The problem of a symbolic link met where an item folder is looked for (not followed)."""
    return ItemProblem(
        path,
        f"{path}: is a symbolic link; arkai reads only regular files and folders inside the "
        "repo (not followed)",
    )


def _walk(lib: Path) -> tuple[list[Path], list[ItemProblem]]:
    """Folders under ``lib`` holding a ``metadata.json`` entry (sorted), never following links;
    a link met on the way is a problem (it is not followed, so its target is never read).

    Hidden folders (``.adding-*`` left by an interrupted ``arkai add``, ``.git``) are not items
    and are not entered; an item folder's subfolders are not searched.
    """
    stack = [os.fspath(lib)]
    found: list[str] = []
    problems: list[ItemProblem] = []
    while stack:
        folder = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError as exc:
            problems.append(
                ItemProblem(Path(folder), f"{folder}: cannot be listed ({exc.strerror})")
            )
            continue
        for entry in entries:
            if entry.name.startswith("."):
                continue
            if entry.is_symlink():
                problems.append(_linked(Path(entry.path)))
            elif entry.is_dir(follow_symlinks=False):
                # An entry named metadata.json (of any kind) makes the folder an item: one
                # lstat, not a listing of each of 10,000 item folders.
                if os.path.lexists(os.path.join(entry.path, METADATA)):
                    found.append(entry.path)
                else:
                    stack.append(entry.path)
    # Sorted as the paths are (part by part: "a/b" before "a-c"), not as their strings.
    found.sort(key=lambda f: f.split(os.sep))
    return [Path(f) for f in found], sorted(problems, key=lambda p: p.path)


def scan_items(root: Path) -> tuple[list[Item], list[ItemProblem]]:
    """Every readable item under ``library/`` (sorted by path), and every folder that could not
    be read as one — a malformed or linked ``metadata.json``, a linked folder — so callers
    report those, skip them and go on."""
    lib = root / LIBRARY
    items: list[Item] = []
    try:
        if not stat.S_ISDIR(os.lstat(lib).st_mode):
            return items, [ItemProblem(lib, f"{lib}: is not a folder")]
    except FileNotFoundError:
        return items, []
    folders, problems = _walk(lib)
    for folder in folders:
        try:
            items.append(Item(root=root, path=folder, metadata=load_metadata(folder, root)))
        except (ArkaiError, OSError) as exc:
            problems.append(ItemProblem(folder / METADATA, str(exc)))
    return items, problems


def load_items(root: Path, folders: Iterable[str]) -> tuple[list[Item], list[ItemProblem]]:
    """The items in these folders of ``library/`` (relative, ``/``-separated), read as
    :func:`scan_items` reads them (sorted by path) — reading nothing else: a folder that is
    gone or holds no ``metadata.json`` is no item, one reached through a link (not followed)
    or whose ``metadata.json`` cannot be read is a problem."""
    lib = root / LIBRARY
    items: list[Item] = []
    problems: list[ItemProblem] = []
    for rel in sorted(set(folders)):
        path, folder = lib, lib / rel
        try:
            for part in ("", *rel.split("/")):
                path = path / part if part else path
                if stat.S_ISLNK(os.lstat(path).st_mode):
                    problems.append(_linked(path))
                    break
            else:
                if os.path.lexists(folder / METADATA):
                    items.append(Item(root=root, path=folder, metadata=load_metadata(folder, root)))
        except FileNotFoundError:
            continue  # removed
        except (ArkaiError, OSError) as exc:
            problems.append(ItemProblem(folder / METADATA, str(exc)))
    return items, problems


def item_folders(root: Path) -> list[Path]:
    """The folders under ``library/`` that :func:`iter_items` reads as items (those holding a
    ``metadata.json`` entry, found as :func:`scan_items` finds them), sorted by path, none of
    their files read."""
    lib = root / LIBRARY
    try:
        if not stat.S_ISDIR(os.lstat(lib).st_mode):
            return []
    except FileNotFoundError:
        return []
    return _walk(lib)[0]


def item_at(root: Path, folder: Path) -> Item | None:
    """The item in one of :func:`item_folders`, or None when its metadata cannot be read (as
    :func:`iter_items` leaves it out; :func:`scan_items` reports it)."""
    try:
        return Item(root=root, path=folder, metadata=load_metadata(folder, root))
    except (ArkaiError, OSError):
        return None


def iter_items(root: Path) -> Iterator[Item]:
    """Every readable item folder under ``library/``, sorted by path. Folders that cannot be
    read are left out here; :func:`scan_items` reports them. Streamed: each item's metadata
    is read when it is reached, so a caller that keeps none holds one at a time."""
    for folder in item_folders(root):
        item = item_at(root, folder)
        if item is not None:
            yield item


def get_item(root: Path, ident: str) -> Item:
    """The item whose content ID (or ≥ 8-char prefix, or ``source_id``) is ``ident``."""
    ident = ident.strip()
    matches: list[Item] = []
    for item in iter_items(root):
        if item.id == ident or item.metadata.get("source_id") == ident:
            return item
        if len(ident) >= MIN_PREFIX and item.id.startswith(ident):
            matches.append(item)
    if len(matches) == 1:
        return matches[0]
    if matches:
        ids = ", ".join(m.id for m in matches[:5])
        raise AmbiguousIdError(f"ID prefix {ident!r} matches {len(matches)} items: {ids}")
    if len(ident) < MIN_PREFIX:
        raise NotFoundError(
            f"no item with ID {ident!r}", hint=f"ID prefixes need at least {MIN_PREFIX} characters"
        )
    raise NotFoundError(f"no item with ID {ident!r}", hint="`arkai library` lists the items")
