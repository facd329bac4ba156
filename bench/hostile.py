"""Replays the hostile suite (tests/hostile/cases.py: malformed sources, odd files, hostile
names, broken libraries, CLI misuse, server faults, broken model output, kills mid-write) and
prints the outcome counts as one JSON object — the figures of the README's reliability section.

Usage: ``python bench/hostile.py [--only SUBSTRING]`` (from the repository root; takes a few
minutes). Progress goes to stderr; nothing is written into the repository.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.hostile.cases import all_cases  # noqa: E402
from tests.hostile.suite import counts, run_case, servers  # noqa: E402


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
    report["seconds"] = round(time.monotonic() - start, 1)
    print(json.dumps(report, indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main()
