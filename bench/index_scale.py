"""Index-stage benchmark: ``run_index`` over N synthetic items — a full build (wall, CPU, peak
RSS), a no-op re-run, one item's transcript changed, one item added — then a check that the
incremental result equals a from-scratch build. Prints JSON.

    python bench/index_scale.py [--items 100 1000] [--embedder none] [--keep DIR]

Items come from bench/site.py's ``synthesize`` (copies of the real transcripts in
../shared/data, added and extracted once with the builtin provider). Each run is a child
process so its peak RSS is its own. ``--embedder none`` (the default here) measures the
stage's own work — chunks, catalog, BM25, topics, graph, shards — without loading a model;
``--embedder default`` adds the embedding lane (then one changed item also embeds its chunks).
``one_changed_steps_ms``: the wall milliseconds of each step of the one-changed run (its events).
"""

from __future__ import annotations

import argparse
import filecmp
import hashlib
import json
import os
import platform
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any


def _sibling(name: str) -> Any:
    """A module of bench/ by file (``site`` would otherwise be the standard library's)."""
    import importlib.util

    path = Path(__file__).parent / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"bench_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_site = _sibling("site")
bases, make_item, synthesize = _site.bases, _site.make_item, _site.synthesize

INDEX = """
import json, sys
from pathlib import Path
from arkai.adapters.repo import Repo
from arkai.ops.index import run_index
s = run_index(Repo.at(Path(sys.argv[1])), full=sys.argv[2] == "full")
print(json.dumps(s.to_dict()))
"""

#: Files compared between the incremental and the from-scratch index.
COMPARED = ("catalog.json", "chunks/parts.json", "topics.json", "graph.json", "graph.graphml",
            "manifest.json")  # fmt: skip


def index(repo: Path, mode: str = "auto") -> dict[str, Any]:
    """One ``run_index`` in a child process: its summary, wall and CPU seconds, peak RSS, and
    the wall milliseconds of each of its steps (from the run's events)."""
    summary, figures = _site.measured(
        INDEX, [str(repo), mode], repo / ".bench-index.json", "index run"
    )
    return {**figures, "written": summary["written"], "steps_ms": steps_ms(repo)}


def steps_ms(repo: Path) -> dict[str, int]:
    """``{step: duration_ms}`` of the newest run in ``.arkai/runs`` (its StepCompleted events)."""
    runs = sorted((repo / ".arkai" / "runs").glob("*/events.jsonl"))
    if not runs:
        return {}
    steps: dict[str, int] = {}
    for line in runs[-1].read_text(encoding="utf-8").splitlines():
        event = json.loads(line)
        if event.get("type") == "StepCompleted" and "step" in event:
            steps[str(event["step"])] = int(event.get("duration_ms", 0))
    return steps


def set_embedder(repo: Path, embedder: str) -> None:
    import yaml

    path = repo / "params.yaml"
    params = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    params.setdefault("index", {})["embedder"] = embedder
    path.write_text(yaml.safe_dump(params, sort_keys=False), encoding="utf-8")


def change_transcript(repo: Path) -> None:
    """Append a line to one item's transcript (the extraction's spans stay valid)."""
    path = sorted((repo / "library").rglob("transcript.md"))[len(list((repo / "library").rglob(
        "transcript.md"))) // 2]  # fmt: skip
    data = path.read_bytes()
    stamp = b"[09:59:58] " if data.startswith(b"[") else b""
    path.write_bytes(data + stamp + b"An edited line about beekeeping and hive inspections.\n")


def add_one(repo: Path, n: int) -> None:
    """One more synthetic item (number ``n``), made the way ``synthesize`` makes them."""
    stash = repo / ".bench-bases"
    metas = sorted((stash / "library").rglob("metadata.json"))
    meta = metas[n % len(metas)]
    rel = meta.parent.relative_to(stash / "library")
    files = {p.name: p.read_bytes() for p in (stash / "extracted" / rel).iterdir()}
    make_item(repo, meta.parent, rel, files, n)


def same_as_scratch(repo: Path) -> dict[str, bool]:
    """Build the index of a copy from scratch (no index/, no cache) and compare files."""
    scratch = repo.parent / "scratch"
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir()
    for name in ("library", "extracted", "condensed", "params.yaml", "synonyms.yaml"):
        src = repo / name
        if src.is_dir():
            shutil.copytree(src, scratch / name)
        elif src.is_file():
            shutil.copy2(src, scratch / name)
    index(scratch, "auto")
    out = {name: filecmp.cmp(repo / "index" / name, scratch / "index" / name, shallow=False)
           for name in COMPARED}  # fmt: skip
    lex = sorted(p.name for p in (repo / "index" / "lexical").iterdir())
    out["lexical"] = all(
        hashlib.sha256((repo / "index" / "lexical" / f).read_bytes()).digest()
        == hashlib.sha256((scratch / "index" / "lexical" / f).read_bytes()).digest()
        for f in lex
    )
    shutil.rmtree(scratch, ignore_errors=True)
    return out


def run(repo: Path, n: int, check: bool) -> dict[str, Any]:
    synthesize(repo, n)
    for d in ("index", ".arkai"):
        shutil.rmtree(repo / d, ignore_errors=True)
    full = index(repo)
    noop = index(repo)
    change_transcript(repo)
    changed = index(repo)
    add_one(repo, n)
    added = index(repo)
    result: dict[str, Any] = {
        "items": n,
        "full_build_s": full["wall_s"],
        "full_build_cpu_s": full["cpu_s"],
        "full_peak_rss_mb": full["peak_rss_mb"],
        "noop_s": noop["wall_s"],
        "noop_cpu_s": noop["cpu_s"],
        "one_changed_s": changed["wall_s"],
        "one_changed_cpu_s": changed["cpu_s"],
        "one_changed_written": changed["written"],
        "one_changed_steps_ms": changed["steps_ms"],
        "one_added_s": added["wall_s"],
        "one_added_cpu_s": added["cpu_s"],
        "incremental_peak_rss_mb": max(
            noop["peak_rss_mb"], changed["peak_rss_mb"], added["peak_rss_mb"]
        ),
    }
    if check:
        result["equals_scratch"] = same_as_scratch(repo)
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--items", type=int, nargs="+", default=[100, 1000])
    ap.add_argument("--embedder", default="none", help="index.embedder for the runs")
    ap.add_argument("--no-check", action="store_true", help="skip the from-scratch comparison")
    ap.add_argument("--keep", type=Path, help="Keep the knowledge repo here.")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="arkai-index-bench-"))
    repo = args.keep or tmp / "kr"
    try:
        started = time.perf_counter()
        if not (repo / ".bench-bases").exists():
            bases(repo)
        set_embedder(repo, args.embedder)
        setup_s = round(time.perf_counter() - started, 1)
        results = [run(repo, n, not args.no_check) for n in args.items]
        print(json.dumps({
            "bench": "index_scale", "python": platform.python_version(), "cpus": os.cpu_count(),
            "load_avg_1m": round(os.getloadavg()[0], 1), "embedder": args.embedder,
            "base_setup_s": setup_s, "results": results,
        }, indent=2))  # fmt: skip
    finally:
        if args.keep is None:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
