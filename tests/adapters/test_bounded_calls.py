"""Provider calls are bounded: a total deadline per call (a trickling server is cut off), capped
``Retry-After`` waits, and a stop request (what SIGTERM/SIGINT raise) ends any wait at once.

Real servers on 127.0.0.1 and real hook processes; assertions are on outcomes (which error, that
the call ended at all), with generous hang guards instead of tight timings.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from arkai.adapters import interrupt
from arkai.adapters.http import FetchError, fetch
from arkai.errors import InvalidInputError
from arkai.patterns import get_pattern
from arkai.providers.base import ProviderError, Request
from arkai.providers.command import CommandProvider
from arkai.providers.openai import OpenAIProvider
from arkai.providers.runner import ResponseStore, Runner, RunnerConfig
from tests.adapters.fake_llm import FakeLLM, fake_llm_fixture  # noqa: F401
from tests.adapters.httpserver import LocalHTTPServer, http_server_fixture  # noqa: F401
from tests.adapters.test_provider_command import alive
from tests.conftest import in_thread

HANG_GUARD_S = 30.0
HOOKS = Path(__file__).resolve().parents[1] / "fixtures" / "providers"
REQUEST = Request(
    pattern="extract_claims", system="Extract claims.", input="Bees dance. Ants march."
)


@pytest.fixture(autouse=True)
def _lowered_flag() -> Iterator[None]:
    interrupt.clear_stop()
    yield
    interrupt.clear_stop()


def wait_for(predicate: Callable[[], bool]) -> None:
    deadline = time.monotonic() + HANG_GUARD_S
    while not predicate():
        assert time.monotonic() < deadline, "condition never came true"
        time.sleep(0.02)


def test_trickling_llm_server_is_cut_at_the_deadline(fake_llm: FakeLLM) -> None:
    # Headers and body at 2 bytes/s: each byte comes well within any socket timeout, and the
    # headers alone take longer than the hang guard.
    fake_llm.set_mode("trickle")
    fake_llm.trickle_interval = 0.5
    provider = OpenAIProvider({"base_url": fake_llm.base_url, "model": "m"})
    thread, box = in_thread(lambda: provider.complete(REQUEST, timeout=1.0))
    thread.join(HANG_GUARD_S)
    assert not thread.is_alive(), "a trickling server held the call past its deadline"
    error = box.get("error")
    assert isinstance(error, ProviderError), box
    assert "within 1s (timed out)" in str(error) and error.retryable


def test_trickle_mode_answers_in_full_given_time(fake_llm: FakeLLM) -> None:
    fake_llm.set_mode("trickle")
    fake_llm.trickle_interval = 0.0005
    provider = OpenAIProvider({"base_url": fake_llm.base_url, "model": "m"})
    assert "Bees dance." in provider.complete(REQUEST, timeout=HANG_GUARD_S).text


def test_trickling_web_server_is_cut_at_the_deadline(http_server: LocalHTTPServer) -> None:
    http_server.route("/slow", body=b"<html>" + b"x" * 400 + b"</html>", trickle=0.1)
    url = http_server.url("/slow")
    thread, box = in_thread(lambda: fetch(url, timeout=1.0))
    thread.join(HANG_GUARD_S)
    assert not thread.is_alive()
    assert isinstance(box.get("error"), FetchError), box
    assert str(box["error"]) == f"{url}: timed out after 1 s"


def test_stop_ends_a_call_waiting_on_the_server(fake_llm: FakeLLM) -> None:
    fake_llm.set_mode("hang")
    provider = OpenAIProvider({"base_url": fake_llm.base_url, "model": "m"})
    thread, box = in_thread(lambda: provider.complete(REQUEST, timeout=600))
    wait_for(lambda: bool(fake_llm.chat_requests))
    interrupt.request_stop()
    thread.join(HANG_GUARD_S)
    assert not thread.is_alive(), "the call ignored the stop request"
    assert isinstance(box.get("error"), interrupt.Interrupted), box


def test_stop_ends_a_trickling_read(fake_llm: FakeLLM) -> None:
    fake_llm.set_mode("trickle")
    fake_llm.trickle_interval = 0.2
    provider = OpenAIProvider({"base_url": fake_llm.base_url, "model": "m"})
    thread, box = in_thread(lambda: provider.complete(REQUEST, timeout=600))
    wait_for(lambda: bool(fake_llm.chat_requests))
    interrupt.request_stop()
    thread.join(HANG_GUARD_S)
    assert not thread.is_alive()
    assert isinstance(box.get("error"), interrupt.Interrupted), box


def runner_for(fake: FakeLLM, tmp_path: Path, **config: Any) -> Runner:
    provider = OpenAIProvider({"base_url": fake.base_url, "model": "m"})
    return Runner(provider, ResponseStore(tmp_path / "responses"), RunnerConfig(**config))


def test_retry_after_over_the_cap_fails_now(fake_llm: FakeLLM, tmp_path: Path) -> None:
    fake_llm.set_mode("rate_limit")
    fake_llm.retry_after = "100000"
    runner = runner_for(fake_llm, tmp_path, retry_after_max_s=60.0, retries=3)
    pattern = get_pattern("extract_claims", None)
    thread, box = in_thread(lambda: runner.run(pattern, "Bees dance. Ants march.", {}))
    thread.join(HANG_GUARD_S)
    assert not thread.is_alive(), "Retry-After: 100000 was obeyed"
    error = box.get("error")
    assert isinstance(error, ProviderError) and not error.retryable, box
    assert "asked to wait 100000s" in str(error) and "extract.retry_after_max_s (60s)" in str(error)
    assert len(fake_llm.chat_requests) == 1


def test_retry_after_under_the_cap_is_obeyed(fake_llm: FakeLLM, tmp_path: Path) -> None:
    fake_llm.set_mode("rate_limit_then_ok")
    fake_llm.retry_after = "2"
    waits: list[float] = []
    runner = runner_for(fake_llm, tmp_path, retry_after_max_s=5.0)
    runner.sleep = waits.append
    runner.run(get_pattern("extract_claims", None), "Bees dance. Ants march.", {})
    assert waits == [2.0]


def test_stop_ends_a_backoff_sleep(fake_llm: FakeLLM, tmp_path: Path) -> None:
    fake_llm.set_mode("rate_limit")
    fake_llm.retry_after = "50"
    runner = runner_for(fake_llm, tmp_path, retry_after_max_s=60.0)
    pattern = get_pattern("extract_claims", None)
    thread, box = in_thread(lambda: runner.run(pattern, "Bees dance. Ants march.", {}))
    wait_for(lambda: bool(fake_llm.chat_requests))
    time.sleep(0.2)  # not needed for correctness: the flag is seen before or during the sleep
    interrupt.request_stop()
    thread.join(HANG_GUARD_S)
    assert not thread.is_alive(), "the backoff sleep ignored the stop request"
    assert isinstance(box.get("error"), interrupt.Interrupted), box
    assert runner.stats.failures == 0, "an interrupted call is not a provider failure"


def test_stop_kills_a_command_provider(tmp_path: Path) -> None:
    pidfile = tmp_path / "child.pid"
    hook = CommandProvider({"command": [sys.executable, str(HOOKS / "slow_hook.py"), str(pidfile)]})
    thread, box = in_thread(lambda: hook.complete(REQUEST, timeout=600))
    wait_for(pidfile.exists)
    interrupt.request_stop()
    thread.join(HANG_GUARD_S)
    assert not thread.is_alive()
    assert isinstance(box.get("error"), interrupt.Interrupted), box
    child = int(pidfile.read_text())
    wait_for(lambda: not alive(child))


@pytest.mark.parametrize(
    ("key", "value"),
    [("timeout_s", 0), ("timeout_s", "soon"), ("retries", -1), ("retry_after_max_s", True),
     ("backoff_s", float("nan"))],
)  # fmt: skip
def test_runner_params_are_checked(key: str, value: Any) -> None:
    with pytest.raises(InvalidInputError, match=f"params.yaml: extract.{key} must be"):
        RunnerConfig.from_params({key: value})


def test_runner_params_defaults() -> None:
    cfg = RunnerConfig.from_params({"retry_after_max_s": 5})
    assert (cfg.timeout_s, cfg.retries, cfg.retry_after_max_s) == (120.0, 3, 5.0)


def test_a_redirect_loop_is_a_fetch_error(http_server: LocalHTTPServer) -> None:
    http_server.redirect("/loop", "/loop")
    with pytest.raises(FetchError, match=r"/loop: HTTP 30\d"):
        fetch(http_server.url("/loop"), timeout=HANG_GUARD_S)
