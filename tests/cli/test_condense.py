"""``arkai condense``: chunks condensed with byte-exact quotes, incremental per item, shards,
failures recorded, forged quotes caught by ``arkai validate``, topics over condensed chunks."""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
from pathlib import Path
from typing import Any

import yaml

from arkai.core.hashing import digest
from tests.adapters.fake_llm import FakeLLM, fake_llm_fixture  # noqa: F401
from tests.conftest import ROOT, SAMPLES, Runner

HOOK = ROOT / "tests" / "fixtures" / "providers" / "condense_hook.py"


def claude_export(path: Path, chats: list[tuple[str, str, list[str]]]) -> Path:
    """A Claude ``conversations.json`` with one conversation per (uuid, date, messages)."""
    convs = []
    for n, (uid, date, texts) in enumerate(chats):
        msgs = [{"uuid": f"{uid}-{i}", "sender": "human" if i % 2 == 0 else "assistant",
                 "text": t, "created_at": f"{date}T10:{i:02d}:00Z"}
                for i, t in enumerate(texts)]  # fmt: skip
        convs.append({"uuid": uid, "name": f"Chat {n}", "created_at": f"{date}T10:00:00Z",
                      "updated_at": f"{date}T11:00:00Z", "chat_messages": msgs})  # fmt: skip
    path.write_text(json.dumps(convs), encoding="utf-8")
    return path


DECIDING = [
    "How should we store the sensor readings?",
    "We decided to use SQLite because it needs no server. Turns out the WAL mode is faster.",
    "Sounds good. Let's go with SQLite for the hive sensors then.",
    "Here is how to set it up:\n\n1. Install sqlite3.\n2. Create the readings table.\n"
    "3. Enable WAL mode.",
]
OTHER = ["What is the best way to cool a hive?", "Shade boards help. We'll use shade boards."]


def set_params(kr: Path, **sections: dict[str, Any]) -> None:
    params = yaml.safe_load((kr / "params.yaml").read_text())
    for key, value in sections.items():
        params.setdefault(key, {}).update(value)
    (kr / "params.yaml").write_text(yaml.safe_dump(params))


def add_chats(kr: Path, arkai: Runner, tmp_path: Path) -> None:
    export = claude_export(tmp_path / "conversations.json", [
        ("aaaaaaaa-0000-4000-8000-000000000001", "2025-03-01", DECIDING * 3),
        ("aaaaaaaa-0000-4000-8000-000000000002", "2024-07-01", OTHER),
    ])  # fmt: skip
    code, _, err = arkai("--repo", kr, "add", export, SAMPLES / "beekeeping-talk.vtt")
    assert code == 0, err


def condensed_files(kr: Path) -> dict[str, dict[str, Any]]:
    return {str(p.relative_to(kr)): json.loads(p.read_text())
            for p in sorted((kr / "condensed").rglob("condensed.json"))}  # fmt: skip


def test_condense_chunks_resolves_quotes_is_incremental_and_validates(
    kr: Path, arkai: Runner, tmp_path: Path
) -> None:
    set_params(kr, condense={"chunk_tokens": 120, "shard_tokens": 1500})
    add_chats(kr, arkai, tmp_path)
    code, out, err = arkai("--repo", kr, "condense", "--json")
    assert code == 0, err
    summary = json.loads(out)
    assert summary["items"] == 3 and summary["condensed"] == 3 and summary["failed"] == {}
    files = condensed_files(kr)
    assert len(files) == 3
    long_chat = next(f for f in files.values() if len(f["chunks"]) > 1 and "chats" in
                     f["chunks"][0]["transcript"])  # fmt: skip
    transcript = (kr / long_chat["chunks"][0]["transcript"]).read_bytes()
    kinds = set()
    for chunk in long_chat["chunks"]:
        start, end = chunk["utf8_byte_offset"]
        assert transcript[start:].startswith(b"### ") or chunk["chunk"] == 1
        assert chunk["tokens"] <= 120 or chunk.get("oversized")
        for f in chunk["findings"]:
            kinds.add(f["kind"])
            assert f["status"] in ("resolved", "ambiguous")
            a, b = f["utf8_byte_offset"]
            assert transcript[a:b].decode() == f["quote"]
            assert start <= a and b <= end  # quoted from its own chunk
            assert f["slice_sha256"] == digest(transcript[a:b])
    assert kinds == {"decision", "discovery", "procedure"}
    assert summary["shards"]["shards"] >= 2
    code, out, _ = arkai("--repo", kr, "validate", "--json")
    report = json.loads(out)  # (fails: nothing was extracted) but every condensed quote holds
    assert [p for i in report["items"] for p in i["problems"]] == []
    assert sum(i["files"]["condensed"]["valid"] for i in report["items"]) > 5

    # Unchanged: nothing is redone, no byte moves.
    before = {p: (kr / p).read_bytes() for p in files}
    shard_bytes = {p.name: p.read_bytes() for p in (kr / "index" / "shards").iterdir()}
    code, out, _ = arkai("--repo", kr, "condense", "--json")
    again = json.loads(out)
    assert code == 0 and again["condensed"] == 0 and again["skipped"] == 3
    assert again["calls"] == 0 and again["shards"]["written"] == []
    assert {p: (kr / p).read_bytes() for p in files} == before
    assert {p.name: p.read_bytes() for p in (kr / "index" / "shards").iterdir()} == shard_bytes

    # A new item (dated before all others): only the newest shard changes.
    old_manifest = json.loads((kr / "index" / "shards" / "manifest.json").read_text())
    newest = old_manifest["shards"][-1]["file"]
    late = claude_export(tmp_path / "late.json", [
        ("aaaaaaaa-0000-4000-8000-000000000009", "2019-01-01", ["An old chat.", "Indeed old."]),
    ])  # fmt: skip
    assert arkai("--repo", kr, "add", late)[0] == 0
    code, out, _ = arkai("--repo", kr, "condense", "--json")
    assert code == 0 and json.loads(out)["condensed"] == 1
    now = {p.name: p.read_bytes() for p in (kr / "index" / "shards").glob("shard-*.jsonl")}
    changed = {n for n, b in shard_bytes.items() if n.startswith("shard-") and now.get(n) != b}
    assert changed == {newest}  # every older shard is byte-identical
    files = condensed_files(kr)
    before = {p: (kr / p).read_bytes() for p in files}

    # One transcript edited: only that item is condensed again.
    vtt_item = next(p for p in files if "Beekeeping" in p)
    transcript_path = kr / files[vtt_item]["chunks"][0]["transcript"]
    transcript_path.write_bytes(transcript_path.read_bytes() + b"[00:20:00] We decided to stop.\n")
    code, out, _ = arkai("--repo", kr, "condense", "--json")
    third = json.loads(out)
    assert code == 0 and third["condensed"] == 1 and third["skipped"] == 3
    assert {p: (kr / p).read_bytes() for p in files if p != vtt_item} == {
        p: b for p, b in before.items() if p != vtt_item
    }

    # One item removed: its condensed folder goes, and so do its chunks from the shards.
    gone = next(p for p in files if "Chat 1" in p)
    shutil.rmtree(kr / "library" / Path(gone).parent.relative_to("condensed"))
    code, out, _ = arkai("--repo", kr, "condense", "--json")
    fourth = json.loads(out)
    assert code == 0 and fourth["removed"] == 1 and not (kr / gone).exists()
    manifest = json.loads((kr / "index" / "shards" / "manifest.json").read_text())
    assert files[gone]["content_id"] not in {i for s in manifest["shards"] for i in s["items"]}


def test_a_forged_condensed_quote_fails_validation(kr: Path, arkai: Runner, tmp_path: Path) -> None:
    add_chats(kr, arkai, tmp_path)
    assert arkai("--repo", kr, "condense")[0] == 0
    path, doc = next((p, d) for p, d in condensed_files(kr).items()
                     if any(c["findings"] for c in d["chunks"]))  # fmt: skip
    finding = next(f for c in doc["chunks"] for f in c["findings"])
    finding["quote"] = finding["quote"].replace(finding["quote"].split()[0], "Nobody", 1)
    (kr / path).write_text(json.dumps(doc))
    code, out, _ = arkai("--repo", kr, "validate", "--json")
    assert code == 1
    problems = [p for i in json.loads(out)["items"] for p in i["problems"]]
    assert {p["file"] for p in problems} == {path}
    assert {p["kind"] for p in problems} == {"invalid"}
    assert any("not the quote" in p["problem"] for p in problems)
    assert all(p["record"].startswith("chunk 1 ") for p in problems)


def test_oversized_messages_are_reported(kr: Path, arkai: Runner, tmp_path: Path) -> None:
    set_params(kr, condense={"chunk_tokens": 20})
    export = claude_export(tmp_path / "c.json", [
        ("aaaaaaaa-0000-4000-8000-000000000003", "2025-01-01", ["hi", "word " * 200, "ok"]),
    ])  # fmt: skip
    assert arkai("--repo", kr, "add", export)[0] == 0
    code, out, _ = arkai("--repo", kr, "condense", "--json")
    summary = json.loads(out)
    assert code == 0 and len(summary["oversized"]) == 1
    assert summary["oversized"][0]["chunk"] == 2 and summary["oversized"][0]["tokens"] > 200
    code, out, _ = arkai("--repo", kr, "condense", "--force")
    assert "oversized: item" in out and "chunk 2" in out
    logged = [json.loads(line) for p in (kr / ".arkai" / "runs").rglob("events.jsonl")
              for line in p.read_text().splitlines()]  # fmt: skip
    assert any(e["type"] == "ChunkOversized" and e["chunk"] == 2 for e in logged)
    (doc,) = condensed_files(kr).values()
    assert doc["oversized"] == [2] and doc["chunks"][1]["oversized"] is True


def test_broken_llm_output_is_recorded_and_the_others_go_on(
    kr: Path, arkai: Runner, tmp_path: Path
) -> None:
    set_params(kr, extract={"provider": "command", "retries": 0},
               providers={"command": {"command": [sys.executable, str(HOOK)]}})  # fmt: skip
    export = claude_export(tmp_path / "c.json", [
        ("aaaaaaaa-0000-4000-8000-000000000004", "2025-01-01", ["Fine question", "Fine answer"]),
        ("aaaaaaaa-0000-4000-8000-000000000005", "2025-01-02", ["BROKEN chat", "reply"]),
    ])  # fmt: skip
    assert arkai("--repo", kr, "add", export)[0] == 0
    code, _, err = arkai("--repo", kr, "condense")
    assert code == 3 and "condense failed for 1 of 2 items" in err
    docs = {d["status"]: d for d in condensed_files(kr).values()}
    assert set(docs) == {"ok", "failed"} and docs["failed"]["error"]
    (chunk,) = docs["ok"]["chunks"]
    decision, discovery = chunk["findings"]
    assert decision["status"] == "resolved" and decision["quote"] == "Fine question"
    assert discovery["status"] == "unresolved" and "utf8_byte_offset" not in discovery
    # A transcript that is not UTF-8 fails its item with a message naming the file.
    bad = kr / docs["ok"]["chunks"][0]["transcript"]
    bad.write_bytes(bad.read_bytes() + b"\xff\xfe broken\n")
    code, _, err = arkai("--repo", kr, "condense")
    assert code == 3 and f"{bad}: not valid UTF-8" in err.replace("\n", "")
    (still,) = [
        d for d in condensed_files(kr).values() if d["content_id"] == docs["ok"]["content_id"]
    ]
    assert still["status"] == "failed" and still["chunks"] == docs["ok"]["chunks"]  # kept
    # The failed item is redone by the next run (and fails again); the good one is not.
    assert arkai("--repo", kr, "condense", "--json")[0] == 3
    # An item folder that cannot be read is named, and the shards are left as they were.
    manifest = kr / "index" / "shards" / "manifest.json"
    shards_before = manifest.read_bytes()
    meta = bad.parent / "metadata.json"
    meta.write_text("{not json")
    code, _, err = arkai("--repo", kr, "condense")
    assert code == 3 and f"{meta}: not valid JSON" in err.replace("\n", "")
    assert "shards were left as they were" in err.replace("\n", "")
    assert manifest.read_bytes() == shards_before


def test_topics_list_condensed_chunk_numbers(kr: Path, arkai: Runner, tmp_path: Path) -> None:
    set_params(kr, condense={"chunk_tokens": 120}, index={"embedder": "none"})
    add_chats(kr, arkai, tmp_path)
    assert arkai("--repo", kr, "condense")[0] == 0
    assert arkai("--repo", kr, "reindex", "--quiet")[0] == 0
    topics = json.loads((kr / "index" / "topics.json").read_text())["topics"]
    entries = [e for t in topics.values() for e in t["items"] if e.get("condensed_chunks")]
    assert entries and all(c >= 1 for e in entries for c in e["condensed_chunks"])
    code, out, _ = arkai("--repo", kr, "topics", "sqlite", "--json")
    assert code == 0
    hit = json.loads(out)["results"][0]
    assert len(hit["condensed_chunks"]) > 1  # the long chat mentions SQLite in several chunks
    code, out, _ = arkai("--repo", kr, "topics", "sqlite")
    assert "condensed chunks: [" in out
    # The index stage owns index/shards/ under dvc repro: reindex builds them too.
    manifest = json.loads((kr / "index" / "shards" / "manifest.json").read_text())
    shard = kr / "index" / "shards" / manifest["shards"][0]["file"]
    assert (
        manifest["shards"][0]["digest"]
        == "sha256:" + hashlib.sha256(shard.read_bytes()).hexdigest()
    )


def test_reanchor_repairs_condensed_quotes_after_an_edit(
    kr: Path, arkai: Runner, tmp_path: Path
) -> None:
    add_chats(kr, arkai, tmp_path)
    assert arkai("--repo", kr, "condense")[0] == 0
    path = next(p for p, d in condensed_files(kr).items() if "Beekeeping" in p)
    doc = json.loads((kr / path).read_text())
    transcript = kr / doc["chunks"][0]["transcript"]
    transcript.write_bytes(b"[00:00:00] (Intro music.)\n" + transcript.read_bytes())

    def condensed_problems() -> list[dict[str, Any]]:
        _, out, _ = arkai("--repo", kr, "validate", "--json")
        return [p for i in json.loads(out)["items"] for p in i["problems"]
                if p["file"] == path]  # fmt: skip

    assert condensed_problems() and all(p["kind"] == "stale" for p in condensed_problems())
    code, out, err = arkai("--repo", kr, "evidence", "reanchor", "--all", "--json")
    assert code == 0, err
    (result,) = [r for r in json.loads(out)["items"] if r["content_id"] == doc["content_id"]]
    assert result["condensed_reanchored"] > 0
    assert condensed_problems() == []


def test_openai_runs_the_pattern_over_http_per_chunk(
    kr: Path, arkai: Runner, tmp_path: Path, fake_llm: FakeLLM
) -> None:
    """A real OpenAI-compatible server on 127.0.0.1: one call per chunk, cached, and a chunk
    whose answer is cut off fails only its item."""
    set_params(kr, condense={"chunk_tokens": 120},
               extract={"provider": "openai", "retries": 0, "timeout_s": 5, "backoff_s": 0},
               providers={"openai": {"base_url": fake_llm.base_url, "model": "fake-model",
                                     "api_key_env": "ARKAI_TEST_NO_KEY"}})  # fmt: skip
    export = claude_export(tmp_path / "c.json", [
        ("aaaaaaaa-0000-4000-8000-000000000006", "2025-03-01", DECIDING * 2),
        ("aaaaaaaa-0000-4000-8000-000000000007", "2025-03-02",
         ["Cut this answer off please.", "It stops here. Nothing more to add."]),
    ])  # fmt: skip
    assert arkai("--repo", kr, "add", export)[0] == 0
    fake_llm.set_mode("malformed", when="Cut this answer off")
    code, out, err = arkai("--repo", kr, "condense", "--json")
    assert code == 3 and "1 of 2 items" in err
    docs = {d["status"]: d for d in condensed_files(kr).values()}
    good = docs["ok"]["chunks"]
    assert len(good) > 1
    assert {r.pattern for r in fake_llm.chat_requests} == {"condense_chat"}
    calls = len(fake_llm.chat_requests)
    assert calls == len(good) + 1
    findings = [f for c in good for f in c["findings"]]
    assert findings and all(f["status"] in ("resolved", "ambiguous") for f in findings)
    # The good item is not asked again; the failed one is retried and now answered.
    fake_llm.reset()
    code, out, _ = arkai("--repo", kr, "condense", "--json")
    assert code == 0 and json.loads(out)["condensed"] == 1
    assert len(fake_llm.chat_requests) == 1


def test_the_index_reads_only_changed_items_for_the_shards(
    kr: Path, arkai: Runner, tmp_path: Path
) -> None:
    """The index stage's shard step reads the items whose key changed since its last build
    (ops/shards.py update_shards) and leaves what a build from every item leaves."""
    from arkai.ops import Repo
    from arkai.ops.shards import build_shards, library_chunks

    set_params(kr, condense={"chunk_tokens": 120, "shard_tokens": 1500},
               index={"embedder": "none"})  # fmt: skip
    add_chats(kr, arkai, tmp_path)
    assert arkai("--repo", kr, "condense", "--no-shards")[0] == 0

    def reindex() -> dict[str, Any]:
        code, out, err = arkai("--repo", kr, "reindex", "--json")
        assert code == 0, err
        return dict(json.loads(out)["shards"])

    first = reindex()
    assert first["items_read"] == 3 and first["shards"] >= 2
    again = reindex()
    assert again["items_read"] == 0 and again["written"] == []
    # A new item: only it is read; the shards are those a build from every item makes.
    shards = kr / "index" / "shards"
    shutil.copytree(shards, tmp_path / "ref" / "index" / "shards")
    late = claude_export(tmp_path / "late.json", [
        ("aaaaaaaa-0000-4000-8000-000000000009", "2019-01-01", ["An old chat.", "Indeed old."]),
    ])  # fmt: skip
    assert arkai("--repo", kr, "add", late)[0] == 0
    assert arkai("--repo", kr, "condense", "--no-shards")[0] == 0
    added = reindex()
    assert added["items_read"] == 1 and added["written"]
    build_shards(tmp_path / "ref", library_chunks(Repo.at(kr)), shard_tokens=1500)
    assert {p.name: p.read_bytes() for p in (tmp_path / "ref/index/shards").iterdir()} == {
        p.name: p.read_bytes() for p in shards.iterdir()
    }
    # `arkai condense` builds the shards without the item keys: the next index build reads
    # every item once, then only changed ones again.
    assert arkai("--repo", kr, "condense", "--force")[0] == 0
    assert reindex()["items_read"] == 4
    assert reindex()["items_read"] == 0


def test_a_forged_shard_record_is_repaired_by_a_full_reindex(
    kr: Path, arkai: Runner, tmp_path: Path
) -> None:
    """The shard record is a local cache like the item cache: forged with a digest recomputed
    to match stale shards it can hide an item from the next build; `arkai reindex --full`
    trusts no record."""
    from arkai.adapters.shards import (
        ShardRecord,
        manifest_digest,
        read_manifest,
        read_record,
        write_record,
    )
    from arkai.ops import Repo
    from arkai.ops.shards import build_shards, library_chunks

    set_params(kr, condense={"chunk_tokens": 120, "shard_tokens": 1500},
               index={"embedder": "none"})  # fmt: skip
    add_chats(kr, arkai, tmp_path)
    assert arkai("--repo", kr, "condense", "--no-shards")[0] == 0
    assert arkai("--repo", kr, "reindex")[0] == 0
    first = read_record(kr)
    assert first is not None
    late = claude_export(tmp_path / "late.json", [
        ("aaaaaaaa-0000-4000-8000-000000000009", "2019-01-01", ["An old chat.", "Indeed old."]),
    ])  # fmt: skip
    assert arkai("--repo", kr, "add", late)[0] == 0
    assert arkai("--repo", kr, "condense", "--no-shards")[0] == 0
    assert arkai("--repo", kr, "reindex")[0] == 0
    record = read_record(kr)
    assert record is not None
    (new,) = record.keys.keys() - first.keys.keys()

    def placed() -> set[str]:
        m = read_manifest(kr)
        assert m is not None
        return {i for info in m.shards for i in info.items}

    assert new in placed()
    # Forged: shards without the new item, and a record whose digest matches them.
    shutil.rmtree(kr / "index" / "shards")
    old_chunks = [c for c in library_chunks(Repo.at(kr)) if c.item != new]
    build_shards(kr, old_chunks, shard_tokens=1500)
    made = manifest_digest(kr)
    assert made is not None
    write_record(kr, ShardRecord(made, record.keys))
    code, out, _ = arkai("--repo", kr, "reindex", "--json")
    assert code == 0 and json.loads(out)["shards"]["items_read"] == 0
    assert new not in placed()  # the forged record hid the new item
    code, out, _ = arkai("--repo", kr, "reindex", "--full", "--json")
    assert code == 0 and json.loads(out)["shards"]["items_read"] == 4
    assert new in placed()
