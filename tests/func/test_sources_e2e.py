"""Every source kind, through the CLI, to an item whose claims ground to its transcript."""

from __future__ import annotations

import copy
import hashlib
import json
import shutil
from pathlib import Path

import pytest

from tests.adapters.httpserver import LocalHTTPServer, http_server_fixture  # noqa: F401
from tests.conftest import ROOT, SHARED_DATA, TRANSCRIPTS, Runner

FIXTURES = ROOT / "tests" / "fixtures"
CHATS = SHARED_DATA / "chat_exports"
ARTICLE = (
    SHARED_DATA
    / "articles"
    / "scrapinghub_aeb"
    / ("ad9e9e596f21a6812fae27b5d9d622359826c368e471d7d5ff9ac4676eaac9cd.html")
)


def added(out: str) -> list[dict[str, object]]:
    return [r for r in json.loads(out)["results"] if r["status"] == "added"]


def grounded(kr: Path, arkai: Runner) -> dict[str, int]:
    """Run extraction and return claims per content type; every span must match its quote."""
    code, _, err = arkai("--repo", kr, "extract", "--quiet")
    assert code == 0, err
    code, out, _ = arkai("--repo", kr, "validate", "--json")
    assert code == 0 and json.loads(out)["summary"]["stale"] == 0
    per_type: dict[str, int] = {}
    for ev in (kr / "extracted").rglob("evidence.jsonl"):
        rel = ev.parent.relative_to(kr / "extracted")
        transcript = (kr / "library" / rel / "transcript.md").read_bytes()
        for line in map(json.loads, ev.read_text().splitlines()):
            start, end = line["span"]["utf8_byte_offset"]
            assert transcript[start:end].decode() == line["quote"]
            per_type[rel.parts[0]] = per_type.get(rel.parts[0], 0) + 1
    return per_type


@pytest.mark.shared_data
def test_every_kind_round_trips(
    kr: Path, arkai: Runner, http_server: LocalHTTPServer, tmp_path: Path
) -> None:
    base = http_server.url("").rstrip("/")
    feed = (FIXTURES / "podcast" / "feed.rss").read_text().replace("{base}", base)
    http_server.route("/feed.rss", body=feed.encode(), content_type="application/rss+xml")
    http_server.route("/t/0002.srt", body=(FIXTURES / "podcast" / "0002.srt").read_bytes(),
                      content_type="application/x-subrip")  # fmt: skip
    http_server.route("/t/0001.vtt", body=(FIXTURES / "podcast" / "0001.vtt").read_bytes(),
                      content_type="text/vtt")  # fmt: skip
    http_server.route("/t/0001.json", body=(FIXTURES / "podcast" / "0001.json").read_bytes(),
                      content_type="application/json")  # fmt: skip
    http_server.route("/post", body=ARTICLE.read_bytes())

    inputs = [
        str(CHATS / "chatgpt" / "echomine_sample_export.json"),
        str(CHATS / "claude" / "echomine_sample_export.json"),
        str(CHATS / "gemini" / "chatlore_MyActivity.json"),
        str(FIXTURES / "pdf" / "two_pages.pdf"),
        http_server.url("/post?utm_source=x"),
    ]
    code, out, err = arkai("--repo", kr, "add", *inputs, "--json", "--quiet")
    assert code == 0, err
    kinds = {str(r["path"]).split("/")[1] for r in added(out)}
    assert kinds == {"chats", "pdfs", "articles"}

    code, out, err = arkai("--repo", kr, "add", http_server.url("/feed.rss"), "--episode", "all",
                           "--json", "--quiet")  # fmt: skip
    assert code == 0, err
    results = json.loads(out)["results"]
    assert sum(r["status"] == "added" for r in results) == 2
    assert any(r["status"] == "skipped" and "transcript" in str(r["error"]) for r in results)

    captions = TRANSCRIPTS / "youtube_auto_vtt" / "kalanick_techcocktail_VMvdvP02f-Y.en.vtt"
    url = "https://youtu.be/VMvdvP02f-Y?t=42"
    code, out, err = arkai("--repo", kr, "add", url, "--transcript", captions, "--json")
    assert code == 0, err
    video = added(out)[0]
    assert str(video["path"]).startswith("library/youtube/")
    canonical = b"https://www.youtube.com/watch?v=VMvdvP02f-Y"
    assert video["id"] == hashlib.sha256(canonical).hexdigest()[:16]
    # Unpunctuated auto-captions give the minimal extractor no sentences; a quote from the
    # transcript still grounds to exact bytes.
    line = (kr / str(video["path"]) / "transcript.md").read_text().splitlines()[3]
    quote = line.split("] ", 1)[1][:60]
    code, out, _ = arkai("--repo", kr, "evidence", "resolve", video["id"], quote, "--json")
    assert code == 0 and json.loads(out)["status"] in ("resolved", "ambiguous")

    per_type = grounded(kr, arkai)
    assert {"chats", "pdfs", "articles", "podcasts"} <= set(per_type)

    # Layer 2: the article's host is remembered.
    routes = json.loads((kr / ".arkai" / "routes.json").read_text())["hosts"]
    assert routes["127.0.0.1"] in ("article", "podcast")


@pytest.mark.shared_data
def test_chat_reimport_adds_only_new_or_changed(kr: Path, arkai: Runner, tmp_path: Path) -> None:
    export = json.loads((CHATS / "chatgpt" / "echomine_sample_export.json").read_text())
    first = tmp_path / "conversations.json"
    first.write_text(json.dumps(export))
    code, out, _ = arkai("--repo", kr, "add", first, "--json", "--quiet")
    assert code == 0
    initial = added(out)
    assert len(initial) >= 5

    newer = copy.deepcopy(export)
    # One conversation gains a message; one brand-new conversation appears.
    conv = newer[0]
    node_id = conv["current_node"]
    node = conv["mapping"][node_id]
    msg = copy.deepcopy(node["message"])
    msg["id"] = "added-later"
    msg["content"] = {"content_type": "text", "parts": ["A follow-up written later on."]}
    msg["author"] = {"role": "user"}
    conv["mapping"]["added-later"] = {"id": "added-later", "message": msg, "parent": node_id,
                                      "children": []}  # fmt: skip
    node["children"] = [*node.get("children", []), "added-later"]
    conv["current_node"] = "added-later"
    extra = copy.deepcopy(newer[1])
    extra["id"] = extra["conversation_id"] = "brand-new-conversation"
    extra["title"] = "A brand new conversation"
    newer.append(extra)
    second = tmp_path / "conversations-newer.json"
    second.write_text(json.dumps(newer))

    # A person edited another conversation's transcript in the meantime.
    by_conv = {
        json.loads((kr / str(r["path"]) / "metadata.json").read_text())["conversation_id"]: r
        for r in initial
    }
    initial = [by_conv[newer[0]["id"]], by_conv[newer[1]["id"]]] + [
        r for c, r in by_conv.items() if c not in (newer[0]["id"], newer[1]["id"])
    ]
    edited_item = kr / str(initial[1]["path"])
    (edited_item / "transcript.md").write_text(
        (edited_item / "transcript.md").read_text() + "\nMy note.\n"
    )
    newer[1]["title"] = newer[1]["title"] + " (renamed)"
    second.write_text(json.dumps(newer))

    code, out, _ = arkai("--repo", kr, "add", second, "--json", "--quiet")
    assert code == 0
    statuses = {r["id"]: r["status"] for r in json.loads(out)["results"]}
    assert statuses[initial[0]["id"]] == "updated"
    assert statuses[initial[1]["id"]] == "kept"
    assert list(statuses.values()).count("added") == 1
    assert list(statuses.values()).count("exists") == len(initial) - 2
    assert "My note." in (edited_item / "transcript.md").read_text()
    updated = kr / str(initial[0]["path"])
    assert "A follow-up written later on." in (updated / "transcript.md").read_text()
    code, out, _ = arkai("--repo", kr, "add", second)
    assert "0 added, 0 updated" in out


@pytest.mark.shared_data
def test_redaction_happens_before_writing(kr: Path, arkai: Runner, tmp_path: Path) -> None:
    export = json.loads((CHATS / "claude" / "echomine_sample_export.json").read_text())
    key = "sk-" + "proj-" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6"
    mail = "someone" + "@" + "example.org"
    export[0]["chat_messages"][0]["text"] = f"my key is {key}, mail me at {mail}"
    for block in export[0]["chat_messages"][0].get("content", []):
        if block.get("type") == "text":
            block["text"] = f"my key is {key}, mail me at {mail}"
    src = tmp_path / "claude.json"
    src.write_text(json.dumps(export))
    code, out, _ = arkai("--repo", kr, "add", src, "--json", "--quiet")
    assert code == 0
    for path in (kr / "library").rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert key.encode() not in data and mail.encode() not in data, path
    item = kr / str(added(out)[0]["path"])
    meta = json.loads((item / "metadata.json").read_text())
    assert meta["redactions"]["openai_key"] >= 1 and meta["redactions"]["email"] >= 1


@pytest.mark.parametrize(
    ("name", "data", "code", "words"),
    [
        ("cut.json", b'[{"mapping": {"a": ', 2, "not valid JSON"),
        ("wrong.json", b'{"hello": "world"}', 2, ""),
        ("page.html", b"<html><body><nav>Home | Login</nav></body></html>", 2, "no article text"),
    ],
)
def test_bad_sources_leave_library_unchanged(
    kr: Path, arkai: Runner, tmp_path: Path, name: str, data: bytes, code: int, words: str
) -> None:
    shutil.copy(ROOT / "samples" / "note-2026-11-20.md", tmp_path / "n.md")
    arkai("--repo", kr, "add", tmp_path / "n.md")
    before = sorted((p, p.read_bytes()) for p in (kr / "library").rglob("*") if p.is_file())
    bad = tmp_path / name
    bad.write_bytes(data)
    got, _, err = arkai("--repo", kr, "add", bad)
    assert got == code
    assert name in err and words in err
    after = sorted((p, p.read_bytes()) for p in (kr / "library").rglob("*") if p.is_file())
    assert after == before
