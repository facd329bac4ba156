"""Sharing a library's caches through a DVC remote, against real servers on 127.0.0.1.

Clone A builds the library with the openai provider against the fake LLM server (which counts
requests) and the real embedder, then ``arkai remote push``es to a remote (``dvc push`` plus
the response store); clone B (a ``git clone`` of A) ``arkai remote pull``s and rebuilds, the
extraction from scratch: no provider request, nothing embedded. Remotes: a local folder,
OpenSSH's ``sshd`` through ``dvc-ssh``, and moto's S3 server through ``dvc-s3``. A remote that
drops the connection mid-push (of DVC's objects, of the responses) leaves both sides
consistent and the next push completes.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from arkai.adapters.events import list_runs, read_events
from arkai.core.hashing import text_digest
from arkai.providers.runner import ResponseStore, response_key, response_problem
from tests.adapters.fake_llm import FakeLLM
from tests.conftest import SAMPLES, tool_env
from tests.func.remote_servers import (
    AWS_ENV,
    S3Server,
    SSHServer,
    bad_objects,
    object_count,
)

pytestmark = pytest.mark.slow

#: A hang guard for one dvc/arkai command on a loaded machine, not an expected duration.
CMD_TIMEOUT_S = 300


def sh(cwd: Path, *args: str, check: bool = True, **env: str) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        args,
        cwd=cwd,
        env=tool_env(**env),
        capture_output=True,
        text=True,
        check=False,
        timeout=CMD_TIMEOUT_S,
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"{args} -> {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    return proc


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeLLM]:
    with FakeLLM() as server:
        yield server


@pytest.fixture(scope="module")
def clone_a(tmp_path_factory: pytest.TempPathFactory, fake: FakeLLM) -> Path:
    """A library of one talk built by ``dvc repro`` with the openai provider (fake server)
    and the default embedder, committed to git."""
    base = tmp_path_factory.mktemp("remote")
    repo = base / "a"
    sh(base, "arkai", "init", str(repo))
    params = yaml.safe_load((repo / "params.yaml").read_text())
    params["extract"]["provider"] = "openai"
    params["providers"]["openai"].update(
        base_url=fake.base_url, model="fake-model", api_key_env="ARKAI_TEST_NO_KEY"
    )
    (repo / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    sh(repo, "arkai", "add", str(SAMPLES / "beekeeping-talk.vtt"), "--tags", "test")
    sh(repo, "dvc", "repro")
    assert fake.chat_requests, "clone A's build called the provider"
    assert index_runs(repo)[-1] > 0, "clone A's build embedded the chunks"
    assert any((repo / ".arkai" / "responses").rglob("*.json"))
    sh(repo, "git", "add", "-A")
    sh(repo, "git", "commit", "-qm", "library")
    return repo


def index_runs(repo: Path) -> list[int]:
    """Chunks embedded by each run of the index stage in ``repo``, oldest first."""
    embedded = []
    for run_id in list_runs(repo):
        for event in read_events(repo / ".arkai" / "runs" / run_id / "events.jsonl"):
            if event.get("step") == "vectors" and event.get("type") == "StepCompleted":
                embedded.append(int(event["embedded"]))
    return embedded


def evidence(repo: Path) -> dict[str, list[dict[str, object]]]:
    """Every item's evidence lines without their timestamps."""
    out = {}
    for path in sorted((repo / "extracted").rglob("evidence.jsonl")):
        lines = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]
        out[str(path.relative_to(repo))] = [
            {k: v for k, v in x.items() if k != "ts"} for x in lines
        ]
    return out


def share(repo: Path, name: str, url: str, *options: str) -> None:
    """``arkai remote add`` in clone A, committed so that clones get the remote."""
    out = sh(repo, "arkai", "remote", "add", name, url, "--default", "--force", *options, "--json")
    assert json.loads(out.stdout)["remote"] == {"name": name, "url": url, "default": True}
    sh(repo, "git", "commit", "-qam", f"remote {name}")


def responses(repo: Path) -> dict[str, bytes]:
    """The clone's response store: key → the file's bytes."""
    store = ResponseStore(repo / ".arkai" / "responses")
    return {key: store.path(key).read_bytes() for key in store.list_keys()}


def remote_push(repo: Path, **env: str) -> dict[str, object]:
    """``arkai remote push --json`` in ``repo``: DVC's objects and every response sent."""
    out = json.loads(sh(repo, "arkai", "remote", "push", "--json", **env).stdout)
    assert out["ok"] and out["dvc_error"] is None, out
    assert out["responses"] == {"transferred": len(responses(repo)), "present": 0, "damaged": []}
    return dict(out)


def rebuild_in_clone(
    a: Path, b: Path, fake: FakeLLM, *, keyfile: Path | None = None, **env: str
) -> None:
    """Clone A into B, ``arkai remote pull``, then rebuild: the extraction from scratch
    (extracted/ removed) and every stage up to the index and validation forced (the site is
    not shared: it is left out). Neither calls the provider nor embeds anything, and the
    rebuilt files are A's."""
    sh(a.parent, "git", "clone", "-q", str(a), str(b))
    if keyfile is not None:
        # The key file is per machine: in A's .dvc/config.local, not committed; B sets its own.
        assert "keyfile" not in (b / ".dvc" / "config").read_text()
        sh(b, "dvc", "remote", "modify", "--local", "ssh", "keyfile", str(keyfile))
    calls = len(fake.chat_requests)
    pulled = json.loads(sh(b, "arkai", "remote", "pull", "--json", **env).stdout)
    assert pulled["ok"], pulled
    assert pulled["responses"]["transferred"] == len(responses(a)) > 0
    assert responses(b) == responses(a)
    # Everything the pipeline made is in place but the site (rebuilt from files, not shared).
    # (extract and condense run on every repro: "always changed" is no missing output)
    status = json.loads(sh(b, "dvc", "status", "--json").stdout)
    assert {stage for stage, changes in status.items() if changes != ["always changed"]} == {"site"}
    assert (b / "index" / "vectors").is_dir() and (b / "index" / "beliefs").is_dir()
    shutil.rmtree(b / "extracted")
    sh(b, "dvc", "repro", "--force", "extract", "index", "validate")
    assert len(fake.chat_requests) == calls, "clone B called the provider"
    runs = index_runs(b)
    assert runs and not any(runs), f"clone B embedded chunks: {runs}"
    # The same claims, spans and entities as A's (only extraction timestamps differ).
    assert evidence(b) == evidence(a) and evidence(b)
    for rel in ("index/chunks/parts.json", "index/graph.json", "index/manifest.json"):
        assert (b / rel).read_bytes() == (a / rel).read_bytes(), rel


def test_local_remote(clone_a: Path, fake: FakeLLM, tmp_path: Path) -> None:
    store = tmp_path / "store"
    share(clone_a, "team", str(store))
    remote_push(clone_a)
    assert object_count(store) > 0 and bad_objects(store) == []
    assert sorted(p.parent.name + p.name for p in (store / "arkai-responses").glob("*/*")) == [
        key.removeprefix("sha256:") for key in sorted(responses(clone_a))
    ]
    rebuild_in_clone(clone_a, tmp_path / "b", fake)

    # The control: a clone that did not pull calls the provider again (and A's own build
    # embedded its chunks: the fixture checks).
    c = tmp_path / "c"
    sh(clone_a.parent, "git", "clone", "-q", str(clone_a), str(c))
    # CI's check of a fresh clone: the responses are not in its DVC cache, which is no stale
    # dvc.lock.
    ci = sh(c, "bash", "scripts/ci/validate.sh", ARKAI_DIFF_BASE="HEAD")
    assert "✅ `dvc.lock` is current" in ci.stdout, ci.stdout
    calls = len(fake.chat_requests)
    shutil.rmtree(c / "extracted")
    sh(c, "dvc", "repro", "extract")
    assert len(fake.chat_requests) > calls


def test_ssh_remote(clone_a: Path, fake: FakeLLM, tmp_path: Path) -> None:
    with SSHServer(tmp_path / "ssh") as server:
        share(clone_a, "ssh", server.url, "--keyfile", str(server.user_key))
        remote_push(clone_a, HOME=str(server.home))
        assert object_count(server.storage) > 0 and bad_objects(server.storage) == []
        rebuild_in_clone(
            clone_a, tmp_path / "b", fake, keyfile=server.user_key, HOME=str(server.home)
        )


def test_s3_remote(clone_a: Path, fake: FakeLLM, tmp_path: Path) -> None:
    with S3Server(tmp_path) as server:
        share(clone_a, "s3", server.url, "--endpoint-url", server.endpoint)
        remote_push(clone_a, **AWS_ENV)
        rebuild_in_clone(clone_a, tmp_path / "b", fake, **AWS_ENV)


def test_push_dropped_mid_transfer_then_completes(
    clone_a: Path, fake: FakeLLM, tmp_path: Path
) -> None:
    """sshd killed (listener and sessions) while ``dvc push`` uploads a large-ish cache: the
    push fails, the local cache and the remote's objects are intact (every object hashes to its
    name: uploads go to a temporary name first), ``dvc status -c`` reports what is missing, and
    the next push completes."""
    a = tmp_path / "a"
    shutil.copytree(clone_a, a, symlinks=True)
    # A large-ish response store: 40 responses of 1 MB (foreign keys are cache misses), so
    # the connection drops in the middle of files, not between them.
    big = a / "index" / "vectors" / "ff"
    big.mkdir(parents=True, exist_ok=True)
    for n in range(40):
        body = json.dumps({"n": n, "pad": os.urandom(512 * 1024).hex()}).encode()
        (big / f"ff{n:062d}.json").write_bytes(body)
    sh(a, "dvc", "commit", "--force", "index")
    server = SSHServer(tmp_path / "ssh")
    server.start()
    try:
        share(a, "ssh", server.url, "--keyfile", str(server.user_key))
        env = tool_env(HOME=str(server.home))
        push = subprocess.Popen(
            [sys.executable, "-m", "dvc", "push"],
            cwd=a,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        deadline = time.monotonic() + CMD_TIMEOUT_S
        while object_count(server.storage) < 8 and push.poll() is None:
            assert time.monotonic() < deadline, "dvc push uploaded nothing"
            time.sleep(0.01)
        assert push.poll() is None, "the push finished before the connection could be dropped"
        server.kill()
        out, _ = push.communicate(timeout=CMD_TIMEOUT_S)
        assert push.returncode != 0, out
        uploaded = object_count(server.storage)
        assert uploaded > 0, out
        # Both sides consistent: no torn object on the remote, the local cache intact.
        assert bad_objects(server.storage) == []
        # (the site, which reads index/, would rebuild from the junk: only index's state counts)
        assert "up to date" in sh(a, "dvc", "status", "index").stdout
        server.start()
        status = sh(a, "dvc", "status", "--cloud", "--json", check=False, **env)
        assert json.loads(status.stdout), "the remote should lack what the dropped push missed"
        sh(a, "dvc", "push", **env)
        assert object_count(server.storage) > uploaded
        assert bad_objects(server.storage) == []
        status = sh(a, "dvc", "status", "--cloud", "--json", **env)
        assert json.loads(status.stdout) == {}
    finally:
        server.kill()


def entry_paths(storage: Path) -> dict[str, Path]:
    """The responses on a folder or SFTP remote: key → path (temporary names left out)."""
    out = {}
    for path in sorted((storage / "arkai-responses").glob("*/*")):
        oid = path.parent.name + path.name
        if len(oid) == 64 and not path.name.startswith("."):
            out[f"sha256:{oid}"] = path
    return out


def remote_entries(storage: Path) -> dict[str, bytes]:
    """The responses on a folder or SFTP remote: key → bytes."""
    return {key: path.read_bytes() for key, path in entry_paths(storage).items()}


def start_push(repo: Path, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        ["arkai", "remote", "push", "--json"],
        cwd=repo,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def freeze_midway(server: SSHServer, push: subprocess.Popen[str], count: int) -> None:
    """Freeze sshd (SIGSTOP) once ``count`` entries are on the remote, while the push still
    runs: from then on nothing the push sends is answered, however loaded the machine."""
    deadline = time.monotonic() + CMD_TIMEOUT_S
    while len(entry_paths(server.storage)) < count and push.poll() is None:
        assert time.monotonic() < deadline, "arkai remote push uploaded nothing"
        time.sleep(0.01)
    server.freeze()
    assert push.poll() is None, "the push finished before the server could be frozen"


def consistent(storage: Path, local: dict[str, bytes]) -> dict[str, bytes]:
    """Every entry on the remote whole and sound (uploads go to a temporary name renamed
    into place); returns them."""
    uploaded = remote_entries(storage)
    for key, raw in uploaded.items():
        assert raw == local[key] and response_problem(key, raw) is None
    return uploaded


def test_response_push_dropped_mid_transfer_then_completes(clone_a: Path, tmp_path: Path) -> None:
    """``arkai remote push`` of the responses against an sshd that (1) freezes mid-transfer
    (SIGSTOP: connections open, nothing answers) — the push gives up after
    ``remote.timeout_s``, exit 3, saying what was not sent; (2) dies mid-transfer (SIGKILL:
    connections dropped) — the push fails naming the remote. Each time every entry on the
    remote is whole and the local store untouched, and the next push sends the rest."""
    a = tmp_path / "a"
    shutil.copytree(clone_a, a, symlinks=True)
    params = yaml.safe_load((a / "params.yaml").read_text())
    params["remote"] = {**params.get("remote", {}), "timeout_s": 5}
    (a / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    # Forty responses of 1 MB, sound records, so the server stops in the middle of files.
    store = ResponseStore(a / ".arkai" / "responses")
    for n in range(40):
        request = {
            "provider": "openai",
            "model": "fake-model",
            "pattern": "extract_claims",
            "pattern_digest": text_digest("a pattern"),
            "input_digest": text_digest(f"input {n}"),
            "options": {},
        }
        key = response_key(request)
        text = os.urandom(512 * 1024).hex()
        store.put(key, {"key": key, "request": request, "response": {"text": text}})
    local = responses(a)
    server = SSHServer(tmp_path / "ssh")
    server.start()
    try:
        share(a, "ssh", server.url, "--keyfile", str(server.user_key))
        env = tool_env(HOME=str(server.home))

        push = start_push(a, env)
        freeze_midway(server, push, 8)
        out, err = push.communicate(timeout=CMD_TIMEOUT_S)
        assert push.returncode == 3, (out, err)
        message = " ".join(err.split())
        assert "remote ssh: push stalled:" in message and "did not answer for 5 s" in message
        frozen = consistent(server.storage, local)
        assert 0 < len(frozen) < len(local)
        counts = re.search(r"(\d+) of (\d+) responses moved, (\d+) not sent", message)
        assert counts, message
        moved, total, unsent = map(int, counts.groups())
        assert total == len(local) and moved + unsent == total and moved <= len(frozen)
        assert responses(a) == local
        server.kill()

        server.start()
        push = start_push(a, env)
        freeze_midway(server, push, len(frozen) + 8)
        server.kill()
        out, err = push.communicate(timeout=CMD_TIMEOUT_S)
        assert push.returncode == 3, (out, err)
        assert "remote ssh: push stopped after" in err, err
        uploaded = consistent(server.storage, local)
        assert len(frozen) < len(uploaded) < len(local)
        assert responses(a) == local

        server.start()
        out = json.loads(sh(a, "arkai", "remote", "push", "--json", HOME=str(server.home)).stdout)
        assert out["ok"] and out["responses"] == {
            "transferred": len(local) - len(uploaded),
            "present": len(uploaded),
            "damaged": [],
        }
        assert remote_entries(server.storage) == local
    finally:
        server.kill()
