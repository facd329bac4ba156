"""Providers are plugins: built-ins register through the ``arkai.providers`` entry-point group
exactly as a third-party package would. Two plugins claiming one name is an error at load time.

An entry point names a provider *class* (or any callable) taking the provider's config mapping —
``params["providers"][name]``; each provider applies its own environment overrides — or, for a
plugin that needs no config, a ready provider object.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import cache
from importlib.metadata import entry_points
from typing import Any

from arkai.errors import ArkaiError, InvalidInputError
from arkai.providers.base import Provider

GROUP = "arkai.providers"

ProviderFactory = Callable[[Mapping[str, Any]], Provider]
"""Builds a provider from its config mapping (a provider class is one)."""


@cache
def get_providers() -> dict[str, ProviderFactory]:
    """Every registered provider's factory by name, sorted by name."""
    found: dict[str, ProviderFactory] = {}
    for ep in entry_points(group=GROUP):
        try:
            obj = ep.load()
        except Exception as exc:
            raise ArkaiError(
                f"provider plugin {ep.name!r} ({ep.value}) failed to load: {exc}"
            ) from exc
        name = str(getattr(obj, "name", None) or ep.name)
        if name in found:
            raise ArkaiError(f"two provider plugins claim the name {name!r} ({ep.value})")
        found[name] = _factory(obj)
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
