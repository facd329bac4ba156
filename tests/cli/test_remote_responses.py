"""``arkai remote push|pull`` exchange the response store through a DVC remote (a local
folder here, with real ``dvc push|pull``; SSH and S3 in tests/func/test_remote.py): a union
in which nothing is overwritten or deleted, and a damaged entry is reported, never used."""

from __future__ import annotations

import json
import re
import shutil
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from arkai.adapters.dvc import remote_objects
from arkai.errors import PipelineError
from arkai.patterns import get_pattern
from arkai.providers.runner import ResponseStore, Runner, RunnerConfig
from arkai.providers.sync import (
    SyncResult,
    _bounded,
    _RemoteFailed,
    pull_responses,
    push_responses,
)
from tests.conftest import Runner as CLI
from tests.conftest import in_thread, load_json
from tests.core.test_runner import TEXT, FlakyProvider
from tests.func.remote_servers import free_port

PREFIX = "arkai-responses"


@pytest.fixture
def store_dir(tmp_path: Path) -> Path:
    return tmp_path / "remote"


def dvc_repo(tmp_path: Path, name: str, store_dir: Path | str) -> Path:
    """A DVC repo with no pipeline whose default remote ``team`` is the folder ``store_dir``
    (the configuration ``arkai remote add team DIR -d`` writes)."""
    root = tmp_path / name
    (root / ".dvc").mkdir(parents=True)
    config = "[core]\n    no_scm = True\n    remote = team\n"
    (root / ".dvc" / "config").write_text(f"{config}['remote \"team\"']\n    url = {store_dir}\n")
    return root


def library(tmp_path: Path, name: str, arkai: CLI, store_dir: Path | str) -> Path:
    """A scaffolded library, a DVC repo with no pipeline (``dvc push|pull`` have nothing of
    their own to move) whose default remote is a local folder."""
    root = tmp_path / name
    code, _, err = arkai("init", root, "--no-git")
    assert code == 0, err
    (root / "dvc.yaml").unlink()
    dvc_repo(tmp_path, name, store_dir)
    return root


def store(root: Path) -> ResponseStore:
    return ResponseStore(root / ".arkai" / "responses")


def respond(root: Path, *lines: int) -> list[str]:
    """Responses made by the runner (a provider in memory), one per transcript line."""
    runner = Runner(provider=FlakyProvider([]), store=store(root), config=RunnerConfig())
    pattern = get_pattern("extract_claims", None)
    return [runner.run(pattern, TEXT.split("\n")[n], {}).keys[0] for n in lines]


def remote_path(store_dir: Path, key: str) -> Path:
    oid = key.removeprefix("sha256:")
    return store_dir / PREFIX / oid[:2] / oid[2:]


def push(root: Path) -> SyncResult:
    with remote_objects(root, None, PREFIX) as objects:
        return push_responses(store(root), objects)


def pull(root: Path) -> SyncResult:
    with remote_objects(root, None, PREFIX) as objects:
        return pull_responses(store(root), objects)


def test_cli_push_then_pull(tmp_path: Path, arkai: CLI, store_dir: Path) -> None:
    """The commands: ``dvc push|pull`` run (nothing of theirs to move here), then the
    responses; JSON on stdout, a summary as text."""
    a = library(tmp_path, "a", arkai, store_dir)
    b = library(tmp_path, "b", arkai, store_dir)
    keys = respond(a, 0, 1)
    code, out, err = arkai("--repo", a, "remote", "push", "--json")
    assert code == 0, err
    assert load_json(out) == {
        "direction": "push",
        "remote": {"name": "team", "url": str(store_dir)},
        "dvc": "Everything is up to date.",
        "dvc_error": None,
        "responses": {"transferred": 2, "present": 0, "damaged": []},
        "ok": True,
    }
    code, out, err = arkai("--repo", b, "remote", "pull", "team")
    assert code == 0, err
    assert out.splitlines() == [
        f"remote team: {store_dir}",
        "dvc pull: Everything is up to date.",
        "responses: 2 received, 0 already there",
    ]
    assert store(b).list_keys() == sorted(keys)
    for key in keys:
        assert store(b).path(key).read_bytes() == store(a).path(key).read_bytes()


def test_cli_pull_when_dvc_fails(tmp_path: Path, arkai: CLI, store_dir: Path) -> None:
    """A clone whose pipeline outputs were never pushed: ``dvc pull`` fails, the responses
    are pulled all the same, and the command says so and exits 3."""
    a = library(tmp_path, "a", arkai, store_dir)
    keys = respond(a, 0)
    assert push(a) == SyncResult(transferred=1, present=0)
    c = tmp_path / "c"
    code, _, err = arkai("init", c, "--no-git")
    assert code == 0, err
    dvc_repo(tmp_path, "c", store_dir)  # its dvc.yaml kept: outputs DVC has no hashes for
    code, out, err = arkai("--repo", c, "remote", "pull", "--json")
    assert code == 3, err
    result = load_json(out)
    assert result["dvc_error"] and not result["ok"] and result["dvc"] == ""
    assert f"dvc pull failed: {result['dvc_error']}" in " ".join(err.split())
    assert result["responses"] == {"transferred": 1, "present": 0, "damaged": []}
    assert store(c).list_keys() == keys


def test_cli_refusals(tmp_path: Path, arkai: CLI, store_dir: Path) -> None:
    a = library(tmp_path, "a", arkai, store_dir)
    respond(a, 0)
    got, _, err = arkai("--repo", a, "remote", "push", "nope")
    assert got == 2 and "remote nope:" in err and "doesn't exist" in err, err
    (a / ".dvc" / "config").write_text("[core]\n    no_scm = True\n")
    got, _, err = arkai("--repo", a, "remote", "pull")
    assert got == 2 and "no remote specified" in err and "arkai remote add" in err, err
    assert not store_dir.exists()


def test_damaged_local_entries_are_not_pushed(tmp_path: Path, arkai: CLI, store_dir: Path) -> None:
    a = library(tmp_path, "a", arkai, store_dir)
    keys = respond(a, 0, 1)
    path = store(a).path(keys[0])
    path.write_bytes(path.read_bytes()[:100])
    got, out, err = arkai("--repo", a, "remote", "push")
    assert got == 3
    assert f"damaged response {path}: not valid JSON" in err
    assert "responses: 1 sent, 0 already there, 1 damaged (not used)" in out
    assert not remote_path(store_dir, keys[0]).exists()
    assert remote_path(store_dir, keys[1]).is_file()


def test_push_and_pull_are_a_union(tmp_path: Path, store_dir: Path) -> None:
    a = dvc_repo(tmp_path, "a", store_dir)
    b = dvc_repo(tmp_path, "b", store_dir)
    keys_a = respond(a, 0, 1, 2)
    keys_b = respond(b, 2, 3)  # line 2 answered by both: the same key, other bytes
    path_b = store(b).path(keys_b[0])
    path_b.write_bytes(path_b.read_bytes().replace(b'"created_at":', b'"created_at" :'))
    own_b = path_b.read_bytes()

    assert push(a) == SyncResult(transferred=3, present=0)
    for key in keys_a:
        assert remote_path(store_dir, key).read_bytes() == store(a).path(key).read_bytes()
        # The same layout on both sides: ab/cdef… (a local entry ends in .json).
        local = store(a).path(key).relative_to(store(a).root)
        assert f"{local}" == f"{remote_path(store_dir, key).relative_to(store_dir / PREFIX)}.json"
    # B sends only what the remote lacks; A's entry under the shared key is not overwritten.
    shared = remote_path(store_dir, keys_a[2]).read_bytes()
    assert push(b) == SyncResult(transferred=1, present=1)
    assert remote_path(store_dir, keys_a[2]).read_bytes() == shared != own_b
    # B receives A's two others and keeps its own copy of the shared one.
    assert pull(b) == SyncResult(transferred=2, present=2)
    assert store(b).list_keys() == sorted({*keys_a, *keys_b})
    assert path_b.read_bytes() == own_b
    # A receives B's: nobody's entry was deleted anywhere; nothing is left to do either way.
    assert pull(a) == SyncResult(transferred=1, present=3)
    assert sorted(p.name for p in (store_dir / PREFIX).glob("*/*")) == sorted(
        k.removeprefix("sha256:")[2:] for k in {*keys_a, *keys_b}
    )
    assert push(a) == SyncResult(transferred=0, present=4) == pull(b)

    # What a pulled entry is for: the runner answers from it without calling the provider.
    provider = FlakyProvider([])
    runner = Runner(provider=provider, store=store(b), config=RunnerConfig())
    result = runner.run(get_pattern("extract_claims", None), TEXT.split("\n")[0], {})
    assert result.cached and provider.requests == []


def test_damaged_remote_entries_are_reported_not_used(tmp_path: Path, store_dir: Path) -> None:
    a = dvc_repo(tmp_path, "a", store_dir)
    b = dvc_repo(tmp_path, "b", store_dir)
    keys = respond(a, 0, 1, 2, 3, 4)
    assert push(a).transferred == 5
    torn, edited, moved, answer = (remote_path(store_dir, k) for k in keys[:4])
    torn.write_bytes(torn.read_bytes()[:-40])
    record = json.loads(edited.read_bytes())
    record["request"]["input_digest"] = "sha256:" + "0" * 64
    edited.write_text(json.dumps(record))
    shutil.copyfile(remote_path(store_dir, keys[4]), moved)  # another key's record
    record = json.loads(answer.read_bytes())
    del record["response"]["text"]
    answer.write_text(json.dumps(record))
    # What a dropped upload may leave on a folder or SFTP remote: a temporary name.
    (torn.parent / ".Xq2.tmp").write_bytes(b'{"key": "sha')

    result = pull(b)
    assert result.transferred == 1 and result.present == 0
    damaged = {d.key: d.problem for d in result.damaged}
    assert set(damaged) == set(keys[:4]), damaged
    assert "not valid JSON" in damaged[keys[0]]
    assert damaged[keys[1]] == "its request does not hash to its key"
    assert damaged[keys[2]].startswith(f"filed under {keys[2]} but its key is")
    assert damaged[keys[3]] == "no response text"
    assert {d.where for d in result.damaged} == {
        f"{store_dir}/{PREFIX}/{p.relative_to(store_dir / PREFIX)}"
        for p in (torn, edited, moved, answer)
    }
    # Only the sound entry reached the store; nothing of the damaged ones, no temp files.
    assert store(b).list_keys() == [keys[4]]
    assert [p for p in store(b).root.rglob("*") if p.is_file()] == [store(b).path(keys[4])]
    # A damaged entry is not "present" either: fixed on the remote, the next pull takes it.
    shutil.copyfile(store(a).path(keys[0]), torn)
    rest = tuple(d for d in result.damaged if d.key != keys[0])
    assert pull(b) == SyncResult(transferred=1, present=1, damaged=rest)


def test_an_unreachable_remote_is_a_pipeline_error(tmp_path: Path) -> None:
    port = free_port()  # nothing listens there
    a = dvc_repo(tmp_path, "a", f"ssh://me@127.0.0.1:{port}/srv/library")
    respond(a, 0)
    with pytest.raises(PipelineError, match=r"remote team: cannot list ssh://me@127\.0\.0\.1"):
        push(a)
    assert len(store(a).list_keys()) == 1


@contextmanager
def silent_listener() -> Iterator[int]:
    """A TCP listener on 127.0.0.1 that accepts connections and never says a word (a stalled
    or frozen server); yields its port."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        yield int(listener.getsockname()[1])


#: A hang guard on a loaded machine, far above the timeouts the tests set.
GUARD_S = 120


@pytest.mark.parametrize("sync", [push_responses, pull_responses])
def test_a_remote_that_never_answers_fails_within_the_timeout(
    tmp_path: Path, sync: Callable[..., SyncResult]
) -> None:
    with silent_listener() as port:
        a = dvc_repo(tmp_path, "a", f"ssh://me@127.0.0.1:{port}/srv/library")
        keys = respond(a, 0)
        before = store(a).read_raw(keys[0])

        def run() -> SyncResult:
            with remote_objects(a, None, PREFIX) as objects:
                return sync(store(a), objects, timeout=1.5)

        thread, box = in_thread(run)
        thread.join(GUARD_S)
        assert not thread.is_alive(), "the exchange hung on a silent remote"
    error = box.get("error")
    assert isinstance(error, PipelineError), box
    assert re.fullmatch(
        rf"remote team: cannot list ssh://me@127\.0\.0\.1:{port}/srv/library/{PREFIX}: "
        r"no answer for 1\.5 s; nothing was moved",
        error.message,
    ), error.message
    assert "remote.timeout_s" in (error.hint or "")
    assert store(a).list_keys() == keys and store(a).read_raw(keys[0]) == before


def test_cli_push_to_a_silent_remote_exits_3(tmp_path: Path, arkai: CLI) -> None:
    """The command bounds both steps by params.yaml: ``dvc push`` (stopped after
    ``remote.dvc_timeout_s``) and the response exchange (``remote.timeout_s``)."""
    with silent_listener() as port:
        url = f"ssh://me@127.0.0.1:{port}/srv/library"
        a = library(tmp_path, "a", arkai, url)
        params = a / "params.yaml"
        params.write_text(
            params.read_text(encoding="utf-8").replace(
                "  timeout_s: 60\n  dvc_timeout_s: 3600\n", "  timeout_s: 1\n  dvc_timeout_s: 2\n"
            ),
            encoding="utf-8",
        )
        assert "dvc_timeout_s: 2" in params.read_text(encoding="utf-8")
        respond(a, 0)
        thread, box = in_thread(lambda: arkai("--repo", a, "remote", "push"))
        thread.join(GUARD_S)
        assert not thread.is_alive(), "arkai remote push hung on a silent remote"
    code, _, err = box["result"]
    assert code == 3, err
    assert f"remote team: cannot list {url}/{PREFIX}: no answer for 1 s" in " ".join(err.split())


def test_what_a_failed_transfer_left_is_freed_on_its_worker() -> None:
    """The remote file object of a failed upload (here a stand-in held by the failing frame)
    is finalized on the worker, at once, not kept alive by the error's traceback. Left to the
    garbage collector at interpreter exit, fsspec's SFTP file closed itself through an event
    loop that was gone and the failed push never exited (seen with a dropped sshd)."""
    freed: list[str] = []

    class Upload:
        def __del__(self) -> None:
            freed.append(threading.current_thread().name)

    def one(item: int) -> None:
        upload = Upload()
        assert upload
        raise _RemoteFailed(OSError("connection lost"))

    with pytest.raises(_RemoteFailed) as raised:
        list(_bounded([1], one, 1, 60.0, "push"))
    assert freed == ["arkai-push"]
    assert raised.value.exc.__traceback__ is None
