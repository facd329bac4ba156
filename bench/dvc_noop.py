"""A no-op ``dvc repro`` (and ``dvc status``) at N items, without building N items: DVC's
bookkeeping and the stage processes DVC runs on every repro (the ``always_changed`` ones,
``extract`` and ``condense``, which find nothing to do).

    python bench/dvc_noop.py --template KB --sizes 1000 10000 [--repeat 3] [--pipeline REPO]
                             [--changed] [--out FILE]

KB is a knowledge repo built by the whole pipeline (``bench/scale.py --keep DIR`` leaves one
in DIR/nN/kb). Its per-item folders (library/, extracted/, condensed/ item folders and site/'s
per-page folders) are copied as hard links, under new names, until the repo holds N items.
With ``--pipeline REPO`` the copy gets REPO's ``dvc.yaml``, ``.dvcignore`` and ``stages/`` (to
compare two versions of the pipeline on one template). The manifests its dvc.yaml lists
(``index/manifests/``) are written again and ``dvc commit --force`` records the new state in
dvc.lock without running a stage; one ``dvc repro`` then lets the always-changed stages do
their first (full) pass. Then ``dvc repro`` and ``dvc status`` are timed ``--repeat`` times
after a warm-up (CPU seconds: on a loaded machine the figures to read). Each repro must run
no stage but the always-changed ones and leave ``dvc.lock`` byte-identical; its CPU is split
into the stage processes' own (``$ARKAI_STAGE_METRICS``: interpreter start, imports, the
walk) and the rest (DVC). Also printed: how many directories and files DVC's dependencies
and outputs hold, counted once per stage that lists them. The template is copied first;
nothing is written into this repository.

With ``--changed`` the daily loop's first two stages are timed too: ``--repeat`` times, one
transcript is edited (written anew, not through its hard links) and the ``extract`` and
``condense`` stage scripts run as DVC runs them; printed are each one's CPU seconds, peak RSS
and its summary line (how many items it planned and redid). Run it once with ``PYTHONPATH``
naming another checkout's ``src`` to compare two versions of the stages.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

FOLDERS = ("library", "extracted", "condensed")


def _env() -> dict[str, str]:
    bin_dir = Path(sys.executable).parent
    return {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "DVC_NO_ANALYTICS": "1",
        "DVC_NO_UPDATER": "1",
    }


def _always_changed(repo: Path) -> set[str]:
    stages = yaml.safe_load((repo / "dvc.yaml").read_text(encoding="utf-8"))["stages"]
    return {name for name, stage in stages.items() if stage.get("always_changed")}


def _run(cmd: list[str], cwd: Path, metrics: Path | None = None) -> tuple[float, float]:
    """Wall and CPU seconds of ``cmd`` (its children included); it must be a no-op: only the
    always-changed stages run, and dvc.lock keeps its bytes."""
    env = _env() | ({"ARKAI_STAGE_METRICS": str(metrics)} if metrics else {})
    lock = (cwd / "dvc.lock").read_bytes()
    t0, c0 = time.perf_counter(), os.times()
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    dt, c1 = time.perf_counter() - t0, os.times()
    ran = set(re.findall(r"Running stage '([\w-]+)'", proc.stdout))
    if (
        proc.returncode != 0
        or ran - _always_changed(cwd)
        or (cwd / "dvc.lock").read_bytes() != lock
    ):
        sys.stderr.write(proc.stdout[-2000:] + proc.stderr[-2000:])
        raise SystemExit(f"{' '.join(cmd)}: not a no-op in {cwd} (ran {sorted(ran)})")
    cpu = (c1.children_user - c0.children_user) + (c1.children_system - c0.children_system)
    return dt, cpu


def _stage_cpu(metrics: Path) -> dict[str, float]:
    """CPU seconds of each stage process recorded in ``metrics`` (then emptied)."""
    out: dict[str, float] = {}
    if metrics.is_file():
        for line in metrics.read_text(encoding="utf-8").splitlines():
            rec = json.loads(line)
            out[rec["stage"]] = out.get(rec["stage"], 0.0) + float(rec["cpu_s"])
        metrics.unlink()
    return out


def _items(repo: Path) -> list[Path]:
    """The item folders of library/ (library/<type>/<item>)."""
    return sorted(p for p in (repo / "library").glob("*/*") if p.is_dir())


def grow(repo: Path, n: int) -> None:
    """Hard-link copies of the per-item folders until library/ holds ``n`` items."""
    items = _items(repo)
    have, k = len(items), 0
    site_dirs = sorted(p for p in (repo / "site").glob("*/*") if p.is_dir())
    while have < n:
        k += 1
        for item in items:
            if have >= n:
                break
            rel = item.relative_to(repo / "library")
            for folder in FOLDERS:
                src = repo / folder / rel
                if src.is_dir():
                    dst = src.with_name(f"{src.name} copy{k}")
                    shutil.copytree(src, dst, copy_function=os.link)
            have += 1
        # site/'s page folders grow with the library in the same proportion
        added = min(have - len(items) * k, len(items))
        for src in site_dirs[: len(site_dirs) * added // len(items)]:
            shutil.copytree(src, src.with_name(f"{src.name}-copy{k}"), copy_function=os.link)


def _stage(repo: Path, name: str, metrics: Path) -> dict[str, Any]:
    """Run ``stages/NAME.py`` once; its CPU seconds, peak RSS and last output line."""
    env = _env() | {"ARKAI_STAGE_METRICS": str(metrics)}
    proc = subprocess.run([sys.executable, f"stages/{name}.py"], cwd=repo, env=env,
                          capture_output=True, text=True, check=False)  # fmt: skip
    if proc.returncode != 0:
        raise SystemExit(f"stages/{name}.py failed in {repo}: {proc.stderr[-2000:]}")
    rec = json.loads(metrics.read_text(encoding="utf-8").splitlines()[-1])
    metrics.unlink()
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith(f"{name}:")]
    return {"cpu_s": round(float(rec["cpu_s"]), 3), "maxrss_mb": rec.get("maxrss_mb"),
            "says": lines[-1] if lines else proc.stdout.strip()[-200:]}  # fmt: skip


def changed(repo: Path, repeat: int, metrics: Path) -> dict[str, Any]:
    """One transcript edited, then the extract and condense stages: medians of ``repeat``."""
    items = _items(repo)
    runs: list[dict[str, dict[str, Any]]] = []
    for r in range(repeat):
        transcript = items[(r * 7919) % len(items)] / "transcript.md"
        data = transcript.read_bytes() + f"\nOne more line, edit {r}.\n".encode()
        transcript.unlink()  # (a hard link shared with the template and the copies)
        transcript.write_bytes(data)
        runs.append({name: _stage(repo, name, metrics) for name in ("extract", "condense")})
    out: dict[str, Any] = {}
    for name in ("extract", "condense"):
        out[name] = {
            "median_cpu_s": round(statistics.median(r[name]["cpu_s"] for r in runs), 3),
            "maxrss_mb": max(float(r[name]["maxrss_mb"] or 0) for r in runs),
            "says": runs[-1][name]["says"],
        }
    return out


def counts(repo: Path) -> dict[str, int]:
    """Directories and files DVC walks: each folder dependency or output, once per stage."""
    stages = yaml.safe_load((repo / "dvc.yaml").read_text(encoding="utf-8"))["stages"]
    dirs = files = 0
    for stage in stages.values():
        paths = list(stage.get("deps", []))
        paths += [next(iter(o)) if isinstance(o, dict) else o for o in stage.get("outs", [])]
        for rel in paths:
            path = repo / str(rel)
            if path.is_dir():
                for _, _ds, fs in os.walk(path):
                    dirs += 1
                    files += len(fs)
    return {"walked_dirs": dirs, "walked_files": files}


def measure(
    template: Path, n: int, repeat: int, work: Path, pipeline: Path | None, one_changed: bool
) -> dict[str, Any]:
    repo = work / f"n{n}"
    shutil.rmtree(repo, ignore_errors=True)
    big = {*FOLDERS, "site"}

    # Small files copied (DVC rewrites dvc.lock in place), the big folders hard-linked.
    def skip(folder: str, _names: list[str]) -> set[str]:
        return big if folder == str(template) else set()

    shutil.copytree(template, repo, symlinks=True, ignore=skip)
    for folder in big:
        if (template / folder).is_dir():
            shutil.copytree(template / folder, repo / folder, copy_function=os.link)
    shutil.rmtree(repo / ".dvc" / "tmp", ignore_errors=True)  # state DB: the copy's inodes
    if pipeline is not None:
        shutil.copy2(pipeline / "dvc.yaml", repo / "dvc.yaml")
        shutil.copy2(pipeline / ".dvcignore", repo / ".dvcignore")
        for script in (pipeline / "stages").glob("*.py"):
            shutil.copy2(script, repo / "stages" / script.name)
    grow(repo, n)
    if (repo / "index" / "manifests").is_dir():
        from arkai.adapters.manifest import PATHS, write

        for folder, dest in PATHS.items():
            if (repo / dest).is_file():
                write(repo, folder, dest)
    subprocess.run(["dvc", "commit", "--force", "--quiet"], cwd=repo, env=_env(), check=True)
    metrics = work / "stages.jsonl"
    _run(["dvc", "repro"], repo)  # the always-changed stages' first pass (over every item)
    _run(["dvc", "status"], repo)  # warm DVC's state database
    _run(["dvc", "repro"], repo)
    out: dict[str, Any] = {"items": len(_items(repo)), **counts(repo)}
    for name, cmd in (("noop_repro", ["dvc", "repro"]), ("status", ["dvc", "status"])):
        runs, stage_runs = [], []
        for _ in range(repeat):
            runs.append(_run(cmd, repo, metrics))
            stage_runs.append(_stage_cpu(metrics))
        stages = {s: round(statistics.median(r.get(s, 0.0) for r in stage_runs), 3)
                  for s in sorted({s for r in stage_runs for s in r})}  # fmt: skip
        out[name] = {
            "median_s": round(statistics.median(r[0] for r in runs), 3),
            "median_cpu_s": round(statistics.median(r[1] for r in runs), 3),
        }
        if stages:
            out[name]["stages_cpu_s"] = stages
            out[name]["dvc_cpu_s"] = round(
                statistics.median(
                    r[1] - sum(st.values()) for r, st in zip(runs, stage_runs, strict=True)
                ),
                3,
            )
    if one_changed:
        out["one_changed"] = changed(repo, repeat, metrics)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--template", type=Path, required=True, help="a built knowledge repo")
    ap.add_argument("--sizes", type=int, nargs="+", required=True)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--pipeline", type=Path, help="a repo whose dvc.yaml and stages/ to use")
    ap.add_argument("--changed", action="store_true", help="also time one changed transcript")
    ap.add_argument("--out", type=Path, help="also write the JSON here")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="arkai-dvc-noop-"))
    try:
        result = {
            "template": str(args.template),
            "pipeline": str(args.pipeline) if args.pipeline else None,
            "sizes": [
                measure(args.template, n, args.repeat, work, args.pipeline, args.changed)
                for n in args.sizes
            ],
            "load_avg": [round(x, 2) for x in os.getloadavg()],
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)
    text = json.dumps(result, indent=2)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
