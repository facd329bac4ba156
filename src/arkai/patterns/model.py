"""The pattern record and the JSON Schema subset that ``pattern.yaml`` output schemas use.

arkai does not depend on ``jsonschema``; output schemas are checked by the small validator here.
It covers the keywords a pattern's output needs, and :func:`check_schema` rejects any other
keyword, so a schema never silently means less than it says:

- ``type`` (a name or a list of names: object, array, string, number, integer, boolean, null),
  ``enum``, ``const``;
- objects: ``properties``, ``required``, ``additionalProperties`` (boolean or schema);
- arrays: ``items`` (one schema), ``minItems``, ``maxItems``, ``uniqueItems``;
- strings: ``minLength``, ``maxLength`` (code points), ``pattern`` (Python ``re.search``);
- numbers: ``minimum``, ``maximum``, ``exclusiveMinimum``, ``exclusiveMaximum`` (numbers);
- combinators: ``anyOf``, ``oneOf``, ``allOf``;
- annotations, ignored when validating: ``title``, ``description``, ``default``, ``examples``,
  ``$schema``, ``$id``, ``$comment``, ``deprecated``, and any key starting with ``x-``.

arkai's own annotation ``x-verbatim: true`` marks a string that must be a verbatim substring of
the input (for an array of quotes, put it on the array's ``items``); the runner resolves those
strings to spans (see :func:`arkai.patterns.output.iter_verbatim`).

As in JSON Schema, ``integer`` accepts ``2.0``, and booleans are never numbers.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

Source = Literal["repo", "user", "packaged"]
PathSeg = str | int

TYPE_NAMES = ("object", "array", "string", "number", "integer", "boolean", "null")
VERBATIM = "x-verbatim"
_ANNOTATIONS = frozenset(
    ["title", "description", "default", "examples", "$schema", "$id", "$comment", "deprecated"]
)
_KEYWORDS = frozenset(
    [
        "type", "enum", "const",
        "properties", "required", "additionalProperties",
        "items", "minItems", "maxItems", "uniqueItems",
        "minLength", "maxLength", "pattern",
        "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
        "anyOf", "oneOf", "allOf",
    ]
)  # fmt: skip
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")


@dataclass(frozen=True)
class Pattern:
    """One prompt pattern: ``<dir>/<name>/system.md`` plus optional ``pattern.yaml``."""

    name: str
    """The folder name (``pattern.yaml``'s ``name`` must agree when given)."""
    path: Path
    """The pattern folder."""
    system: str
    """Text of ``system.md`` (placeholders not yet substituted; see ``render_system``)."""
    version: str
    """``pattern.yaml``'s integer ``version`` as a string; ``"0"`` without ``pattern.yaml``."""
    description: str
    """One line from ``pattern.yaml``; empty without it."""
    schema: dict[str, Any] | None = field(hash=False)
    """JSON schema of the output (``pattern.yaml``'s ``output``); ``None`` for free-text
    patterns such as fabric users' own."""
    variables: dict[str, str] = field(hash=False)
    """Default values of ``{{name}}`` placeholders, as strings."""
    digest: str
    """``sha256:`` of ``system.md`` bytes + ``b"\\0"`` + ``pattern.yaml`` bytes (empty when
    absent): changes whenever either file changes; part of the response-cache key."""
    source: Source
    """``repo`` for the knowledge repo's ``patterns/``, ``user`` for the other directories."""
    input_delimiters: tuple[str, str] | None = None
    """``pattern.yaml``'s ``input_delimiters`` (open, close): the input is sent between them,
    marked as data the model must not take instructions from (``{nonce}`` in either becomes a
    digest of the input, so the input cannot contain the closing delimiter). ``None``: sent
    as is."""


class SchemaDefinitionError(ValueError):
    """A schema uses an unsupported keyword or a keyword with a malformed value."""


# --------------------------------------------------------------------------------------------
# Paths and messages


def format_path(path: Sequence[PathSeg]) -> str:
    """``$`` then ``.key`` per property and ``.[i]`` per array index: ``$.[3].quote``. Keys
    that are not identifiers are written ``.["key with spaces"]``."""
    out = ["$"]
    for seg in path:
        if isinstance(seg, int):
            out.append(f".[{seg}]")
        elif _IDENT.fullmatch(seg):
            out.append(f".{seg}")
        else:
            out.append(f".[{json.dumps(seg, ensure_ascii=False)}]")
    return "".join(out)


def json_type(value: Any) -> str:
    """The JSON type name of a parsed value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _show(value: Any, limit: int = 60) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _has_type(value: Any, name: str) -> bool:
    if name == "integer":
        return (isinstance(value, int) and not isinstance(value, bool)) or (
            isinstance(value, float) and value.is_integer()
        )
    if name == "number":
        return _is_number(value)
    return json_type(value) == name


# --------------------------------------------------------------------------------------------
# Checking a schema


def check_schema(schema: Any, path: str = "$") -> None:
    """Raise :class:`SchemaDefinitionError` unless ``schema`` uses only the supported subset,
    each keyword with a well-formed value. ``path`` locates the sub-schema in messages."""
    if isinstance(schema, bool):
        return
    if not isinstance(schema, Mapping):
        raise SchemaDefinitionError(f"{path}: a schema must be a mapping, got {json_type(schema)}")
    for key, val in schema.items():
        if not isinstance(key, str):
            raise SchemaDefinitionError(f"{path}: keyword {key!r} is not a string")
        where = f"{path}.{key}"
        if key.startswith("x-") or key in _ANNOTATIONS:
            if key == VERBATIM and not isinstance(val, bool):
                raise SchemaDefinitionError(f"{where}: must be true or false")
            continue
        if key not in _KEYWORDS:
            raise SchemaDefinitionError(f"{where}: unsupported keyword")
        _check_keyword(key, val, where)


def _check_keyword(key: str, val: Any, where: str) -> None:
    bad = SchemaDefinitionError
    if key == "type":
        names = val if isinstance(val, list) else [val]
        if not names or not all(isinstance(n, str) and n in TYPE_NAMES for n in names):
            raise bad(f"{where}: must be one of {', '.join(TYPE_NAMES)} or a list of them")
    elif key == "enum":
        if not isinstance(val, list) or not val:
            raise bad(f"{where}: must be a non-empty list")
    elif key == "properties":
        if not isinstance(val, Mapping):
            raise bad(f"{where}: must be a mapping of property schemas")
        for name, sub in val.items():
            check_schema(sub, f"{where}.{name}")
    elif key == "required":
        if not isinstance(val, list) or not all(isinstance(n, str) for n in val):
            raise bad(f"{where}: must be a list of property names")
    elif key in ("additionalProperties", "items"):
        check_schema(val, where)
    elif key in ("minItems", "maxItems", "minLength", "maxLength"):
        if not isinstance(val, int) or isinstance(val, bool) or val < 0:
            raise bad(f"{where}: must be a non-negative integer")
    elif key == "uniqueItems":
        if not isinstance(val, bool):
            raise bad(f"{where}: must be true or false")
    elif key == "pattern":
        if not isinstance(val, str):
            raise bad(f"{where}: must be a regular expression string")
        try:
            re.compile(val)
        except re.error as exc:
            raise bad(f"{where}: invalid regular expression: {exc}") from None
    elif key in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        if not _is_number(val) or not math.isfinite(val):
            raise bad(f"{where}: must be a number")
    elif key in ("anyOf", "oneOf", "allOf"):
        if not isinstance(val, list) or not val:
            raise bad(f"{where}: must be a non-empty list of schemas")
        for i, sub in enumerate(val):
            check_schema(sub, f"{where}[{i}]")
    # "const" takes any value.


# --------------------------------------------------------------------------------------------
# Validating a value


def first_violation(schema: Any, value: Any) -> tuple[str, str] | None:
    """The first place ``value`` breaks ``schema``, as ``(path, problem)`` — e.g.
    ``("$.[3].quote", "required property missing")`` — or ``None`` when it conforms.

    Checks run in a fixed order (type, enum/const, then object keys in ``required`` order,
    then ``properties`` order, then array items by index), so the reported violation is
    deterministic. ``schema`` is assumed to pass :func:`check_schema`.
    """
    found = next(_violations(schema, value, []), None)
    if found is None:
        return None
    path, problem = found
    return format_path(path), problem


def _violations(
    schema: Any, value: Any, path: list[PathSeg]
) -> Iterator[tuple[list[PathSeg], str]]:
    if schema is True:
        return
    if schema is False:
        yield path, "no value is allowed here"
        return
    types = schema.get("type")
    if types is not None:
        names = types if isinstance(types, list) else [types]
        if not any(_has_type(value, n) for n in names):
            yield path, f"expected {' or '.join(names)}, got {json_type(value)}"
            return
    if "enum" in schema and not any(_same(value, e) for e in schema["enum"]):
        options = ", ".join(_show(e, 30) for e in schema["enum"])
        yield path, f"{_show(value)} is not one of: {options}"
        return
    if "const" in schema and not _same(value, schema["const"]):
        yield path, f"expected {_show(schema['const'])}, got {_show(value)}"
        return
    if isinstance(value, dict):
        yield from _object_violations(schema, value, path)
    elif isinstance(value, list):
        yield from _array_violations(schema, value, path)
    elif isinstance(value, str):
        yield from _string_violations(schema, value, path)
    elif _is_number(value):
        yield from _number_violations(schema, value, path)
    yield from _combinator_violations(schema, value, path)


def _object_violations(
    schema: Mapping[str, Any], value: dict[str, Any], path: list[PathSeg]
) -> Iterator[tuple[list[PathSeg], str]]:
    for name in schema.get("required", ()):
        if name not in value:
            yield [*path, name], "required property missing"
    props: Mapping[str, Any] = schema.get("properties", {})
    for name, sub in props.items():
        if name in value:
            yield from _violations(sub, value[name], [*path, name])
    extra = schema.get("additionalProperties", True)
    if extra is not True:
        for name in value:
            if name not in props:
                if extra is False:
                    yield [*path, name], "unexpected property"
                else:
                    yield from _violations(extra, value[name], [*path, name])


def _array_violations(
    schema: Mapping[str, Any], value: list[Any], path: list[PathSeg]
) -> Iterator[tuple[list[PathSeg], str]]:
    low, high = schema.get("minItems"), schema.get("maxItems")
    if low is not None and len(value) < low:
        yield path, f"expected at least {low} items, got {len(value)}"
    if high is not None and len(value) > high:
        yield path, f"expected at most {high} items, got {len(value)}"
    if schema.get("uniqueItems"):
        seen: dict[str, int] = {}
        for i, item in enumerate(value):
            key = json.dumps(item, sort_keys=True)
            if key in seen:
                yield [*path, i], f"duplicate of item {seen[key]}"
            seen.setdefault(key, i)
    items = schema.get("items")
    if items is not None:
        for i, item in enumerate(value):
            yield from _violations(items, item, [*path, i])


def _string_violations(
    schema: Mapping[str, Any], value: str, path: list[PathSeg]
) -> Iterator[tuple[list[PathSeg], str]]:
    low, high = schema.get("minLength"), schema.get("maxLength")
    if low is not None and len(value) < low:
        yield path, "empty string" if not value else f"shorter than {low} characters"
    if high is not None and len(value) > high:
        yield path, f"longer than {high} characters ({len(value)})"
    pattern = schema.get("pattern")
    if pattern is not None and re.search(pattern, value) is None:
        yield path, f"{_show(value)} does not match pattern {pattern!r}"


def _number_violations(
    schema: Mapping[str, Any], value: float, path: list[PathSeg]
) -> Iterator[tuple[list[PathSeg], str]]:
    low, high = schema.get("minimum"), schema.get("maximum")
    xlow, xhigh = schema.get("exclusiveMinimum"), schema.get("exclusiveMaximum")
    if low is not None and value < low:
        yield path, f"{_show(value)} is less than minimum {_show(low)}"
    if high is not None and value > high:
        yield path, f"{_show(value)} is greater than maximum {_show(high)}"
    if xlow is not None and value <= xlow:
        yield path, f"{_show(value)} is not greater than exclusive minimum {_show(xlow)}"
    if xhigh is not None and value >= xhigh:
        yield path, f"{_show(value)} is not less than exclusive maximum {_show(xhigh)}"


def _combinator_violations(
    schema: Mapping[str, Any], value: Any, path: list[PathSeg]
) -> Iterator[tuple[list[PathSeg], str]]:
    for sub in schema.get("allOf", ()):
        yield from _violations(sub, value, path)
    if "anyOf" in schema:
        branches = schema["anyOf"]
        if not any(next(_violations(s, value, []), None) is None for s in branches):
            yield path, f"matches none of the {len(branches)} anyOf schemas"
    if "oneOf" in schema:
        branches = schema["oneOf"]
        hits = sum(next(_violations(s, value, []), None) is None for s in branches)
        if hits != 1:
            yield path, f"matches {hits} of the oneOf schemas, expected exactly 1"


def _same(a: Any, b: Any) -> bool:
    """JSON equality: ``1 == 1.0`` but ``true != 1``."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if _is_number(a) and _is_number(b):
        return bool(a == b)
    return type(a) is type(b) and bool(a == b)


def strip_annotations(schema: Any) -> Any:
    """A copy of ``schema`` without ``x-`` keys, for APIs that reject unknown keywords
    (structured-output modes). Property names are kept even when they start with ``x-``."""
    if isinstance(schema, Mapping):
        out: dict[str, Any] = {}
        for key, val in schema.items():
            if key.startswith("x-"):
                continue
            if key == "properties" and isinstance(val, Mapping):
                out[key] = {name: strip_annotations(sub) for name, sub in val.items()}
            elif key in ("items", "additionalProperties") or key in ("anyOf", "oneOf", "allOf"):
                out[key] = strip_annotations(val)
            else:
                out[key] = val
        return out
    if isinstance(schema, list):
        return [strip_annotations(s) for s in schema]
    return schema
