"""Condense benchmark: builtin-provider throughput of the ``condense`` stage (chunks/s and
tokens/s), the cost of a no-op run, and of a run after one item changed. Prints one JSON object.

    python bench/condense.py [--rounds 5] [--chunk-tokens 4000] [--keep DIR]

The library is every conversation of the real chat exports in ../shared/data/chat_exports
(ChatGPT, Claude, Gemini), added to a fresh knowledge repo with ``arkai add`` in a temporary
folder; nothing is written into this repository. Throughput is the mean over ``--rounds``
forced runs that bypass the response cache (``--force --refresh``: every chunk is condensed
again), in this process; the no-op and one-item-changed figures are wall time of the
``arkai condense --json`` command (a fresh process, so they include start-up), and in process.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SHARED = HERE.parent.parent / "shared" / "data" / "chat_exports"
BIN = Path(sys.executable).parent


def env() -> dict[str, str]:
    return {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}",
            "DVC_NO_ANALYTICS": "1", "DVC_NO_UPDATER": "1"}  # fmt: skip


def cli(repo: Path, *args: str) -> tuple[float, dict[str, object]]:
    t0 = time.perf_counter()
    proc = subprocess.run([str(BIN / "arkai"), "--repo", str(repo), *args], env=env(),
                          capture_output=True, text=True, check=False)  # fmt: skip
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"arkai {' '.join(args)} -> {proc.returncode}\n{proc.stderr}")
    return wall, json.loads(proc.stdout) if proc.stdout.strip() else {}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--chunk-tokens", type=int, default=4000)
    ap.add_argument("--keep", type=Path, help="build the library here and keep it")
    args = ap.parse_args()
    exports = sorted(p for p in SHARED.rglob("*.json") if "expected" not in p.name)
    if not exports:
        raise SystemExit(f"no chat exports under {SHARED}")

    from arkai.adapters import events
    from arkai.adapters.repo import Repo
    from arkai.ops.condense import condense
    from arkai.ops.init import init_repo

    base = args.keep or Path(tempfile.mkdtemp(prefix="arkai-bench-condense-"))
    repo = base / "kr"
    init_repo(repo, git=False)
    params = (repo / "params.yaml").read_text()
    params = params.replace("chunk_tokens: 4000", f"chunk_tokens: {args.chunk_tokens}")
    (repo / "params.yaml").write_text(params)
    subprocess.run([str(BIN / "arkai"), "--repo", str(repo), "add", "--quiet",
                    *map(str, exports)], env=env(), capture_output=True, check=False)  # fmt: skip
    transcripts = sorted((repo / "library").rglob("transcript.md"))

    first_wall, first = cli(repo, "condense", "--json")
    cpu, wall, chunks, tokens = [], [], 0, 0
    for _ in range(args.rounds):
        r = Repo.at(repo)
        c0, t0 = time.process_time(), time.perf_counter()
        s = condense(r, now=events.utc_now(), force=True, refresh=True)
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
        chunks = s.chunks
    for p in (repo / "condensed").rglob("condensed.json"):
        tokens += sum(c["tokens"] for c in json.loads(p.read_text())["chunks"])
    noop_wall, noop = cli(repo, "condense", "--json")
    t0 = time.perf_counter()
    condense(Repo.at(repo), now=events.utc_now())
    noop_inproc = time.perf_counter() - t0
    # One item changed: a message appended to one conversation.
    victim = transcripts[len(transcripts) // 2]
    victim.write_bytes(victim.read_bytes() + b"\n### user \xc2\xb7 2026-01-01 00:00:00 UTC\n"
                       b"We decided to benchmark this. Turns out it is fast.\n")  # fmt: skip
    one_wall, one = cli(repo, "condense", "--json")
    mean_wall, mean_cpu = sum(wall) / len(wall), sum(cpu) / len(cpu)
    print(
        json.dumps(
            {
                "benchmark": "condense",
                "provider": "builtin",
                "python": platform.python_version(),
                "machine": platform.machine(),
                "cpus": os.cpu_count(),
                "exports": [str(p.relative_to(SHARED)) for p in exports],
                "items": first.get("items"),
                "chunk_tokens": args.chunk_tokens,
                "chunks": chunks,
                "transcript_tokens": tokens,
                "first_run_cli_s": round(first_wall, 3),
                "forced_run_s": round(mean_wall, 4),
                "forced_run_cpu_s": round(mean_cpu, 4),
                "chunks_per_s": round(chunks / mean_wall, 1),
                "tokens_per_s": round(tokens / mean_wall),
                "tokens_per_cpu_s": round(tokens / mean_cpu),
                "noop_cli_s": round(noop_wall, 3),
                "noop_in_process_s": round(noop_inproc, 4),
                "noop_condensed": noop.get("condensed"),
                "one_changed_cli_s": round(one_wall, 3),
                "one_changed_condensed": one.get("condensed"),
                "one_changed_shards_written": (one.get("shards") or {}).get("written"),  # type: ignore[union-attr]
                "shards": (one.get("shards") or {}).get("shards"),  # type: ignore[union-attr]
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
