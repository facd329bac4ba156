"""Replays the hostile suite (tests/hostile/cases.py: malformed sources, odd files, hostile
names, broken libraries, CLI misuse, server faults, broken model output, kills mid-write) and
prints the outcome counts as one JSON object — the figures of the README's reliability section.

It also measures how long ``arkai extract`` takes to exit after SIGTERM while a provider call
waits on a silent server, reads a trickling answer, or sleeps through a ``Retry-After``
(``stop_after_sigterm_s``; the target is ≤ 2 s).

Usage: ``python bench/hostile.py [--only SUBSTRING]`` (from the repository root; takes a few
minutes). Progress goes to stderr; nothing is written into the repository.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from arkai.ops.init import init_repo  # noqa: E402
from tests.conftest import SAMPLES  # noqa: E402
from tests.hostile.cases import all_cases  # noqa: E402
from tests.hostile.suite import Ctx, counts, run_case, run_cli, servers, set_params  # noqa: E402


def stop_latency(base: Path, fake: Any, mode: str) -> float:
    """Seconds from SIGTERM to the exit of an ``arkai extract`` stuck in ``mode``."""
    repo = base / f"stop-{mode}"
    init_repo(repo, git=False)
    ctx = Ctx(repo, base, {})
    for name in ("beekeeping-talk.vtt", "compilers-podcast.srt"):
        run_cli(ctx, ["add", "--quiet", str(SAMPLES / name)])
    fake.retry_after, fake.trickle_interval = "50", 0.5
    set_params(repo, extract={"provider": "openai", "verify": False, "timeout_s": 300,
                              "retry_after_max_s": 60, "concurrency": 2},
               providers={"openai": {"base_url": fake.base_url_for(mode), "model": "m",
                                     "api_key_env": "ARKAI_BENCH_NO_KEY"}})  # fmt: skip
    seen = len(fake.chat_requests)
    env = {**os.environ, "ARKAI_REPO": str(repo)}
    proc = subprocess.Popen([sys.executable, "-m", "arkai.cli.main", "extract", "--quiet"],
                            env=env, stderr=subprocess.DEVNULL)  # fmt: skip
    while len(fake.chat_requests) < seen + 2 and proc.poll() is None:
        time.sleep(0.02)
    time.sleep(0.5)  # let the calls settle into their wait
    t0 = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=120)
    return round(time.monotonic() - t0, 3)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="", help="run only cases whose name contains this")
    args = ap.parse_args()
    cases = [c for c in all_cases() if args.only in c.name]
    results = []
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="arkai-hostile-") as tmp, servers() as shared:
        for n, case in enumerate(cases, 1):
            result = run_case(case, Path(tmp), shared)
            results.append(result)
            flag = "BAD" if result.bad else "ok "
            print(f"[{n}/{len(cases)}] {flag} {result.outcome:<11} {case.name}", file=sys.stderr)
        report = counts(results)
        report["stop_after_sigterm_s"] = {
            mode: stop_latency(Path(tmp), shared["llm"], mode)
            for mode in ("hang", "trickle", "rate_limit")
        }
    report["seconds"] = round(time.monotonic() - start, 1)
    print(json.dumps(report, indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main()
