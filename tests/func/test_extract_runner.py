"""The extract stage against a real local OpenAI-compatible server and a real command
provider: caching, incrementality, output repair, retries, failures, the circuit breaker,
reviews, reprocess and interruption."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.adapters.fake_llm import FakeLLM, fake_llm_fixture  # noqa: F401
from tests.conftest import SAMPLES, Runner

SOURCES = ("beekeeping-talk.vtt", "compilers-podcast.srt", "field-notes-on-reproducibility.txt")


def configure(kr: Path, provider: str, **extract: Any) -> None:
    params = yaml.safe_load((kr / "params.yaml").read_text())
    params["extract"].update({"provider": provider, "verify": False, "backoff_s": 0,
                              "timeout_s": 5, "retries": 2, **extract})  # fmt: skip
    params["extract"]["patterns"] = {"default": ["extract_claims", "extract_entities"]}
    (kr / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))


def use_fake(kr: Path, fake: FakeLLM, **extract: Any) -> None:
    configure(kr, "openai", **extract)
    params = yaml.safe_load((kr / "params.yaml").read_text())
    params["providers"]["openai"].update(
        {"base_url": fake.base_url, "model": "fake-model", "api_key_env": "ARKAI_TEST_NO_KEY"}
    )
    (kr / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))


@pytest.fixture
def library(kr: Path, arkai: Runner) -> Path:
    code, _, err = arkai("--repo", kr, "add", *(SAMPLES / s for s in SOURCES), "--quiet")
    assert code == 0, err
    return kr


def evidence(kr: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for p in sorted((kr / "extracted").rglob("evidence.jsonl"))
            for line in p.read_text().splitlines()]  # fmt: skip


def extraction(kr: Path) -> dict[str, dict[str, Any]]:
    return {
        p.parent.name: json.loads(p.read_text())
        for p in (kr / "extracted").rglob("extraction.json")
    }


def test_openai_cached_and_incremental(library: Path, arkai: Runner, fake_llm: FakeLLM) -> None:
    use_fake(library, fake_llm)
    code, out, err = arkai("--repo", library, "extract", "--json")
    assert code == 0, err
    first = json.loads(out)
    assert first["extracted"] == 3 and first["calls"] == 6 and first["cache_hits"] == 0
    lines = evidence(library)
    assert lines and all(ln["status"] in ("resolved", "ambiguous") for ln in lines)
    assert all(m["model"] == "fake-model" for m in (r.body for r in fake_llm.chat_requests))
    assert not any(r.authorization for r in fake_llm.chat_requests)

    # Nothing changed: zero provider calls.
    n = len(fake_llm.chat_requests)
    code, out, _ = arkai("--repo", library, "extract", "--json")
    assert json.loads(out)["calls"] == 0 and len(fake_llm.chat_requests) == n
    # Forced: every pattern answered from the response store, still zero calls.
    code, out, _ = arkai("--repo", library, "extract", "--force", "--json")
    assert json.loads(out)["cache_hits"] == 6 and len(fake_llm.chat_requests) == n

    # One transcript changes: only that item is re-run.
    t = next((library / "library").rglob("transcript.md"))
    t.write_text(
        t.read_text() + "[00:30:00] A closing remark was added by the editor here today.\n"
    )
    code, out, _ = arkai("--repo", library, "extract", "--json")
    again = json.loads(out)
    assert again["extracted"] == 1 and again["skipped"] == 2 and again["calls"] == 2
    stored = list((library / ".arkai" / "responses").rglob("*.json"))
    assert len(stored) == 8
    record = json.loads(stored[0].read_text())
    assert {"provider", "model", "pattern", "pattern_digest", "input_digest"} <= set(
        record["request"]
    )


def test_fenced_output_is_repaired(library: Path, arkai: Runner, fake_llm: FakeLLM) -> None:
    fake_llm.set_mode("fenced")
    use_fake(library, fake_llm)
    code, _, err = arkai("--repo", library, "extract", "--quiet")
    assert code == 0, err
    assert len(evidence(library)) == 6


def test_paraphrased_quotes_are_kept_unresolved(
    library: Path, arkai: Runner, fake_llm: FakeLLM
) -> None:
    fake_llm.set_mode("paraphrase")
    use_fake(library, fake_llm)
    code, _, err = arkai("--repo", library, "extract", "--quiet")
    assert code == 0, err
    lines = evidence(library)
    assert len(lines) == 6
    assert all(ln["status"] == "unresolved" and ln["span"] is None for ln in lines)
    code, out, _ = arkai("--repo", library, "validate", "--json")
    assert code == 0 and json.loads(out)["summary"]["unresolved"] == 6


def test_bad_output_fails_one_item_and_resumes(
    library: Path, arkai: Runner, fake_llm: FakeLLM
) -> None:
    fake_llm.set_mode("malformed", when="Henrik")
    use_fake(library, fake_llm)
    code, _, err = arkai("--repo", library, "extract", "--quiet")
    assert code == 3
    assert "extract failed for 1 of 3 items" in err and "invalid JSON" in err
    states = {k: v["status"] for k, v in extraction(library).items()}
    assert sorted(states.values()) == ["failed", "ok", "ok"]
    failed = next(k for k, v in states.items() if v == "failed")
    assert "Compilers" in failed

    fake_llm.reset()
    code, out, err = arkai("--repo", library, "extract", "--json")
    assert code == 0, err
    summary = json.loads(out)
    assert summary["extracted"] == 1 and summary["skipped"] == 2
    assert all(v["status"] == "ok" for v in extraction(library).values())


def test_retries_on_429_and_500(library: Path, arkai: Runner, fake_llm: FakeLLM) -> None:
    fake_llm.set_mode("rate_limit_then_server_error_then_ok")
    use_fake(library, fake_llm)
    code, out, err = arkai("--repo", library, "extract", "--json")
    assert code == 0, err
    summary = json.loads(out)
    assert summary["retries"] == 12 and summary["calls"] == 18 and summary["failures"] == 0


def test_hang_times_out(library: Path, arkai: Runner, fake_llm: FakeLLM) -> None:
    fake_llm.set_mode("hang_then_ok")
    use_fake(library, fake_llm, timeout_s=0.5)
    t0 = time.monotonic()
    code, out, err = arkai("--repo", library, "extract", "--json")
    assert code == 0, err
    assert json.loads(out)["retries"] == 6
    assert time.monotonic() - t0 < 30


def test_circuit_breaker_stops_the_run(library: Path, arkai: Runner, fake_llm: FakeLLM) -> None:
    fake_llm.set_mode("server_error")
    use_fake(library, fake_llm, retries=0, circuit_breaker=2, concurrency=1)
    code, _, err = arkai("--repo", library, "extract", "--quiet")
    assert code == 3
    assert "in a row" in err
    # The run stopped: not every item was attempted.
    assert len(fake_llm.chat_requests) < 6


def test_command_provider_and_review(library: Path, arkai: Runner, tmp_path: Path) -> None:
    log = tmp_path / "calls.log"
    script = tmp_path / "provider.py"
    script.write_text(
        textwrap.dedent(f"""
        import json, sys
        req = json.load(sys.stdin)
        with open({str(log)!r}, "a") as fh:
            fh.write(req["pattern"] + "\\n")
        lines = [ln.split("] ", 1)[-1] for ln in req["input"].splitlines() if len(ln) > 60]
        first = lines[0].split(". ")[0]
        if req["pattern"] == "extract_claims":
            out = [{{"claim": first, "quote": first, "confidence": 0.8}}]
        else:
            out = {{"entities": []}}
        print(json.dumps({{"ok": True, "output": out, "model": "script-1"}}))
    """)
    )
    configure(library, "command")
    params = yaml.safe_load((library / "params.yaml").read_text())
    params["providers"]["command"] = {"command": [sys.executable, str(script)]}
    (library / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    code, _, err = arkai("--repo", library, "extract", "--quiet")
    assert code == 0, err
    assert log.read_text().count("extract_claims") == 3
    lines = evidence(library)
    assert len(lines) == 3 and all(ln["status"] == "resolved" for ln in lines)

    # A person rejects one claim: it stays, marked, and only that item is re-run.
    target = lines[0]
    item = next(p.parent for p in (library / "library").rglob("metadata.json")
                if json.loads(p.read_text())["id"] == target["content_id"])  # fmt: skip
    (item / "review.yaml").write_text(
        f"claims:\n  {target['id'][:10]}: {{status: rejected, note: not a claim}}\n"
    )
    code, out, _ = arkai("--repo", library, "extract", "--json")
    assert code == 0 and json.loads(out)["extracted"] == 1
    marked = next(ln for ln in evidence(library) if ln["id"] == target["id"])
    # The key that matched is recorded, so an old-style (span-tier) key follows the claim.
    assert marked["review"] == {
        "note": "not a claim",
        "status": "rejected",
        "key": target["id"][:10],
    }
    claims_md = library / "extracted" / item.relative_to(library / "library") / "claims.md"
    assert "`[rejected]`" in claims_md.read_text()

    # reprocess forces one item with fresh calls.
    before = log.read_text().count("\n")
    code, _, err = arkai("--repo", library, "reprocess", target["content_id"][:8], "--quiet")
    assert code == 0, err
    assert log.read_text().count("\n") == before + 2


def test_interrupted_run_redoes_no_finished_item(library: Path, tmp_path: Path) -> None:
    log = tmp_path / "calls.log"
    script = tmp_path / "slow.py"
    script.write_text(
        textwrap.dedent(f"""
        import json, sys, time
        req = json.load(sys.stdin)
        time.sleep(1.0)
        with open({str(log)!r}, "a") as fh:
            fh.write(req["pattern"] + " " + str(len(req["input"])) + "\\n")
        out = [] if req["pattern"] == "extract_claims" else {{"entities": []}}
        print(json.dumps({{"ok": True, "output": out}}))
    """)
    )
    configure(library, "command", concurrency=1)
    params = yaml.safe_load((library / "params.yaml").read_text())
    params["providers"]["command"] = {"command": [sys.executable, str(script)]}
    (library / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    env = {**os.environ, "ARKAI_REPO": str(library)}
    proc = subprocess.Popen([sys.executable, "-m", "arkai.cli.main", "extract", "--quiet"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not list(
        (library / "extracted").rglob("extraction.json")
    ):
        time.sleep(0.1)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    done = {p: p.stat().st_mtime_ns for p in (library / "extracted").rglob("extraction.json")}
    assert 1 <= len(done) < 3
    calls_before = log.read_text().splitlines()
    proc = subprocess.run([sys.executable, "-m", "arkai.cli.main", "extract", "--quiet"], env=env,
                          capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    for path, mtime in done.items():
        assert path.stat().st_mtime_ns == mtime, "a finished item was redone"
    new_calls = log.read_text().splitlines()[len(calls_before) :]
    assert 2 <= len(new_calls) <= 2 * (3 - len(done)) + 2


@pytest.mark.parametrize(
    ("mode", "where"),
    [("hang", "waiting for an answer"), ("trickle", "reading a trickling answer"),
     ("rate_limit", "sleeping for Retry-After")],
)  # fmt: skip
def test_sigterm_stops_promptly_and_leaves_a_resumable_state(
    library: Path, fake_llm: FakeLLM, mode: str, where: str
) -> None:
    fake_llm.set_mode(mode)
    fake_llm.retry_after = "50"
    fake_llm.trickle_interval = 0.5
    use_fake(library, fake_llm, timeout_s=300, retries=3, concurrency=2, retry_after_max_s=60)
    env = {**os.environ, "ARKAI_REPO": str(library)}
    proc = subprocess.Popen([sys.executable, "-m", "arkai.cli.main", "extract", "--quiet"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    deadline = time.monotonic() + 60
    while len(fake_llm.chat_requests) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(fake_llm.chat_requests) >= 2, "the run never called the provider"
    proc.send_signal(signal.SIGTERM)
    try:
        _, err = proc.communicate(timeout=30)  # a hang guard; the stop itself takes < 2 s
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        pytest.fail(f"SIGTERM did not stop the run while {where}")
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    assert not list((library / "extracted").rglob("extraction.json")), "nothing was finished"
    # Resumable: the next run, with a healthy server, finishes every item.
    fake_llm.set_mode("ok")
    done = subprocess.run([sys.executable, "-m", "arkai.cli.main", "extract", "--quiet"], env=env,
                          capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert {m["status"] for m in extraction(library).values()} == {"ok"}
    assert len(extraction(library)) == len(SOURCES)
