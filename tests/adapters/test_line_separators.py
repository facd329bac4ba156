"""JSON Lines and manifests end lines at ``\\n`` only: canonical JSON keeps U+2028, U+2029 and
U+0085 unescaped inside strings (they come from LLM output and file names, not only from
transcripts, which are normalised), and ``str.splitlines`` would cut a line there."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from arkai.adapters import events, manifest, shards
from arkai.adapters.store import read_evidence, write_evidence
from arkai.model.evidence import EvidenceLine, Resolution
from tests.adapters.test_shards import _chunk

ODD = "rises\u2028sharply\u2029in July\x85when\x1cthe colony grows"


def test_evidence_with_a_line_separator_in_a_claim_reads_back(tmp_path: Path) -> None:
    unresolved = Resolution("unresolved", "none", 0, None, "no_match")
    line = EvidenceLine(id="a" * 16, content_id="b" * 16, claim=f"The temperature {ODD}.",
                        quote="late July", quote_sha256="sha256:" + "0" * 64,
                        resolution=unresolved, span=None, confidence=0.5, extractor="test",
                        ts="2026-11-24T00:00:00Z")  # fmt: skip
    path = tmp_path / "evidence.jsonl"
    write_evidence(path, [line])
    assert "\u2028".encode() in path.read_bytes()  # written as it is, not escaped
    (back,) = read_evidence(path)
    assert back.claim == line.claim


def test_a_shard_line_with_a_line_separator_reads_back(tmp_path: Path) -> None:
    chunk = replace(_chunk(1), summary=ODD)
    text = shards.encode_shard([chunk])
    assert shards.write_shard_text(tmp_path, "shard-001.jsonl", text)
    assert list(shards.read_shard(tmp_path, "shard-001.jsonl")) == [chunk]
    (obj,) = shards.read_shard_objects(tmp_path, "shard-001.jsonl")
    assert obj["summary"] == ODD


def test_an_event_with_a_line_separator_reads_back(tmp_path: Path) -> None:
    with events.run(tmp_path, "test") as log:
        log.emit("Noted", text=ODD)
    (path,) = (tmp_path / ".arkai" / "runs").rglob("events.jsonl")
    assert [e["text"] for e in events.read_events(path) if e["type"] == "Noted"] == [ODD]


def test_a_manifest_names_a_file_with_a_line_separator(tmp_path: Path) -> None:
    name = "odd\u2028name\x85.md"
    try:
        (tmp_path / "library").mkdir()
        (tmp_path / "library" / name).write_text("x")
    except OSError:
        pytest.skip("the file system refuses the name")
    manifest.write(tmp_path, "library", manifest.PATHS["library"])
    entries = manifest.read(tmp_path / manifest.PATHS["library"])
    assert [e.path for e in entries] == [name]
    assert manifest.check(tmp_path, "library", manifest.PATHS["library"]).clean
