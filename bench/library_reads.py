"""Cost of reading library files safely: ``read_repo_file`` (lstat of every folder below the
repo root, ``O_NOFOLLOW | O_NONBLOCK`` open, ``fstat`` recheck) against a bare
``Path.read_bytes``, and the library listing (``scan_items``) that never follows links.

Usage::

    .venv/bin/python bench/library_reads.py [--items N] [--repeat R]

Builds a synthetic library of N items (metadata.json + a 20 KB transcript.md each, in
``library/transcripts/<Title (id)>/``) in a temporary folder, reads every transcript R times
each way (best of R), lists the library R times, and prints one JSON object on stdout.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from arkai.adapters.fs import read_repo_file
from arkai.adapters.layout import scan_items


def build(root: Path, n: int) -> list[Path]:
    body = ("[00:00:01] A line of transcript text for the benchmark. " * 300).encode()[:20_000]
    paths = []
    for i in range(n):
        folder = root / "library" / "transcripts" / f"Item {i:05d} ({i:08x})"
        folder.mkdir(parents=True)
        (folder / "metadata.json").write_text(json.dumps({"id": f"{i:016x}", "title": str(i)}))
        (folder / "transcript.md").write_bytes(body)
        paths.append(folder / "transcript.md")
    return paths


def best(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--items", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        paths = build(root, args.items)
        plain = best(lambda: [p.read_bytes() for p in paths], args.repeat)
        safe = best(lambda: [read_repo_file(p, root) for p in paths], args.repeat)
        listing = best(lambda: scan_items(root), args.repeat)
    n = args.items
    print(
        json.dumps(
            {
                "items": n,
                "transcript_bytes": 20_000,
                "plain_read_us_per_file": round(plain / n * 1e6, 2),
                "safe_read_us_per_file": round(safe / n * 1e6, 2),
                "safe_read_overhead_us_per_file": round((safe - plain) / n * 1e6, 2),
                "scan_items_ms": round(listing * 1e3, 1),
                "scan_items_us_per_item": round(listing / n * 1e6, 1),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
