"""MCP benchmark: tool-call latency of ``search`` and ``context`` over stdio and Streamable
HTTP on a 1,000-item synthetic library, server start time and memory.

Prints one JSON object on stdout (progress on stderr); writes nothing into the repository
(a temporary folder only). Everything random is drawn from one seeded RNG.

    .venv/bin/python bench/mcp.py             # 1,000 items × 10 chunks, 50 calls per tool
    .venv/bin/python bench/mcp.py --quick     # 200 items, 10 calls

The library: ``arkai init`` plus an ``index/`` in the product's own format, written by
``bench/search.py``'s ``write_product_index`` (chunks of 60–120 words drawn from a seeded
vocabulary of 4,000 words with a Zipf-like frequency; random unit vectors, so the calls use
``mode: lexical`` — the vector lane's cost is bench/search.py's subject). Each call is one
``tools/call`` from the official SDK client through the whole registry path (policy, schema
checks both ways, the operation, audit line) and back; latency is measured at the client.
The first call of each tool (which loads the index) is reported apart from the warm ones.

* **start_s** — stdio: spawning ``arkai mcp`` to a finished ``initialize``; HTTP: spawning
  ``arkai mcp --http`` to the first answer (a 401 to a request without a token).
* **rss_mb** — the server process's resident memory after the calls (``VmRSS``) and its peak
  (``VmHWM``), from ``/proc``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
# This file is named like the SDK's package: keep its folder off the import path.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != ROOT / "bench"]
TOKEN = "bench-token-0123456789abcdef"


def log(msg: str) -> None:
    print(f"[mcp bench] {msg}", file=sys.stderr, flush=True)


def _bench_search() -> Any:
    spec = importlib.util.spec_from_file_location("bench_search", ROOT / "bench" / "search.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def build_library(root: Path, items: int, rng: random.Random) -> list[str]:
    """The repo and its index; returns the vocabulary's mid-frequency words (query terms)."""
    from arkai.ops.init import init_repo

    init_repo(root, git=False)
    letters = "abcdefghiklmnoprstuvz"
    vocab = sorted({"".join(rng.choice(letters) for _ in range(rng.randint(4, 9)))
                    for _ in range(4_000)})  # fmt: skip
    weights = [1 / (n + 10) for n in range(len(vocab))]
    texts = [" ".join(rng.choices(vocab, weights, k=rng.randint(60, 120))) + "."
             for _ in range(items * 10)]  # fmt: skip
    vecs = np.random.default_rng(7).standard_normal((len(texts), 384), dtype=np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    _bench_search().write_product_index(root, texts, vecs, "bench-random", per_item=10)
    return vocab[200:1200]


def pct(samples: Sequence[float]) -> dict[str, float]:
    s = sorted(samples)
    return {
        "n": len(s),
        "p50_ms": round(1000 * statistics.median(s), 2),
        "p95_ms": round(1000 * s[min(len(s) - 1, int(0.95 * len(s)))], 2),
        "max_ms": round(1000 * s[-1], 2),
    }


def queries(words: list[str], n: int, rng: random.Random) -> list[str]:
    return [" ".join(rng.sample(words, 2)) for _ in range(n)]


async def run_calls(session: Any, qs: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for tool in ("search", "context"):
        times = []
        for n, q in enumerate(qs):
            args = {"query": q, "mode": "lexical"}
            t0 = time.perf_counter()
            res = await session.call_tool(tool, args)
            took = time.perf_counter() - t0
            body = res.structured_content
            if not body["ok"] and body["error"]["code"] != "NOT_FOUND":
                raise SystemExit(f"{tool} failed: {body['error']}")
            if n == 0:  # the first call loads the index: reported on its own
                out[f"{tool}_first_call_ms"] = round(1000 * took, 1)
            else:
                times.append(took)
        out[tool] = pct(times)
    return out


def rss_mb(pid: int) -> dict[str, float]:
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            fields[key] = round(int(value.split()[0]) / 1024, 1)
    return {"rss": fields.get("VmRSS", 0.0), "peak": fields.get("VmHWM", 0.0)}


def _children() -> list[int]:
    pids = []
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        text = (task / "children").read_text().split()
        pids += [int(p) for p in text]
    return pids


def bench_stdio(root: Path, qs: list[str]) -> dict[str, Any]:
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "arkai.cli.main", "--repo", str(root), "mcp"],
        env=dict(os.environ),
    )

    async def main() -> dict[str, Any]:
        t0 = time.perf_counter()
        async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            start = time.perf_counter() - t0
            await s.list_tools()
            calls = await run_calls(s, qs)
            mem = {str(pid): rss_mb(pid) for pid in _children()}
        return {"start_s": round(start, 3), **calls, "rss_mb": next(iter(mem.values()), {})}

    return anyio.run(main)


def _status(url: str) -> int:
    req = urllib.request.Request(url, data=b"{}", method="POST",
                                 headers={"Content-Type": "application/json"})  # fmt: skip
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return int(resp.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


def bench_http(root: Path, qs: list[str]) -> dict[str, Any]:
    import httpx2
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}/mcp"
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "arkai.cli.main", "--repo", str(root), "mcp", "--http",
         "--port", str(port)],
        env={**os.environ, "ARKAI_MCP_TOKEN": TOKEN}, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        while True:
            try:
                if _status(url) == 401:
                    break
            except OSError:
                pass
            if proc.poll() is not None or time.perf_counter() - t0 > 120:
                raise SystemExit("the HTTP server did not start")
            time.sleep(0.05)
        start = time.perf_counter() - t0

        async def main() -> dict[str, Any]:
            headers = {"Authorization": f"Bearer {TOKEN}"}
            async with (
                httpx2.AsyncClient(headers=headers, timeout=120) as client,
                streamable_http_client(url, http_client=client) as streams,
                ClientSession(streams[0], streams[1]) as session,
            ):
                await session.initialize()
                await session.list_tools()
                return await run_calls(session, qs)

        calls = anyio.run(main)
        mem = rss_mb(proc.pid)
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(60)
    return {"start_s": round(start, 3), **calls, "rss_mb": mem, "sigterm_exit": code}


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--items", type=int, default=1000)
    ap.add_argument("--calls", type=int, default=50)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    if args.quick:
        args.items, args.calls = 200, 10
    rng = random.Random(15)
    with tempfile.TemporaryDirectory(prefix="arkai-bench-mcp-") as tmp:
        root = Path(tmp) / "kr"
        log(f"building a {args.items}-item library")
        words = build_library(root, args.items, rng)
        qs = queries(words, args.calls, rng)
        log("stdio")
        stdio = bench_stdio(root, qs)
        log("http")
        http = bench_http(root, qs)
    from arkai.tools.catalog import default_registry
    from arkai.tools.declare import tools_list

    registry = default_registry()
    report = {
        "items": args.items,
        "chunks": args.items * 10,
        "calls_per_tool": args.calls,
        "mode": "lexical",
        "cpus": os.cpu_count(),
        "declared_tokens": {
            "read_only": tools_list(registry, allow_write=False)["tokens"],
            "allow_write": tools_list(registry, allow_write=True)["tokens"],
        },
        "stdio": stdio,
        "http": http,
    }
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
