"""Repair and validation of model output (``arkai.patterns.output``).

The golden cases live in ``tests/fixtures/patterns/outputs.yaml``: messy outputs (fenced,
chatty, commented, trailing commas, wrapped arrays) with the value they must become, and broken
ones (truncated, prose only, single quotes, schema violations) with the exact error message.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from arkai.errors import ArkaiError
from arkai.patterns import (
    OutputError,
    Pattern,
    first_violation,
    format_path,
    iter_verbatim,
    load_pattern,
    parse_json,
    parse_output,
)

ROOT = Path(__file__).resolve().parents[2]
SCAFFOLD = ROOT / "src" / "arkai" / "scaffold" / "patterns"
FIXTURE = ROOT / "tests" / "fixtures" / "patterns" / "outputs.yaml"
CASES: list[dict[str, Any]] = yaml.safe_load(FIXTURE.read_text(encoding="utf-8"))


def _pattern(name: str) -> Pattern:
    return load_pattern(SCAFFOLD / name, "repo")


def _schema_of(case: dict[str, Any]) -> dict[str, Any] | None:
    if "pattern" in case:
        return _pattern(case["pattern"]).schema
    schema: dict[str, Any] | None = case["schema"]
    return schema


def test_fixture_is_well_formed() -> None:
    names = [c["name"] for c in CASES]
    assert len(names) == len(set(names)) >= 15
    for case in CASES:
        assert set(case) <= {"name", "pattern", "schema", "raw", "expect", "error", "kind"}
        assert ("pattern" in case) != ("schema" in case), case["name"]
        assert ("expect" in case) != ("error" in case), case["name"]
        assert ("error" in case) == ("kind" in case), case["name"]


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_golden(case: dict[str, Any]) -> None:
    schema = _schema_of(case)
    if "expect" in case:
        assert parse_json(case["raw"], schema) == case["expect"]
        return
    with pytest.raises(OutputError) as info:
        parse_json(case["raw"], schema)
    err = info.value
    assert err.message == case["error"]
    assert err.kind == case["kind"]
    assert "\n" not in err.message
    assert err.raw == case["raw"]


def test_parse_output_uses_the_pattern_schema() -> None:
    pattern = _pattern("extract_claims")
    raw = 'Here: {"claims": [{"claim": "c", "quote": "q"}]}'
    assert parse_output(pattern, raw) == [{"claim": "c", "quote": "q"}]
    with pytest.raises(OutputError, match=r"^schema: \$\.\[0\]\.claim: required"):
        parse_output(pattern, '[{"quote": "q"}]')


def test_error_details() -> None:
    raw = "[" + '{"claim": "c", "quote": "q"},' * 200  # truncated, long
    with pytest.raises(OutputError) as info:
        parse_json(raw, _pattern("extract_claims").schema)
    err = info.value
    assert isinstance(err, ArkaiError)
    assert err.kind == "invalid_json" and err.line == 1 and err.column == len(raw) + 1
    assert err.raw == raw
    assert "truncated" in str(err)

    with pytest.raises(OutputError) as info:
        parse_json('[{"claim": 1, "quote": "q"}]', _pattern("extract_claims").schema)
    assert info.value.path == "$.[0].claim"
    assert info.value.raw == '[{"claim": 1, "quote": "q"}]'


def test_largest_candidate_error_wins() -> None:
    """A small valid-looking example in chatter must not hide the payload's real problem."""
    schema = _pattern("extract_claims").schema
    raw = 'Format: {"claim": "..."}\n[{"claim": "a", "quote": "b"}, {"claim": "c", "quote": 5}]'
    with pytest.raises(OutputError, match=r"^schema: \$\.\[1\]\.quote: expected string"):
        parse_json(raw, schema)


def test_inner_value_of_broken_payload_is_not_returned() -> None:
    schema = {"type": "object"}
    raw = '{"a": {"b": 1}, "c": oops}'
    with pytest.raises(OutputError, match="invalid JSON at line 1 col 22"):
        parse_json(raw, schema)


def test_iter_verbatim_finds_every_marked_string() -> None:
    pattern = _pattern("extract_wisdom")
    value = {
        "summary": "s",
        "ideas": [{"text": "t1", "quote": "q1"}],
        "insights": [],
        "quotes": ["q2", "q3"],
        "facts": [{"text": "t2", "quote": "q4"}],
        "references": ["not a quote"],
        "one_sentence_takeaway": "x",
    }
    found = [(format_path(p), q) for p, q in iter_verbatim(pattern.schema, value)]
    assert found == [
        ("$.ideas.[0].quote", "q1"),
        ("$.quotes.[0]", "q2"),
        ("$.quotes.[1]", "q3"),
        ("$.facts.[0].quote", "q4"),
    ]
    assert list(iter_verbatim(None, value)) == []


@pytest.mark.parametrize(
    ("schema", "value", "expected"),
    [
        ({"type": "integer"}, 2.0, None),
        ({"type": "integer"}, True, ("$", "expected integer, got boolean")),
        ({"type": "number"}, False, ("$", "expected number, got boolean")),
        ({"type": ["string", "null"]}, None, None),
        ({"enum": [1, "a"]}, 1.0, None),
        ({"enum": [1]}, True, ("$", "true is not one of: 1")),
        ({"const": "x"}, "y", ("$", 'expected "x", got "y"')),
        ({"type": "string", "minLength": 1}, "", ("$", "empty string")),
        ({"type": "string", "maxLength": 2}, "abc", ("$", "longer than 2 characters (3)")),
        ({"pattern": "^[0-9a-f]{4}$"}, "zz",
         ("$", "\"zz\" does not match pattern '^[0-9a-f]{4}$'")),
        ({"maxItems": 1}, [1, 2], ("$", "expected at most 1 items, got 2")),
        ({"uniqueItems": True}, [1, 2, 1], ("$.[2]", "duplicate of item 0")),
        ({"exclusiveMinimum": 0}, 0, ("$", "0 is not greater than exclusive minimum 0")),
        ({"additionalProperties": False, "properties": {"a": {}}}, {"a": 1, "b": 2},
         ("$.b", "unexpected property")),
        ({"additionalProperties": {"type": "string"}}, {"odd key": 1},
         ('$.["odd key"]', "expected string, got integer")),
        ({"anyOf": [{"type": "string"}, {"type": "integer"}]}, 1.5,
         ("$", "matches none of the 2 anyOf schemas")),
        ({"oneOf": [{"type": "number"}, {"type": "integer"}]}, 1,
         ("$", "matches 2 of the oneOf schemas, expected exactly 1")),
        ({"allOf": [{"type": "object", "required": ["k"]}]}, {},
         ("$.k", "required property missing")),
        (False, 1, ("$", "no value is allowed here")),
    ],
)  # fmt: skip
def test_schema_subset(schema: Any, value: Any, expected: tuple[str, str] | None) -> None:
    assert first_violation(schema, value) == expected


def test_large_output_is_repaired() -> None:
    """20,000 claims in a fenced, chatty answer with a trailing comma (its speed is measured by
    ``bench/output_repair.py``, not asserted here)."""
    items = [{"claim": f"Claim {i} {{x}}", "quote": f'he said "{i}" [ok]'} for i in range(20000)]
    payload = json.dumps(items, indent=1)
    assert payload.endswith("}\n]")
    payload = payload[:-2] + ",\n]"  # a trailing comma: the lenient pass runs on all of it
    raw = "Here is the JSON [as requested]:\n```json\n" + payload + "\n```\nThanks!"
    schema = _pattern("extract_claims").schema
    assert parse_json(raw, schema) == items
