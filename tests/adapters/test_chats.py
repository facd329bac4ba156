"""Chat exports (ChatGPT, Claude, Gemini) → one item per conversation, with redaction.

Real samples live in ``../shared/data/chat_exports``; small synthetic ones in
``tests/fixtures/chats``. Secret-shaped strings are assembled at run time.
"""

from __future__ import annotations

import copy
import io
import json
import zipfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from arkai.adapters.params import DEFAULTS
from arkai.core import canonjson
from arkai.errors import InvalidInputError, ResourceLimitError, SourceFormatError
from arkai.sources.base import Acquired, AddOptions
from arkai.sources.chats import (
    ChatExportSource,
    detect_chat_export,
    html_to_text,
    parse_chat_export,
)
from arkai.sources.chats.archive import read_chat_members
from arkai.sources.chats.common import Message, render_yaml
from tests.conftest import SHARED_DATA

DATA = SHARED_DATA / "chat_exports"
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "chats"
REAL = sorted(DATA.glob("*/*.json"))
CHATGPT = DATA / "chatgpt" / "chatlore_conversations.json"
CLAUDE = DATA / "claude" / "chatlore_conversations.json"
GEMINI = DATA / "gemini" / "chatlore_MyActivity.json"

needs_data = pytest.mark.shared_data

SECRET_KEY = "sk-" + "proj-" + "Q1w2E3r4T5y6U7i8O9p0" + "AsDfGhJkLzXcVbNm"
SECRET_MAIL = "alice.smith" + "@" + "example.org"


def options(**kw: Any) -> AddOptions:
    return AddOptions(params=copy.deepcopy(DEFAULTS), now="2026-01-01T00:00:00Z", **kw)


def parse_file(path: Path, **kw: Any) -> tuple[list[Acquired], list[str]]:
    return parse_chat_export(path.name, path.read_bytes(), options(**kw))


def loaded_yaml(item: Acquired) -> dict[str, Any]:
    value = yaml.safe_load(item.files["conversation.yaml"].decode("utf-8"))
    assert isinstance(value, dict)
    return value


def messages(item: Acquired) -> list[dict[str, Any]]:
    found = loaded_yaml(item)["messages"]
    assert isinstance(found, list)
    return found


def by_canonical(items: list[Acquired]) -> dict[str, Acquired]:
    return {i.canonical: i for i in items}


# --------------------------------------------------------------------------- every real sample


@needs_data
@pytest.mark.parametrize("path", REAL, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_real_sample_parses_into_well_formed_items(path: Path) -> None:
    items, _ = parse_file(path)
    assert items
    platform = path.parent.name
    for item in items:
        assert set(item.files) == {"conversation.yaml", "transcript.md", "source.json"}
        transcript = item.files["transcript.md"].decode("utf-8")
        doc = loaded_yaml(item)
        meta = doc["metadata"]
        assert list(meta) == [
            "chat_id", "platform", "title", "created", "updated", "message_count", "branch",
        ]  # fmt: skip
        assert meta["platform"] == platform == item.source_format == item.meta["platform"]
        assert meta["message_count"] == len(doc["messages"]) == item.meta["message_count"] > 0
        assert transcript.startswith(f"# {item.title}\n")
        position = 0
        for m in doc["messages"]:
            assert m["role"] in ("human", "assistant", "system", "tool")
            assert m["content"] and m["content"] == m["content"].strip()
            # Every message's content occurs verbatim (and in order) so claims can ground.
            found = transcript.find(m["content"], position)
            assert found >= 0
            position = found + len(m["content"])
        assert item.canonical.startswith(f"{platform}:")
        assert item.content_type.startswith(f"chats/{platform}/")
        assert item.content_hash and item.content_hash.startswith("sha256:")
        assert len(item.source_id) <= 36
        assert json.loads(item.files["source.json"]) is not None
        assert item.timed is False


@needs_data
def test_real_sample_headers_and_ids() -> None:
    items, _ = parse_file(DATA / "chatgpt" / "echomine_golden_002_with_images.raw.json")
    (item,) = items
    assert item.canonical == "chatgpt:684a1df7-302c-8005-bf41-d26c56ecdc7f"
    assert item.source_id == "684a1df7-302c-8005-bf41-d26c56ecdc7f"
    assert item.url == "https://chatgpt.com/c/684a1df7-302c-8005-bf41-d26c56ecdc7f"
    assert item.title == "Interpretación pintura surrealista"
    assert item.content_type == "chats/chatgpt/2025/06"
    transcript = item.files["transcript.md"].decode("utf-8")
    assert "### human · 2025-06-12 00:23:18 UTC\n[image]\n\nInterpret this painting\n" in transcript
    # The expected rendering keeps user, assistant, user, assistant (plus one empty message).
    assert [m["role"] for m in messages(item)] == ["human", "assistant", "human", "assistant"]


@needs_data
def test_hidden_context_and_empty_messages_are_skipped() -> None:
    items, _ = parse_file(DATA / "chatgpt" / "echomine_golden_001_simple_text.raw.json")
    (item,) = items
    roles = [m["role"] for m in messages(item)]
    assert roles == ["human", "assistant"]
    assert "user_profile" not in item.files["transcript.md"].decode("utf-8")
    assert "The user provided the following information" not in item.files["transcript.md"].decode(
        "utf-8"
    )


# --------------------------------------------------------------------------- ChatGPT


@needs_data
def test_chatgpt_active_branch_keeps_the_regenerated_answer() -> None:
    items, warnings = parse_file(CHATGPT)
    found = by_canonical(items)
    assert set(found) == {
        "chatgpt:11111111-aaaa-4bbb-8ccc-000000000001",
        "chatgpt:22222222-aaaa-4bbb-8ccc-000000000002",
    }
    item = found["chatgpt:11111111-aaaa-4bbb-8ccc-000000000001"]
    transcript = item.files["transcript.md"].decode("utf-8")
    assert "You are missing an index on customer_id." in transcript
    assert "First answer that was regenerated." not in transcript
    assert item.meta["branch"] == "active" and loaded_yaml(item)["metadata"]["branch"] == "active"
    # Records without a mapping or an id are skipped with a reason.
    assert len(warnings) == 2
    assert "Broken record" in warnings[0] and "mapping" in warnings[0]
    assert "no conversation id" in warnings[1]
    assert all(w.startswith(CHATGPT.name) for w in warnings)


@needs_data
def test_chatgpt_all_branches_adds_the_other_leaf() -> None:
    items, _ = parse_file(CHATGPT, all_branches=True)
    found = by_canonical(items)
    branch = found["chatgpt:11111111-aaaa-4bbb-8ccc-000000000001#branch-a1"]
    active = found["chatgpt:11111111-aaaa-4bbb-8ccc-000000000001"]
    assert len(items) == 3
    assert [m["content"] for m in messages(branch)] == [
        "Why is my query on orders slow?",
        "First answer that was regenerated.",
    ]
    assert branch.meta["branch"] == "branch-a1"
    assert branch.source_id != active.source_id and len(branch.source_id) <= 36
    assert branch.content_hash != active.content_hash


@needs_data
def test_chatgpt_thoughts_code_tool_output_and_images() -> None:
    items, _ = parse_file(CHATGPT)
    item = by_canonical(items)["chatgpt:11111111-aaaa-4bbb-8ccc-000000000001"]
    msgs = messages(item)
    contents = [m["content"] for m in msgs]
    assert [m["role"] for m in msgs] == [
        "human", "assistant", "human", "assistant", "tool", "assistant",
    ]  # fmt: skip
    assert contents[2] == "[image]\n\nHere is the plan output. Can you write the statement?"
    assert contents[3] == (
        "```sql\nCREATE INDEX idx_orders_customer ON orders (customer_id, created_at);\n```"
    )
    assert contents[4] == "```\nCREATE INDEX\n```"
    transcript = item.files["transcript.md"].decode("utf-8")
    assert '"summary"' not in transcript and "\ny\n" not in transcript  # thoughts skipped
    assert msgs[0]["timestamp"] == "2026-01-01T10:00:00Z"
    assert "### assistant · 2026-01-01 10:01:50 UTC\n```sql\n" in transcript


def test_chatgpt_content_type_rules() -> None:
    items, warnings = parse_file(FIXTURES / "chatgpt_mixed.json", all_branches=True)
    assert warnings == []
    found = by_canonical(items)
    active = found["chatgpt:mixed-0001"]
    transcript = active.files["transcript.md"].decode("utf-8")
    for dropped in ("PROFILE-SECRET-TEXT", "Thought for", "QUOTED PAGE", "BROWSING RESULT"):
        assert dropped not in transcript
    contents = [m["content"] for m in messages(active)]
    assert contents[0] == "Show me a fenced example\nwith two lines."  # CRLF, trailing blanks
    assert contents[1] == "````markdown\nUse ```python fences```\nlike this.\n````"
    assert contents[2] == "Here is the picture:\n\n[image]\n\nspoken words"
    # alt1 differs → an extra item; alt2 holds only an empty reply and a system note, so it
    # adds nothing beyond the shared question and is not an item.
    assert set(found) == {"chatgpt:mixed-0001", "chatgpt:mixed-0001#branch-alt1"}


def test_chatgpt_single_object_and_undated() -> None:
    conv = {
        "id": "x/../y",
        "current_node": "b",
        "mapping": {
            "a": {"parent": None, "message": None},
            "b": {
                "parent": "a",
                "message": {
                    "author": {"role": "user"},
                    "content": {"content_type": "text", "parts": ["hello there"]},
                },
            },
        },
    }
    items, _ = parse_chat_export("one.json", json.dumps(conv).encode(), options())
    (item,) = items
    assert item.content_type == "chats/chatgpt/undated"
    assert item.title == "hello there"  # no title: the first human message
    assert "/" not in item.source_id and ".." not in item.source_id
    assert "### human\nhello there\n" in item.files["transcript.md"].decode("utf-8")


# --------------------------------------------------------------------------- Claude


@needs_data
def test_claude_latest_branch_tools_attachments_and_thinking() -> None:
    items, warnings = parse_file(CLAUDE)
    found = by_canonical(items)
    item = found["claude:aaaaaaaa-1111-4222-8333-000000000001"]
    assert item.url == "https://claude.ai/chat/aaaaaaaa-1111-4222-8333-000000000001"
    transcript = item.files["transcript.md"].decode("utf-8")
    assert "Retried answer: move x out of the inner scope." in transcript
    assert "x does not live long enough." not in transcript  # the older branch
    assert "internal reasoning" not in transcript  # thinking skipped
    assert '[tool_use repl] {"code": "cargo check"}' in transcript
    assert "Finished dev profile" in transcript
    assert "[attachment: main.rs]\nfn main() { let r; { let x = 5; r = &x; } }" in transcript
    assert [m["role"] for m in messages(item)] == ["human", "assistant", "human"]
    old = found["claude:aaaaaaaa-1111-4222-8333-000000000002"]
    assert [m["content"] for m in messages(old)] == ["Give me a name for a cat.", "Biscuit."]
    assert len(warnings) == 1 and "Broken record" in warnings[0]

    branches = by_canonical(parse_file(CLAUDE, all_branches=True)[0])
    extra = branches["claude:aaaaaaaa-1111-4222-8333-000000000001#branch-m2"]
    assert "x does not live long enough." in extra.files["transcript.md"].decode("utf-8")


@needs_data
def test_claude_tool_result_messages_are_tool_role() -> None:
    items, _ = parse_file(DATA / "claude" / "echomine_tool_messages.json")
    item = by_canonical(items)["claude:tool-conv-004"]
    msgs = messages(item)
    assert [m["role"] for m in msgs[:4]] == ["human", "assistant", "tool", "assistant"]
    assert msgs[1]["content"] == '[tool_use calculator] {"expression": "42 * 137"}'
    assert msgs[2]["content"] == "5754"
    long_input = by_canonical(items)["claude:tool-conv-001"]
    line = next(
        m["content"] for m in messages(long_input) if "[tool_use write_file]" in m["content"]
    )
    assert line.endswith("…") and len(line.split("\n")[-1]) < 240


@needs_data
def test_claude_prefers_content_blocks_over_text_summary() -> None:
    items, _ = parse_file(DATA / "claude" / "echomine_sample_export.json")
    item = by_canonical(items)["claude:5551eb71-ada2-45bd-8f91-0c4945a1e5a6"]
    assert "```python\ndef binary_search(arr, target):" in messages(item)[0]["content"]
    untitled = by_canonical(items)["claude:f9e8d7c6-b5a4-4321-9876-fedcba098765"]
    assert untitled.title == "Hello"


# --------------------------------------------------------------------------- Gemini


@needs_data
def test_gemini_days_german_header_broken_time_and_other_rows() -> None:
    items, warnings = parse_file(GEMINI)
    assert len(items) == 2
    day1, day2 = items
    assert all(i.canonical.startswith("gemini:") and i.url is None for i in items)
    assert day1.content_type == "chats/gemini/2026/03"
    first = messages(day1)
    assert first[0] == {
        "role": "human",
        "content": "Give me a recipe for Neapolitan pizza dough",
        "timestamp": "2026-03-10T18:00:00Z",
    }
    assert (
        first[1]["content"]
        == "Here is a simple recipe:\n\n- 500 g flour\n- 325 g water\n\nMix & rest."
    )
    assert "ignored()" not in day1.files["transcript.md"].decode("utf-8")
    assert first[-1]["content"] == "A question that got no stored response"
    assert "Gave feedback" not in day1.files["transcript.md"].decode("utf-8")
    assert [m["content"] for m in messages(day2)] == ["Wie spät ist es in Tokio?", "Es ist 17 Uhr."]
    assert any("broken time" in w and "not a time" in w for w in warnings)
    assert any("2 activity record(s)" in w for w in warnings)
    assert "Searched for pizza" not in "".join(
        i.files["transcript.md"].decode("utf-8") for i in items
    )


def test_gemini_html_rendering_and_bard_header() -> None:
    items, warnings = parse_file(FIXTURES / "gemini_html.json")
    assert warnings == []
    assert len(items) == 2  # 23:59:59Z and 00:00:00Z are different UTC days
    reply = messages(items[0])[1]["content"]
    assert reply == (
        "Steps\n\n1. Compare\n2. Swap\n  - nested\n\n```\ndef f(x):\n    return sorted(x)\n```"
        "\n\nn | cost\n10 | 33\n\nDone\nnow"
    )
    assert messages(items[1])[1]["content"] == "Plain answer <ok>"
    assert html_to_text("<p>a</p><script>x()</script><p>b &amp; c</p>") == "a\n\nb & c"


# --------------------------------------------------------------------------- redaction


def planted_export() -> bytes:
    conv = {
        "id": "secret-conv",
        "title": f"Keys for {SECRET_MAIL}",
        "create_time": 1717236000,
        "current_node": "m2",
        "mapping": {
            "m0": {"parent": None, "message": None},
            "m1": {
                "parent": "m0",
                "message": {
                    "author": {"role": "user"},
                    "create_time": 1717236000,
                    "content": {
                        "content_type": "text",
                        "parts": [f"My key is {SECRET_KEY}, mail me at {SECRET_MAIL}."],
                    },
                },
            },
            "m2": {
                "parent": "m1",
                "message": {
                    "author": {"role": "assistant"},
                    "create_time": 1717236060,
                    "content": {"content_type": "text", "parts": ["Rotate that key now."]},
                },
            },
        },
    }
    return json.dumps([conv]).encode("utf-8")


def test_redaction_replaces_and_counts_and_leaves_no_trace() -> None:
    (item,), _ = parse_chat_export("planted.json", planted_export(), options())
    assert item.meta["redactions"] == {"email": 2, "openai_key": 1}
    first = messages(item)[0]["content"]
    assert first == "My key is [REDACTED:openai_key], mail me at [REDACTED:email]."
    assert item.title == "Keys for [REDACTED:email]"
    for name, blob in item.files.items():
        assert SECRET_KEY.encode() not in blob, name
        assert SECRET_MAIL.encode() not in blob, name
    assert (
        "[REDACTED:openai_key]"
        in json.loads(item.files["source.json"])["mapping"]["m1"]["message"]["content"]["parts"][0]
    )


def test_redaction_switches() -> None:
    off = options(redact=False)
    (item,), _ = parse_chat_export("planted.json", planted_export(), off)
    assert SECRET_KEY.encode() in item.files["transcript.md"]
    assert item.meta["redactions"] == {}
    params_off = options()
    params_off.params["add"]["redact_chats"] = False
    (item,), _ = parse_chat_export("planted.json", planted_export(), params_off)
    assert SECRET_MAIL.encode() in item.files["source.json"]
    forced = options(redact=True)
    forced.params["add"]["redact_chats"] = False
    (item,), _ = parse_chat_export("planted.json", planted_export(), forced)
    assert SECRET_MAIL.encode() not in item.files["source.json"]


# --------------------------------------------------------------------------- determinism, hash


@needs_data
@pytest.mark.parametrize("path", [CHATGPT, CLAUDE, GEMINI], ids=lambda p: p.parent.name)
def test_parsing_twice_gives_identical_bytes(path: Path) -> None:
    first, w1 = parse_file(path, all_branches=True)
    second, w2 = parse_file(path, all_branches=True)
    assert w1 == w2
    assert [(i.canonical, i.files, i.content_hash, i.meta) for i in first] == [
        (i.canonical, i.files, i.content_hash, i.meta) for i in second
    ]


@needs_data
def test_content_hash_changes_only_with_messages() -> None:
    value = json.loads(CHATGPT.read_bytes())
    base = {
        i.canonical: i.content_hash
        for i in parse_chat_export("a.json", json.dumps(value).encode(), options())[0]
    }

    same = copy.deepcopy(value)
    same[0]["is_archived"] = True  # metadata only
    same[0]["mapping"]["a1"]["message"]["content"]["parts"] = ["edited dropped branch"]
    again = {
        i.canonical: i.content_hash
        for i in parse_chat_export("a.json", json.dumps(same).encode(), options())[0]
    }
    assert again == base

    changed = copy.deepcopy(value)
    changed[0]["mapping"]["a3"]["message"]["content"]["parts"] = ["Done. Now it is fast."]
    after = {
        i.canonical: i.content_hash
        for i in parse_chat_export("a.json", json.dumps(changed).encode(), options())[0]
    }
    key = "chatgpt:11111111-aaaa-4bbb-8ccc-000000000001"
    assert after[key] != base[key]
    other = "chatgpt:22222222-aaaa-4bbb-8ccc-000000000002"
    assert after[other] == base[other]


def test_content_hash_is_digest_of_normalized_messages() -> None:
    (item,), _ = parse_chat_export("planted.json", planted_export(), options())
    from arkai.core.hashing import digest

    expected = digest(canonjson.dumps(messages(item)).encode("utf-8"))
    assert item.content_hash == expected


# --------------------------------------------------------------------------- zip exports


def make_zip(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, blob in members.items():
            zf.writestr(name, blob)
    return buf.getvalue()


@needs_data
def test_zip_export_is_read_in_memory(tmp_path: Path) -> None:
    data = make_zip(
        {
            "chat.html": b"<html></html>",
            "images/file-1.png": b"\x89PNG" + b"0" * 100,
            "conversations.json": CHATGPT.read_bytes(),
        }
    )
    items, warnings = parse_chat_export("export.zip", data, options())
    assert {i.canonical for i in items} == {i.canonical for i in parse_file(CHATGPT)[0]}
    assert warnings and warnings[0].startswith("export.zip:conversations.json: conversation 3")
    path = tmp_path / "export.zip"
    path.write_bytes(data)
    source = ChatExportSource()
    assert source.match(str(path), path, data[:65536])
    assert len(source.acquire(str(path), path, options())) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["export.zip"]  # nothing extracted


@needs_data
def test_zip_claude_and_gemini_detection() -> None:
    claude = make_zip({"users.json": b"[]", "conversations.json": CLAUDE.read_bytes()})
    assert detect_chat_export("c.zip", claude[:65536]) == "claude"
    takeout = make_zip({"Takeout/My Activity/Gemini Apps/MyActivity.json": GEMINI.read_bytes()})
    assert detect_chat_export("t.zip", takeout[:65536]) == "gemini"
    assert len(parse_chat_export("t.zip", takeout, options())[0]) == 2


@pytest.mark.parametrize("evil", ["../evil.json", "/etc/conversations.json", "a/../../x", "C:/x"])
def test_zip_with_unsafe_member_is_refused(evil: str, tmp_path: Path) -> None:
    data = make_zip({"conversations.json": planted_export(), evil: b"{}"})
    with pytest.raises(SourceFormatError, match=r"^evil\.zip: ZIP member .* refusing the archive"):
        parse_chat_export("evil.zip", data, options())
    assert list(tmp_path.iterdir()) == []


def test_zip_bomb_is_refused_by_declared_size() -> None:
    data = make_zip({"conversations.json": b"[" + b" " * 2_000_000 + b"]"})
    assert len(data) < 20_000
    with pytest.raises(ResourceLimitError, match=r"^bomb\.zip: .*declares 2\.0 MB"):
        read_chat_members("bomb.zip", data, max_bytes=1_000_000)
    with pytest.raises(ResourceLimitError):
        parse_chat_export("bomb.zip", data, options(), max_bytes=1_000_000)


def test_zip_without_conversations_and_broken_zip() -> None:
    with pytest.raises(SourceFormatError, match=r"^photos\.zip: .*no conversations\.json"):
        parse_chat_export("photos.zip", make_zip({"a.png": b"x"}), options())
    with pytest.raises(SourceFormatError, match=r"^broken\.zip: not a readable ZIP"):
        parse_chat_export("broken.zip", b"PK\x03\x04" + b"\x00" * 40, options())


# --------------------------------------------------------------------------- bad input


def test_truncated_json_names_the_file() -> None:
    with pytest.raises(SourceFormatError) as info:
        parse_file(FIXTURES / "truncated.json")
    assert str(info.value).startswith("truncated.json: not valid JSON (line 2, column ")


@pytest.mark.parametrize(
    ("blob", "message"),
    [
        (b'{"hello": 1}', r"^x\.json: not a chat export \(top level is an object\); accepted: "),
        (b'"text"', r"^x\.json: not a chat export \(top level is a string\)"),
        (b"[1, 2]", r"^x\.json: not a chat export \(top level is a list\)"),
        (b"[]", r"^x\.json: the export is an empty list"),
        (b"\xff\xfe[\x00]\x00", r"^x\.json: is UTF-16 encoded"),
        (b'[{"title": "caf\xe9"}]', r"^x\.json: not UTF-8 text \(byte 0xe9"),
        (b"   ", r"^x\.json: file is empty"),
    ],
)
def test_wrong_shapes_and_encodings(blob: bytes, message: str) -> None:
    with pytest.raises(SourceFormatError, match=message):
        parse_chat_export("x.json", blob, options())


def test_utf8_bom_is_accepted() -> None:
    items, _ = parse_chat_export("bom.json", b"\xef\xbb\xbf" + planted_export(), options())
    assert len(items) == 1


def test_all_records_broken_gives_warnings_not_items() -> None:
    items, warnings = parse_chat_export(
        "b.json", b'[{"title": "t", "current_node": "x"}]', options()
    )
    assert items == [] and len(warnings) == 1


# --------------------------------------------------------------------------- routing


@needs_data
def test_detection_by_head_bytes() -> None:
    assert detect_chat_export(CHATGPT.name, CHATGPT.read_bytes()[:65536]) == "chatgpt"
    assert detect_chat_export(CLAUDE.name, CLAUDE.read_bytes()[:65536]) == "claude"
    assert detect_chat_export(GEMINI.name, GEMINI.read_bytes()[:65536]) == "gemini"
    single = DATA / "chatgpt" / "echomine_golden_001_simple_text.raw.json"
    assert detect_chat_export(single.name, single.read_bytes()[:65536]) == "chatgpt"
    assert detect_chat_export("x.json", b'[{"text": "hi", "start": 0, "duration": 1}]') is None
    assert detect_chat_export("x.json", b'[{"header": "Search", "title": "Searched"}]') is None
    assert detect_chat_export("x.json", b"not json") is None


def test_source_match_and_acquire(tmp_path: Path) -> None:
    source = ChatExportSource()
    assert source.name == "chat"
    path = tmp_path / "conversations.json"
    path.write_bytes(planted_export())
    head = path.read_bytes()[:65536]
    assert source.match(str(path), path, head)
    assert not source.match("https://x.org/a.json", None, head)
    other = tmp_path / "notes.txt"
    other.write_bytes(planted_export())
    assert not source.match(str(other), other, head)
    items, warnings = source.acquire_with_warnings(str(path), path, options())
    assert len(items) == 1 and warnings == []
    assert source.acquire(str(path), path, options())[0].files == items[0].files
    with pytest.raises(InvalidInputError):
        source.acquire("https://x.org/a.json", None, options())
    big = options()
    big.params["add"]["max_file_mb"] = 0.0001
    with pytest.raises(ResourceLimitError):
        source.acquire(str(path), path, big)


def test_zip_match_reads_the_central_directory_when_the_head_is_not_enough(
    tmp_path: Path,
) -> None:
    noise = bytes(range(256)) * 400  # ~100 KiB stored first, so the head shows only this member
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("images/big.bin", noise, compress_type=zipfile.ZIP_STORED)
        zf.writestr("conversations.json", planted_export(), compress_type=zipfile.ZIP_DEFLATED)
    path = tmp_path / "export.zip"
    path.write_bytes(buf.getvalue())
    head = path.read_bytes()[:65536]
    assert detect_chat_export(path.name, head) is None
    assert ChatExportSource().match(str(path), path, head)


# --------------------------------------------------------------------------- YAML writer


@settings(max_examples=300, deadline=None)
@given(st.text(), st.text(alphabet=st.characters(codec=None), max_size=40))
def test_conversation_yaml_round_trips_any_text(a: str, b: str) -> None:
    for text in (a, b, f"{a}\n{b}", f"x\n{a}", f"{b}\nx"):
        meta = {"chat_id": text, "message_count": 1, "created": None}
        out = render_yaml(meta, [Message("human", text, None)])
        loaded = yaml.safe_load(out)
        assert loaded == {
            "metadata": meta,
            "messages": [{"role": "human", "content": text, "timestamp": None}],
        }


def test_conversation_yaml_uses_literal_blocks_for_clean_multiline_text() -> None:
    out = render_yaml(
        {"title": "t"}, [Message("tool", "```\nCREATE INDEX\n```", "2026-01-01T00:00:00Z")]
    )
    assert out == (
        'metadata:\n  title: "t"\nmessages:\n- role: "tool"\n  content: |-\n    ```\n'
        '    CREATE INDEX\n    ```\n  timestamp: "2026-01-01T00:00:00Z"\n'
    )
