"""`arkai patterns list|show|run`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import SAMPLES, Runner


def test_list_and_show(kr: Path, arkai: Runner) -> None:
    code, out, _ = arkai("--repo", kr, "patterns", "list", "--json")
    assert code == 0
    rows = {p["name"]: p for p in json.loads(out)["patterns"]}
    assert {"extract_claims", "extract_entities", "extract_wisdom", "summarize", "condense_chat",
            "validate_claims"} <= set(rows)  # fmt: skip
    assert rows["extract_claims"]["source"] == "repo"
    code, out, _ = arkai("--repo", kr, "patterns", "show", "extract_wisdom")
    assert code == 0 and "# IDENTITY and PURPOSE" in out and "HARD RULE" in out
    code, out, _ = arkai("--repo", kr, "patterns", "show", "extract_claims", "--json")
    assert json.loads(out)["schema"]["type"] == "array"
    assert arkai("--repo", kr, "patterns", "show", "no_such_pattern")[0] == 5


def test_user_patterns_are_found(
    kr: Path, arkai: Runner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mine = tmp_path / "mine" / "tweet_summary"
    mine.mkdir(parents=True)
    (mine / "system.md").write_text("# IDENTITY and PURPOSE\n\nSummarise as a tweet.\n")
    monkeypatch.setenv("ARKAI_PATTERNS_PATH", str(tmp_path / "mine"))
    code, out, _ = arkai("--repo", kr, "patterns", "list", "--json")
    assert code == 0
    rows = {p["name"]: p for p in json.loads(out)["patterns"]}
    assert rows["tweet_summary"]["source"] == "user" and rows["tweet_summary"]["version"] == "0"


def test_run_on_a_file_with_the_builtin_provider(kr: Path, arkai: Runner) -> None:
    code, _, err = arkai("--repo", kr, "add", SAMPLES / "compilers-podcast.srt", "--quiet")
    assert code == 0, err
    transcript = next((kr / "library").rglob("transcript.md"))
    code, out, err = arkai("--repo", kr, "patterns", "run", "extract_claims", transcript,
                           "--var", "max_claims=3")  # fmt: skip
    assert code == 0, err
    claims = json.loads(out)
    assert len(claims) == 3
    text = transcript.read_text()
    assert all(c["quote"] in text for c in claims)
