"""Loading plugins from entry-point groups — one mechanism for sources, providers and embedders.

Built-ins register exactly as third-party packages do. A plugin that fails to import, or two
plugins claiming one name, is an error at load time that names the plugin — never a silent
override.
"""

from __future__ import annotations

from importlib.metadata import entry_points
from typing import Any

from arkai.errors import ArkaiError


def load_plugins(group: str, kind: str) -> dict[str, Any]:
    """Name → loaded object for every entry point in ``group``, in discovery order.

    The name is the object's ``name`` attribute when it has one, else the entry point's name.
    ``kind`` ("source", "provider", …) words the errors.
    """
    found: dict[str, Any] = {}
    for ep in entry_points(group=group):
        try:
            obj = ep.load()
        except Exception as exc:
            raise ArkaiError(
                f"{kind} plugin {ep.name!r} ({ep.value}) failed to load: {exc}"
            ) from exc
        name = str(getattr(obj, "name", None) or ep.name)
        if name in found:
            raise ArkaiError(f"two {kind} plugins claim the name {name!r} ({ep.value})")
        found[name] = obj
    return found
