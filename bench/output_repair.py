"""Output repair speed: a fenced, chatty model answer holding N claims with a trailing comma,
parsed and schema-checked by ``arkai.patterns.parse_json`` (the lenient pass runs on all of it).
Prints JSON: claims, bytes, seconds (median of 5), MB/s.

    .venv/bin/python bench/output_repair.py [--claims 20000]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

from arkai.patterns import get_pattern, parse_json


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--claims", type=int, default=20000)
    args = ap.parse_args()
    items = [
        {"claim": f"Claim {i} {{x}}", "quote": f'he said "{i}" [ok]'} for i in range(args.claims)
    ]
    payload = json.dumps(items, indent=1)[:-2] + ",\n]"
    raw = "Here is the JSON [as requested]:\n```json\n" + payload + "\n```\nThanks!"
    schema = get_pattern("extract_claims", None).schema
    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        assert parse_json(raw, schema) == items
        times.append(time.perf_counter() - t0)
    s = statistics.median(times)
    print(
        json.dumps(
            {
                "claims": args.claims,
                "bytes": len(raw),
                "seconds": round(s, 3),
                "mb_per_s": round(len(raw) / s / 1e6, 2),
            }
        )
    )


if __name__ == "__main__":
    main()
