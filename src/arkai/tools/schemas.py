"""Small builders for the tools' JSON Schemas (draft 2020-12)."""

from __future__ import annotations

from typing import Any

#: Bounds every tool's input schema shares.
MAX_QUERY = 1_000
MAX_ID = 200
MAX_TEXT = 100_000
MAX_RESULTS = 50

ID = {"type": "string", "minLength": 1, "maxLength": MAX_ID, "pattern": r"^[^\x00-\x1f]*$"}
QUERY = {"type": "string", "minLength": 1, "maxLength": MAX_QUERY}
MODE = {"type": "string", "enum": ["hybrid", "lexical", "vector"], "default": "hybrid"}
STR = {"type": "string"}
NSTR = {"type": ["string", "null"]}
INT = {"type": "integer"}
NINT = {"type": ["integer", "null"]}
BOOL = {"type": "boolean"}
ARR = {"type": "array"}
OBJ = {"type": "object"}
NOBJ = {"type": ["object", "null"]}


def count(default: int, maximum: int = MAX_RESULTS, minimum: int = 1) -> dict[str, Any]:
    return {"type": "integer", "minimum": minimum, "maximum": maximum, "default": default}


def inputs(required: list[str] | None = None, /, **props: Any) -> dict[str, Any]:
    """An input object: only these properties, ``required`` of them mandatory."""
    return {
        "type": "object",
        "properties": props,
        "required": required or [],
        "additionalProperties": False,
    }


def output(**props: Any) -> dict[str, Any]:
    """An output object that has every one of these properties (others allowed)."""
    return {"type": "object", "properties": props, "required": sorted(props)}


def rows(**props: Any) -> dict[str, Any]:
    """An array of objects that each have these properties."""
    return {"type": "array", "items": output(**props)}
