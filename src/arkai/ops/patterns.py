"""``arkai patterns list|show|run``: prompt patterns (the repo's ``patterns/``, then
``$ARKAI_PATTERNS_PATH``, then fabric's). Outside a knowledge repo ``repo`` is None: user
patterns only, default params, responses cached under ``~/.cache/arkai``."""

from __future__ import annotations

import copy
import os
from collections.abc import Mapping
from pathlib import Path

from arkai.adapters.events import utc_now
from arkai.adapters.params import DEFAULTS
from arkai.adapters.repo import Repo
from arkai.patterns import Pattern, get_pattern, get_patterns
from arkai.providers.runner import CallResult, make_runner

__all__ = ["Pattern", "list_patterns", "run_pattern", "show_pattern"]


def _root(repo: Repo | None) -> Path | None:
    return repo.root if repo is not None else None


def list_patterns(repo: Repo | None) -> list[Pattern]:
    """Every pattern found, sorted by name (the first directory holding a name wins)."""
    return list(get_patterns(_root(repo)).values())


def show_pattern(repo: Repo | None, name: str) -> Pattern:
    """The pattern called ``name`` (:class:`NotFoundError` naming close matches if none)."""
    return get_pattern(name, _root(repo))


def run_pattern(
    repo: Repo | None,
    name: str,
    text: str,
    *,
    provider: str | None = None,
    model: str | None = None,
    variables: Mapping[str, str] | None = None,
) -> CallResult:
    """Run pattern ``name`` on ``text`` through the provider runner: the validated output
    (``value``) and where it came from (cache keys, model, chunks)."""
    params = copy.deepcopy(repo.params if repo is not None else DEFAULTS)
    if provider:
        params["extract"]["provider"] = provider
    if model:
        params["extract"]["model"] = model
    pattern = get_pattern(name, _root(repo))
    # Outside a knowledge repo responses are cached under ~/.cache/arkai, never in the cwd.
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "arkai"
    runner = make_runner(_root(repo) or cache, params, refresh=False, now=utc_now())
    return runner.run(pattern, text, {"variables": dict(variables or {})})
