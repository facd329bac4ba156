"""Query markup: golden cases from ``tests/fixtures/markup_cases.yaml``, plus date periods."""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Any

import pytest
import yaml

from arkai.errors import InvalidInputError
from arkai.search.markup import Query, parse_date, parse_query

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "markup_cases.yaml"
CASES: list[dict[str, Any]] = yaml.safe_load(FIXTURE.read_text(encoding="utf-8"))
EMPTY = Query(raw="").to_dict()


def test_there_are_enough_cases() -> None:
    assert len(CASES) >= 20
    assert len({c["name"] for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_golden(case: dict[str, Any]) -> None:
    assert set(case) <= {"name", "query", "expect", "error", "warnings"}, case["name"]
    if "error" in case:
        with pytest.raises(InvalidInputError) as info:
            parse_query(case["query"])
        assert case["error"] in str(info.value)
        return
    q = parse_query(case["query"])
    got = q.to_dict()
    want = {**EMPTY, "raw": case["query"], **case["expect"]}
    assert set(case["expect"]) <= set(got), f"unknown keys in {case['name']}"
    assert got == want
    assert q.text == case["expect"]["text"]
    expected_warnings = case.get("warnings", [])
    assert len(q.warnings) == len(expected_warnings)
    for w, part in zip(q.warnings, expected_warnings, strict=True):
        assert part in w


@pytest.mark.parametrize(
    ("text", "start", "end"),
    [
        ("2024", date(2024, 1, 1), date(2025, 1, 1)),
        ("2024-12", date(2024, 12, 1), date(2025, 1, 1)),
        ("2024-02", date(2024, 2, 1), date(2024, 3, 1)),
        ("2024-12-31", date(2024, 12, 31), date(2025, 1, 1)),
    ],
)
def test_date_periods(text: str, start: date, end: date) -> None:
    b = parse_date(text)
    assert (b.start, b.end) == (start, end)
    assert b.end_utc().tzinfo is not None


def test_query_is_frozen_and_hashable() -> None:
    q = parse_query("a tag:b")
    assert hash(q) == hash(parse_query("a tag:b"))
    with pytest.raises(AttributeError):
        q.terms = ()  # type: ignore[misc]
    assert q.has_filters and not parse_query("a b").has_filters
