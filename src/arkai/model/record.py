"""The one ``to_dict`` of a dataclass whose JSON form is its fields as they are."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any


class AsDict:
    """Mixin for a dataclass: :meth:`to_dict` is :func:`dataclasses.asdict` of it (nested
    dataclasses, lists and dicts copied recursively)."""

    __slots__ = ()

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)  # type: ignore[call-overload,no-any-return]
