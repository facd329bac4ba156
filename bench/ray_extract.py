"""What extracting on Ray costs against extracting locally (docs/team.md). Prints JSON.

    python bench/ray_extract.py [--items 24] [--latency 0.25] [--concurrency 4] [--cpus 2]
                                [--chunks 512] [--batch 64]

Builds one knowledge repo of ``--items`` small transcripts (the sample talk, each with its own
opening line) whose provider is an OpenAI-compatible server on 127.0.0.1 answering every call
after ``--latency`` seconds (tests/adapters/fake_llm.py: a stand-in for a vLLM or Ollama
server). Then, each in a fresh copy of the repo (an empty response store: every call is made):

- ``local``: ``arkai extract`` with ``--concurrency`` threads;
- ``ray``: ``ray start --head`` (``--cpus`` CPUs, its own temp folder; the time it takes is
  reported), then the same extraction as Ray tasks on it (tasks reserve ``--cpus /
  --concurrency`` CPUs, so ``--concurrency`` run at once), ``extract.concurrency`` the same;
- ``ray_local``: no address — the run starts (and stops) a local Ray cluster itself.

Also the round trip of one empty Ray task on the warm cluster (median of 50), and whether the
``extracted/`` trees are byte-identical. Then the index stage's embedding batches
(:mod:`arkai.search.embedbatches`, the real ``minilm-onnx`` model): ``--chunks`` passages of
about 80 words cut from the sample sources, in batches of ``--batch``, embedded here and as
Ray tasks on the warm cluster (a first run that starts the workers and loads the model in
each, then a warm one), and whether the rows are byte-identical. The cluster is killed (its
process group) at the end.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import secrets
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from arkai.adapters.raytasks import ENV_ADDRESS  # noqa: E402
from arkai.adapters.repo import Repo  # noqa: E402
from arkai.ops.extract import run_extract  # noqa: E402
from arkai.ops.init import init_repo  # noqa: E402
from arkai.search import embed, embedbatches  # noqa: E402
from tests.adapters.fake_llm import FakeLLM  # noqa: E402
from tests.conftest import BIN, SAMPLES, tool_env  # noqa: E402

NOW = "2026-01-02T03:04:05Z"


def build(base: Path, items: int, fake: FakeLLM, concurrency: int, task_cpus: float) -> Path:
    kr = base / "template"
    init_repo(kr, git=False)
    talk = (SAMPLES / "field-notes-on-reproducibility.txt").read_text(encoding="utf-8")
    sources = base / "sources"
    sources.mkdir()
    for i in range(items):
        opening = f"Talk number {i} opens with a remark about bench item {i} of this run.\n"
        (sources / f"talk-{i:04d}.txt").write_text(opening + talk, encoding="utf-8")
    env = tool_env()
    files = sorted(map(str, sources.iterdir()))
    add = [str(BIN / "arkai"), "--repo", str(kr), "add", *files, "--quiet"]
    subprocess.run(add, env=env, check=True, capture_output=True)
    params = yaml.safe_load((kr / "params.yaml").read_text())
    params["extract"].update(provider="openai", concurrency=concurrency, backoff_s=0, timeout_s=60,
                             ray={"num_cpus": task_cpus})  # fmt: skip
    params["providers"]["openai"].update(base_url=fake.base_url, model="bench-model",
                                         api_key_env="ARKAI_BENCH_NO_KEY")  # fmt: skip
    (kr / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    return kr


def extract(template: Path, dest: Path, executor: str) -> tuple[float, dict[str, Any]]:
    shutil.copytree(template, dest)
    t0 = time.perf_counter()
    summary = run_extract(Repo.open(dest), now=NOW, executor=executor)
    return time.perf_counter() - t0, summary.to_dict()


def tree(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def task_round_trip(address: str) -> float:
    """Median seconds for one empty task, submitted and fetched, on the warm cluster."""
    import ray

    ray.init(address=address, logging_level="WARNING", log_to_driver=False)
    try:
        noop = ray.remote(lambda: None).options(num_cpus=0.01)
        ray.get(noop.remote())  # a worker started
        times = []
        for _ in range(50):
            t0 = time.perf_counter()
            ray.get(noop.remote())
            times.append(time.perf_counter() - t0)
        return statistics.median(times)
    finally:
        ray.shutdown()


def passages(n: int) -> dict[str, str]:
    """``n`` passages of about 80 words from the sample sources, each with its number."""
    words = " ".join(p.read_text(encoding="utf-8") for p in sorted(SAMPLES.glob("*.txt"))).split()
    out: dict[str, str] = {}
    for i in range(n):
        start = (i * 37) % max(1, len(words) - 80)
        out[f"p{i:06d}"] = f"Passage {i}. " + " ".join(words[start : start + 80])
    return out


def embeddings(address: str, chunks: int, batch: int) -> dict[str, Any]:
    """Seconds to embed ``chunks`` passages here and on the cluster (cold, then warm)."""
    texts = passages(chunks)
    keys = list(texts)
    model = embed.get_embedder("minilm-onnx")
    model.encode(["warm up"], kind="passage")  # the local model loaded before timing
    t0 = time.perf_counter()
    here = [rows for _, rows in embedbatches.encoded(model, keys, texts, batch)]
    local_s = time.perf_counter() - t0
    section = {"executor": "ray", "ray": {"address": address}}
    runs = []
    for _ in range(2):  # each run is a new Ray job: new workers, the model loaded in each
        t0 = time.perf_counter()
        there = [rows for _, rows in embedbatches.encoded(model, keys, texts, batch, section)]
        runs.append(round(time.perf_counter() - t0, 2))
    return {
        "chunks": chunks,
        "batch": batch,
        "local_s": round(local_s, 2),
        "ray_first_s": runs[0],
        "ray_second_s": runs[1],
        "identical": all(a.tobytes() == b.tobytes() for a, b in zip(here, there, strict=True)),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--items", type=int, default=24)
    ap.add_argument("--latency", type=float, default=0.25)
    ap.add_argument("--concurrency", type=int, default=4)
    ap.add_argument("--cpus", type=int, default=2)
    ap.add_argument("--chunks", type=int, default=512, help="passages to embed (0: skip)")
    ap.add_argument("--batch", type=int, default=64, help="passages per embedding batch")
    args = ap.parse_args()
    base = Path(tempfile.mkdtemp(prefix="arkraybench"))
    # The cluster `ray_local` starts keeps its logs and sockets here (removed at the end).
    os.environ["RAY_TMPDIR"] = str(base)
    group: int | None = None
    result: dict[str, Any] = {
        "items": args.items,
        "latency_s": args.latency,
        "concurrency": args.concurrency,
        "cpus": args.cpus,
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
    }
    try:
        with FakeLLM() as fake:
            fake.latency = args.latency
            template = build(base, args.items, fake, args.concurrency,
                             args.cpus / args.concurrency)  # fmt: skip
            local_s, local = extract(template, base / "local", "local")
            result["local"] = {"seconds": round(local_s, 2), "calls": local["calls"]}

            port = free_port()
            # Ray's token authentication, explicit for the cluster and this driver alike.
            os.environ.update(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=secrets.token_hex(32))
            t0 = time.perf_counter()
            proc = subprocess.Popen(
                [str(BIN / "ray"), "start", "--head", f"--port={port}", f"--num-cpus={args.cpus}",
                 "--node-ip-address=127.0.0.1", f"--temp-dir={base / 'ray-temp'}",
                 "--include-dashboard=false", "--disable-usage-stats"],
                env=tool_env(RAY_USAGE_STATS_ENABLED="0"), start_new_session=True,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )  # fmt: skip
            group = proc.pid
            if proc.wait(300) != 0:
                raise SystemExit("ray start failed")
            result["ray_start_s"] = round(time.perf_counter() - t0, 2)
            address = f"127.0.0.1:{port}"
            result["task_round_trip_ms"] = round(task_round_trip(address) * 1000, 2)
            os.environ[ENV_ADDRESS] = address
            ray_s, ray = extract(template, base / "ray", "ray")
            del os.environ[ENV_ADDRESS]
            per_item = round((ray_s - local_s) / args.items, 3)
            result["ray"] = {"seconds": round(ray_s, 2), "calls": ray["calls"],
                             "overhead_per_item_s": per_item}  # fmt: skip
            own_s, own = extract(template, base / "ray_local", "ray")
            result["ray_local"] = {"seconds": round(own_s, 2), "calls": own["calls"]}
            reference = tree(base / "local" / "extracted")
            result["identical"] = all(
                tree(base / name / "extracted") == reference for name in ("ray", "ray_local")
            )
            result["max_calls_in_flight"] = fake.max_in_flight
            if args.chunks:
                result["embedding"] = embeddings(address, args.chunks, args.batch)
    finally:
        if group is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(group, signal.SIGKILL)
        shutil.rmtree(base, ignore_errors=True)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
