"""Extraction benchmark: builtin-provider throughput, the no-op `dvc repro`, and the re-run
after one of N items changes. Prints one JSON object.

    python bench/extract.py [--items 200] [--keep DIR]
    python bench/extract.py --cpu [--items 40]

Items are synthetic ~10-minute talks cut from the real transcripts in ../shared/data (SubRip
cues re-timed from zero), each added to a fresh knowledge repo with `arkai add`; nothing is
written into this repository. ``--cpu`` instead runs the four transcript patterns of the
builtin provider in this process and reports talks per CPU-minute (process time, so the figure
holds on a machine that others load too; the builtin provider uses one core).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SHARED = HERE.parent.parent / "shared" / "data" / "transcripts"
BIN = Path(sys.executable).parent
TEN_MINUTES = 600.0
_TIME = re.compile(r"(\d+):(\d\d):(\d\d)[,.](\d{3})")


def seconds(stamp: str) -> float:
    m = _TIME.match(stamp.strip())
    if not m:
        raise ValueError(stamp)
    h, mi, s, ms = (int(g) for g in m.groups())
    return h * 3600 + mi * 60 + s + ms / 1000


def clock(t: float) -> str:
    ms = round(t * 1000)
    return f"{ms // 3600000:02d}:{ms // 60000 % 60:02d}:{ms // 1000 % 60:02d},{ms % 1000:03d}"


def srt_cues(path: Path) -> list[tuple[float, float, str]]:
    cues = []
    for block in path.read_text(encoding="utf-8-sig").replace("\r\n", "\n").split("\n\n"):
        lines = [ln for ln in block.strip().split("\n") if ln.strip()]
        timing = next((i for i, ln in enumerate(lines) if "-->" in ln), None)
        if timing is None:
            continue
        a, b = lines[timing].split("-->")
        text = " ".join(lines[timing + 1 :]).strip()
        if text:
            cues.append((seconds(a), seconds(b.split()[0]), text))
    return cues


def windows(cues: list[tuple[float, float, str]]) -> list[list[tuple[float, float, str]]]:
    out, cur, start = [], [], None
    for a, b, text in cues:
        if start is None:
            start = a
        cur.append((a - start, b - start, text))
        if a - start >= TEN_MINUTES:
            out.append(cur)
            cur, start = [], None
    if cur and cur[-1][0] > TEN_MINUTES / 2:
        out.append(cur)
    return out


def make_items(dest: Path, n: int) -> tuple[list[Path], int]:
    sources = sorted((SHARED / "virtual_coffee_srt").glob("*.srt"))
    sources += sorted((SHARED / "3b1b_human_captions").glob("*/captions.srt"))
    pool = [w for src in sources for w in windows(srt_cues(src))]
    files, words = [], 0
    for i in range(n):
        cues = pool[i % len(pool)]
        body = [f"1\n00:00:00,000 --> 00:00:02,000\nSession {i}: recorded talk number {i}.\n"]
        for k, (a, b, text) in enumerate(cues, 2):
            body.append(f"{k}\n{clock(a + 2)} --> {clock(b + 2)}\n{text}\n")
            words += len(text.split())
        path = dest / f"talk-{i:04d}.srt"
        path.write_text("\n".join(body), encoding="utf-8")
        files.append(path)
    return files, words


def run(cmd: list[str], cwd: Path) -> float:
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}", "DVC_NO_ANALYTICS": "1",
           "OPENBLAS_NUM_THREADS": "1"}  # fmt: skip
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    dt = time.perf_counter() - t0
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout[-3000:] + proc.stderr[-3000:])
        raise SystemExit(f"{' '.join(cmd)} failed with {proc.returncode}")
    return dt


PATTERNS = ("extract_claims", "extract_entities", "extract_wisdom", "summarize")


def cpu_throughput(n: int) -> dict[str, object]:
    """The four transcript patterns on ``n`` synthetic talks, timed in process CPU seconds."""
    from arkai.adapters.params import load_params
    from arkai.formats import parse_source, render_transcript
    from arkai.providers.base import Request
    from arkai.providers.builtin import BuiltinProvider

    params = load_params(HERE.parent)
    variables = {k: str(v) for k, v in (params["extract"].get("variables") or {}).items()}
    with tempfile.TemporaryDirectory(prefix="arkai-bench-") as tmp:
        files, words = make_items(Path(tmp), n)
        texts = [render_transcript(parse_source(f.name, f.read_bytes())) for f in files]
    provider = BuiltinProvider()
    provider.complete(Request("extract_entities", "", texts[0]), timeout=600)  # load spaCy
    claims = 0
    t0 = time.process_time()
    for text in texts:
        for pattern in PATTERNS:
            request = Request(pattern, "", text, options={"variables": variables})
            out = provider.complete(request, timeout=600)
            if pattern == "extract_claims":
                claims += len(json.loads(out.text))
    cpu = time.process_time() - t0
    return {
        "items": n,
        "words_per_item": round(words / n),
        "patterns": list(PATTERNS),
        "cpu_seconds": round(cpu, 2),
        "talks_per_cpu_minute": round(n / cpu * 60, 1),
        "claims_per_item": round(claims / n, 1),
        "targets": {"talks_per_cpu_minute_ge_60": n / cpu * 60 >= 60},
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--items", type=int, default=200)
    ap.add_argument("--keep", type=Path, help="build the repo here and keep it")
    ap.add_argument("--cpu", action="store_true", help="in-process CPU time of the patterns")
    args = ap.parse_args()
    if args.cpu:
        print(json.dumps(cpu_throughput(args.items), indent=2))
        return
    work = args.keep or Path(tempfile.mkdtemp(prefix="arkai-bench-"))
    repo, inbox = work / "kb", work / "inbox"
    shutil.rmtree(work, ignore_errors=True)
    inbox.mkdir(parents=True)
    files, words = make_items(inbox, args.items)
    print(f"{len(files)} items, {words} words", file=sys.stderr)
    run(["arkai", "init", str(repo)], work)
    add_s = run(["arkai", "add", str(inbox), "--quiet"], repo)
    full_s = run(["dvc", "repro"], repo)
    noop_s = min(run(["dvc", "repro"], repo) for _ in range(3))
    changed = next((repo / "library").rglob("transcript.md"))
    changed.write_text(
        changed.read_text() + "[00:10:30] One more sentence was added by an editor today.\n"
    )
    one_s = run(["dvc", "repro"], repo)
    # Extraction alone, in-process timing of the stage (forced, cached responses ignored).
    extract_s = run(["arkai", "extract", "--force", "--refresh", "--quiet"], repo)
    claims = sum(
        len(p.read_text().splitlines()) for p in (repo / "extracted").rglob("evidence.jsonl")
    )
    result = {
        "items": len(files),
        "words_per_item": round(words / len(files)),
        "minutes_per_item": 10,
        "provider": "builtin",
        "add_seconds": round(add_s, 2),
        "full_repro_seconds": round(full_s, 2),
        "extract_forced_seconds": round(extract_s, 2),
        "items_per_minute": round(len(files) / extract_s * 60, 1),
        "noop_repro_seconds": round(noop_s, 2),
        "one_changed_repro_seconds": round(one_s, 2),
        "one_changed_pct_of_full": round(100 * one_s / full_s, 1),
        "claims": claims,
        "targets": {
            "items_per_minute_ge_60": len(files) / extract_s * 60 >= 60,
            "noop_le_3s": noop_s <= 3,
            "one_changed_le_5pct": one_s <= 0.05 * full_s,
        },
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
    }
    print(json.dumps(result, indent=2))
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
