"""``params.yaml``: the pipeline's knobs, with defaults for anything a repo leaves out."""

from __future__ import annotations

import copy
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from arkai.adapters.fs import parse_yaml, read_repo_file
from arkai.adapters.raytasks import EXECUTORS
from arkai.errors import InvalidInputError, LibraryError
from arkai.model.status import MODES

DEFAULTS: dict[str, Any] = {
    "add": {
        "max_file_mb": 20,
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
        "retry_after_max_s": 60,
        "executor": "local",
        "ray": {"address": None, "max_retries": 3, "num_cpus": 1},
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
    "hooks": {"expand": [], "rerank": [], "timeout_s": 10, "agent": None},
    # arkai ask (docs/answers.md): a provider (and model) per role.
    "ask": {
        "shards": {"provider": "builtin", "model": None},
        "synthesizer": {"provider": "builtin", "model": None},
        "validator": {"provider": "builtin", "model": None},
        "concurrency": 4,
        "max_rounds": 3,
        "max_matches": 12,
        "timeout_s": 120,
    },
    # The agent surface (docs/agents.md).
    "mcp": {"allowed_roots": [], "max_reply_kb": 512, "timeout_s": 60},
    "agent": {"max_steps": 8, "timeout_s": 60},
    "condense": {"chunk_tokens": 4000, "shard_tokens": 800000},
    "tasks": {"provider": "builtin", "model": None},
    "remote": {"timeout_s": 60, "dvc_timeout_s": 3600},
    "memory": {
        "provider": "builtin",
        "model": None,
        "reinforce": 0.85,
        "contradict": 0.70,
        "new_confidence": 0.6,
        "reinforce_step": 0.2,
        "top_k": 5,
        "half_life_days": 30,
        "auto_prune": False,
        "prune_floor": 0.05,
        "insight_similarity": 0.8,
        "insight_min_items": 2,
    },
}


def positive_number(
    section: Mapping[str, Any] | None, where: str, default: float, *, zero: bool = False
) -> float:
    """The number at ``where`` (``"extract.timeout_s"``) in ``section``, its last key's parent.

    Missing or null gives ``default``; anything but a finite number above zero (or zero itself,
    with ``zero``) is an :class:`InvalidInputError` naming the key and the value.
    """
    value = (section or {}).get(where.rpartition(".")[2], default)
    if value is None:
        return default
    if not is_number(value) or value < 0 or (value == 0 and not zero):
        kind = "non-negative" if zero else "positive"
        raise InvalidInputError(f"params.yaml: {where} must be a {kind} number, got {value!r}")
    return float(value)


def whole_number(section: Mapping[str, Any] | None, where: str, default: int) -> int:
    """As :func:`positive_number`, for a whole number of at least one."""
    value = (section or {}).get(where.rpartition(".")[2], default)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidInputError(
            f"params.yaml: {where} must be a positive whole number, got {value!r}"
        )
    return value


def is_number(value: Any) -> bool:
    """A finite ``int`` or ``float`` (``True`` is not a number here)."""
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _merge(base: dict[str, Any], over: dict[str, Any], where: str = "") -> dict[str, Any]:
    """``over`` laid on ``base``; a section that is a mapping by default stays one (an empty
    one keeps the defaults). Raises ValueError naming the key when it is not."""
    out = copy.deepcopy(base)
    for key, value in over.items():
        if isinstance(out.get(key), dict):
            if value is None:
                continue
            if not isinstance(value, dict):
                raise ValueError(
                    f"{where}{key} must be a mapping (a section of keys), got {value!r:.60}"
                )
            out[key] = _merge(out[key], value, f"{where}{key}.")
        else:
            out[key] = value
    return out


def _check(params: dict[str, Any]) -> None:
    mode = params["extract"].get("match_mode")
    if mode not in MODES:
        raise ValueError(f"extract.match_mode must be one of {', '.join(MODES)}, got {mode!r}")
    executor = params["extract"].get("executor")
    if executor not in EXECUTORS:
        raise ValueError(
            f"extract.executor must be one of {', '.join(EXECUTORS)}, got {executor!r}"
        )


def load_params(root: Path) -> dict[str, Any]:
    """Defaults overlaid with the repo's ``params.yaml`` (missing file → defaults)."""
    path = root / "params.yaml"
    data = read_repo_file(path, root, missing_ok=True)
    if data is None:
        return copy.deepcopy(DEFAULTS)
    raw = parse_yaml(data, path)
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise LibraryError(f"{path}: expected a mapping at the top level")
    try:
        params = _merge(DEFAULTS, raw)
        _check(params)
    except ValueError as exc:
        raise LibraryError(f"{path}: {exc}") from None
    return params


#: Environment variables that override a parameter: name → (dotted key, applies only when the
#: parameter has this value, or None for always). The modules that read these keys honour them.
ENV_OVERRIDES: dict[str, tuple[str, str | None]] = {
    "ARKAI_EMBEDDER": ("index.embedder", "default"),
    "ARKAI_OPENAI_BASE_URL": ("providers.openai.base_url", None),
    "ARKAI_OPENAI_MODEL": ("providers.openai.model", None),
    "ARKAI_RAY_ADDRESS": ("extract.ray.address", None),
}


@dataclass(frozen=True)
class Setting:
    """One effective parameter and where its value came from."""

    key: str
    """Dotted path, e.g. ``extract.provider``."""
    value: Any
    source: str
    """``default`` (arkai's built-in), ``params.yaml``, or ``env:NAME``."""


def _leaves(tree: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in tree.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            out.update(_leaves(value, path + "."))
        else:
            out[path] = value
    return out


def effective_params(root: Path, environ: Mapping[str, str] | None = None) -> list[Setting]:
    """Every parameter the pipeline sees, sorted by key, with its source: the repo's
    ``params.yaml`` over arkai's defaults, and the environment overrides of
    :data:`ENV_OVERRIDES` (``environ`` defaults to the process environment)."""
    env = os.environ if environ is None else environ
    merged = _leaves(load_params(root))
    path = root / "params.yaml"
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except FileNotFoundError:
        raw = {}
    from_file = _leaves(raw) if isinstance(raw, dict) else {}
    settings = {
        key: Setting(key, value, "params.yaml" if key in from_file else "default")
        for key, value in merged.items()
    }
    for name, (key, only_when) in ENV_OVERRIDES.items():
        value = env.get(name)
        current = settings.get(key)
        if not value or (only_when is not None and (current is None or current.value != only_when)):
            continue
        settings[key] = Setting(key, value, f"env:{name}")
    return [settings[k] for k in sorted(settings)]
