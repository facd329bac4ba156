"""What sharing caches through a DVC remote costs (docs/team.md). Prints JSON.

    python bench/remote.py [--repeat 3] [--keep DIR]

Builds the four sample sources (``samples/``, builtin provider, default embedder) twice in fresh
knowledge repos: once with the scaffold's ``dvc.yaml`` (embeddings and indexes are cached DVC
outputs) and once with every output ``cache: false`` (no DVC cache: the layout before
remotes). For each: the full build, a no-op ``dvc repro`` (median of ``--repeat``), one item
added then ``dvc repro``, and the size of ``.dvc/cache``. For the cached layout also:
``arkai remote push`` (``dvc push`` and the responses) to a local-folder remote, then ``git
clone`` + ``arkai remote pull`` + ``dvc repro`` in a second clone, and what that rebuild
embedded (the index stage's run log). ``python bench/remote_responses.py`` times the response
exchange alone, at larger counts.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
SAMPLES = HERE.parent / "samples"
FIRST = ("beekeeping-talk.vtt", "compilers-podcast.srt", "field-notes-on-reproducibility.txt")
LATER = "note-2026-11-20.md"
BIN = Path(sys.executable).parent
ENV = {
    **os.environ,
    "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}",
    "DVC_NO_ANALYTICS": "1",
    "DVC_NO_UPDATER": "1",
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@example.invalid",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@example.invalid",
}


def run(cwd: Path, *args: str) -> float:
    start = time.perf_counter()
    proc = subprocess.run(args, cwd=cwd, env=ENV, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"{args} failed in {cwd}:\n{proc.stdout}\n{proc.stderr}")
    return round(time.perf_counter() - start, 2)


def size_kb(path: Path) -> int:
    if not path.exists():
        return 0
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) // 1024


def uncached(repo: Path) -> None:
    """Every output of ``dvc.yaml`` with ``cache: false``."""
    path = repo / "dvc.yaml"
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    for stage in doc["stages"].values():
        for out in stage.get("outs", []):
            if isinstance(out, dict):
                for opts in out.values():
                    opts["cache"] = False
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")


def embedded(repo: Path) -> list[int]:
    out = []
    for events in sorted((repo / ".arkai" / "runs").glob("*/events.jsonl")):
        for line in events.read_text(encoding="utf-8").splitlines():
            event = json.loads(line)
            if event.get("step") == "vectors" and event.get("type") == "StepCompleted":
                out.append(int(event["embedded"]))
    return out


def measure(base: Path, layout: str, repeat: int) -> dict[str, Any]:
    repo = base / layout
    run(base, "arkai", "init", str(repo))
    if layout == "uncached":
        uncached(repo)
    run(repo, "arkai", "add", *(str(SAMPLES / f) for f in FIRST))
    result: dict[str, Any] = {"full_s": run(repo, "dvc", "repro")}
    result["noop_s"] = statistics.median(run(repo, "dvc", "repro") for _ in range(repeat))
    run(repo, "arkai", "add", str(SAMPLES / LATER))
    result["one_added_s"] = run(repo, "dvc", "repro")
    result["dvc_cache_kb"] = size_kb(repo / ".dvc" / "cache")
    result["shared_kb"] = size_kb(repo / ".arkai" / "responses") + size_kb(repo / "index")
    if layout == "cached":
        run(repo, "arkai", "remote", "add", "team", str(base / "store"), "--default")
        run(repo, "git", "add", "-A")
        run(repo, "git", "commit", "-qm", "library")
        result["push_s"] = run(repo, "arkai", "remote", "push")
        result["remote_kb"] = size_kb(base / "store")
        clone = base / "clone"
        run(base, "git", "clone", "-q", str(repo), str(clone))
        result["pull_s"] = run(clone, "arkai", "remote", "pull")
        result["clone_repro_s"] = run(clone, "dvc", "repro")
        result["clone_embedded"] = sum(embedded(clone))
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--keep", type=Path, help="build here and keep the repos")
    args = parser.parse_args()
    base = args.keep or Path(tempfile.mkdtemp(prefix="arkai-bench-remote-"))
    base.mkdir(parents=True, exist_ok=True)
    try:
        report = {
            "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
            "items": len(FIRST) + 1,
            "cached": measure(base, "cached", args.repeat),
            "uncached": measure(base, "uncached", args.repeat),
        }
    finally:
        if args.keep is None:
            shutil.rmtree(base, ignore_errors=True)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
