"""detect-secrets is imported only when a text holds a plugin's hint: a process that redacts
only other texts (a run's events) does without it (≈ 0.1 s a stage process), and the plugin
rules label what they find as when each of their patterns was a rule of its own."""

from __future__ import annotations

import json
import subprocess
import sys

from arkai.core.redact import redact
from arkai.core.redact_plugins import _PLUGINS, PLUGIN_NAMES, _Denylist, plugin_rules


def _imports(code: str) -> dict[str, list[str]]:
    probe = code + (
        "\nimport sys, json\nprint(json.dumps({'loaded': sorted(m for m in sys.modules"
        " if m.startswith('detect_secrets.plugins.'))}))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    got: dict[str, list[str]] = json.loads(out.stdout.strip().splitlines()[-1])
    return got


def test_a_run_logged_imports_no_plugin(tmp_path: object) -> None:
    got = _imports(
        "from pathlib import Path\n"
        "from arkai.adapters.events import run\n"
        f"with run(Path({str(tmp_path)!r}), 'index', items=3, note='a talk about bees') as log:\n"
        "    with log.step('chunks') as info:\n"
        "        info['path'] = 'library/transcripts/Talk 1 (ab12cd34)/transcript.md'\n"
    )
    assert got["loaded"] == []


def test_a_hint_imports_only_its_plugin_and_redacts() -> None:
    got = _imports(
        "from arkai.core.redact import redact_json\n"
        "out = redact_json({'url': 'postgres://user:hunter2secret@db.example/x'})\n"
        "assert out == {'url': 'postgres://user:[REDACTED:url_password]@db.example/x'}, out\n"
    )
    ours = {f"detect_secrets.plugins.{entry[0]}" for entry in _PLUGINS}
    assert ours & set(got["loaded"]) == {"detect_secrets.plugins.basic_auth"}


def test_each_plugin_is_found_and_labelled_by_its_pattern() -> None:
    """Every plugin's patterns load (the module and class named exist), and a plugin with
    several kinds labels each match by the pattern that made it."""
    rules = plugin_rules()
    assert [r.kind for r in rules] == [
        r.pattern.kinds[0] for r in rules if isinstance(r.pattern, _Denylist)
    ]
    for rule in rules:
        assert isinstance(rule.pattern, _Denylist) and rule.pattern.patterns()
    assert len(rules) == len(PLUGIN_NAMES)
    text = (
        'aws_access_key_id = "AKIAIOSFODNN7EXAMPLF"\n'
        'aws_secret_access_key = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEZ"\n'
    )
    out, counts = redact(text, ("aws_access_key", "aws_secret"))
    assert counts == {"aws_access_key": 1, "aws_secret": 1}, out
    assert "AKIAIOSFODNN7EXAMPLF" not in out and "bPxRfiCYEXAMPLEKEZ" not in out
