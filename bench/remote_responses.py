"""What exchanging the response store through a DVC remote costs (docs/team.md). Prints JSON.

    python bench/remote_responses.py [--count 1000] [--kb 4] [--ssh] [--s3]

Writes ``--count`` sound response records of about ``--kb`` KB into a store, then times the
exchange that ``arkai remote push|pull`` runs after ``dvc push|pull`` (the engine, in this
process, through the file system DVC builds for the remote): the first push (everything
sent), a second push (nothing to send: one listing of the remote), a pull into an empty
store (everything checked and filed) and a second pull. The remote is a local folder, with
``--ssh`` also OpenSSH's ``sshd`` on 127.0.0.1 (the tests' server, a throwaway key), with
``--s3`` also moto's S3 server on 127.0.0.1 (the tests' server).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from arkai.adapters.dvc import remote_objects  # noqa: E402
from arkai.core.hashing import text_digest  # noqa: E402
from arkai.providers.runner import ResponseStore, response_key  # noqa: E402
from arkai.providers.sync import PREFIX, pull_responses, push_responses  # noqa: E402


def dvc_repo(root: Path, url: str, setting: str = "") -> Path:
    (root / ".dvc").mkdir(parents=True)
    config = f"[core]\n    no_scm = True\n    remote = team\n['remote \"team\"']\n    url = {url}\n"
    if setting:
        config += f"    {setting}\n"
    (root / ".dvc" / "config").write_text(config)
    return root


def fill(store: ResponseStore, count: int, kb: int) -> None:
    for n in range(count):
        request = {
            "provider": "openai",
            "model": "bench",
            "pattern": "extract_claims",
            "pattern_digest": text_digest("bench pattern"),
            "input_digest": text_digest(f"input {n}"),
            "options": {},
        }
        key = response_key(request)
        text = os.urandom(kb * 512).hex()
        store.put(key, {"key": key, "request": request, "response": {"text": text}})


def timed(step: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    result = step()
    return round(time.perf_counter() - start, 3), result


def measure(base: Path, url: str, count: int, kb: int, setting: str = "") -> dict[str, Any]:
    a = dvc_repo(base / "a", url, setting)
    b = dvc_repo(base / "b", url, setting)
    fill(ResponseStore(a / ".arkai" / "responses"), count, kb)
    out: dict[str, Any] = {}
    for name, repo, sync in (
        ("push", a, push_responses),
        ("push_again", a, push_responses),
        ("pull", b, pull_responses),
        ("pull_again", b, pull_responses),
    ):
        store = ResponseStore(repo / ".arkai" / "responses")

        def step(repo: Path = repo, store: ResponseStore = store, sync: Any = sync) -> Any:
            with remote_objects(repo, None, PREFIX) as objects:
                return sync(store, objects)

        seconds, result = timed(step)
        out[f"{name}_s"] = seconds
        out[f"{name}_transferred"] = result.transferred
    out["ms_per_entry_push"] = round(1000 * out["push_s"] / count, 2)
    out["ms_per_entry_pull"] = round(1000 * out["pull_s"] / count, 2)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--kb", type=int, default=4, help="size of each response, in KB")
    parser.add_argument("--ssh", action="store_true", help="also through sshd on 127.0.0.1")
    parser.add_argument("--s3", action="store_true", help="also through moto's S3 server")
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="arkai-bench-responses-"))
    report: dict[str, Any] = {
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
        "count": args.count,
        "kb": args.kb,
    }
    try:
        report["folder"] = measure(base / "folder", str(base / "store"), args.count, args.kb)
        if args.ssh:
            from tests.func.remote_servers import SSHServer

            with SSHServer(base / "ssh") as server:
                os.environ["HOME"] = str(server.home)  # known_hosts with the throwaway host key
                key = f"keyfile = {server.user_key}"
                report["ssh"] = measure(base / "over-ssh", server.url, args.count, args.kb, key)
        if args.s3:
            from tests.func.remote_servers import AWS_ENV, S3Server

            os.environ.update(AWS_ENV)
            with S3Server(base) as s3:
                endpoint = f"endpointurl = {s3.endpoint}"
                report["s3"] = measure(base / "over-s3", s3.url, args.count, args.kb, endpoint)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
