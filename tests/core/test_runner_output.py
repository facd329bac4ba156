"""What the runner hands on from a model is always encodable as UTF-8 (hostile output)."""

from __future__ import annotations

import sys
from pathlib import Path

from arkai.patterns import get_pattern
from arkai.providers.command import CommandProvider
from arkai.providers.runner import ResponseStore, Runner

HOOK = """
import json, sys
sys.stdin.read()
claims = '[{"claim": "c", "quote": "' + chr(92) + 'udc00 bees"}]'  # JSON text with a lone surrogate
print(json.dumps({"ok": True, "output": claims}))
"""


def test_lone_surrogates_in_model_output_become_replacement_characters(tmp_path: Path) -> None:
    hook = tmp_path / "hook.py"
    hook.write_text(HOOK)
    runner = Runner(
        CommandProvider({"command": [sys.executable, str(hook)]}),
        ResponseStore(tmp_path / "responses"),
    )
    pattern = get_pattern("extract_claims", None)
    for _ in range(2):  # the fresh answer, then the cached one
        [claim] = runner.run(pattern, "Bees dance.", {}).value
        assert claim["quote"].strip("\ufffd") == " bees" and claim["quote"][0] == "\ufffd"
        claim["quote"].encode("utf-8")
    assert runner.stats.cache_hits == 1
