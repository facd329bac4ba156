from dataclasses import dataclass

import jsonschema

from arkai.model.answer import Scope
from arkai.model.record import AsDict


@dataclass(frozen=True, slots=True)
class _Inner(AsDict):
    ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class _Outer(AsDict):
    inner: _Inner
    pairs: tuple[tuple[int, int], ...]
    by_key: dict[str, tuple[str, ...]]


def test_tuples_become_lists_at_every_depth() -> None:
    d = _Outer(_Inner(("a", "b")), ((1, 2),), {"k": ("x",)}).to_dict()
    assert d == {"inner": {"ids": ["a", "b"]}, "pairs": [[1, 2]], "by_key": {"k": ["x"]}}
    assert type(d["inner"]["ids"]) is list and type(d["pairs"][0]) is list


def test_a_tuple_field_is_a_json_schema_array() -> None:
    # The MCP tools check their outputs with JSON Schema, where a Python tuple is no array.
    scope = Scope(None, "2024", False, "asked", ("shard-001",), text="q")
    schema = {"type": "object", "properties": {"shards": {"type": "array"}}}
    jsonschema.validate(scope.to_dict(), schema)
    assert scope.to_dict()["shards"] == ["shard-001"]
