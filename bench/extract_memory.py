"""Peak memory of builtin extraction on one large item. Prints one JSON object.

    python bench/extract_memory.py [--sizes 1 4 20 100] [--patterns extract_claims summarize]

For each size a synthetic SubRip file of that many megabytes is built from real caption cues of
../shared/data (drawn in a seeded random order, re-timed every two seconds). A fresh Python
process renders it to ``transcript.md`` (``render``: what `arkai add` does), then each pattern
runs in its own fresh process that reads that transcript and calls the builtin provider once
(what `arkai extract` does for one item). Each child reports its own peak resident set size
(``ru_maxrss``, which includes the interpreter and the imports) and its time. Target: at most
1 GiB for any size up to ``add.max_file_mb``, growing linearly.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from extract import SHARED, clock, srt_cues  # noqa: E402

LIMIT_MB = 1024
CHILD = """
import json, resource, sys, time
from pathlib import Path
t0 = time.perf_counter()
path = Path(sys.argv[1])
if sys.argv[2] == "render":
    from arkai.formats import parse_source, render_transcript
    text = render_transcript(parse_source(path.name, path.read_bytes()))
    path.with_suffix(".md").write_text(text, encoding="utf-8")
    n = None
else:
    from arkai.providers.base import Request
    from arkai.providers.builtin import BuiltinProvider
    text = path.with_suffix(".md").read_text(encoding="utf-8")
    out = BuiltinProvider().complete(Request(sys.argv[2], "", text), timeout=3600)
    n = len(json.loads(out.text)) if sys.argv[2] == "extract_claims" else None
print(json.dumps({"peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
                  "seconds": round(time.perf_counter() - t0, 1), "claims": n}))
"""


def build_srt(path: Path, megabytes: float) -> int:
    """Write a SubRip file of about ``megabytes`` MB of real caption text; return its bytes."""
    sources = sorted((SHARED / "virtual_coffee_srt").glob("*.srt"))
    sources += sorted((SHARED / "3b1b_human_captions").glob("*/captions.srt"))
    texts = [text for src in sources for _, _, text in srt_cues(src)]
    if not texts:
        raise SystemExit(f"no caption cues under {SHARED}")
    rng = random.Random(20261123)
    target = int(megabytes * 1_000_000)
    size = 0
    with path.open("w", encoding="utf-8") as fh:
        k = 0
        while size < target:
            k += 1
            start = 2.0 * k
            block = f"{k}\n{clock(start)} --> {clock(start + 2)}\n{rng.choice(texts)}\n\n"
            fh.write(block)
            size += len(block.encode("utf-8"))
    return size


def measure(path: Path, pattern: str) -> dict[str, object]:
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(path), pattern],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    if proc.returncode != 0:
        return {"error": f"exit {proc.returncode}: {proc.stderr.strip()[-500:]}"}
    result: dict[str, object] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sizes", type=float, nargs="+", default=[1, 4, 20, 100])
    ap.add_argument("--patterns", nargs="*", default=["extract_claims", "summarize"])
    args = ap.parse_args()
    runs: list[dict[str, object]] = []
    with tempfile.TemporaryDirectory(prefix="arkai-mem-") as tmp:
        for mb in args.sizes:
            path = Path(tmp) / f"big-{mb:g}mb.srt"
            size = build_srt(path, mb)
            for pattern in ["render", *args.patterns]:
                row: dict[str, object] = {"mb": mb, "bytes": size, "pattern": pattern}
                row.update(measure(path, pattern))
                print(json.dumps(row), file=sys.stderr)
                runs.append(row)
            path.unlink()
            path.with_suffix(".md").unlink(missing_ok=True)
    peaks = [r["peak_rss_mb"] for r in runs if isinstance(r.get("peak_rss_mb"), int)]
    result = {
        "provider": "builtin",
        "runs": runs,
        "max_peak_rss_mb": max(peaks) if peaks else None,
        "targets": {
            "peak_le_1gib": bool(peaks) and len(peaks) == len(runs) and max(peaks) <= LIMIT_MB
        },
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
