"""The ``validate`` and ``beliefs`` stages on N synthetic items: a first run, a no-op re-run and
one item changed, each in its own process (CPU seconds, peak RSS), then a check that the
incremental results equal a run from scratch. Prints JSON.

    python bench/validate_beliefs.py [--items 300 1000] [--src DIR] [--keep DIR]
        [--stages validate beliefs] [--claims-per-item 3]

Items come from bench/site.py's ``synthesize`` (copies of the real transcripts in
../shared/data, added and extracted once with the builtin provider). ``--src`` runs the stages
from another checkout's ``src`` (to measure the code before a change; its ``validate`` may lack
``full=``, then every run is a full one). The changed item: for ``validate``, one transcript gets
a line appended; for ``beliefs``, a person rejects the claim at the middle of the timeline.
The copies share their bases' claim IDs (one episode per ID), so before ``beliefs`` the first
``--claims-per-item`` claims of each item get IDs of their own (≈ that many episodes per item).
"""

from __future__ import annotations

import argparse
import filecmp
import importlib.util
import inspect
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def _sibling(name: str) -> Any:
    """A module of bench/ by file (``site`` would otherwise be the standard library's)."""
    path = Path(__file__).parent / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"bench_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


CHILD = """
import inspect, json, sys
from pathlib import Path
from arkai.adapters.repo import Repo
repo = Repo.at(Path(sys.argv[1]))
stage, mode = sys.argv[2], sys.argv[3]
if stage == "validate":
    from arkai.ops.validate import validate
    kw = {"full": mode == "full"} if "full" in inspect.signature(validate).parameters else {}
    r = validate(repo, report=Path("reports/validation.json"), **kw)
    print(json.dumps({"items": r.summary["items"], "valid": r.summary["valid"]}))
else:
    from arkai.ops.memory import build
    r = build(repo)
    print(json.dumps(r.to_dict()))
"""


def child(repo: Path, stage: str, mode: str, src: Path) -> dict[str, Any]:
    """One stage run in a child process: its summary, wall and CPU seconds, peak RSS."""
    started = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        with open(repo / ".bench-child.json", "wb") as fh:
            os.dup2(fh.fileno(), 1)
        env = dict(os.environ, PYTHONPATH=str(src))
        os.execve(sys.executable, [sys.executable, "-c", CHILD, str(repo), stage, mode], env)
    _, status, usage = os.wait4(pid, 0)
    wall = time.perf_counter() - started
    if status:
        raise SystemExit(f"{stage} run failed (status {status})")
    summary = json.loads((repo / ".bench-child.json").read_text().strip().splitlines()[-1])
    return {
        "wall_s": round(wall, 2),
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
        "peak_rss_mb": round(usage.ru_maxrss / 1024, 1),
        "summary": summary,
    }


def middle_item(repo: Path, src: Path) -> tuple[Path, str]:
    """The library folder of the item owning the middle episode, and that episode's ID."""
    sys.path.insert(0, str(src))
    from arkai.adapters.repo import Repo
    from arkai.ops.memory import collect_episodes

    r = Repo.at(repo)
    episodes = collect_episodes(r)
    ep = episodes[len(episodes) // 2]
    assert ep.item is not None
    return r.item(ep.item).path, ep.id


def change_transcript(folder: Path) -> None:
    path = folder / "transcript.md"
    data = path.read_bytes()
    stamp = b"[09:59:58] " if data.startswith(b"[") else b""
    path.write_bytes(data + stamp + b"An edited line about beekeeping and hive inspections.\n")


def reject(folder: Path, claim: str) -> None:
    (folder / "review.yaml").write_text(f"claims:\n  {claim}: {{status: rejected}}\n")


def beliefs_from_scratch(repo: Path, src: Path) -> bool:
    """Replay a copy without beliefs/, the replay log, the beliefs' vectors and the episode
    table (the statement store stays: the same vectors) and compare the files."""
    scratch = repo.parent / "scratch"
    shutil.rmtree(scratch, ignore_errors=True)
    shutil.copytree(repo, scratch, symlinks=True, ignore=shutil.ignore_patterns(".bench-bases"))
    shutil.rmtree(scratch / "beliefs")
    for name in ("replay.json", "vectors.npy"):
        (scratch / "index" / "beliefs" / name).unlink(missing_ok=True)
    (scratch / ".arkai" / "index-cache" / "episodes.tsv").unlink(missing_ok=True)
    child(scratch, "beliefs", "auto", src)
    names = ["beliefs/beliefs.json", "beliefs/changes.jsonl", "index/beliefs/vectors.npy"]
    names += ["index/beliefs/replay.json"] if (repo / "index/beliefs/replay.json").exists() else []
    same = all(filecmp.cmp(repo / n, scratch / n, shallow=False) for n in names)
    shutil.rmtree(scratch, ignore_errors=True)
    return same


def distinct_claims(repo: Path, per_item: int) -> int:
    """Give the first ``per_item`` claims of every item an ID of its own (the copies share
    their bases' IDs, and the replay keeps one episode per ID): ≈ ``per_item`` episodes per
    item, as extraction gives distinct talks. The statements stay (no new embedding)."""
    import hashlib

    changed = 0
    for path in sorted((repo / "extracted").glob("*/*/evidence.jsonl")):
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
        for n, line in enumerate(lines[:per_item]):
            rec = json.loads(line)
            seed = f"{rec['content_id']}\0{rec['id']}".encode()
            rec["id"] = hashlib.sha256(seed).hexdigest()[:16]
            lines[n] = json.dumps(rec, ensure_ascii=False, sort_keys=True,
                                  separators=(",", ":")) + "\n"  # fmt: skip
            changed += 1
        path.write_text("".join(lines), encoding="utf-8")
    return changed


def figures(prefix: str, run: dict[str, Any]) -> dict[str, Any]:
    return {f"{prefix}_cpu_s": run["cpu_s"], f"{prefix}_wall_s": run["wall_s"],
            f"{prefix}_peak_rss_mb": run["peak_rss_mb"]}  # fmt: skip


def run(
    repo: Path, n: int, src: Path, synthesize: Any, stages: list[str], per_item: int
) -> dict[str, Any]:
    synthesize(repo, n)
    for d in ("beliefs", "index", ".arkai", "reports"):
        shutil.rmtree(repo / d, ignore_errors=True)
    (repo / "reports").mkdir()
    out: dict[str, Any] = {"items": n}
    if "validate" in stages:
        out["validate"] = validate_runs(repo, src)
    if "beliefs" in stages:
        out["beliefs"] = beliefs_runs(repo, src, per_item)
    return out


def validate_runs(repo: Path, src: Path) -> dict[str, Any]:
    full = child(repo, "validate", "full", src)
    first = child(repo, "validate", "auto", src)
    noop = child(repo, "validate", "auto", src)
    folder, _ = middle_item(repo, src)
    change_transcript(folder)
    changed = child(repo, "validate", "auto", src)
    report = (repo / "reports/validation.json").read_bytes()
    child(repo, "validate", "full", src)
    return {
        **figures("full", full), **figures("first", first), **figures("noop", noop),
        **figures("one_changed", changed),
        "equals_full": report == (repo / "reports/validation.json").read_bytes(),
    }  # fmt: skip


def beliefs_runs(repo: Path, src: Path, per_item: int) -> dict[str, Any]:
    distinct = distinct_claims(repo, per_item) if per_item else 0
    first = child(repo, "beliefs", "auto", src)
    noop = child(repo, "beliefs", "auto", src)
    folder, claim = middle_item(repo, src)
    reject(folder, claim)
    changed = child(repo, "beliefs", "auto", src)
    return {
        "episodes": changed["summary"]["episodes"], "distinct_claims": distinct,
        **figures("first", first), **figures("noop", noop), **figures("one_changed", changed),
        "one_changed_resumed_at": changed["summary"].get("resumed_at"),
        "equals_scratch": beliefs_from_scratch(repo, src),
    }  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--items", type=int, nargs="+", default=[300, 1000])
    ap.add_argument("--src", type=Path, default=ROOT / "src", help="the arkai sources to run")
    ap.add_argument("--keep", type=Path, help="Keep the knowledge repo here (reused if there).")
    ap.add_argument("--stages", nargs="+", default=["validate", "beliefs"],
                    choices=["validate", "beliefs"])  # fmt: skip
    ap.add_argument(
        "--claims-per-item",
        type=int,
        default=3,
        help="claims of each item given an ID of their own (distinct episodes)",
    )
    args = ap.parse_args()
    site = _sibling("site")
    tmp = Path(tempfile.mkdtemp(prefix="arkai-memval-bench-"))
    repo = args.keep or tmp / "kr"
    try:
        if not (repo / ".bench-bases").exists():
            site.bases(repo)
        src = args.src.resolve()
        results = [run(repo, n, src, site.synthesize, args.stages, args.claims_per_item)
                   for n in args.items]  # fmt: skip
        print(json.dumps({
            "bench": "validate_beliefs", "python": platform.python_version(),
            "cpus": os.cpu_count(), "load_avg_1m": round(os.getloadavg()[0], 1),
            "src": str(src), "validate_has_full": "full" in _validate_params(src),
            "results": results,
        }, indent=2))  # fmt: skip
    finally:
        if args.keep is None:
            shutil.rmtree(tmp, ignore_errors=True)


def _validate_params(src: Path) -> list[str]:
    sys.path.insert(0, str(src))
    from arkai.ops.validate import validate

    return list(inspect.signature(validate).parameters)


if __name__ == "__main__":
    main()
