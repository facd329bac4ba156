"""Folder manifests (``arkai.adapters.manifest``): what writing one costs when nothing changed
(the walk and its fingerprint) and when one file changed (the per-file cache matched to the
walk), on a synthetic folder laid out like ``extracted/`` (a folder per item, a few files
each). Prints JSON.

    python bench/manifests.py --files 60000 --per-folder 6 --repeat 5

Run it with another checkout's code first on ``PYTHONPATH`` to compare two versions (the
function timed, ``manifest.write``, has the same signature in both).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from arkai.adapters import manifest

DEST = Path("index/manifests/library.tsv")


def _make(root: Path, files: int, per_folder: int) -> list[Path]:
    made = []
    for n in range(files):
        folder = root / "library" / "talks" / f"Talk {n // per_folder:05d}"
        if n % per_folder == 0:
            folder.mkdir(parents=True)
        path = folder / f"part-{n % per_folder}.json"
        path.write_bytes(b'{"n": %d, "text": "%s"}\n' % (n, b"x" * 150))
        made.append(path)
    return made


def _timed(root: Path) -> float:
    started = time.perf_counter()
    manifest.write(root, "library", DEST)
    return time.perf_counter() - started


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--files", type=int, default=60000)
    ap.add_argument("--per-folder", type=int, default=6)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        made = _make(root, args.files, args.per_folder)
        first = _timed(root)  # every file hashed
        quick, changed = [], []
        for k in range(args.repeat):
            quick.append(_timed(root))
            path = made[(k * 7919) % len(made)]
            path.write_bytes(path.read_bytes() + b" ")
            changed.append(_timed(root))
        out = {
            "files": args.files,
            "per_folder": args.per_folder,
            "python": sys.version.split()[0],
            "cpus": os.cpu_count(),
            "first_s": round(first, 3),
            "nothing_changed_s": {"median": round(statistics.median(quick), 3),
                                  "min": round(min(quick), 3), "max": round(max(quick), 3)},
            "one_changed_s": {"median": round(statistics.median(changed), 3),
                              "min": round(min(changed), 3), "max": round(max(changed), 3)},
        }  # fmt: skip
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
