"""``arkai log-turn``: append agent turns (redacted before writing) and replay them."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from arkai.ops.agentlog import LOGS
from tests.conftest import BIN, Runner, tool_env

SECRET = "sk-proj-" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6"


def test_turns_append_redacted_and_replay(kr: Path, arkai: Runner) -> None:
    text = f"my key is {SECRET}, mail me at ann@example.com"
    code, out, err = arkai(
        "--repo", kr, "log-turn", "--session", "s-1", "--role", "user", "--text", text, "--json"
    )
    assert code == 0, err
    turn = json.loads(out)
    assert turn["n"] == 1 and turn["role"] == "user" and turn["session"] == "s-1"
    assert SECRET not in turn["text"] and "ann@example.com" not in turn["text"]
    assert "[REDACTED:" in turn["text"] and sum(turn["redacted"].values()) == 2
    raw = (kr / LOGS / "s-1.jsonl").read_text(encoding="utf-8")
    assert SECRET not in raw and "ann@example.com" not in raw
    code, out, err = arkai("--repo", kr, "log-turn", "--session", "s-1", "--role", "assistant",
                           "--text", "Two lines\nof answer")  # fmt: skip
    assert code == 0 and "logged turn 2 of s-1 (assistant)" in out, err

    code, out, err = arkai("--repo", kr, "log-turn", "--show", "s-1", "--json")
    assert code == 0, err
    log = json.loads(out)
    assert [(t["n"], t["role"]) for t in log["turns"]] == [(1, "user"), (2, "assistant")]
    assert log["turns"][1]["text"] == "Two lines\nof answer" and log["problems"] == []
    code, out, _ = arkai("--repo", kr, "log-turn", "--show", "s-1")
    assert code == 0 and "[2]" in out and "assistant:" in out and "    of answer" in out


def test_text_from_stdin(kr: Path) -> None:
    done = subprocess.run(
        [str(BIN / "arkai"), "--repo", str(kr), "log-turn", "--session", "pipe", "--role", "tool"],
        input=f"tool output with {SECRET}\n", capture_output=True, text=True, env=tool_env(),
        timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    line = json.loads((kr / LOGS / "pipe.jsonl").read_text(encoding="utf-8"))
    assert line["role"] == "tool" and line["text"].startswith("tool output with [REDACTED:")


def test_bad_input_is_refused_and_nothing_written(kr: Path, arkai: Runner) -> None:
    for args, expect in [
        (["--session", "../escape", "--role", "user", "--text", "x"], "bad session ID"),
        (["--session", ".hidden", "--role", "user", "--text", "x"], "bad session ID"),
        (["--session", "s", "--role", "root", "--text", "x"], "Invalid value for '--role'"),
        (["--session", "s", "--role", "user", "--text", "   "], "the turn has no text"),
        (["--role", "user", "--text", "x"], "give --session and --role"),
        (["--show", "s", "--session", "s"], "--show replays a session"),
    ]:
        code, _, err = arkai("--repo", kr, "log-turn", *args)
        assert code == 2 and expect in err, (args, err)
    assert not (kr / LOGS).exists()
    code, _, err = arkai("--repo", kr, "log-turn", "--show", "never")
    assert code == 5 and "no agent log for session 'never'" in err


def test_a_damaged_line_is_reported_not_hidden(kr: Path, arkai: Runner) -> None:
    arkai("--repo", kr, "log-turn", "--session", "d", "--role", "user", "--text", "hello")
    with (kr / LOGS / "d.jsonl").open("a", encoding="utf-8") as fh:
        fh.write("{torn\n")
    code, out, err = arkai("--repo", kr, "log-turn", "--show", "d", "--json")
    assert code == 1
    log = json.loads(out)
    assert len(log["turns"]) == 1 and log["problems"][0].startswith(".arkai/agent-logs/d.jsonl:2:")
    assert "not a turn" in err


def test_a_log_that_is_a_link_is_refused_and_its_target_untouched(
    kr: Path, arkai: Runner, tmp_path: Path
) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("keep\n")
    (kr / LOGS).mkdir(parents=True)
    (kr / LOGS / "s.jsonl").symlink_to(outside)
    code, _, err = arkai(
        "--repo", kr, "log-turn", "--session", "s", "--role", "user", "--text", "x"
    )
    assert code == 1 and "s.jsonl: is a symbolic link" in err
    assert outside.read_text() == "keep\n"


def test_append_is_whole_lines_and_refuses_links(tmp_path: Path) -> None:
    from arkai.adapters.fs import append_bytes
    from arkai.errors import UnsafeFileError

    path = tmp_path / "d" / "log.jsonl"
    append_bytes(path, b"one\n")
    append_bytes(path, b"two\n", fsync=False)
    assert path.read_bytes() == b"one\ntwo\n"
    link = tmp_path / "link.jsonl"
    link.symlink_to(path)
    with pytest.raises(UnsafeFileError, match="symbolic link"):
        append_bytes(link, b"three\n")
    assert path.read_bytes() == b"one\ntwo\n"
