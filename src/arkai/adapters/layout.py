"""The knowledge repo's filesystem layout (DESIGN §2): where items, extractions and logs live."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arkai.errors import AmbiguousIdError, LibraryError, NotFoundError

LIBRARY = "library"
EXTRACTED = "extracted"
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

    @property
    def id(self) -> str:
        return str(self.metadata["id"])

    @property
    def title(self) -> str:
        return str(self.metadata.get("title", self.path.name))

    @property
    def rel(self) -> Path:
        """Path relative to ``library/`` (``<type>/<Title (id)>``)."""
        return self.path.relative_to(self.root / LIBRARY)

    @property
    def transcript(self) -> Path:
        return self.path / TRANSCRIPT

    @property
    def extracted(self) -> Path:
        """The mirrored folder under ``extracted/``."""
        return self.root / EXTRACTED / self.rel


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


def load_metadata(folder: Path) -> dict[str, Any]:
    path = folder / METADATA
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise LibraryError(f"{path}: missing") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise LibraryError(f"{path}: not valid JSON ({exc})") from None
    except RecursionError:
        raise LibraryError(f"{path}: not valid JSON (nested too deeply)") from None
    if not isinstance(data, dict) or "id" not in data:
        raise LibraryError(f"{path}: not an arkai metadata object (no 'id')")
    return data


def iter_items(root: Path) -> Iterator[Item]:
    """Every item folder (one holding ``metadata.json``) under ``library/``, sorted by path."""
    lib = root / LIBRARY
    if not lib.is_dir():
        return
    for meta in sorted(lib.rglob(METADATA)):
        yield Item(root=root, path=meta.parent, metadata=load_metadata(meta.parent))


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
