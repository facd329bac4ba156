"""Planted secrets through the real ``arkai add`` + ``dvc repro`` + git: none reaches the disk.

The corpus (``tests/redact_corpus.py``, ≥ 100 values of ≥ 25 kinds) is spread over a ChatGPT
``conversations.json``, a Claude export, a Gemini My Activity export and a Markdown note — in
titles, message text, HTML, attachment file names, a conversation id and the note's file name.
Then every byte under the repository is searched: the work tree, ``.dvc/cache``, ``.arkai/``
(events, responses), ``site/``, every path name, and every git object decompressed
(``git cat-file --batch-all-objects``), as well as what the commands printed.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import sh
from tests.redact_corpus import PLANTED, needles

pytestmark = pytest.mark.slow

BIN = Path(sys.executable).parent
T0 = 1717236000


def is_token(value: str) -> bool:
    return not any(c in value for c in " :=/&;<")


def chatgpt(values: list[str]) -> list[dict[str, Any]]:
    convs = []
    for n in range(0, len(values), 6):
        chunk = values[n : n + 6]
        mapping: dict[str, Any] = {"root": {"parent": None, "children": ["m0"], "message": None}}
        for i, value in enumerate(chunk):
            named = is_token(value)
            attach = [{"name": f"scan_{value}.pdf", "id": f"file-{n}-{i}"}] if named else []
            mapping[f"m{i}"] = {
                "parent": "root" if i == 0 else f"m{i - 1}",
                "children": [f"m{i + 1}"] if i + 1 < len(chunk) else [],
                "message": {
                    "author": {"role": "user" if i % 2 == 0 else "assistant"},
                    "create_time": T0 + 60 * i,
                    "content": {"content_type": "text", "parts": [f"Keep this safe: {value} ok."]},
                    "metadata": {"attachments": attach},
                },
            }
        title = f"About {chunk[0]}" if is_token(chunk[0]) else f"Chat {n}"
        cid = f"conv-{n}" if n else f"id-{chunk[0]}" if is_token(chunk[0]) else "conv-0"
        convs.append({"id": cid, "title": title, "create_time": T0, "update_time": T0 + 600,
                      "current_node": f"m{len(chunk) - 1}", "mapping": mapping})  # fmt: skip
    return convs


def claude(values: list[str]) -> list[dict[str, Any]]:
    convs = []
    for n in range(0, len(values), 5):
        chunk = values[n : n + 5]
        messages = []
        for i, value in enumerate(chunk):
            text = f"Here it is: {value}."
            messages.append({
                "uuid": f"msg-{n}-{i}", "text": text, "content": [{"type": "text", "text": text}],
                "sender": "human" if i % 2 == 0 else "assistant",
                "created_at": f"2024-06-01T10:0{i}:00Z", "updated_at": f"2024-06-01T10:0{i}:00Z",
                "attachments": [{"file_name": f"{value}.txt", "extracted_content": f"see {value}"}]
                if is_token(value) else [],
                "files": [{"file_name": f"photo_{value}.png"}] if is_token(value) else [],
            })  # fmt: skip
        convs.append({"uuid": f"c-{n}", "name": f"Claude chat {n}", "summary": f"about {chunk[0]}",
                      "created_at": "2024-06-01T10:00:00Z", "updated_at": "2024-06-01T11:00:00Z",
                      "chat_messages": messages})  # fmt: skip
    return convs


def gemini(values: list[str]) -> list[dict[str, Any]]:
    return [
        {"header": "Gemini Apps", "title": f"Prompted What is {value}?",
         "time": f"2024-06-0{1 + i % 5}T1{i % 10}:00:00Z", "products": ["Gemini Apps"],
         "safeHtmlItem": [{"html": f"<p>It is <b>{value}</b><br>done</p>"}]}
        for i, value in enumerate(values)
    ]  # fmt: skip


def everything_on_disk(repo: Path) -> bytes:
    chunks = []
    for path in sorted(repo.rglob("*")):
        chunks.append(str(path.relative_to(repo)).encode("utf-8", "surrogateescape"))
        if path.is_file() and not path.is_symlink():
            chunks.append(path.read_bytes())
    objects = sh(repo, "git", "cat-file", "--batch-all-objects", "--batch", text=False).stdout
    assert len(objects) > 10_000  # the commits below are in it
    chunks.append(objects)
    return b"\n".join(chunks)


def test_no_planted_secret_reaches_the_disk(tmp_path: Path) -> None:
    groups: list[list[str]] = [[], [], [], []]
    for i, (_, value, _) in enumerate(PLANTED):
        groups[i % 4].append(value)
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    (inputs / "conversations.json").write_text(json.dumps(chatgpt(groups[0])), encoding="utf-8")
    (inputs / "claude.json").write_text(json.dumps(claude(groups[1])), encoding="utf-8")
    (inputs / "MyActivity.json").write_text(json.dumps(gemini(groups[2])), encoding="utf-8")
    card = next(v for k, v, _ in PLANTED if k == "credit_card" and v.isdigit())
    note = inputs / f"call-notes-{card}.md"
    body = "\n\n".join(f"- item {i}: {v}" for i, v in enumerate(groups[3]))
    note.write_text(f"# Notes for SSN 219-09-9999\n\n{body}\n", encoding="utf-8")

    repo = tmp_path / "knowledge"
    sh(tmp_path, "arkai", "init", str(repo))
    printed = [  # as bytes: what was printed is searched like the disk
        sh(repo, "arkai", "add", *(str(inputs / n) for n in
                                   ("conversations.json", "claude.json", "MyActivity.json")),
           text=False),
        sh(repo, "arkai", "add", "--redact", str(note), text=False),
        sh(repo, "arkai", "add", "mysql://root:Sup3rS3cretPw@db.example.com/app", check=False,
           text=False),
    ]  # fmt: skip
    assert printed[2].returncode != 0
    items = list((repo / "library").rglob("metadata.json"))
    # ChatGPT conversations of 6 values, Claude's of 5, a Gemini item a day (5 days), the note.
    chats = -(-len(groups[0]) // 6) + -(-len(groups[1]) // 5)
    assert len(items) == chats + min(5, len(groups[2])) + 1
    sh(repo, "git", "add", "-A")
    sh(repo, "git", "commit", "-qm", "add")
    sh(repo, "dvc", "repro")
    sh(repo, "git", "add", "-A")
    sh(repo, "git", "commit", "-qm", "repro")
    assert list((repo / "extracted").rglob("evidence.jsonl"))

    haystack = everything_on_disk(repo)
    output = b"\n".join(p.stdout + p.stderr for p in printed)
    leaks = []
    for kind, value, needle in PLANTED:
        for n in needles(value, needle):
            if n.encode() in haystack or n.encode() in output:
                leaks.append((kind, n))
    for extra in (card, "219-09-9999", "Sup3rS3cretPw"):
        if extra.encode() in haystack or extra.encode() in output:
            leaks.append(("extra", extra))
    assert leaks == []
    # The redactions happened where they should: placeholders in transcripts and folder names.
    transcripts = b"".join(p.read_bytes() for p in (repo / "library").rglob("transcript.md"))
    assert transcripts.count(b"[REDACTED:") >= len(PLANTED)
    assert any("REDACTED" in p.name for p in (repo / "library").rglob("*") if p.is_dir())
