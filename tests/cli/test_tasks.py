"""Tasks and goals: files in the repo, the CLI round trip, suggestions and hostile files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.conftest import SAMPLES, Runner


def _json(arkai: Runner, kr: Path, *args: object) -> dict[str, object]:
    code, out, err = arkai("--repo", kr, *args, "--json")
    assert code == 0, err
    return json.loads(out)  # type: ignore[no-any-return]


def test_task_life_cycle_is_files(kr: Path, arkai: Runner) -> None:
    goal = _json(arkai, kr, "goal", "add", "Learn", "beekeeping")
    t = _json(arkai, kr, "task", "add", "Read the talk", "--priority", "high",
              "--due", "2026-12-01", "--goal", str(goal["id"])[:8])  # fmt: skip
    path = kr / "tasks" / f"{t['id']}.yaml"
    on_disk = yaml.safe_load(path.read_text())
    assert on_disk["title"] == "Read the talk" and on_disk["goal"] == goal["id"]
    assert on_disk["due"] == "2026-12-01" and on_disk["status"] == "open"

    # A person's own keys survive a tool edit.
    path.write_text(path.read_text() + "my_note: keep me\n")
    edited = _json(arkai, kr, "task", "edit", str(t["id"])[:8], "--priority", "low", "--due", "")
    assert edited["priority"] == "low" and "due" not in edited
    assert yaml.safe_load(path.read_text())["my_note"] == "keep me"

    done = _json(arkai, kr, "task", "done", str(t["id"]))
    assert done["status"] == "done" and done["completed_at"]
    assert _json(arkai, kr, "task", "list", "--status", "done")["tasks"][0]["id"] == t["id"]
    code, out, _ = arkai("--repo", kr, "task", "list")
    assert code == 5 and "no open tasks" in out
    assert _json(arkai, kr, "task", "reopen", str(t["id"]))["status"] == "open"
    assert "completed_at" not in yaml.safe_load(path.read_text())
    assert _json(arkai, kr, "goal", "done", str(goal["id"])[:8])["status"] == "done"
    code, _, _ = arkai("--repo", kr, "goal", "list")
    assert code == 5


def test_suggest_ranks_by_documented_score(kr: Path, arkai: Runner) -> None:
    low = _json(arkai, kr, "task", "add", "Someday", "--priority", "low")
    due = _json(arkai, kr, "task", "add", "Overdue", "--priority", "medium", "--due", "2026-01-01")
    high = _json(arkai, kr, "task", "add", "Important", "--priority", "high")
    out = _json(arkai, kr, "task", "suggest", "--as-of", "2026-01-05")
    ranked = [s["task"]["id"] for s in out["suggestions"]]  # type: ignore[attr-defined]
    assert ranked == [due["id"], high["id"], low["id"]]
    first = out["suggestions"][0]  # type: ignore[index]
    assert first["score"] == 5 and "overdue by 4 d (+3)" in first["reasons"]
    # The clock is an input: a month earlier the due date is far away.
    out = _json(arkai, kr, "task", "suggest", "--as-of", "2025-12-01")
    assert out["suggestions"][0]["task"]["id"] == high["id"]  # type: ignore[index]


def test_task_from_evidence_links_the_claim(kr: Path, arkai: Runner) -> None:
    code, _, err = arkai("--repo", kr, "add", SAMPLES / "field-notes-on-reproducibility.txt")
    assert code == 0, err
    code, _, err = arkai("--repo", kr, "extract", "--quiet")
    assert code == 0, err
    ev = json.loads(next((kr / "extracted").rglob("evidence.jsonl")).read_text().splitlines()[0])
    t = _json(arkai, kr, "task", "add", "--from-evidence", str(ev["id"])[:8])
    assert t["title"] == ev["claim"] and t["evidence"] == [ev["id"]]
    out = _json(arkai, kr, "task", "suggest")
    assert "backed by checked evidence (+0.5)" in out["suggestions"][0]["reasons"]  # type: ignore[index]
    # Edit the text under the claim: the evidence no longer counts, and suggest says why.
    transcript = next((kr / "library").rglob("transcript.md"))
    data = transcript.read_bytes()
    start, end = ev["span"]["utf8_byte_offset"]
    transcript.write_bytes(data[:start] + b"X" * (end - start) + data[end:])
    reasons = _json(arkai, kr, "task", "suggest")["suggestions"][0]["reasons"]  # type: ignore[index]
    assert f"evidence {ev['id'][:8]} no longer matches its transcript" in reasons
    code, _, err = arkai("--repo", kr, "task", "add", "x", "--evidence", "deadbeefdeadbeef")
    assert code == 5 and "no evidence line" in err


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ("id: [unclosed\n", "not valid YAML"),
        ("- a list\n", "expected a mapping"),
        ("id: 0123456789ab\ntitle: t\npriority: urgent\n", "'priority' must be one of"),
        ("id: 0123456789ab\ntitle: t\ndue: next week\n", "'due' must be a date"),
        ("id: ffffffffffff\ntitle: t\n", "is not its file name"),
    ],
)
def test_malformed_task_file_is_named_and_kept(
    kr: Path, arkai: Runner, content: str, problem: str
) -> None:
    folder = kr / "tasks"
    folder.mkdir()
    bad = folder / "0123456789ab.yaml"
    bad.write_text(content)
    for args in (("task", "list"), ("task", "add", "new"), ("task", "suggest")):
        code, _, err = arkai("--repo", kr, *args)
        assert code != 0
        assert "0123456789ab.yaml" in err and problem in err, err
        assert "Traceback" not in err
    assert bad.read_text() == content
    assert sorted(p.name for p in folder.iterdir()) == ["0123456789ab.yaml"]


def test_bad_arguments_are_usage_errors(kr: Path, arkai: Runner) -> None:
    code, _, err = arkai("--repo", kr, "task", "add", "x", "--due", "someday")
    assert code == 2 and "'due' must be a date" in err
    code, _, err = arkai("--repo", kr, "task", "add", " ")
    assert code == 2 and "'title' is empty" in err
    code, _, err = arkai("--repo", kr, "task", "done", "abc")
    assert code == 2 and "too short" in err
    code, _, err = arkai("--repo", kr, "task", "done", "abcdefab")
    assert code == 5 and "no task" in err
    code, _, err = arkai("--repo", kr, "task", "add", "x", "--goal", "abcdefab")
    assert code == 5 and "no goal" in err
    assert not (kr / "tasks").exists()


def test_task_symlink_is_refused(kr: Path, arkai: Runner, tmp_path: Path) -> None:
    outside = tmp_path / "outside.yaml"
    outside.write_text("id: 0123456789ab\ntitle: secret\n")
    (kr / "tasks").mkdir()
    (kr / "tasks" / "0123456789ab.yaml").symlink_to(outside)
    code, _, err = arkai("--repo", kr, "task", "list")
    assert code != 0 and "0123456789ab.yaml" in err and "secret" not in err
