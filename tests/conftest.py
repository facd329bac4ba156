"""Shared fixtures: paths to the sample sources and the shared real data, and fresh repos."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import pytest

from arkai.cli import main
from arkai.ops.init import init_repo

T = TypeVar("T")

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "samples"
#: The real test data beside the checkout (not in the repository). Tests that read it carry
#: the `shared_data` marker; ARKAI_SHARED_DATA points elsewhere (e.g. to check that every
#: test that needs the data carries the marker: point it at a missing folder).
SHARED_DATA = Path(os.environ.get("ARKAI_SHARED_DATA") or ROOT.parent / "shared" / "data")
TRANSCRIPTS = SHARED_DATA / "transcripts"

os.environ.setdefault("DVC_NO_ANALYTICS", "1")
os.environ.setdefault("DVC_NO_UPDATER", "1")

BIN = Path(sys.executable).parent
"""This interpreter's ``bin/``: where ``arkai`` and ``dvc`` of the venv under test live."""


def tool_env(**extra: str) -> dict[str, str]:
    """The environment for running ``arkai``, ``dvc`` and ``git`` as subprocesses: this venv's
    ``bin/`` first, no DVC analytics or update checks, a fixed git identity; ``extra`` adds or
    overrides variables."""
    return {
        **os.environ,
        "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}",
        "DVC_NO_ANALYTICS": "1",
        "DVC_NO_UPDATER": "1",
        "GIT_AUTHOR_NAME": "arkai test",
        "GIT_AUTHOR_EMAIL": "test@example.invalid",
        "GIT_COMMITTER_NAME": "arkai test",
        "GIT_COMMITTER_EMAIL": "test@example.invalid",
        **extra,
    }


def as_stage(
    root: Path, folders: Sequence[str], run: Callable[[], T], *, manifests: bool = True
) -> T:
    """A stage's ``run()`` as ``dvc repro`` makes it: after the stages before it wrote the
    manifests of ``folders`` (when ``manifests``), which the stage plans its items from."""
    from arkai.adapters import manifest

    if manifests:
        manifest.write_all(root, *folders)
    return run()


def sh(
    cwd: Path,
    *args: str | Path,
    check: bool = True,
    env: Mapping[str, str] | None = None,
    when: str | None = None,
    text: bool = True,
    timeout: float | None = 900,
) -> subprocess.CompletedProcess[Any]:
    """Run a tool (``arkai``, ``dvc``, ``git``, ``python`` …) in ``cwd``: the one subprocess
    helper of the tests. The environment is :func:`tool_env` unless ``env`` is given; ``when``
    fixes git's author and committer date; with ``check`` a non-zero exit fails the test
    showing the command's output; ``text=False`` keeps stdout and stderr as bytes."""
    environ = dict(tool_env() if env is None else env)
    if when:
        environ.update(GIT_AUTHOR_DATE=when, GIT_COMMITTER_DATE=when)
    argv = [str(a) for a in args]
    proc = subprocess.run(
        argv, cwd=cwd, env=environ, capture_output=True, text=text, timeout=timeout, check=False
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"{argv} -> {proc.returncode}\n{proc.stdout!r}\n{proc.stderr!r}")
    return proc


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """A `shared_data` test fails, never skips, when the data is missing; CI without the data
    deselects the marker instead (`-m "not shared_data"`)."""
    if item.get_closest_marker("shared_data") is not None and not SHARED_DATA.is_dir():
        pytest.fail(
            f"{item.nodeid} needs the shared test data at {SHARED_DATA}, which is missing: put "
            "it beside the checkout (../shared/data) or set ARKAI_SHARED_DATA, or deselect "
            "these tests with -m 'not shared_data'",
            pytrace=False,
        )


@pytest.fixture
def kr(tmp_path: Path) -> Path:
    """A scaffolded knowledge repo without git/DVC (fast; for CLI and operation tests)."""
    path = tmp_path / "kr"
    init_repo(path, git=False)
    return path


Runner = Callable[..., tuple[int, str, str]]


@pytest.fixture
def arkai(capsys: pytest.CaptureFixture[str]) -> Runner:
    """Run the CLI in-process: ``code, out, err = arkai("--repo", p, "add", f)``."""

    def run(*args: Any) -> tuple[int, str, str]:
        capsys.readouterr()
        code = main([str(a) for a in args])
        out, err = capsys.readouterr()
        return code, out, err

    return run


def load_json(text: str) -> Any:
    return json.loads(text)


def dead_pid() -> int:
    """The ID of a process that ran and is gone (a writer killed long ago, to the sweeps)."""
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    return int(done.stdout)


def other_writer_tag() -> str:
    """A writer tag (:func:`arkai.adapters.fs.writer_tag`) other than this machine's."""
    from arkai.adapters.fs import writer_tag

    return "0badc0de" if writer_tag() != "0badc0de" else "deadbeef"


def in_thread(fn: Callable[[], Any]) -> tuple[threading.Thread, dict[str, Any]]:
    """Run ``fn`` in a daemon thread; the dict gets ``result`` or ``error``."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["result"] = fn()
        except BaseException as exc:
            box["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return thread, box


# One real local Ray cluster for the whole run, shared by the xdist workers (tests/raycluster.py).
def pytest_configure(config: pytest.Config) -> None:
    from tests import raycluster

    raycluster.begin_run(config)


def pytest_unconfigure(config: pytest.Config) -> None:
    from tests import raycluster

    raycluster.end_run(config)


def pytest_collection_finish(session: pytest.Session) -> None:
    from tests import raycluster

    raycluster.count_users(session)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[object]:
    try:
        return (yield)
    finally:
        from tests import raycluster

        raycluster.finished(item)


@pytest.fixture(scope="session")
def ray_cluster() -> Any:
    """The run's Ray cluster (a head and a worker node): started on first use, stopped after
    the last test that uses it."""
    from tests import raycluster

    return raycluster.shared()


@pytest.fixture
def on_cluster(ray_cluster: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """This process as a driver of the run's Ray cluster for the test."""
    from tests import raycluster

    yield from raycluster.connected(ray_cluster, monkeypatch)


def chunk_text(index: Path) -> str:
    """The lines of ``index/chunks/`` (every part, in the listing's order) as one text."""
    from arkai.adapters.chunkparts import ChunkParts

    parts = ChunkParts.load(index / "chunks")
    assert parts is not None, f"{index}/chunks has no listing"
    return b"".join(parts.iter_lines()).decode("utf-8")


def chunk_files(index: Path) -> dict[str, bytes]:
    """Every file of ``index/chunks/`` by its path under ``index/``."""
    return {f"chunks/{p.name}": p.read_bytes() for p in sorted((index / "chunks").iterdir())}
