"""``extract.executor: ray`` on a real local Ray cluster: a head node and a worker node started
with ``ray start`` as separate processes (the run's one cluster: tests/raycluster.py), the
provider a real OpenAI-compatible server on 127.0.0.1 (tests/adapters/fake_llm.py).

Same bytes as a local run, at most ``extract.concurrency`` provider calls in flight across the
cluster, a worker killed mid-task (the task is retried, nothing partial or doubled), and a
driver killed mid-run (the next run redoes nothing finished).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from arkai.adapters.raytasks import ENV_ADDRESS
from arkai.adapters.repo import Repo
from arkai.ops.extract import ExtractSummary, run_extract
from tests.adapters.fake_llm import FakeLLM, fake_llm_fixture  # noqa: F401
from tests.conftest import BIN, SAMPLES, Runner, in_thread, tool_env
from tests.func.test_extract_runner import SOURCES, use_fake
from tests.raycluster import HANG_GUARD_S, Cluster

pytestmark = pytest.mark.slow

NOW = "2026-01-02T03:04:05Z"
PATTERNS = ["extract_claims", "extract_entities", "extract_wisdom", "summarize"]


def _library(
    kr: Path, arkai: Runner, fake: FakeLLM, sources: tuple[str, ...], **extract: Any
) -> Path:
    code, _, err = arkai("--repo", kr, "add", *(SAMPLES / s for s in sources), "--quiet")
    assert code == 0, err
    use_fake(kr, fake, verify=True, **extract)
    params = yaml.safe_load((kr / "params.yaml").read_text())
    params["extract"]["patterns"] = {"default": PATTERNS}
    (kr / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    return kr


def tree(root: Path) -> dict[str, bytes]:
    """Every file under ``root``, by relative path."""
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def extract(kr: Path, executor: str) -> ExtractSummary:
    return run_extract(Repo.open(kr), now=NOW, executor=executor)


def wait_for(predicate: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + HANG_GUARD_S
    while not predicate():
        assert time.monotonic() < deadline, f"never happened: {what}"
        time.sleep(0.05)


def test_ray_writes_the_bytes_of_a_local_run_with_bounded_calls(
    tmp_path: Path, kr: Path, arkai: Runner, fake_llm: FakeLLM, on_cluster: Cluster
) -> None:
    # Tasks reserve half a CPU: the two-CPU cluster could run four at once; concurrency is 2.
    # Held calls must not time out (a retried call would be one more in flight).
    local = _library(kr, arkai, fake_llm, SOURCES, concurrency=2, ray={"num_cpus": 0.5},
                     timeout_s=HANG_GUARD_S)  # fmt: skip
    remote = tmp_path / "remote"
    shutil.copytree(local, remote)
    got = extract(local, "local")
    assert got.executor == "local" and got.extracted == 3 and not got.failed
    calls = len(fake_llm.chat_requests)

    fake_llm.max_in_flight = 0
    fake_llm.gate = threading.Event()
    thread, box = in_thread(lambda: extract(remote, "ray"))
    try:
        wait_for(lambda: fake_llm.in_flight >= 2, "two calls in flight")
        # All three items were ready to go: a third call now would break the bound.
        deadline = time.monotonic() + 3.0
        while time.monotonic() < deadline and fake_llm.in_flight <= 2:
            time.sleep(0.05)
    finally:
        fake_llm.gate.set()
    thread.join(HANG_GUARD_S)
    assert not thread.is_alive()
    summary = box.get("result")
    assert isinstance(summary, ExtractSummary), box
    assert summary.executor == "ray" and summary.extracted == 3 and not summary.failed
    assert fake_llm.max_in_flight == 2
    assert len(fake_llm.chat_requests) == 2 * calls  # every call made once more, on the workers
    assert summary.stats.calls == calls and summary.stats.cache_hits == 0

    # Byte for byte: the items' files, and the response store the driver wrote for the workers.
    assert tree(remote / "extracted") == tree(local / "extracted")
    assert tree(remote / ".arkai" / "responses") == tree(local / ".arkai" / "responses")

    # The CLI's per-run option; --json says where it ran. Every response comes from the store.
    code, out, err = arkai("--repo", remote, "extract", "--executor", "ray", "--force", "--json")
    assert code == 0, err
    report = json.loads(out)
    assert report["executor"] == "ray" and report["extracted"] == 3
    assert report["calls"] == 0 and report["cache_hits"] == calls
    assert len(fake_llm.chat_requests) == 2 * calls
    assert tree(remote / "extracted") == tree(local / "extracted")


def _client_pid(server_port: int) -> int | None:
    """The process holding a TCP connection to ``server_port`` on 127.0.0.1 (from /proc)."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            for row in Path(table).read_text().splitlines()[1:]:
                cols = row.split()
                if int(cols[2].rsplit(":", 1)[1], 16) == server_port and cols[3] == "01":
                    inodes.add(cols[9])
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        with contextlib.suppress(OSError):
            for fd in (proc / "fd").iterdir():
                link = os.readlink(fd)
                if link.startswith("socket:[") and link[8:-1] in inodes:
                    return int(proc.name)
    return None


def test_a_worker_killed_mid_task_is_retried_without_partial_outputs(
    tmp_path: Path, kr: Path, arkai: Runner, fake_llm: FakeLLM, on_cluster: Cluster
) -> None:
    library = _library(kr, arkai, fake_llm, SOURCES[:2], concurrency=2, timeout_s=HANG_GUARD_S)
    reference = tmp_path / "reference"
    shutil.copytree(library, reference)
    fake_llm.gate = threading.Event()
    thread, box = in_thread(lambda: extract(library, "ray"))
    try:
        wait_for(lambda: fake_llm.in_flight >= 1, "a call in flight")
        pid: int | None = None

        def found() -> bool:
            nonlocal pid
            pid = _client_pid(fake_llm.port)
            return pid is not None

        wait_for(found, "the worker's connection")
        assert pid is not None
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        assert b"ray" in cmdline.lower(), cmdline  # a Ray worker, not this test process
        held = len(fake_llm.chat_requests)
        os.kill(pid, signal.SIGKILL)
    finally:
        fake_llm.gate.set()
    thread.join(HANG_GUARD_S)
    assert not thread.is_alive()
    summary = box.get("result")
    assert isinstance(summary, ExtractSummary), box
    assert summary.extracted == 2 and not summary.failed
    assert len(fake_llm.chat_requests) > held  # the killed task ran again
    # Nothing partial, nothing doubled, no temp file: exactly what a local run writes.
    fake_llm.gate = None
    assert extract(reference, "local").extracted == 2
    assert tree(library / "extracted") == tree(reference / "extracted")


def test_a_killed_driver_resumes_without_redoing_finished_items(
    kr: Path, arkai: Runner, fake_llm: FakeLLM, on_cluster: Cluster
) -> None:
    library = _library(kr, arkai, fake_llm, SOURCES, concurrency=2)
    transcripts = sorted((library / "library").rglob("transcript.md"))
    stuck = transcripts[-1]
    line = next(ln for ln in stuck.read_text().splitlines() if len(ln.split()) > 6)
    fake_llm.set_mode("hang", when=line.split("]", 1)[-1].strip())
    driver = subprocess.Popen(
        [str(BIN / "arkai"), "--repo", str(library), "extract", "--executor", "ray", "--quiet"],
        env=tool_env(**{ENV_ADDRESS: on_cluster.address}), start_new_session=True,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    markers = library / "extracted"
    try:
        wait_for(lambda: len(list(markers.rglob("extraction.json"))) >= 2, "two items done")
    finally:
        os.killpg(driver.pid, signal.SIGKILL)
        driver.wait(HANG_GUARD_S)
    done = {p: p.stat().st_mtime_ns for p in markers.rglob("extraction.json")}
    assert len(done) == 2 and all(json.loads(p.read_text())["status"] == "ok" for p in done)

    fake_llm.rules.clear()
    logs = library / ".arkai" / "runs"
    before = set(logs.glob("*/events.jsonl"))
    summary = extract(library, "ray")
    assert summary.extracted == 1 and summary.skipped == 2 and not summary.failed
    assert {p: p.stat().st_mtime_ns for p in done} == done
    (log,) = set(logs.glob("*/events.jsonl")) - before
    last = [json.loads(x) for x in log.read_text().splitlines()]
    redone = [
        e["content_id"] for e in last if e["type"] == "StepStarted" and e["step"] == "extract"
    ]
    stuck_id = json.loads((stuck.parent / "metadata.json").read_text())["id"]
    assert redone == [stuck_id]


def test_the_circuit_breaker_counts_failed_items_across_workers(
    kr: Path, arkai: Runner, fake_llm: FakeLLM, on_cluster: Cluster
) -> None:
    library = _library(kr, arkai, fake_llm, SOURCES, concurrency=1, retries=0, circuit_breaker=2)
    fake_llm.set_mode("server_error")
    code, out, err = arkai("--repo", library, "extract", "--executor", "ray", "--json")
    assert code == 3 and "2 provider calls failed in a row" in out + err
    # Each worker's runner saw one failure; the driver's breaker saw two in a row and stopped
    # the run before the third item was sent.
    assert len(fake_llm.chat_requests) == 2


def test_sigterm_stops_a_ray_run_cleanly(
    kr: Path, arkai: Runner, fake_llm: FakeLLM, on_cluster: Cluster
) -> None:
    library = _library(kr, arkai, fake_llm, SOURCES, concurrency=2, timeout_s=HANG_GUARD_S)
    fake_llm.set_mode("hang")
    driver = subprocess.Popen(
        [str(BIN / "arkai"), "--repo", str(library), "extract", "--executor", "ray"],
        env=tool_env(), start_new_session=True, stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        wait_for(lambda: len(fake_llm.chat_requests) >= 1, "a call in flight")
        driver.send_signal(signal.SIGTERM)
        _, err = driver.communicate(timeout=HANG_GUARD_S)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(driver.pid, signal.SIGKILL)
    # arkai's handler, not Ray's (ray.init installs one for SIGTERM): exit 130, work kept.
    assert driver.returncode == 130, err
    assert "interrupted" in err and not list((library / "extracted").rglob("extraction.json"))
