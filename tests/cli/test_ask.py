"""``arkai ask`` with the builtin provider: byte-resolved citations, shards or the implicit
shard, "no evidence" (exit 5), --save for review, and the rounds logged as events."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from arkai.adapters.events import list_runs, read_events
from arkai.adapters.repo import Repo
from arkai.adapters.shards import encode_shard, shard_file_name, write_manifest, write_shard_text
from arkai.core.document import Document
from arkai.core.hashing import digest
from arkai.core.tokens import count_tokens
from arkai.model.shard import CondensedChunk, Message, ShardInfo, ShardManifest
from tests.conftest import SAMPLES, Runner

QUESTION = "how did the firmware update change the hive temperature readings"


@pytest.fixture
def lib(kr: Path, arkai: Runner) -> Path:
    files = [SAMPLES / "beekeeping-talk.vtt", SAMPLES / "field-notes-on-reproducibility.txt"]
    code, _, err = arkai("--repo", kr, "add", *files)
    assert code == 0, err
    return kr


def _check_receipts(root: Path, record: dict) -> None:
    """Every cited match of the answer is a verified byte span whose slice is its quote."""
    matches = {m["match_id"]: m for s in record["shards"] for m in s["matches"]}
    assert record["claims"]
    for verdict in record["verdicts"]:
        assert verdict["verdict"] == "grounded" and verdict["evidence"]
        for mid in verdict["evidence"]:
            m = matches[mid]
            assert m["status"] in ("resolved", "ambiguous")
            start, end = m["utf8_byte_offset"]
            data = (root / m["transcript"]).read_bytes()
            assert data[start:end] == m["quote"].encode("utf-8")
            assert m["slice_sha256"] == digest(data[start:end])
            assert data[:start].count(b"\n") + 1 == m["line"]


def test_ask_implicit_shard_cites_resolved_bytes_and_links_the_site_line(
    lib: Path, arkai: Runner
) -> None:
    code, out, err = arkai("--repo", lib, "ask", QUESTION, "--json")
    assert code == 0, err
    record = json.loads(out)
    assert record["question"] == QUESTION and record["agreement"] is True
    assert record["scope"]["implicit"] is True and record["scope"]["shards"] == ["implicit"]
    (shard,) = record["shards"]
    assert shard["coverage"] == {"method": "full_scan", "chunks_examined": 2,
                                 "chunks_with_matches": 2}  # fmt: skip
    assert all(m["match_id"].startswith("item:") for m in shard["matches"])
    _check_receipts(lib, record)
    assert any("firmware update" in c["text"] for c in record["claims"])
    # Markdown: numbered citations linking to the transcript line with a text fragment.
    code, md, _ = arkai("--repo", lib, "ask", QUESTION)
    assert code == 0
    first = next(line for line in md.splitlines() if line.startswith("1. ["))
    m0 = next(m for m in shard["matches"] if m["match_id"] in first)
    assert f"site/transcripts/{m0['item']}/index.html#L{m0['line']}:~:text=" in first
    assert f"{m0['transcript']}:{m0['line']} [" in first
    assert "- " in md and "[1]" in md.split("## Citations")[0]
    # Every round is an event of the run.
    events = read_events(lib / ".arkai" / "runs" / record["run_id"] / "events.jsonl")
    rounds = [e for e in events if e["type"] == "AskRound"]
    assert [e["round"] for e in rounds] == [1] and rounds[0]["grounded"] == len(record["claims"])
    assert events[-1]["type"] == "RunCompleted" and events[-1]["status"] == "success"


def _shards_from(root: Path, item_id: str) -> None:
    """Shards written by the shard writer: the item's transcript cut into two chunks of
    non-empty lines (each line one message), dated 2025-03-10 and 2025-09-02."""
    repo = Repo.at(root)
    item = repo.item(item_id)
    doc = Document(item.transcript_bytes())
    rel = item.transcript.relative_to(root).as_posix()
    msgs = []
    for n in range(1, len(doc.line_starts()) + 1):
        start, end = doc.line_span(n)
        if doc.data[start:end].strip():
            msgs.append(Message(msg=len(msgs) + 1, start=start, end=end, line=n))
    half = len(msgs) // 2
    infos = []
    for number, (part, day) in enumerate(
        ((msgs[:half], "2025-03-10"), (msgs[half:], "2025-09-02")), 1
    ):
        text = doc.data[part[0].start : part[-1].end].decode()
        chunk = CondensedChunk(
            item=item.id, chunk=number, transcript=rel, start=part[0].start, end=part[-1].end,
            tokens=count_tokens(text), condensed_tokens=1, summary="s", date=day,
            messages=tuple(part), shard=f"shard-{number:03d}", number=number,
        )  # fmt: skip
        write_shard_text(root, shard_file_name(number), encode_shard([chunk]))
        infos.append(ShardInfo(f"shard-{number:03d}", shard_file_name(number), day, day,
                               (item.id,), 1, chunk.tokens, "sha256:x"))  # fmt: skip
    write_manifest(root, ShardManifest(shard_tokens=800_000, token_counter="chars/4",
                                       shards=tuple(infos)))  # fmt: skip


def test_ask_reads_shards_and_scopes_them_by_date(lib: Path, arkai: Runner) -> None:
    code, out, _ = arkai("--repo", lib, "library", "--json")
    items = json.loads(out)
    items = items.get("items", items) if isinstance(items, dict) else items
    item_id = next(i["id"] for i in items if "Field notes" in i["title"])
    _shards_from(lib, item_id)
    code, out, err = arkai("--repo", lib, "ask", QUESTION, "--json")
    assert code == 0, err
    record = json.loads(out)
    assert record["scope"]["implicit"] is False
    assert "every shard" in record["scope"]["reason"]  # "change"
    # The beekeeping talk is in no shard: it is searched as the implicit shard.
    assert record["scope"]["shards"] == ["shard-001", "shard-002", "implicit"]
    assert "1 item(s) in no shard" in record["scope"]["reason"]
    ids = [m["match_id"] for s in record["shards"][:2] for m in s["matches"]]
    assert ids and all(
        i.startswith(("shard-001:chunk-1:msg-", "shard-002:chunk-2:msg-")) for i in ids
    )
    implicit = record["shards"][2]
    assert implicit["coverage"]["chunks_examined"] == 1
    assert all(m["match_id"].startswith("item:") for m in implicit["matches"])
    assert {m["item"] for m in implicit["matches"]} <= {i["id"] for i in items} - {item_id}
    _check_receipts(lib, record)
    # A period picks the overlapping shard only.
    code, out, err = arkai("--repo", lib, "ask", "firmware hive temperature in:2025-03", "--json")
    assert code == 0, err
    assert json.loads(out)["scope"]["shards"] == ["shard-001"]


def test_empty_library_and_question_without_evidence_exit_5(
    kr: Path, lib: Path, arkai: Runner
) -> None:
    empty = kr.parent / "empty"
    from arkai.ops.init import init_repo

    init_repo(empty, git=False)
    code, _, err = arkai("--repo", empty, "ask", "anything at all")
    assert code == 5 and "no evidence" in err and "empty" in err
    code, _out, err = arkai("--repo", lib, "ask", "zygomorphic xylophone quasars", "--json")
    assert code == 5 and "no evidence" in err


def test_save_writes_once_and_never_replaces_an_edited_answer(lib: Path, arkai: Runner) -> None:
    code, out, err = arkai("--repo", lib, "ask", QUESTION, "--save", "--json")
    assert code == 0, err
    saved = json.loads(out)["saved"]
    md, js = lib / saved["markdown"], lib / saved["json"]
    assert saved["created"] and md.parent.name == "answers" and md.stem.startswith("how-did-the-")
    assert json.loads(js.read_text())["claims"] == json.loads(out)["claims"]
    assert "../site/transcripts/" in md.read_text()  # links work from answers/
    # The same answer again: nothing changes.
    code, out, _ = arkai("--repo", lib, "ask", QUESTION, "--save", "--json")
    assert json.loads(out)["saved"] == {**saved, "created": False}
    # A person edits the saved answer: the next save takes a new name and keeps the edit.
    md.write_text(md.read_text() + "\nReviewed: the second claim needs a source.\n")
    edited = md.read_bytes()
    code, out, _ = arkai("--repo", lib, "ask", QUESTION, "--save", "--json")
    again = json.loads(out)["saved"]
    assert again["created"] and again["markdown"] == saved["markdown"][: -len(".md")] + "-2.md"
    assert md.read_bytes() == edited
    assert len(list_runs(lib)) >= 3


def test_validator_contradiction_temporal_and_unverified_evidence(tmp_path: Path) -> None:
    from arkai.model.answer import Claim, Match
    from arkai.ops.ask import validate
    from arkai.ops.ask_shards import AskProvider
    from arkai.patterns import get_pattern
    from arkai.providers.runner import ResponseStore
    from arkai.providers.runner import Runner as CallRunner

    quote = "In 2021 a firmware update changed how the boards calibrated temperature."
    ok = Match("item:a:L3", quote, quote, "2021-05-02", "high", "a", "t.md", "resolved",
               (10, 10 + len(quote)), 3, "sha256:x")  # fmt: skip
    lost = Match("item:a:L9", "Nobody noticed for months.", status="unresolved")
    pool = {m.match_id: m for m in (ok, lost)}
    claims = [
        Claim("c1", quote, ("item:a:L3",)),
        Claim(
            "c2",
            "In 2021 a firmware update never changed how the boards calibrated temperature.",
            ("item:a:L3",),
        ),
        Claim(
            "c3",
            "In 2019 a firmware update changed how the boards calibrated temperature.",
            ("item:a:L3",),
        ),
        Claim("c4", "Nobody noticed for months.", ("item:a:L9", "item:zz:L1")),
    ]
    runner = CallRunner(provider=AskProvider(), store=ResponseStore(tmp_path))
    v1, v2, v3, v4 = validate(runner, get_pattern("validate_claims", None), claims, pool, "t")
    assert (v1.verdict, v1.evidence, v1.temporal) == ("grounded", ("item:a:L3",), "consistent")
    assert v2.verdict == "unsupported" and "contradicted" in v2.notes and v2.evidence == ()
    assert v3.verdict == "partial" and "2019" in v3.temporal  # grounded words, wrong year
    assert v4.verdict == "unsupported" and "no verified evidence" in v4.notes


def test_bad_markup_and_a_broken_shard_file_are_named(lib: Path, arkai: Runner) -> None:
    code, _, err = arkai("--repo", lib, "ask", "bees after:notadate")
    assert code == 2 and "after:notadate" in err
    manifest = lib / "index" / "shards" / "manifest.json"
    manifest.parent.mkdir(parents=True)
    manifest.write_text("{not json")
    code, _, err = arkai("--repo", lib, "ask", QUESTION)
    assert code == 1 and "manifest.json: not valid JSON" in err
    assert manifest.read_text() == "{not json"  # nothing rewritten
