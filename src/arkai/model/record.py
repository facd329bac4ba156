"""The one ``to_dict`` of a dataclass whose JSON form is its fields as they are."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any


class AsDict:
    """Mixin for a dataclass: :meth:`to_dict` is :func:`dataclasses.asdict` of it (nested
    dataclasses, lists and dicts copied recursively), with tuples as lists: JSON arrays, which
    is what JSON Schema (the MCP tools' outputs) and every reader expect."""

    __slots__ = ()

    def to_dict(self) -> dict[str, Any]:
        return _lists(asdict(self))  # type: ignore[call-overload,no-any-return]


def _lists(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _lists(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_lists(v) for v in value]
    return value
