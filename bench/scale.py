"""Whole-pipeline scale benchmark: the daily loop of a knowledge repo of N synthetic talks.

    python bench/scale.py --sizes 100 1000 [--repeat 3] [--out scale.json] [--plot docs/scale.png]
    python bench/scale.py --out scale.json --plot docs/scale.png --markdown   # re-render only

For each N it builds a fresh knowledge repo of N synthetic ten-minute talks (bench/extract.py's
``make_items``, cut from the real transcripts in ../shared/data), adds them with ``arkai add``
and runs the whole pipeline with the real ``dvc repro`` (every stage of dvc.yaml). Measured:

* ``full``: the first ``dvc repro`` (seconds, once);
* ``noop``: ``dvc repro`` with nothing changed;
* ``changed``: one transcript edited (a line appended to a different item each time), then
  ``dvc repro``;
* ``added``: one new talk added with ``arkai add`` (not timed), then ``dvc repro``;

each loop ``--repeat`` times (min and median reported). Every ``dvc repro`` runs with
``$ARKAI_STAGE_METRICS`` set, so each stage process appends its wall time (from process start),
import time and peak RSS (:mod:`arkai.cli.stage`); ``dvc_s`` is the rest of the ``dvc repro``
wall time: DVC's own work (hashing deps, checking outs, the lock file) plus starting DVC and
each stage's interpreter shutdown. ``peak_rss_mb`` is each stage's highest peak over all runs.

The seconds of each loop are fitted against N by least squares (a line) and projected to
10,000 and 100,000 items. With ``--out FILE`` the results are merged into FILE (sizes measured
now replace the same sizes there), so sizes can be measured in separate runs. ``--plot PNG``
draws seconds against N (log x) with the targets (one changed ≤ 10 s, no-op ≤ 3 s at 10,000);
``--markdown`` prints the README table to stderr. Nothing is written into this repository
except the files named by ``--out`` and ``--plot``.
"""

from __future__ import annotations

import argparse
import importlib.util
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


def _sibling(name: str) -> Any:
    """bench/<name>.py loaded by path: putting bench/ on sys.path would let its scripts
    (bench/mcp.py) shadow real packages in a process that imports this one (the tests)."""
    path = Path(__file__).resolve().parent / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"bench_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_extract = _sibling("extract")
BIN, make_items = _extract.BIN, _extract.make_items

LOOPS = ("noop", "changed", "added")
PROJECT = (10_000, 100_000)
TARGETS = {"changed": 10.0, "noop": 3.0}  # seconds at 10,000 items (issue 17)


def _env(metrics: Path) -> dict[str, str]:
    return {
        **os.environ,
        "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}",
        "DVC_NO_ANALYTICS": "1",
        "DVC_NO_UPDATER": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "ARKAI_STAGE_METRICS": str(metrics),
    }


def _call(cmd: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """Run ``cmd``; its wall seconds and the CPU seconds of it and every process it waited for."""
    t0, c0 = time.perf_counter(), os.times()
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    dt, c1 = time.perf_counter() - t0, os.times()
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout[-3000:] + proc.stderr[-3000:])
        raise SystemExit(f"{' '.join(cmd)} failed with {proc.returncode} in {cwd}")
    return dt, (c1.children_user - c0.children_user) + (c1.children_system - c0.children_system)


def repro(repo: Path, metrics: Path) -> dict[str, Any]:
    """One timed ``dvc repro``: total seconds, each stage's seconds and peak RSS, DVC's rest."""
    metrics.unlink(missing_ok=True)
    total, cpu = _call(["dvc", "repro"], repo, _env(metrics))
    stages = (
        [json.loads(line) for line in metrics.read_text().splitlines()] if metrics.exists() else []
    )
    own = sum(s["wall_s"] for s in stages)
    return {
        "total_s": round(total, 3),
        "dvc_s": round(total - own, 3),
        "stages": {s["stage"]: s["wall_s"] for s in stages},
        "cpu_s": round(cpu, 3),
        "dvc_cpu_s": round(cpu - sum(s.get("cpu_s", 0.0) for s in stages), 3),
        "stage_cpu_s": {s["stage"]: s.get("cpu_s") for s in stages},
        "import_s": {s["stage"]: s["import_s"] for s in stages},
        "rss_mb": {s["stage"]: max(s["maxrss_mb"], s["children_maxrss_mb"]) for s in stages},
    }


def _summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    totals = [r["total_s"] for r in runs]
    med = sorted(runs, key=lambda r: r["total_s"])[(len(runs) - 1) // 2]
    return {
        "min_s": min(totals),
        "median_s": round(statistics.median(totals), 3),
        "median_cpu_s": round(statistics.median(r["cpu_s"] for r in runs), 3),
        "median_run": med,  # the per-stage breakdown of the (lower) median run
        "runs": runs,
    }


def measure(n: int, repeat: int, work: Path) -> dict[str, Any]:
    """Build a repo of ``n`` talks, the full build, then each loop ``repeat`` times."""
    repo, inbox, spare = work / "kb", work / "inbox", work / "spare"
    metrics = work / "stages.jsonl"
    shutil.rmtree(work, ignore_errors=True)
    inbox.mkdir(parents=True)
    spare.mkdir()
    files, words = make_items(spare, n + repeat)
    for f in files[:n]:
        f.rename(inbox / f.name)
    env = _env(metrics)
    _call(["arkai", "init", str(repo)], work, env)
    add_s = _call(["arkai", "add", str(inbox), "--quiet"], repo, env)[0]
    print(f"n={n}: {n} items added in {add_s:.1f} s; full build", file=sys.stderr)
    full = repro(repo, metrics)
    loops: dict[str, list[dict[str, Any]]] = {loop: [] for loop in LOOPS}
    transcripts = sorted((repo / "library").rglob("transcript.md"))
    for k in range(repeat):
        print(f"n={n}: round {k + 1}/{repeat}", file=sys.stderr)
        loops["noop"].append(repro(repo, metrics))
        edited = transcripts[k * len(transcripts) // repeat]
        with open(edited, "a", encoding="utf-8") as fh:
            fh.write(f"[00:10:3{k}] An editor added sentence number {k} to this talk today.\n")
        loops["changed"].append(repro(repo, metrics))
        _call(["arkai", "add", str(files[n + k]), "--quiet"], repo, env)
        loops["added"].append(repro(repo, metrics))
    every = [full, *(r for runs in loops.values() for r in runs)]
    peak: dict[str, float] = {}
    for r in every:
        for stage, mb in r["rss_mb"].items():
            peak[stage] = max(peak.get(stage, 0.0), mb)
    return {
        "items": n,
        "words_per_item": round(words / len(files)),
        "add_s": round(add_s, 2),
        "full": full,
        **{loop: _summary(runs) for loop, runs in loops.items()},
        "peak_rss_mb": peak,
        "load_avg_after": [round(x, 2) for x in os.getloadavg()],  # others' work on the machine
    }


def fit(points: list[tuple[int, float]]) -> dict[str, Any]:
    """Least-squares line of seconds against items; the projection to 10,000 and 100,000."""
    if len({n for n, _ in points}) < 2:
        return {"points": len(points)}
    xs, ys = [float(n) for n, _ in points], [s for _, s in points]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum(
        (x - mx) ** 2 for x in xs
    )
    intercept = my - slope * mx
    return {
        "points": len(points),
        "ms_per_item": round(slope * 1000, 3),
        "intercept_s": round(intercept, 3),
        "projected_s": {str(n): round(intercept + slope * n, 1) for n in PROJECT},
    }


def analyse(sizes: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Fits over every measured size, and the targets at 10,000 items."""
    ordered = sorted(sizes.values(), key=lambda s: s["items"])
    fits = {
        "full": fit([(s["items"], s["full"]["total_s"]) for s in ordered]),
        **{loop: fit([(s["items"], s[loop]["median_s"]) for s in ordered]) for loop in LOOPS},
    }
    # CPU seconds (every process of the run): on a machine others load, the better estimate of
    # the wall time on an idle one, since the pipeline runs one single-threaded stage at a time.
    cpu = {
        "full": fit([(s["items"], s["full"]["cpu_s"]) for s in ordered if "cpu_s" in s["full"]]),
        **{
            loop: fit(
                [
                    (s["items"], s[loop]["median_cpu_s"])
                    for s in ordered
                    if "median_cpu_s" in s[loop]
                ]
            )
            for loop in LOOPS
        },
    }
    targets = {}
    for loop, limit in TARGETS.items():
        for name, fits_of in (("", fits), ("cpu_", cpu)):
            at = fits_of[loop].get("projected_s", {}).get("10000")
            targets[f"{loop}_{name}le_{limit:g}s_at_10000"] = None if at is None else at <= limit
    return {"fit": fits, "fit_cpu": cpu, "targets": targets}


def _cpu(seconds: float | None) -> str:
    return "" if seconds is None else f" ({seconds:.1f} s CPU)"


def markdown(sizes: dict[str, dict[str, Any]]) -> str:
    """The README table: N, full build, the loops' medians (wall, and CPU), peak RSS per stage."""
    ordered = sorted(sizes.values(), key=lambda s: s["items"])
    stages = list(dict.fromkeys(st for s in ordered for st in s["peak_rss_mb"]))  # run order
    head = ["N", "full build", "no-op", "one changed", "one added"]
    head += [f"{st} MB" for st in stages]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for s in ordered:
        cells = [f"{s['items']:,}", f"{s['full']['total_s']:.0f} s" + _cpu(s["full"].get("cpu_s"))]
        cells += [
            f"{s[loop]['median_s']:.1f} s" + _cpu(s[loop].get("median_cpu_s")) for loop in LOOPS
        ]
        cells += [f"{s['peak_rss_mb'].get(st, 0):.0f}" for st in stages]
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


def plot(result: dict[str, Any], png: Path) -> None:
    """Seconds against N (log x) for the three loops, their fitted lines and the targets."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ordered = sorted(result["sizes"].values(), key=lambda s: s["items"])
    fig, ax = plt.subplots(figsize=(7, 4.2), dpi=120)
    xs = [s["items"] for s in ordered]
    lo, hi = min(xs), max(PROJECT)
    span = [lo * (hi / lo) ** (k / 60) for k in range(61)]  # even steps on the log axis
    labels = {"noop": "no-op", "changed": "one changed", "added": "one added"}
    for loop, colour in zip(LOOPS, ("tab:green", "tab:blue", "tab:orange"), strict=True):
        ax.plot(xs, [s[loop]["median_s"] for s in ordered], "o-", color=colour, alpha=0.45,
                label=f"{labels[loop]}: wall")  # fmt: skip
        cpu = [s[loop].get("median_cpu_s") for s in ordered]
        if all(c is not None for c in cpu):
            ax.plot(xs, cpu, "s-", color=colour, label=f"{labels[loop]}: CPU")
        f = result.get("fit_cpu", {}).get(loop, {})
        if "ms_per_item" in f:
            line = [f["intercept_s"] + f["ms_per_item"] / 1000 * n for n in span]
            ax.plot(span, line, ":", color=colour, alpha=0.8)
    ax.scatter([10_000], [TARGETS["changed"]], marker="*", s=160, color="tab:blue", zorder=5,
               label="target: one changed ≤ 10 s at 10,000")  # fmt: skip
    ax.scatter([10_000], [TARGETS["noop"]], marker="*", s=160, color="tab:green", zorder=5,
               label="target: no-op ≤ 3 s at 10,000")  # fmt: skip
    ax.axhline(TARGETS["changed"], color="tab:blue", lw=0.8, ls="--", alpha=0.5)
    ax.axhline(TARGETS["noop"], color="tab:green", lw=0.8, ls="--", alpha=0.5)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("library items (N)")
    ax.set_ylabel("dvc repro, seconds (median)")
    ax.set_title("arkai daily loop: medians measured (solid), CPU fitted (dotted)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    png.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png)
    plt.close(fig)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="*", default=[], help="library sizes to measure")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each timed loop (≥ 3)")
    ap.add_argument("--out", type=Path, help="JSON file to merge the results into")
    ap.add_argument("--plot", type=Path, help="write the PNG here (matplotlib)")
    ap.add_argument("--markdown", action="store_true", help="the README table on stderr")
    ap.add_argument("--keep", type=Path, help="build the repos under this folder and keep them")
    args = ap.parse_args()
    if args.repeat < 1:
        ap.error("--repeat must be at least 1")
    sizes: dict[str, dict[str, Any]] = {}
    if args.out and args.out.exists():
        sizes = json.loads(args.out.read_text(encoding="utf-8")).get("sizes", {})
    if not args.sizes and not sizes:
        ap.error("give --sizes, or --out naming results to re-render")
    base = args.keep or Path(tempfile.mkdtemp(prefix="arkai-scale-"))
    try:
        for n in args.sizes:
            sizes[str(n)] = measure(n, args.repeat, base / f"n{n}")
    finally:
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)
    result = {
        "sizes": sizes,
        **analyse(sizes),
        "repeat": args.repeat,
        "machine": {
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "load_avg": [round(x, 2) for x in os.getloadavg()],
        },
    }
    text = json.dumps(result, indent=2)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    if args.plot:
        plot(result, args.plot)
    if args.markdown:
        print(markdown(sizes), file=sys.stderr)
    print(text)


if __name__ == "__main__":
    main()
