"""``arkai feedback``: votes stored under feedback/, a bounded boost in search, shown by
``--explain``; and votes from two git branches merging without a conflict."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from arkai.ops.feedback import feedback_path
from arkai.search.blend import FEEDBACK_CAP
from tests.cli import test_search_hooks
from tests.conftest import Runner, tool_env

# The indexed library of the search-hook tests (built once per module, copied per test).
built = test_search_hooks.built
lib = test_search_hooks.lib


def vote(arkai: Runner, root: Path, query: str, ident: str, how: str = "--up") -> dict[str, Any]:
    code, out, err = arkai("--repo", root, "feedback", query, ident, how, "--json")
    assert code == 0, err
    result: dict[str, Any] = json.loads(out)
    return result


def results(arkai: Runner, root: Path, query: str) -> list[dict[str, Any]]:
    code, out, err = arkai("--repo", root, "search", query, "--mode", "lexical", "--explain",
                           "--json")  # fmt: skip
    assert code == 0, err
    found: list[dict[str, Any]] = json.loads(out)["results"]
    return found


def boost(item: dict[str, Any]) -> dict[str, Any] | None:
    lanes: dict[str, Any] = item["hits"][0]["explain"][0]["lanes"]
    return lanes.get("feedback")


def test_votes_are_files_and_move_a_near_tie(lib: dict[str, Any], arkai: Runner) -> None:
    root = lib["root"]
    talk, note = lib["Beekeeping talk"]["id"], lib["Hive sensors note"]["id"]
    before = results(arkai, root, "hive")
    assert [r["content_id"] for r in before][:2] == [note, talk]
    assert all(boost(r) is None for r in before)

    first = vote(arkai, root, "  Hive ", talk[:8])
    rel = str(feedback_path(root, "hive").relative_to(root))
    assert first == {"query": "hive", "content_id": talk, "title": "Beekeeping talk",
                     "vote": 1, "net": 1, "path": rel}  # fmt: skip
    vote(arkai, root, "HIVE", talk)  # same query, normalised: the same file
    lines = feedback_path(root, "hive").read_text(encoding="utf-8").splitlines()
    assert [json.loads(x)["vote"] for x in lines] == [1, 1]
    assert (root / "feedback" / ".gitattributes").read_text() == "*.jsonl merge=union\n"

    after = results(arkai, root, "hive")
    assert [r["content_id"] for r in after][:2] == [talk, note]
    two = boost(after[0])
    assert two is not None and two["score"] == 2 and two["contribution"] > 0
    assert after[0]["score"] == pytest.approx(before[1]["score"] + two["contribution"], abs=1e-5)
    # Another query is not affected.
    assert all(boost(r) is None for r in results(arkai, root, "hive sensor"))

    code, out, _ = arkai("--repo", root, "search", "hive", "--mode", "lexical", "--explain")
    assert code == 0 and "feedback +2 votes" in out and "feedback (feedback/" in out


def test_the_boost_is_capped_and_down_votes_cancel(lib: dict[str, Any], arkai: Runner) -> None:
    root, roof = lib["root"], lib["Roof gardens"]["id"]
    vote(arkai, root, "hive", roof)
    one = boost(next(r for r in results(arkai, root, "hive") if r["content_id"] == roof))
    for _ in range(FEEDBACK_CAP + 3):
        vote(arkai, root, "hive", roof)
    many = boost(next(r for r in results(arkai, root, "hive") if r["content_id"] == roof))
    assert one is not None and many is not None and many["score"] == FEEDBACK_CAP + 4
    assert many["contribution"] == pytest.approx(FEEDBACK_CAP * one["contribution"])
    for _ in range(FEEDBACK_CAP + 4):
        last = vote(arkai, root, "hive", roof, "--down")
    assert last["net"] == 0
    assert boost(next(r for r in results(arkai, root, "hive") if r["content_id"] == roof)) is None


def test_unknown_item_or_no_vote_writes_nothing(lib: dict[str, Any], arkai: Runner) -> None:
    root = lib["root"]
    code, _, err = arkai("--repo", root, "feedback", "hive", "ffffffffffff", "--up")
    assert code == 5 and "ffffffffffff" in err
    code, _, err = arkai("--repo", root, "feedback", "hive", lib["Roof gardens"]["id"])
    assert code == 2 and "--up or --down" in err
    assert not (root / "feedback").exists()


def test_a_damaged_vote_line_is_a_warning(lib: dict[str, Any], arkai: Runner) -> None:
    root, talk = lib["root"], lib["Beekeeping talk"]["id"]
    vote(arkai, root, "hive", talk)
    path = feedback_path(root, "hive")
    with path.open("a", encoding="utf-8") as fh:
        fh.write('{"content_id": "x", "vote": 7}\nnot json\n')
    code, out, err = arkai("--repo", root, "search", "hive", "--mode", "lexical", "--json")
    assert code == 0, err
    warnings = json.loads(out)["warnings"]
    rel = path.relative_to(root)
    assert any(w.startswith(f"{rel}:2: not a feedback vote") for w in warnings)
    assert any(w.startswith(f"{rel}:3: not a feedback vote") for w in warnings)


def test_votes_from_two_branches_merge_without_conflict(lib: dict[str, Any], arkai: Runner) -> None:
    root = lib["root"]
    talk, roof = lib["Beekeeping talk"]["id"], lib["Roof gardens"]["id"]
    env = tool_env()

    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=root, env=env, capture_output=True, text=True,
                              timeout=60, check=False)  # fmt: skip
        assert done.returncode == 0, done.stderr
        return done.stdout

    git("init", "-q", "-b", "main")
    vote(arkai, root, "hive", talk)  # writes feedback/.gitattributes too
    git("add", "-A")
    git("commit", "-qm", "library")
    git("checkout", "-qb", "other")
    vote(arkai, root, "hive", roof)
    git("commit", "-qam", "vote on other")
    git("checkout", "-q", "main")
    vote(arkai, root, "hive", talk, "--down")
    git("commit", "-qam", "vote on main")
    git("merge", "-q", "--no-edit", "other")
    lines = feedback_path(root, "hive").read_text(encoding="utf-8").splitlines()
    assert sorted((json.loads(x)["content_id"], json.loads(x)["vote"]) for x in lines) == sorted(
        [(talk, 1), (roof, 1), (talk, -1)]
    )
    assert not any(x.startswith(("<<<<<<<", "=======", ">>>>>>>")) for x in lines)


def test_a_vote_file_that_is_a_link_is_refused(
    lib: dict[str, Any], arkai: Runner, tmp_path: Path
) -> None:
    root = lib["root"]
    outside = tmp_path / "outside.jsonl"
    outside.write_text("keep\n")
    path = feedback_path(root, "hive")
    path.parent.mkdir()
    path.symlink_to(outside)
    code, _, err = arkai("--repo", root, "feedback", "hive", lib["Roof gardens"]["id"], "--up")
    assert code == 1 and "is a symbolic link" in err
    assert outside.read_text() == "keep\n"
    code, _, err = arkai("--repo", root, "search", "hive", "--mode", "lexical")
    assert code == 1 and "is a symbolic link" in err
