"""Providers are plugins: built-ins register through the ``arkai.providers`` entry-point group
exactly as a third-party package would. Two plugins claiming one name is an error at load time.

An entry point names a provider *class* (or any callable) taking the provider's config mapping —
``params["providers"][name]``; each provider applies its own environment overrides — or, for a
plugin that needs no config, a ready provider object.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import cache
from typing import Any

from arkai.adapters.plugins import load_plugins
from arkai.errors import InvalidInputError
from arkai.providers.base import Provider

GROUP = "arkai.providers"

ProviderFactory = Callable[[Mapping[str, Any]], Provider]
"""Builds a provider from its config mapping (a provider class is one)."""


@cache
def get_providers() -> dict[str, ProviderFactory]:
    """Every registered provider's factory by name, sorted by name."""
    found = {name: _factory(obj) for name, obj in load_plugins(GROUP, "provider").items()}
    return dict(sorted(found.items()))


def get_provider(name: str, config: Mapping[str, Any] | None = None) -> Provider:
    """The provider called ``name``, built from ``config`` (``params["providers"][name]``)."""
    providers = get_providers()
    if name not in providers:
        known = ", ".join(providers) or "none"
        raise InvalidInputError(
            f"unknown provider {name!r}; known: {known}",
            hint="set extract.provider in params.yaml",
        )
    return providers[name](config or {})


def _factory(obj: Any) -> ProviderFactory:
    if isinstance(obj, type) or (callable(obj) and not hasattr(obj, "complete")):
        return obj  # type: ignore[no-any-return]
    ready: Provider = obj

    def same(config: Mapping[str, Any]) -> Provider:
        return ready

    return same
