"""Golden quote → span cases from ``tests/fixtures/resolve_cases.yaml`` (seed 000, V1 matching).

The expected offsets in the fixture were worked out by hand. Before the resolver is called, each
case is re-checked here with plain ``bytes`` operations, so a wrong fixture fails loudly as a
fixture error rather than silently agreeing with a wrong resolver.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest
import yaml

from arkai.core.document import Document
from arkai.core.resolve import resolve_quote

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "resolve_cases.yaml"
EXPECT_KEYS = {
    "status", "method", "match_count", "match_rank", "reason",
    "span", "line", "column", "video_timestamp", "slice",
}  # fmt: skip


def _naive_count(data: bytes, needle: bytes) -> int:
    """Overlapping occurrences, by checking every offset."""
    return sum(data[k : k + len(needle)] == needle for k in range(len(data) - len(needle) + 1))


def _sanity_check(case: dict[str, Any]) -> None:
    """The fixture's own numbers agree with plain byte slicing and searching."""
    name = case["name"]
    assert set(case) <= {"name", "document", "quote", "mode", "expect"}, name
    assert set(case["expect"]) == EXPECT_KEYS, name
    data = case["document"].encode("utf-8")
    needle = case["quote"].encode("utf-8")
    exp = case["expect"]
    if exp["span"] is None:
        assert exp["slice"] is None and exp["line"] is None and exp["column"] is None, name
        assert exp["video_timestamp"] is None, name
        if case.get("mode", "exact") == "exact" and needle.strip():
            assert data.find(needle) < 0, f"{name}: quote occurs, yet no span is expected"
        return
    start, end = exp["span"]
    assert 0 <= start <= end <= len(data), name
    assert data[start:end] == exp["slice"].encode("utf-8"), name
    if exp["method"] == "exact":
        assert data.find(needle) == start, name
        assert _naive_count(data, needle) == exp["match_count"], name
    head = data[:start]
    assert head.count(b"\n") + 1 == exp["line"], name
    assert len(head.rsplit(b"\n", 1)[-1].decode("utf-8")) + 1 == exp["column"], name


def _load_cases() -> list[dict[str, Any]]:
    cases = yaml.safe_load(FIXTURE.read_text(encoding="utf-8"))
    assert isinstance(cases, list)
    return cases


CASES = _load_cases()


def test_fixture_is_well_formed() -> None:
    names = [c["name"] for c in CASES]
    assert len(names) >= 25
    assert len(set(names)) == len(names), "case names must be unique"
    for case in CASES:
        _sanity_check(case)


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_golden_case(case: dict[str, Any]) -> None:
    _sanity_check(case)
    exp = case["expect"]
    data = case["document"].encode("utf-8")
    match = resolve_quote(Document(data), case["quote"], mode=case.get("mode", "exact"))

    res = match.resolution
    got = {
        "status": res.status,
        "method": res.method,
        "match_count": res.match_count,
        "match_rank": res.match_rank,
        "reason": res.reason,
    }
    assert got == {k: exp[k] for k in got}

    span = match.span
    if exp["span"] is None:
        assert span is None
        return
    assert span is not None
    assert [span.start, span.end] == exp["span"]
    assert span.artifact == "transcript.md"
    assert (span.line, span.column) == (exp["line"], exp["column"])
    assert span.video_timestamp == exp["video_timestamp"]
    assert data[span.start : span.end].decode("utf-8") == exp["slice"]
    assert span.slice_sha256 == "sha256:" + hashlib.sha256(exp["slice"].encode()).hexdigest()
    # Exact results carry no similarity score; only fuzzy/re-anchored ones do.
    assert res.score is None
