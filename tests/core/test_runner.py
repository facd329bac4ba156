"""Runner pieces: chunking, merging, keys, retries and the breaker, with an in-memory provider."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest

from arkai.errors import LibraryError
from arkai.patterns import get_pattern
from arkai.providers.base import ProviderError, Request, Response
from arkai.providers.runner import (
    CircuitOpen,
    ResponseStore,
    Runner,
    RunnerConfig,
    chunk_lines,
    merge_outputs,
    response_problem,
)

TEXT = "\n".join(
    f"[00:00:{i:02d}] Line number {i} says something quite specific." for i in range(60)
)


def test_chunks_cover_every_line_with_overlap() -> None:
    chunks = chunk_lines(TEXT, 600, 2)
    assert len(chunks) > 3
    assert all(len(c) <= 600 for c in chunks)
    lines = TEXT.split("\n")
    seen = [ln for c in chunks for ln in c.split("\n")]
    assert set(seen) == set(lines)
    for a, b in itertools.pairwise(chunks):
        assert a.split("\n")[-2:] == b.split("\n")[:2]
    assert chunk_lines("short", 600, 2) == ["short"]


def test_a_very_long_line_is_split() -> None:
    long = "word " * 500
    chunks = chunk_lines(long, 300, 1)
    assert all(len(c) <= 300 for c in chunks)
    assert "".join(chunks).replace("\n", "").split() == long.split()


def test_merge_outputs() -> None:
    assert merge_outputs([[1], [2, 3]]) == [1, 2, 3]
    merged = merge_outputs([{"summary": "A.", "ideas": [1]}, {"summary": "B.", "ideas": [2]}])
    assert merged == {"summary": "A. B.", "ideas": [1, 2]}


class FlakyProvider:
    name = "flaky"

    def __init__(self, failures: list[ProviderError | None], limit: int = 10_000) -> None:
        self.failures = failures
        self.requests: list[Request] = []
        self.limit = limit

    def complete(self, request: Request, *, timeout: float) -> Response:
        self.requests.append(request)
        if self.failures:
            err = self.failures.pop(0)
            if err is not None:
                raise err
        first = request.input.split("\n")[0].split("] ", 1)[-1]
        return Response(text=f'[{{"claim": "{first}", "quote": "{first}"}}]', model="m1")

    def context_chars(self, model: str | None) -> int:
        return self.limit


def make(tmp_path: Path, provider: Any, **cfg: Any) -> Runner:
    config = RunnerConfig(backoff_base_s=0.01, **cfg)
    return Runner(provider=provider, store=ResponseStore(tmp_path / "r"), config=config,
                  sleep=lambda s: None)  # fmt: skip


def test_cache_and_keys(tmp_path: Path) -> None:
    prov = FlakyProvider([])
    runner = make(tmp_path, prov)
    pattern = get_pattern("extract_claims", None)
    first = runner.run(pattern, TEXT, {"variables": {}})
    assert not first.cached and len(prov.requests) == 1
    again = runner.run(pattern, TEXT, {"variables": {}})
    assert again.cached and again.value == first.value and len(prov.requests) == 1
    other = runner.run(pattern, TEXT, {"variables": {"max_claims": "3"}})
    assert not other.cached and len(prov.requests) == 2


def test_chunked_call_merges_and_caches_per_chunk(tmp_path: Path) -> None:
    prov = FlakyProvider([], limit=1000)
    runner = make(tmp_path, prov)
    result = runner.run(get_pattern("extract_claims", None), TEXT, {})
    assert result.chunks == len(prov.requests) > 1
    assert len(result.value) == result.chunks
    assert len(set(result.keys)) == result.chunks


def test_retry_then_success(tmp_path: Path) -> None:
    prov = FlakyProvider([ProviderError("429", retryable=True, status=429), None])
    runner = make(tmp_path, prov)
    runner.run(get_pattern("extract_claims", None), TEXT, {})
    assert runner.stats.retries == 1 and runner.stats.calls == 2


def test_non_retryable_fails_at_once(tmp_path: Path) -> None:
    prov = FlakyProvider([ProviderError("401", retryable=False, status=401)])
    runner = make(tmp_path, prov)
    with pytest.raises(ProviderError, match="401"):
        runner.run(get_pattern("extract_claims", None), TEXT, {})
    assert runner.stats.calls == 1 and runner.stats.failures == 1


def test_breaker_opens_after_consecutive_failures(tmp_path: Path) -> None:
    errors: list[ProviderError | None] = [ProviderError("500", retryable=True)] * 10
    runner = make(tmp_path, FlakyProvider(list(errors)), retries=0, breaker_threshold=2)
    pattern = get_pattern("extract_claims", None)
    with pytest.raises(ProviderError):
        runner.run(pattern, TEXT, {})
    with pytest.raises(CircuitOpen):
        runner.run(pattern, TEXT + "\nmore", {})


def test_stored_records_check_against_their_keys(tmp_path: Path) -> None:
    """What the runner stores passes ``response_problem`` (its key is the request's hash);
    ``put_raw`` files only such records; ``list_keys`` skips temporary and foreign names."""
    runner = make(tmp_path, FlakyProvider([]))
    key = runner.run(get_pattern("extract_claims", None), TEXT, {"variables": {}}).keys[0]
    store = runner.store
    raw = store.read_raw(key)
    assert raw is not None and response_problem(key, raw) is None
    other = make(tmp_path / "o", FlakyProvider([]))
    other_key = other.run(get_pattern("extract_claims", None), TEXT[:200], {}).keys[0]
    with pytest.raises(LibraryError, match="its key is"):
        store.put_raw(other_key, raw)
    with pytest.raises(LibraryError, match="not valid JSON"):
        store.put_raw(other_key, raw[: len(raw) // 2])
    assert not store.path(other_key).exists()
    (store.path(key).parent / f".{key}.json.x1.tmp").write_bytes(raw[:10])
    (store.path(key).parent / "notes.json").write_bytes(b"{}")
    assert store.list_keys() == [key]
    other_raw = other.store.read_raw(other_key)
    assert other_raw is not None
    store.put_raw(other_key, other_raw)
    assert store.list_keys() == sorted([key, other_key])
    assert store.get(other_key) == other.store.get(other_key)
