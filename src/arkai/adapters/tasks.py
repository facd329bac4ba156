"""The files behind tasks and goals: ``tasks/<id>.yaml`` and ``goals/<id>.yaml``.

One small YAML file per task or goal, so two people adding tasks on two branches never
conflict, and a person may edit any file by hand (keys arkai does not know are kept). Reads go
through :func:`arkai.adapters.fs.read_repo_file` (no links, no special files); writes are atomic.
A malformed file is an error that names the file and the problem.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import TypeVar

import yaml

from arkai.adapters.fs import atomic_write_text, parse_yaml, read_repo_file
from arkai.core.hashing import sha256_hex
from arkai.errors import AmbiguousIdError, InvalidInputError, LibraryError, NotFoundError
from arkai.model.task import Goal, Task, TaskFieldError

TASKS_DIR = "tasks"
GOALS_DIR = "goals"
ID_LEN = 12
MIN_PREFIX = 8
MAX_FILE_BYTES = 256 * 1024

T = TypeVar("T", Task, Goal)


def new_id(kind: str, title: str, created_at: str, taken: set[str]) -> str:
    """A 12-hex ID from the kind, title and creation time (unique among ``taken``)."""
    salt = 0
    while True:
        ident = sha256_hex(f"{kind}\0{title}\0{created_at}\0{salt}".encode())[:ID_LEN]
        if ident not in taken:
            return ident
        salt += 1


def _folder(root: Path, cls: type[Task] | type[Goal]) -> Path:
    return root / (TASKS_DIR if cls is Task else GOALS_DIR)


def _parse(path: Path, root: Path, cls: type[T]) -> T:
    data = read_repo_file(path, root)
    assert data is not None
    if len(data) > MAX_FILE_BYTES:
        raise LibraryError(f"{path}: larger than {MAX_FILE_BYTES} bytes")
    raw = parse_yaml(data, path)
    if not isinstance(raw, dict):
        raise LibraryError(f"{path}: expected a mapping of fields")
    try:
        obj = cls.from_dict(raw)
    except TaskFieldError as exc:
        raise LibraryError(f"{path}: {exc}") from None
    if obj.id != path.stem:
        raise LibraryError(f"{path}: its 'id' ({obj.id!r}) is not its file name ({path.stem!r})")
    return obj


def load_all(root: Path, cls: type[T]) -> list[T]:
    """Every task (or goal), oldest first; the first malformed file raises, naming it."""
    folder = _folder(root, cls)
    try:
        if not stat.S_ISDIR(os.lstat(folder).st_mode):
            raise LibraryError(f"{folder}: is not a folder")
    except FileNotFoundError:
        return []
    out = [
        _parse(p, root, cls)
        for p in sorted(folder.iterdir())
        if p.suffix == ".yaml" and not p.name.startswith(".")
    ]
    return sorted(out, key=lambda o: (o.created_at or "", o.id))


def find(root: Path, cls: type[T], ident: str) -> T:
    """The task (goal) whose ID is ``ident`` or starts with it (≥ 8 characters)."""
    ident = ident.strip().lower()
    noun = "task" if cls is Task else "goal"
    if len(ident) < MIN_PREFIX:
        raise InvalidInputError(f"{noun} ID {ident!r} is too short: give at least {MIN_PREFIX}")
    found = [o for o in load_all(root, cls) if o.id.startswith(ident)]
    if len(found) == 1:
        return found[0]
    if found:
        raise AmbiguousIdError(f"{noun} ID prefix {ident!r} matches {len(found)} {noun}s")
    raise NotFoundError(f"no {noun} with ID {ident!r}", hint=f"list them with `arkai {noun} list`")


def save(root: Path, obj: Task | Goal) -> Path:
    """Create or replace the object's file (atomically)."""
    folder = _folder(root, type(obj))
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{obj.id}.yaml"
    text = yaml.safe_dump(obj.to_dict(), sort_keys=False, allow_unicode=True, width=100)
    atomic_write_text(path, text)
    return path
