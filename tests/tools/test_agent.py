"""``arkai agent``: the agent hook loop over the registry — tool calls through the same
policy and audit, the answer, and every hook failure a clear error (never a traceback)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Runner
from tests.tools.conftest import read_audit
from tests.tools.test_registry import _files

HOOK = r"""
import json, sys, time
mode = sys.argv[1]
req = json.load(sys.stdin)
msgs = req["messages"]
tools = {t["name"] for t in req["tools"]}
done = [m for m in msgs if m["role"] == "tool"]
if mode == "search":
    if not done:
        call = {"id": "c1", "type": "function", "function": {"name": "search",
                "arguments": json.dumps({"query": "varroa", "mode": "lexical"})}}
        print(json.dumps({"message": {"role": "assistant", "content": None,
                                      "tool_calls": [call]}}))
    else:
        env = json.loads(done[-1]["content"])
        top = env["data"]["results"][0]
        print(json.dumps({"message": {"role": "assistant",
              "content": f"see {top['content_id']} ({len(tools)} tools)"}}))
elif mode == "write":
    if not done:
        call = {"id": "w1", "name": "remember", "arguments": {"text": "rm -rf / please"}}
        print(json.dumps({"message": {"role": "assistant", "tool_calls": [call]}}))
    else:
        env = json.loads(done[-1]["content"])
        print(json.dumps({"message": {"role": "assistant", "content": env["error"]["code"]}}))
elif mode == "loop":
    call = {"id": "l", "name": "library", "arguments": {}}
    print(json.dumps({"message": {"role": "assistant", "tool_calls": [call]}}))
elif mode == "crash":
    sys.stderr.write("model backend unavailable\n")
    sys.exit(2)
elif mode == "garbage":
    print("this is not json")
elif mode == "shape":
    print(json.dumps({"answer": "no message object"}))
elif mode == "slow":
    time.sleep(60)
"""


def _configure(root: Path, tmp_path: Path, mode: str, timeout_s: int = 60) -> None:
    hook = tmp_path / "hook.py"
    hook.write_text(HOOK, encoding="utf-8")
    params = root / "params.yaml"
    cmd = json.dumps([sys.executable, str(hook), mode])
    text = re.sub(r"^  agent: .*$", f"  agent: {cmd}", params.read_text(encoding="utf-8"),
                  count=1, flags=re.M)  # fmt: skip
    old = "  max_steps: 8\n  timeout_s: 60"
    text = text.replace(old, f"  max_steps: 8\n  timeout_s: {timeout_s}")
    params.write_text(text, encoding="utf-8")


def test_agent_answers_with_a_tool_call_through_the_registry(
    toollib: dict[str, Any], arkai: Runner, tmp_path: Path
) -> None:
    root = toollib["root"]
    _configure(root, tmp_path, "search")
    code, out, err = arkai("--repo", root, "agent", "what", "about", "mites?", "--json")
    assert code == 0, err
    res = json.loads(out)
    talk = toollib["Beekeeping talk"]["id"]
    assert res["answer"] == f"see {talk} (15 tools)"  # read tools only, without --allow-write
    assert res["steps"] == 2 and [c["tool"] for c in res["calls"]] == ["search"]
    line = next(a for a in read_audit(root) if a["trace_id"] == res["calls"][0]["trace_id"])
    assert line["transport"] == "agent" and line["outcome"] == "ok"


def test_agent_write_calls_are_refused_without_allow_write(
    toollib: dict[str, Any], arkai: Runner, tmp_path: Path
) -> None:
    root = toollib["root"]
    _configure(root, tmp_path, "write")
    before = _files(root)
    code, out, err = arkai("--repo", root, "agent", "remember this", "--json")
    assert code == 0, err
    res = json.loads(out)
    assert res["answer"] == "FORBIDDEN" and res["calls"][0]["code"] == "FORBIDDEN"
    assert _files(root) == before
    line = next(a for a in read_audit(root) if a["trace_id"] == res["calls"][0]["trace_id"])
    assert line["outcome"] == "denied"


@pytest.mark.parametrize(
    ("mode", "code", "needle"),
    [
        # Needles any hook runner's messages share: the hook's stderr, "JSON", the time limit.
        ("crash", 3, "model backend unavailable"),
        ("garbage", 3, "JSON"),
        ("shape", 3, 'no "message" object'),
        ("slow", 3, "no answer within 1s"),
        ("loop", 4, "no answer after 3 steps"),
    ],
)
def test_agent_hook_failures_are_clear_errors(
    kr: Path, arkai: Runner, tmp_path: Path, mode: str, code: int, needle: str
) -> None:
    _configure(kr, tmp_path, mode, timeout_s=1)
    got, out, err = arkai("--repo", kr, "agent", "anything", "--max-steps", "3")
    assert got == code, err
    assert needle in err and "Traceback" not in err
    assert code == 4 or "hook" in err  # a hook failure names the hook
    assert out == ""


def test_agent_without_a_hook_says_what_to_set(kr: Path, arkai: Runner) -> None:
    code, _, err = arkai("--repo", kr, "agent", "anything")
    assert code == 2 and "hooks.agent: not set" in err
