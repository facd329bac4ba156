"""Canonical JSON: re-running a stage over unchanged input gives byte-identical files."""

from __future__ import annotations

import json
from typing import Any

import pytest

from arkai.core import canonjson

SAMPLE: dict[str, Any] = {
    "zeta": 1,
    "alpha": {"b": [3, 2, 1], "a": None, "é": "café"},
    "quote": "東京 🚀 line\nnext\r\n",
    "Beta": True,
    "_under": 0.92,
}


def _key_paths(obj: Any) -> list[list[str]]:
    """The key order of every object in ``obj``, depth first."""
    if isinstance(obj, dict):
        out = [list(obj)]
        for v in obj.values():
            out.extend(_key_paths(v))
        return out
    if isinstance(obj, list):
        return [p for v in obj for p in _key_paths(v)]
    return []


@pytest.mark.parametrize("dump", [canonjson.dumps, canonjson.dumps_line])
def test_keys_sorted_at_every_level(dump: Any) -> None:
    out = dump(SAMPLE)
    parsed = json.loads(out)
    paths = _key_paths(parsed)
    assert paths, "expected at least one object"
    for keys in paths:
        assert keys == sorted(keys)
    assert out.index('"Beta"') < out.index('"_under"') < out.index('"alpha"') < out.index('"zeta"')


@pytest.mark.parametrize("dump", [canonjson.dumps, canonjson.dumps_line])
def test_insertion_order_does_not_matter(dump: Any) -> None:
    reversed_sample = dict(reversed(list(SAMPLE.items())))
    reversed_sample["alpha"] = dict(reversed(list(SAMPLE["alpha"].items())))
    assert list(reversed_sample) != list(SAMPLE)
    assert dump(reversed_sample) == dump(SAMPLE)


@pytest.mark.parametrize("dump", [canonjson.dumps, canonjson.dumps_line])
def test_non_ascii_kept_verbatim(dump: Any) -> None:
    out = dump(SAMPLE)
    for text in ["café", "東京", "🚀", '"é"']:
        assert text in out
    assert "\\u" not in out
    # Control characters are still escaped, so a line stays a line.
    assert "\\n" in out and "\\r" in out


def test_dumps_ends_with_exactly_one_newline_and_is_indented() -> None:
    out = canonjson.dumps(SAMPLE)
    assert out.endswith("}\n")
    assert not out.endswith("\n\n")
    assert '\n  "Beta": true,\n' in out
    assert "\r" not in out


def test_dumps_line_is_one_compact_line() -> None:
    out = canonjson.dumps_line(SAMPLE)
    assert out.endswith("\n")
    assert out.count("\n") == 1
    assert ": " not in out and ", " not in out
    assert out.startswith('{"Beta":true,')


def test_dumps_lines_keeps_order_one_line_each() -> None:
    objs = [{"n": 2, "a": "x"}, {"n": 1}, {"n": 3}]
    out = canonjson.dumps_lines(objs)
    lines = out.splitlines(keepends=True)
    assert lines == ['{"a":"x","n":2}\n', '{"n":1}\n', '{"n":3}\n']
    assert canonjson.dumps_lines([]) == ""


@pytest.mark.parametrize("dump", [canonjson.dumps, canonjson.dumps_line])
def test_redump_is_byte_identical(dump: Any) -> None:
    first = dump(SAMPLE)
    second = dump(json.loads(first))
    assert second.encode("utf-8") == first.encode("utf-8")
    assert json.loads(first) == SAMPLE


def test_floats_round_trip_exactly() -> None:
    obj = {"confidence": 0.1 + 0.2, "score": 92.35}
    out = canonjson.dumps_line(obj)
    assert json.loads(out) == obj
    assert canonjson.dumps_line(json.loads(out)) == out


@pytest.mark.parametrize(
    "value",
    [SAMPLE, [SAMPLE, (1, 2.5, -0.0)], "\u2028\x00\ud800", 1e300, 10**40, {}, [], None,
     {"n": float("nan"), "i": float("inf")}, {"b": {"a": [{"z": 1, "y": 2}]}}],
)  # fmt: skip
def test_encoders_made_once_give_the_bytes_of_json_dumps(value: Any) -> None:
    """The module keeps one encoder per form; what it writes is what ``json.dumps`` with the
    same options writes, every time (an encoder reused keeps no state between values)."""
    for _ in range(2):
        assert canonjson.dumps(value) == (
            json.dumps(value, sort_keys=True, ensure_ascii=False, indent=2) + "\n"
        )
        assert canonjson.dumps_compact(value) == json.dumps(
            value, sort_keys=True, ensure_ascii=False, separators=(",", ":")
        )
    with pytest.raises(ValueError, match="Circular"):
        loop: list[Any] = []
        loop.append(loop)
        canonjson.dumps_compact(loop)
    assert canonjson.dumps_compact({"after": "a failed call"}) == '{"after":"a failed call"}'


def test_iter_dumps_gives_the_text_of_dumps_in_pieces() -> None:
    doc = {"z": [1, 2.5, None, True], "a": {"ünï": "q\"\n", "b": []}, "e": {}, "n": -0.0,
           "items": [{"id": str(i), "tags": ["x"] * (i % 3)} for i in range(50)]}  # fmt: skip
    pieces = list(canonjson.iter_dumps(doc))
    assert len(pieces) > 10  # made as it goes, not in one piece
    assert "".join(pieces) == canonjson.dumps(doc)
    assert "".join(canonjson.iter_dumps([])) == canonjson.dumps([])
