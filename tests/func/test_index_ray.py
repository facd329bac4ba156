"""The index stage's embedding batches as Ray tasks (``extract.executor: ray``) on the run's
real local Ray cluster (tests/raycluster.py), with the real packaged model (``minilm-onnx``):
the vector store is byte-identical to a local run's, the driver computes no embedding, and a
worker killed mid-batch has its batch re-run — or, with no retries left, the run fails and the
store holds nothing of it."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from arkai.cli import main
from arkai.errors import PipelineError
from arkai.ops import Repo
from arkai.ops.index import run_index
from arkai.ops.init import init_repo
from arkai.search import embed
from tests.conftest import SAMPLES, in_thread
from tests.func.test_extract_ray import tree
from tests.raycluster import HANG_GUARD_S, Cluster

pytestmark = pytest.mark.slow

MODEL = "minilm-onnx"
TASK = b"arkai-embed"
CHUNKS = 9  # the sample talk's transcript chunks
#: Tries of the kill that must fail a run without retries (see its test).
MISSED_KILLS = 5


@pytest.fixture(scope="module")
def extracted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """One sample talk, added once for the module (not extracted: its transcript's nine chunks
    are enough); embeddings in batches of two."""
    root = tmp_path_factory.mktemp("ray-index") / "kr"
    init_repo(root, git=False)
    talk = str(SAMPLES / "beekeeping-talk.vtt")
    assert main(["--repo", str(root), "add", "--quiet", talk]) == 0
    params = yaml.safe_load((root / "params.yaml").read_text())
    params["index"].update(embedder=MODEL, batch_size=2)
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    yield root


def _copy(extracted: Path, dest: Path, **ray: Any) -> Path:
    shutil.copytree(extracted, dest)
    params = yaml.safe_load((dest / "params.yaml").read_text())
    params["extract"]["executor"] = "ray"
    params["extract"]["ray"].update(ray)
    (dest / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    return dest


def _no_local_encoding(monkeypatch: pytest.MonkeyPatch) -> None:
    """This process (the driver) must not embed: the model class refuses here (the Ray
    workers are other processes, with the class as installed)."""

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the driver embedded a batch")

    monkeypatch.setattr(embed.OnnxMiniLMEmbedder, "encode", refuse)


def test_ray_batches_write_the_store_of_a_local_run(
    tmp_path: Path, extracted: Path, on_cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    local = tmp_path / "local"
    shutil.copytree(extracted, local)
    here = run_index(Repo.at(local))
    assert here.embedder == MODEL and here.embedded > 6  # several batches of 2

    remote = _copy(extracted, tmp_path / "remote")
    with monkeypatch.context() as patched:
        _no_local_encoding(patched)
        there = run_index(Repo.at(remote))
    assert (there.embedded, there.embedder, there.dim) == (here.embedded, MODEL, here.dim)
    assert tree(remote / "index") == tree(local / "index")  # the vectors byte for byte


def _embedding_worker(cluster: Cluster) -> int | None:
    """A Ray worker process of ``cluster`` running an embedding task now (Ray titles it by
    the task; the cluster's auth token, in its processes' environment, tells its workers from
    those of another test run on the same machine)."""
    token = f"RAY_AUTH_TOKEN={cluster.auth['RAY_AUTH_TOKEN']}".encode()
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            with contextlib.suppress(OSError):
                if TASK in (proc / "cmdline").read_bytes() and token in (
                    (proc / "environ").read_bytes().split(b"\0")
                ):
                    return int(proc.name)
    return None


def _kill_a_worker_mid_batch(root: Path, cluster: Cluster) -> tuple[int, dict[str, Any]]:
    """Index ``root`` in a thread; kill the first worker of ``cluster`` seen running a batch;
    the run's outcome."""
    thread, box = in_thread(lambda: run_index(Repo.at(root)))
    deadline = time.monotonic() + HANG_GUARD_S
    pid = None
    while pid is None and thread.is_alive():
        assert time.monotonic() < deadline, "no embedding task ever ran"
        pid = _embedding_worker(cluster)
        time.sleep(0.01)
    assert pid is not None, f"the run ended before a batch was seen running: {box}"
    # The worker may be gone between being seen and the kill (on a loaded machine Ray reaps
    # or loses workers too): the run then goes on as after a kill or a missed one, which the
    # callers tell apart by its outcome.
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    thread.join(HANG_GUARD_S)
    assert not thread.is_alive()
    return pid, box


def test_a_worker_killed_mid_batch_is_retried_and_nothing_partial_is_stored(
    tmp_path: Path, extracted: Path, on_cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    with monkeypatch.context() as patched:
        _no_local_encoding(patched)
        # No retries: the run fails, and the store holds nothing of it (it is written once,
        # at the end, by the driver). A batch takes milliseconds once a worker has the model,
        # so on a loaded machine the kill can land just after the batch it saw was done: the
        # run then embeds every chunk (nothing was lost, nothing retried) and is tried again.
        for attempt in range(MISSED_KILLS):
            failing = _copy(extracted, tmp_path / f"failing-{attempt}", max_retries=0)
            _, box = _kill_a_worker_mid_batch(failing, on_cluster)
            if "error" in box:
                break
            assert box["result"].embedded == CHUNKS, box  # a miss: a whole, normal run
        else:
            pytest.fail(f"{MISSED_KILLS} kills all landed after their batch was done")
        assert isinstance(box.get("error"), PipelineError), box
        assert "arkai-embed" in str(box["error"])
        assert not list((failing / "index" / "vectors").glob("*"))

        # Retries (the default): the killed batch runs again elsewhere; same bytes as local.
        retried = _copy(extracted, tmp_path / "retried")
        _, box = _kill_a_worker_mid_batch(retried, on_cluster)
        summary = box.get("result")
        assert summary is not None and summary.embedded > 6, box
    local = tmp_path / "local"
    shutil.copytree(extracted, local)
    assert run_index(Repo.at(local)).embedded == summary.embedded
    assert tree(retried / "index") == tree(local / "index")
