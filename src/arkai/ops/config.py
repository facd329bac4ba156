"""``arkai config``: the effective parameters and where each value came from."""

from __future__ import annotations

from arkai.adapters.params import Setting, effective_params
from arkai.adapters.repo import Repo
from arkai.errors import NotFoundError

__all__ = ["Setting", "config"]


def config(repo: Repo, key: str | None = None) -> list[Setting]:
    """Every effective parameter (or those of ``key``, a dotted key or section); raises
    :class:`NotFoundError` (exit 5) when ``key`` matches nothing."""
    settings = effective_params(repo.root)
    if key:
        settings = [s for s in settings if s.key == key or s.key.startswith(key + ".")]
        if not settings:
            raise NotFoundError(f"no parameter {key!r}", hint="`arkai config` lists them all")
    return settings
