"""Folder manifests (``arkai.adapters.manifest``): what writing one costs when nothing changed
(the walk and its fingerprint) and when one file changed (the per-file cache matched to the
walk), on a synthetic folder laid out like ``extracted/`` (a folder per item, a few files
each). Prints JSON.

    python bench/manifests.py --files 60000 --per-folder 6 --repeat 5
    python bench/manifests.py --items 10000 30000 100000

The second form measures the manifest bookkeeping of the ``extract`` stage
(:func:`arkai.ops.extract.extract_stage`) on a synthetic library of N items laid out as the
pipeline's (three files an item in ``library/``, six in ``extracted/``): the manifests of both
folders made, the last complete run's compared with them, and — when an item changed — made
again and sealed after the item's extraction file is rewritten (the stand-in for extracting
it), in the stage's order. Each run is a fork+exec child (``bench/site.py``'s ``measured``):
its CPU seconds and its own peak RSS (``VmHWM``), for nothing changed and one transcript
changed. What the stage holds besides (its models, one item's extraction) does not grow with
the library; these are what does (docs/scale.md, "Manifests in bounded memory").

Run it with another checkout's code first on ``PYTHONPATH`` to compare two versions (the
function timed, ``manifest.write``, has the same signature in both).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from arkai.adapters import manifest

DEST = Path("index/manifests/library.tsv")
LIBRARY_FILES = ("metadata.json", "transcript.md", "source.srt")
EXTRACTED_FILES = ("claims.md", "entities.json", "evidence.jsonl", "extraction.json",
                   "review.yaml", "wisdom.json")  # fmt: skip


def _sibling(name: str) -> Any:
    """bench/<name>.py loaded by path (as bench/scale.py does)."""
    path = Path(__file__).resolve().parent / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"bench_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


#: The child: the extract stage's manifest bookkeeping, in its order (argv: root, edited
#: item folder or "").
STAGE = """
import json, sys, time
from pathlib import Path
from arkai.adapters import manifest
root, edited = Path(sys.argv[1]), sys.argv[2]
folders = ("library", "extracted")
started = time.process_time()
before = manifest.snapshot(root, folders, {"bench": 1})
sealed = manifest.sealed_run(root, "extract", before)
changes = manifest.changes(sealed, before)
out = {"sealed": sealed is not None,
       "changed_items": None if changes is None else len(changes.folders)}
if changes is None or changes.folders:
    del sealed, before
    if edited:
        claims = root / "extracted" / edited / "claims.md"
        claims.write_bytes(claims.read_bytes() + b"- one more claim\\n")
    after = manifest.snapshot(root, folders, {"bench": 1})
    after.publish(root)
    manifest.seal(root, "extract", after, int(sys.argv[3]))
else:
    before.publish(root)
out["work_cpu_s"] = round(time.process_time() - started, 3)
print(json.dumps(out))
"""


def _item_folder(n: int) -> str:
    return f"talks/Talk {n:06d} ({n:016x})"


def _make_items(root: Path, items: int) -> None:
    for n in range(items):
        for top, names in (("library", LIBRARY_FILES), ("extracted", EXTRACTED_FILES)):
            folder = root / top / _item_folder(n)
            folder.mkdir(parents=True)
            for name in names:
                (folder / name).write_bytes(b'{"item": %d, "file": "%s"}\n' % (n, name.encode()))


def stage_bookkeeping(items: int, repeat: int) -> dict[str, Any]:
    """The extract stage's manifest bookkeeping at ``items`` items (module doc)."""
    measured = _sibling("site").measured
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        started = time.perf_counter()
        _make_items(root, items)
        made_s = time.perf_counter() - started
        out = root / ".bench-out.json"

        def run(edited: str) -> dict[str, Any]:
            report, figures = measured(STAGE, [str(root), edited, str(items)], out, "bookkeeping")
            return {**report, **figures}

        first = run("")  # every file hashed, the first seal
        loops: dict[str, list[dict[str, Any]]] = {"nothing_changed": [], "one_changed": []}
        for k in range(repeat):
            loops["nothing_changed"].append(run(""))
            item = _item_folder((k * 7919) % items)
            with open(root / "library" / item / "transcript.md", "ab") as fh:
                fh.write(b"[00:10:00] An editor added a line.\n")
            loops["one_changed"].append(run(item))
        return {
            "items": items,
            "files": items * (len(LIBRARY_FILES) + len(EXTRACTED_FILES)),
            "made_s": round(made_s, 1),
            "first": first,
            **{
                name: {
                    "cpu_s": [r["cpu_s"] for r in runs],
                    "work_cpu_s": [r["work_cpu_s"] for r in runs],
                    "peak_rss_mb": [r["peak_rss_mb"] for r in runs],
                    "changed_items": sorted({r["changed_items"] for r in runs}),
                }
                for name, runs in loops.items()
            },
        }


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
    ap.add_argument(
        "--items",
        type=int,
        nargs="*",
        default=[],
        help="the extract stage's bookkeeping at these library sizes (module doc)",
    )
    args = ap.parse_args()
    if args.items:
        runs = [stage_bookkeeping(n, args.repeat) for n in args.items]
        print(json.dumps({"python": sys.version.split()[0], "cpus": os.cpu_count(),
                          "stage_bookkeeping": runs}, indent=1))  # fmt: skip
        return 0
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
