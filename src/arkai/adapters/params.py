"""``params.yaml``: the pipeline's knobs, with defaults for anything a repo leaves out."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

from arkai.errors import LibraryError

DEFAULTS: dict[str, Any] = {
    "add": {
        "max_file_mb": 50,
        "default_type": "transcripts",
        "timeout_s": 20,
        "redact_chats": True,
    },
    "youtube": {"languages": ["en"], "timeout_s": 10},
    "podcast": {"timeout_s": 20},
    "extract": {
        "provider": "builtin",
        "model": None,
        "match_mode": "exact",
        "fuzzy_threshold": 90,
        "patterns": {
            "default": ["extract_claims", "extract_entities", "extract_wisdom", "summarize"],
            "chats": ["extract_claims", "extract_entities", "condense_chat"],
        },
        "variables": {"max_claims": 100},
        "verify": True,
        "concurrency": 4,
        "timeout_s": 120,
        "retries": 3,
        "backoff_s": 1.0,
        "circuit_breaker": 5,
    },
    "providers": {
        "builtin": {},
        "openai": {
            "base_url": "https://api.openai.com/v1",
            "model": "gpt-4o-mini",
            "api_key_env": "OPENAI_API_KEY",
            "json_mode": "auto",
            "temperature": 0,
        },
        "fabric": {"binary": "fabric"},
        "command": {"command": []},
    },
    "validate": {"fail_on_stale": True},
}


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def load_params(root: Path) -> dict[str, Any]:
    """Defaults overlaid with the repo's ``params.yaml`` (missing file → defaults)."""
    path = root / "params.yaml"
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return copy.deepcopy(DEFAULTS)
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise LibraryError(f"{path}: not valid YAML ({exc})") from None
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise LibraryError(f"{path}: expected a mapping at the top level")
    return _merge(DEFAULTS, raw)
