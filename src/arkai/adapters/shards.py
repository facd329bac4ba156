"""Reading and writing ``index/shards/`` (see :mod:`arkai.model.shard` for the records).

Layout: ``index/shards/manifest.json`` and one ``shard-NNN.jsonl`` per shard, a condensed chunk
per line in canonical JSON, so unchanged shards are byte-identical from run to run. Writes are
atomic; reads name the file and line of anything malformed.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arkai.adapters.fs import (
    atomic_write_bytes,
    atomic_write_text,
    holds_bytes,
    read_repo_file,
    write_if_changed,
)
from arkai.adapters.itemcache import CACHE_DIR, read_checked, write_checked
from arkai.adapters.store import iter_jsonl, read_json_as
from arkai.core import canonjson
from arkai.core.canonjson import dumps_line
from arkai.core.hashing import digest
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
    return read_json_as(path, root, "not a shard manifest", ShardManifest.from_dict)


def write_manifest(root: Path, manifest: ShardManifest) -> None:
    path = shards_dir(root) / MANIFEST
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(manifest.to_dict(), indent=2, ensure_ascii=False) + "\n")


def manifest_digest(root: Path) -> str | None:
    """The digest of ``manifest.json``'s bytes, or None when there is none."""
    try:
        return digest((shards_dir(root) / MANIFEST).read_bytes())
    except OSError:
        return None


#: The last shard build's record (local, derived, git-ignored like the item cache beside it).
RECORD = CACHE_DIR / "shards.json"
RECORD_FORMAT = 1


@dataclass(frozen=True)
class ShardRecord:
    """What the last shard build saw: the digest of the manifest it left and, per item (content
    ID), the key of what the item's chunks were made from (the caller's digest of its files).
    While the manifest has that digest, an item with the same key has the chunks the shards
    hold for it, so only items whose key changed need reading (:mod:`arkai.ops.shards`)."""

    manifest: str
    keys: dict[str, str]


def read_record(root: Path) -> ShardRecord | None:
    """The record, or None when it is missing, damaged or edited (a header line holds the digest
    of the rest; the shards are then built from every item's chunks)."""
    body = read_checked(root / RECORD)
    if body is None:
        return None
    try:
        doc = json.loads(body)
        keys = doc["keys"]
        if doc.get("format") != RECORD_FORMAT or not isinstance(keys, dict):
            return None
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in keys.items()):
            return None
        return ShardRecord(str(doc["manifest"]), keys)
    except (ValueError, TypeError, KeyError, AttributeError):
        return None


def write_record(root: Path, record: ShardRecord) -> None:
    body = {"format": RECORD_FORMAT, "keys": record.keys, "manifest": record.manifest}
    write_checked(root / RECORD, canonjson.dumps_line(body).encode("utf-8"))


def forget_record(root: Path) -> None:
    (root / RECORD).unlink(missing_ok=True)


def encode_shard(chunks: Iterable[CondensedChunk]) -> str:
    """A shard file's text: one canonical JSON line per chunk."""
    return "".join(dumps_line(c.to_dict()) for c in chunks)


def read_shard(root: Path, file: str) -> Iterator[CondensedChunk]:
    """The chunks of one shard file, in order."""
    path = shards_dir(root) / file
    data = read_repo_file(path, root)
    assert data is not None
    yield from iter_jsonl(data, path, "not a condensed chunk", CondensedChunk.from_dict)


def read_shard_objects(root: Path, file: str) -> list[dict[str, Any]]:
    """The lines of one shard file as JSON objects, in order (each with a string ``item``, an
    integer ``chunk`` and a string or null ``date``; the rest is not looked at)."""
    path = shards_dir(root) / file
    data = read_repo_file(path, root)
    assert data is not None
    return list(iter_jsonl(data, path, "not a condensed chunk", _chunk_object))


def _chunk_object(d: Any) -> dict[str, Any]:
    if not (
        isinstance(d, dict)
        and isinstance(d.get("item"), str)
        and type(d.get("chunk")) is int
        and isinstance(d.get("date"), str | None)
    ):
        raise ValueError("expected an object with an item, a chunk number and a date")
    return d


def write_shard_text(root: Path, file: str, text: str) -> bool:
    """Write an encoded shard (:func:`encode_shard`) only when its bytes change, so an
    unchanged shard keeps its bytes and its mtime."""
    written = stage_shard_text(root, file, text)
    if written:
        commit_staged(root, [file])
    return written


#: Where a shard build keeps the shard files it makes until all of them are made.
STAGING_DIR = CACHE_DIR / "shards-next"


def stage_shard_text(root: Path, file: str, text: str) -> bool:
    """Put a shard's new bytes (:func:`encode_shard`) aside (atomically, under
    :data:`STAGING_DIR`) until :func:`commit_staged` moves them into place. False, and nothing
    put aside, when the shard file already holds exactly these bytes: an unchanged shard keeps
    its bytes and its mtime. A build reads the old shards one at a time while it makes the new
    ones, so no old file may be replaced before the last new one is made."""
    data = text.encode("utf-8")
    if holds_bytes(shards_dir(root) / file, data):
        return False
    atomic_write_bytes(root / STAGING_DIR / file, data)
    return True


def commit_staged(root: Path, files: Iterable[str]) -> None:
    """Move the staged shard files into place (each move atomic), then drop the staging folder."""
    target = shards_dir(root)
    target.mkdir(parents=True, exist_ok=True)
    for file in files:
        os.replace(root / STAGING_DIR / file, target / file)
    clear_staged(root)


def clear_staged(root: Path) -> None:
    """Drop whatever an earlier build left staged (it stopped before moving it into place)."""
    shutil.rmtree(root / STAGING_DIR, ignore_errors=True)


def remove_shard(root: Path, file: str) -> None:
    """Delete a shard file that the manifest no longer lists (missing is fine)."""
    (shards_dir(root) / file).unlink(missing_ok=True)


#: An item's condensed chunks: ``condensed/<type>/<Title (id)>/condensed.json`` (the
#: ``condense`` stage's per-item output; chunks without shard placement).
CONDENSED_FILE = "condensed.json"
CONDENSED_SCHEMA = 1


@dataclass(frozen=True, slots=True)
class CondensedFile:
    """One item's ``condensed.json``: the run's record plus the item's condensed chunks."""

    content_id: str
    key: str | None
    """The incremental key the chunks were made for (None for a failed item never done)."""
    status: str
    """``ok`` or ``failed``."""
    chunks: tuple[CondensedChunk, ...] = ()
    error: str | None = None
    provider: str | None = None
    model: str | None = None
    transcript_digest: str | None = None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "schema_version": CONDENSED_SCHEMA,
            "content_id": self.content_id,
            "key": self.key,
            "status": self.status,
            "provider": self.provider,
            "model": self.model,
            "transcript_digest": self.transcript_digest,
            "oversized": [c.chunk for c in self.chunks if c.oversized],
            "chunks": [c.to_dict() for c in self.chunks],
        }
        if self.error is not None:
            d["error"] = self.error
        return d


def read_condensed(path: Path, root: Path) -> CondensedFile | None:
    """An item's ``condensed.json``, or None when there is none; a malformed one is a
    LibraryError naming the file."""
    return read_json_as(path, root, "not a condensed-chunks file", _condensed)


def _condensed(d: Any) -> CondensedFile:
    if not isinstance(d, dict) or not isinstance(d.get("chunks"), list):
        raise ValueError("expected an object with a list of chunks")
    return CondensedFile(
        content_id=str(d["content_id"]),
        key=d.get("key"),
        status=str(d.get("status", "failed")),
        chunks=tuple(CondensedChunk.from_dict(c) for c in d["chunks"]),
        error=d.get("error"),
        provider=d.get("provider"),
        model=d.get("model"),
        transcript_digest=d.get("transcript_digest"),
    )


def write_condensed(path: Path, record: CondensedFile) -> bool:
    """Write ``condensed.json`` atomically, only when its bytes change."""
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_if_changed(path, canonjson.dumps(record.to_dict()).encode("utf-8"))
