"""Batches (folders, --from lists), notes via `arkai remember`, routing explanations."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.conftest import SAMPLES, Runner


def test_add_directory_with_a_bad_file(kr: Path, arkai: Runner, tmp_path: Path) -> None:
    src = tmp_path / "inbox"
    (src / "nested").mkdir(parents=True)
    shutil.copy(SAMPLES / "beekeeping-talk.vtt", src / "talk.vtt")
    shutil.copy(SAMPLES / "note-2026-11-20.md", src / "nested" / "note.md")
    (src / "broken.srt").write_bytes(b"1\n00:00:01,000 --> garbage\nhello\n")
    (src / "ignored.bin").write_bytes(b"\x00" * 10)
    (src / ".hidden.vtt").write_text("WEBVTT\n")
    code, out, _err = arkai("--repo", kr, "add", src, "--json", "--quiet")
    assert code == 2
    results = json.loads(out)["results"]
    by_name = {Path(r["source"]).name: r["status"] for r in results}
    assert by_name == {"broken.srt": "failed", "note.md": "added", "talk.vtt": "added"}
    # A second pass adds nothing and says so in the summary.
    code, out, _ = arkai("--repo", kr, "add", src)
    assert "0 added" in out and "2 already present" in out and "1 failed" in out
    assert "broken.srt" in out


def test_add_from_list(kr: Path, arkai: Runner, tmp_path: Path) -> None:
    shutil.copy(SAMPLES / "compilers-podcast.srt", tmp_path / "pod.srt")
    lst = tmp_path / "sources.txt"
    lst.write_text(
        "# my reading list\n"
        "\n"
        "pod.srt  compilers,builds   # relative to the list\n"
        f"'{SAMPLES / 'field-notes-on-reproducibility.txt'}' tag:essay\n"
        "missing.vtt\n"
    )
    code, out, _ = arkai("--repo", kr, "add", "--from", lst, "--tags", "batch", "--json")
    assert code == 2
    results = json.loads(out)["results"]
    assert [r["status"] for r in results] == ["added", "added", "failed"]
    assert "missing.vtt" in results[2]["error"]
    tags = [json.loads((kr / r["path"] / "metadata.json").read_text())["tags"] for r in results[:2]]
    assert tags == [["batch", "builds", "compilers"], ["batch", "essay"]]


def test_empty_directory_is_reported(kr: Path, arkai: Runner, tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    code, _, err = arkai("--repo", kr, "add", tmp_path / "empty")
    assert code == 2 and "no source files" in err


def test_remember_is_an_episode_note(kr: Path, arkai: Runner) -> None:
    text = "Hive weight drops 2 kg in a week when a swarm leaves. Check the sensor logs."
    code, out, err = arkai("--repo", kr, "remember", text, "--tags", "bees", "--json")
    assert code == 0, err
    res = json.loads(out)["results"][0]
    assert res["status"] == "added" and res["path"].startswith("library/notes/")
    meta = json.loads((kr / res["path"] / "metadata.json").read_text())
    assert meta["episode"] is True and meta["tags"] == ["bees"]
    assert meta["canonical_ref"].startswith("note:sha256:")
    assert text in (kr / res["path"] / "transcript.md").read_text()
    code, out, _ = arkai("--repo", kr, "remember", text, "--json")
    assert json.loads(out)["results"][0]["status"] == "exists"
    assert arkai("--repo", kr, "remember", "   ")[0] == 2


def test_explain_shows_the_route(kr: Path, arkai: Runner) -> None:
    code, out, _ = arkai("--repo", kr, "add", SAMPLES / "beekeeping-talk.vtt", "--explain")
    assert code == 0
    assert "→ transcript (reflex" in out
    code, out, _ = arkai(
        "--repo", kr, "add", SAMPLES / "compilers-podcast.srt", "--explain", "--json"
    )
    route = json.loads(out)["results"][0]["route"]
    assert route == {
        "layer": "reflex",
        "reason": "transcript pattern matched",
        "source": "transcript",
    }


def test_events_record_each_input(kr: Path, arkai: Runner) -> None:
    arkai("--repo", kr, "add", SAMPLES / "beekeeping-talk.vtt", kr / "nope.srt", "--quiet")
    code, out, _ = arkai("--repo", kr, "runs", "--json")
    assert code == 0
    run = json.loads(out)["runs"][0]
    code, out, _ = arkai("--repo", kr, "status", run["run_id"], "--json")
    assert code == 0
    steps = [e for e in json.loads(out)["events"] if e["type"] == "StepCompleted"]
    assert [s["statuses"] for s in steps] == [["added"], ["failed"]]
