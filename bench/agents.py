"""Agent surface benchmark: the cost of one hook call, and of each ``arkai do`` layer. Prints
JSON.

    python bench/agents.py [--runs 30]

- ``hook_ms``: :func:`arkai.adapters.hooks.run_hook` round trips to a Python script that echoes
  its JSON (process start + interpreter start + JSON both ways) — what one configured expand or
  rerank hook adds to a search at least;
- ``do_plan_ms``: :func:`arkai.ops.intent.plan` per layer in a fresh knowledge repo (no
  network): ``reflex`` (a YouTube URL), ``learned`` (a phrase in ``.arkai/routes.json``) and
  ``provider`` with the builtin grammar (response cache cleared before each call, so every call
  really runs the pattern).

Median and 95th percentile over ``--runs`` calls, after one warm-up call each.
"""

from __future__ import annotations

import argparse
import json
import platform
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


def _stats(fn: Callable[[], object], runs: int) -> dict[str, float]:
    fn()
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1000)
    times.sort()
    return {
        "p50": round(statistics.median(times), 3),
        "p95": round(times[min(len(times) - 1, int(0.95 * len(times)))], 3),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=30)
    args = ap.parse_args()

    from arkai.adapters.hooks import run_hook
    from arkai.adapters.repo import Repo
    from arkai.cli.do import command_of
    from arkai.ops.init import init_repo
    from arkai.ops.intent import plan
    from arkai.sources.route import learn_phrase

    out: dict[str, Any] = {"python": platform.python_version(), "runs": args.runs}
    with tempfile.TemporaryDirectory() as tmp:
        hook = Path(tmp) / "echo.py"
        hook.write_text(
            f"#!{sys.executable}\nimport json, sys\nprint(json.dumps(json.load(sys.stdin)))\n"
        )
        hook.chmod(0o755)
        payload = {"query": "how do hive sensors work", "mode": "hybrid", "max_expansions": 4}
        out["hook_ms"] = _stats(lambda: run_hook([str(hook)], payload, 30), args.runs)

        root = Path(tmp) / "kr"
        init_repo(root, git=False)
        repo = Repo.at(root)
        learn_phrase(root, "tidy the list", ["library"])
        responses = root / ".arkai" / "responses"

        def provider() -> object:
            shutil.rmtree(responses, ignore_errors=True)
            return plan(repo, "search for hive sensors", validate=command_of)

        out["do_plan_ms"] = {
            "reflex": _stats(lambda: plan(repo, "add https://www.youtube.com/watch?v=dQw4w9WgXcQ "
                                                "tag it ai", validate=command_of), args.runs),
            "learned": _stats(lambda: plan(repo, "Tidy the list", validate=command_of), args.runs),
            "provider": _stats(provider, args.runs),
        }  # fmt: skip
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
