"""Files people put in item folders survive source updates; crashed adds leave nothing that
counts; long non-ASCII titles fit the file system and one failure never stops a batch."""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Any

import pytest

from arkai.adapters.layout import iter_items
from tests.conftest import Runner

CHAT = Path(__file__).resolve().parents[1] / "fixtures" / "chats" / "chatgpt_mixed.json"


def export_with(tmp_path: Path, follow_up: str | None) -> Path:
    conv: dict[str, Any] = json.loads(CHAT.read_text(encoding="utf-8"))
    if follow_up is not None:
        conv = copy.deepcopy(conv)
        leaf = conv["current_node"]
        msg = copy.deepcopy(conv["mapping"][leaf]["message"])
        msg.update(id="later", author={"role": "user"},
                   content={"content_type": "text", "parts": [follow_up]})  # fmt: skip
        conv["mapping"]["later"] = {"id": "later", "message": msg, "parent": leaf, "children": []}
        conv["mapping"][leaf]["children"] = [*conv["mapping"][leaf].get("children", []), "later"]
        conv["current_node"] = "later"
    path = tmp_path / "export" / "conversations.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps([conv]), encoding="utf-8")
    return path


def test_a_source_update_keeps_what_people_put_in_the_folder(
    kr: Path, arkai: Runner, tmp_path: Path
) -> None:
    code, out, err = arkai("--repo", kr, "add", export_with(tmp_path, None), "--json", "--quiet")
    assert code == 0, err
    folder = kr / json.loads(out)["results"][0]["path"]
    ours = {p.name: p.read_bytes() for p in folder.iterdir()}
    (folder / "my-notes.md").write_text("# My notes\n\nNever delete me.\n", encoding="utf-8")
    (folder / "review.yaml").write_text("claims: {}\n# keep this comment\n", encoding="utf-8")
    (folder / "attachments").mkdir()
    (folder / "attachments" / "scan.txt").write_text("a scan", encoding="utf-8")

    code, out, err = arkai(
        "--repo", kr, "add", export_with(tmp_path, "A follow-up written later."), "--json"
    )
    assert code == 0, err
    assert json.loads(out)["results"][0]["status"] == "updated"
    assert (folder / "my-notes.md").read_text() == "# My notes\n\nNever delete me.\n"
    assert (folder / "review.yaml").read_text() == "claims: {}\n# keep this comment\n"
    assert (folder / "attachments" / "scan.txt").read_text() == "a scan"
    assert "A follow-up written later." in (folder / "transcript.md").read_text()
    assert set(ours) <= {p.name for p in folder.iterdir()}
    assert not [p for p in folder.parent.iterdir() if p.name.startswith(".")]


def test_an_update_never_overwrites_a_persons_file_of_the_same_name(
    kr: Path, arkai: Runner, tmp_path: Path
) -> None:
    code, out, _ = arkai("--repo", kr, "add", export_with(tmp_path, None), "--json", "--quiet")
    folder = kr / json.loads(out)["results"][0]["path"]
    meta = json.loads((folder / "metadata.json").read_text())
    # The person's file takes a name arkai did not write before but writes now.
    del meta["artifact_digests"]["conversation.yaml"]
    (folder / "metadata.json").write_text(json.dumps(meta))
    (folder / "conversation.yaml").write_text("mine\n")
    code, out, err = arkai("--repo", kr, "add", export_with(tmp_path, "Later."), "--json")
    assert code != 0
    assert "conversation.yaml would replace a file arkai did not write" in out + err
    assert (folder / "conversation.yaml").read_text() == "mine\n"


def test_leftover_scratch_folders_are_not_items_and_the_next_add_cleans_them(
    kr: Path, arkai: Runner, tmp_path: Path
) -> None:
    notes = kr / "library" / "notes"
    notes.mkdir(parents=True, exist_ok=True)
    dead = notes / ".adding-999999999-abc"
    dead.mkdir()
    (dead / "metadata.json").write_text(json.dumps({"id": "0" * 16, "title": "half"}))
    (dead / "transcript.md").write_text("half written\n")
    live = notes / f".adding-{os.getpid()}-xyz"  # an add that is still running
    live.mkdir()
    assert list(iter_items(kr)) == []
    code, out, _ = arkai("--repo", kr, "validate", "--json")
    assert json.loads(out)["summary"]["items"] == 0

    # A crash mid-swap: the old item folder sits in a scratch folder, its name beside it.
    swap = notes / ".adding-999999998-swap"
    (swap / "old").mkdir(parents=True)
    (swap / "old" / "metadata.json").write_text(json.dumps({"id": "1" * 16, "title": "Kept"}))
    (swap / "old" / "my-notes.md").write_text("precious")
    (swap / "target").write_text("Kept (11111111)")

    src = tmp_path / "note.md"
    src.write_text("# A note\n\nSome text.\n")
    code, _, err = arkai("--repo", kr, "add", src, "--quiet")
    assert code == 0, err
    assert not dead.exists() and not swap.exists()
    assert live.is_dir(), "a running add's scratch folder is left alone"
    assert (notes / "Kept (11111111)" / "my-notes.md").read_text() == "precious"


def test_long_non_ascii_titles_fit_and_the_batch_goes_on(
    kr: Path, arkai: Runner, tmp_path: Path
) -> None:
    """Chat titles (unlike file names) have no length limit: 120 CJK characters are 360 bytes,
    over the 255 a folder name may have."""
    base: dict[str, Any] = json.loads(CHAT.read_text(encoding="utf-8"))
    titles = ["日本語のとても長いタイトル" * 15, "🐝 Bienen " * 40, "Ünïcödé Überschrift " * 20]
    convs = []
    for n, title in enumerate(titles):
        conv = copy.deepcopy(base)
        conv.update(id=f"long-{n}", title=title)
        convs.append(conv)
    export = tmp_path / "conversations.json"
    export.write_text(json.dumps(convs), encoding="utf-8")
    code, out, err = arkai("--repo", kr, "add", export, "--json", "--quiet")
    assert code == 0, err
    results = json.loads(out)["results"]
    assert [r["status"] for r in results] == ["added"] * 3
    for r, title in zip(results, titles, strict=True):
        name = Path(r["path"]).name
        assert len(name.encode("utf-8")) <= 200
        assert name.startswith(title[:5])


def test_a_file_system_error_fails_one_input_only(
    kr: Path, arkai: Runner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import arkai.ops.add as add

    real = add.folder_name

    def too_long(title: str, source_id: str) -> str:
        return "x" * 300 if "Second" in title else real(title, source_id)

    monkeypatch.setattr(add, "folder_name", too_long)
    files = []
    for name in ("First", "Second", "Third"):
        path = tmp_path / f"{name}.txt"
        path.write_text(f"{name}\n\nText of {name}.\n", "utf-8")
        files.append(path)
    code, out, _ = arkai("--repo", kr, "add", *files, "--json", "--quiet")
    assert code != 0
    results = json.loads(out)["results"]
    assert [r["status"] for r in results] == ["added", "failed", "added"]
    assert "File name too long" in results[1]["error"] and "x" * 300 in results[1]["error"]
    assert not [p for p in (kr / "library").rglob(".adding-*")]


def test_an_update_refuses_a_fifo_in_the_folder_without_blocking(
    kr: Path, arkai: Runner, tmp_path: Path
) -> None:
    code, out, _ = arkai("--repo", kr, "add", export_with(tmp_path, None), "--json", "--quiet")
    folder = kr / json.loads(out)["results"][0]["path"]
    before = (folder / "transcript.md").read_bytes()
    os.mkfifo(folder / "pipe")
    code, out, _ = arkai("--repo", kr, "add", export_with(tmp_path, "Later."), "--json")
    assert code != 0
    result = json.loads(out)["results"][0]
    assert result["status"] == "failed" and str(folder / "pipe") in result["error"]
    assert (folder / "transcript.md").read_bytes() == before
    assert (folder / "pipe").is_fifo()


def test_items_are_read_one_at_a_time(tmp_path: Path) -> None:
    """``iter_items`` streams: an item's metadata is read when the iteration reaches it (a
    100,000-item library is never held whole), bad folders are skipped, the order is by path."""
    lib = tmp_path / "library" / "transcripts"
    for name in ("a", "b", "c"):
        (lib / name).mkdir(parents=True)
        (lib / name / "metadata.json").write_text(json.dumps({"id": f"id-{name}"}))
    (lib / "bad").mkdir()
    (lib / "bad" / "metadata.json").write_text("not json")
    found = iter_items(tmp_path)
    assert next(found).id == "id-a"
    # Changed after the first item was read: the new metadata is what comes next.
    (lib / "b" / "metadata.json").write_text(json.dumps({"id": "id-b2", "title": "B"}))
    assert [(i.id, i.title) for i in found] == [("id-b2", "B"), ("id-c", "c")]
