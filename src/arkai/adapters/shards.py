"""Reading and writing ``index/shards/`` (see :mod:`arkai.model.shard` for the records).

Layout: ``index/shards/manifest.json`` and one ``shard-NNN.jsonl`` per shard, a condensed chunk
per line in canonical JSON, so unchanged shards are byte-identical from run to run. Writes are
atomic; reads name the file and line of anything malformed.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path

from arkai.adapters.fs import atomic_write_text, read_repo_file
from arkai.core.canonjson import dumps_line
from arkai.errors import LibraryError
from arkai.model.shard import CondensedChunk, ShardManifest

SHARDS_DIR = "shards"
MANIFEST = "manifest.json"


def shards_dir(root: Path) -> Path:
    return root / "index" / SHARDS_DIR


def shard_file_name(number: int) -> str:
    return f"shard-{number:03d}.jsonl"


def read_manifest(root: Path) -> ShardManifest | None:
    """The manifest, or None when no shards were built yet."""
    path = shards_dir(root) / MANIFEST
    data = read_repo_file(path, root, missing_ok=True)
    if data is None:
        return None
    try:
        return ShardManifest.from_dict(json.loads(data.decode("utf-8")))
    except (UnicodeDecodeError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise LibraryError(f"{path}: not a shard manifest ({exc})") from None


def write_manifest(root: Path, manifest: ShardManifest) -> None:
    path = shards_dir(root) / MANIFEST
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(manifest.to_dict(), indent=2, ensure_ascii=False) + "\n")


def encode_shard(chunks: Iterable[CondensedChunk]) -> str:
    """A shard file's text: one canonical JSON line per chunk."""
    return "".join(dumps_line(c.to_dict()) for c in chunks)


def read_shard(root: Path, file: str) -> Iterator[CondensedChunk]:
    """The chunks of one shard file, in order."""
    path = shards_dir(root) / file
    data = read_repo_file(path, root)
    assert data is not None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise LibraryError(f"{path}: not UTF-8 ({exc})") from None
    for n, raw in enumerate(text.splitlines(), 1):
        if not raw.strip():
            continue
        try:
            yield CondensedChunk.from_dict(json.loads(raw))
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise LibraryError(f"{path}:{n}: not a condensed chunk ({exc})") from None


def write_shard(root: Path, file: str, chunks: Iterable[CondensedChunk]) -> None:
    path = shards_dir(root) / file
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, encode_shard(chunks))
