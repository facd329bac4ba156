"""One real local Ray cluster for a whole test run, shared by every xdist worker.

The first test that asks for it starts it — a head node and a worker node, one CPU each,
``ray start`` as separate processes — under a file lock in a folder named after the run
(:data:`RUN_ENV`, set by the run's main process before xdist starts its workers, which inherit
it); the others find its address in that folder. It is stopped

- when the last test that uses it has finished, whichever worker ran it (a counter in the
  folder, against the number of such tests every worker collected alike);
- else when the run ends (the main process's ``pytest_unconfigure``: a run stopped early by
  ``-x`` or Ctrl-C, a test skipped before it asked);
- else, when the run is killed outright (SIGKILL, a lost terminal), by a watchdog process
  started with the cluster, which stops it once the run's main process is gone.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

import pytest
from filelock import FileLock

#: ``<pid of the run's main process>-<random>``: names the run's folder.
RUN_ENV = "ARKAI_TEST_RUN"
FIXTURE = "ray_cluster"
HANG_GUARD_S = 120.0
WATCH_S = 1.0


@dataclass(frozen=True)
class Cluster:
    address: str
    groups: list[int]
    """Process groups of the `ray start` commands: every daemon and worker of the cluster."""
    auth: dict[str, str]
    """Ray's token authentication, set explicitly for the cluster and its drivers (what Ray
    would otherwise do depends on a token file in the home folder)."""
    temp: str
    watchdog: int


def begin_run(config: pytest.Config) -> None:
    """In the run's main process (not an xdist worker): a fresh run name, inherited by the
    workers (a pytest started by a test gets its own)."""
    if not hasattr(config, "workerinput"):
        os.environ[RUN_ENV] = f"{os.getpid()}-{uuid.uuid4().hex[:12]}"


def _folder() -> Path:
    run = os.environ.get(RUN_ENV) or f"{os.getpid()}-solo"
    folder = Path(tempfile.gettempdir()) / f"arkai-ray-{run}"
    folder.mkdir(exist_ok=True)
    return folder


def _lock(folder: Path) -> FileLock:
    return FileLock(str(folder / "lock"), timeout=HANG_GUARD_S * 3)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _ray_start(args: list[str], env: dict[str, str], groups: list[int]) -> subprocess.Popen[str]:
    from tests.conftest import BIN

    proc = subprocess.Popen(
        [str(BIN / "ray"), "start", *args], env=env, start_new_session=True,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    groups.append(proc.pid)
    return proc


def kill_groups(groups: list[int]) -> None:
    for group in groups:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(group, signal.SIGKILL)


#: The watchdog: waits for the run's main process to go, then kills the cluster's groups and
#: removes its temp folder and the run's folder.
_WATCHDOG = """
import os, shutil, signal, sys, time
every, owner, folders = float(sys.argv[1]), int(sys.argv[2]), sys.argv[3:5]
groups = [int(g) for g in sys.argv[5:]]
def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
while alive(owner):
    time.sleep(every)
for g in groups:
    try:
        os.killpg(g, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
for folder in folders:
    shutil.rmtree(folder, ignore_errors=True)
"""


def _start() -> Cluster:
    """A head node and a worker node, one CPU each, in their own process groups and temp
    folder (short: Ray's socket paths must fit in 107 bytes), and their watchdog."""
    from tests.conftest import tool_env

    temp = tempfile.mkdtemp(prefix="arkray")
    port = _free_port()
    auth = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32)}
    env = tool_env(RAY_USAGE_STATS_ENABLED="0", **auth)
    common = ["--num-cpus=1", "--object-store-memory=80000000", "--disable-usage-stats"]
    groups: list[int] = []
    try:
        head = ["--head", f"--port={port}", "--node-ip-address=127.0.0.1", f"--temp-dir={temp}"]
        # Both at once: the worker node waits for the head's GCS to answer.
        starting = [_ray_start([*head, "--include-dashboard=false", *common], env, groups),
                    _ray_start([f"--address=127.0.0.1:{port}", *common], env, groups)]  # fmt: skip
        for proc in starting:
            out, _ = proc.communicate(timeout=HANG_GUARD_S)
            assert proc.returncode == 0, out
        owner = os.environ.get(RUN_ENV, str(os.getpid())).split("-", 1)[0]
        watchdog = subprocess.Popen(
            [sys.executable, "-c", _WATCHDOG, str(WATCH_S), owner, temp, str(_folder()),
             *map(str, groups)],
            start_new_session=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
    except BaseException:
        kill_groups(groups)
        shutil.rmtree(temp, ignore_errors=True)
        raise
    return Cluster(f"127.0.0.1:{port}", groups, auth, temp, watchdog.pid)


def _stop(folder: Path) -> None:
    """Stop the folder's cluster, if one runs (call under the lock)."""
    state = folder / "cluster.json"
    if not state.is_file():
        return
    cluster = Cluster(**json.loads(state.read_text()))
    kill_groups(cluster.groups)
    shutil.rmtree(cluster.temp, ignore_errors=True)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(cluster.watchdog, signal.SIGKILL)
    state.unlink()
    (folder / "stopped").touch()


def shared() -> Cluster:
    """The run's cluster, started by the first caller of any worker."""
    folder = _folder()
    with _lock(folder):
        state = folder / "cluster.json"
        if state.is_file():
            return Cluster(**json.loads(state.read_text()))
        assert not (folder / "stopped").exists(), "the run's Ray cluster was stopped early"
        cluster = _start()
        tmp = state.with_suffix(".tmp")
        tmp.write_text(json.dumps(asdict(cluster)))
        tmp.replace(state)
        return cluster


def count_users(session: pytest.Session) -> None:
    """Record how many collected tests use the cluster (every worker collects the same)."""
    users = sum(1 for item in session.items if FIXTURE in getattr(item, "fixturenames", ()))
    session.config.stash[_USERS] = users


def finished(item: pytest.Item) -> None:
    """A test is done: the last of the run's tests that used the cluster stops it."""
    if FIXTURE not in getattr(item, "fixturenames", ()) or RUN_ENV not in os.environ:
        return
    folder = _folder()
    with _lock(folder):
        done_file = folder / "done"
        done = int(done_file.read_text() or 0) + 1 if done_file.is_file() else 1
        done_file.write_text(str(done))
        if done >= item.config.stash.get(_USERS, sys.maxsize):
            _stop(folder)


def end_run(config: pytest.Config) -> None:
    """In the run's main process: stop the cluster if it still runs, remove the folder."""
    if hasattr(config, "workerinput") or RUN_ENV not in os.environ:
        return
    folder = _folder()
    with _lock(folder):
        _stop(folder)
    shutil.rmtree(folder, ignore_errors=True)


def connected(cluster: Cluster, monkeypatch: pytest.MonkeyPatch) -> Iterator[Cluster]:
    """This process as a driver of ``cluster`` for one test: its address and token in the
    environment, Ray's per-process auth cache dropped before and after (Ray reads the token
    once per process: a test that ran Ray code earlier would leave the driver without it)."""
    from ray._private.authentication_test_utils import reset_auth_token_state

    from arkai.adapters.raytasks import ENV_ADDRESS

    monkeypatch.setenv(ENV_ADDRESS, cluster.address)
    for name, value in cluster.auth.items():
        monkeypatch.setenv(name, value)
    reset_auth_token_state()
    yield cluster
    for name in cluster.auth:
        monkeypatch.delenv(name, raising=False)
    reset_auth_token_state()


_USERS = pytest.StashKey[int]()
