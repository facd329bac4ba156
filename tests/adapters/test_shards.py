"""Shard files and manifest: round trip, byte-stable encoding, clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from arkai.adapters import shards
from arkai.errors import LibraryError
from arkai.model.shard import CondensedChunk, Finding, Message, ShardInfo, ShardManifest


def _chunk(n: int) -> CondensedChunk:
    return CondensedChunk(
        item="a" * 64,
        chunk=n,
        transcript="library/chat/T (x)/transcript.md",
        start=10 * n,
        end=10 * n + 9,
        tokens=3,
        condensed_tokens=2,
        summary=f"summary {n} — ünïcode",
        date=f"2025-01-0{n}",
        messages=(Message(msg=n, start=10 * n, end=10 * n + 9, line=n, role="user"),),
        findings=(
            Finding(
                kind="decision",
                text="use X",
                quote="we use X",
                detail="it is fast",
                span=(10 * n, 10 * n + 8),
                slice_sha256="sha256:" + "0" * 64,
                status="exact",
            ),
        ),
        shard="shard-001",
        number=n,
    )


def test_round_trip_and_stable_bytes(tmp_path: Path) -> None:
    chunks = [_chunk(1), _chunk(2)]
    shards.write_shard_text(tmp_path, "shard-001.jsonl", shards.encode_shard(chunks))
    first = (shards.shards_dir(tmp_path) / "shard-001.jsonl").read_bytes()
    back = list(shards.read_shard(tmp_path, "shard-001.jsonl"))
    assert back == chunks
    assert back[1].message_id(2) == "shard-001:chunk-2:msg-2"
    shards.write_shard_text(tmp_path, "shard-001.jsonl", shards.encode_shard(back))
    assert (shards.shards_dir(tmp_path) / "shard-001.jsonl").read_bytes() == first
    man = ShardManifest(
        shard_tokens=800_000,
        token_counter="chars/4",
        shards=(
            ShardInfo(
                "shard-001",
                "shard-001.jsonl",
                "2025-01-01",
                "2025-01-02",
                ("a" * 64,),
                2,
                6,
                "sha256:" + "1" * 64,
            ),
        ),
    )
    shards.write_manifest(tmp_path, man)
    assert shards.read_manifest(tmp_path) == man


def test_missing_manifest_is_none(tmp_path: Path) -> None:
    assert shards.read_manifest(tmp_path) is None


def test_malformed_line_names_file_and_line(tmp_path: Path) -> None:
    d = shards.shards_dir(tmp_path)
    d.mkdir(parents=True)
    (d / "shard-001.jsonl").write_text('{"item": "x"}\n')
    with pytest.raises(LibraryError, match=r"shard-001\.jsonl:1: not a condensed chunk"):
        list(shards.read_shard(tmp_path, "shard-001.jsonl"))
    (d / "manifest.json").write_bytes(b"\xff")
    with pytest.raises(LibraryError, match=r"manifest\.json: not valid JSON"):
        shards.read_manifest(tmp_path)
    (d / "manifest.json").write_text('{"shards": 3}')
    with pytest.raises(LibraryError, match=r"manifest\.json: not a shard manifest"):
        shards.read_manifest(tmp_path)
