"""The ``extract`` stage's walk runs in a forked child while the stage's process loads the
provider's engines (``preload``, issue 17): the same manifests and outputs, the load waited
for only when an item is to be extracted, nothing preloaded where the walk cannot fork or the
calls run elsewhere, and a walk that dies fails the stage."""

from __future__ import annotations

import os
import shutil
import signal
import threading
from pathlib import Path
from typing import Any

import pytest

from arkai.adapters import manifest
from arkai.adapters.beside import BesideError
from arkai.ops import Repo
from arkai.ops import extract as extract_op
from arkai.providers.builtin import BuiltinProvider


class Seen:
    """Where the walk ran (a file: the child's memory is its own) and where the preload ran."""

    def __init__(self, tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.pids = tmp / "walked-in"
        self.preloads: list[tuple[int, str]] = []
        self.threads: list[threading.Thread] = []
        self.entered = threading.Event()
        self.release = threading.Event()
        self.release.set()
        real = manifest.snapshot

        def snapshot(*args: Any, **kw: Any) -> manifest.Snapshot:
            with open(self.pids, "a", encoding="utf-8") as fh:
                fh.write(f"{os.getpid()}\n")
            return real(*args, **kw)

        def preload(_provider: BuiltinProvider) -> None:
            self.preloads.append((os.getpid(), threading.current_thread().name))
            self.threads.append(threading.current_thread())
            self.entered.set()
            assert self.release.wait(60), "the test never released the preload"

        monkeypatch.setattr(manifest, "snapshot", snapshot)
        monkeypatch.setattr(BuiltinProvider, "preload", preload)

    def walks(self) -> list[int]:
        return [int(x) for x in self.pids.read_text(encoding="utf-8").split()]


def _append(notes: Path, line: str) -> None:
    transcript = sorted((notes / "library").rglob("transcript.md"))[0]
    with open(transcript, "a", encoding="utf-8") as fh:
        fh.write(f"\n{line}\n")


def _outputs(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for folder in ("extracted", "index/manifests")
        for p in sorted((root / folder).rglob("*"))
        if p.is_file()
    }


def test_the_walk_runs_in_a_child_while_the_engines_load_here(
    notes: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ARKAI_BESIDE", raising=False)
    # One clock for both libraries' extractions (their records say when they were made).
    monkeypatch.setattr("arkai.adapters.events.utc_now", lambda: "2026-12-06T10:00:00Z")
    seen = Seen(tmp_path, monkeypatch)
    first = extract_op.extract_stage(Repo.at(notes), preload=True)
    assert first.extracted == 2
    assert seen.walks()[0] != os.getpid()  # the walk: another process
    assert seen.preloads == [(os.getpid(), "arkai-preload")]  # the load: a thread of this one

    # The same manifests and outputs as a stage that walks here and preloads nothing, after
    # the same edit in a copy of the library.
    other = tmp_path / "other"
    shutil.copytree(notes, other)
    monkeypatch.setenv("ARKAI_BESIDE", "0")
    _append(other, "One more line about hive scales.")
    extract_op.extract_stage(Repo.at(other), preload=True)
    assert len(seen.preloads) == 1  # no fork: nothing preloaded
    assert seen.walks()[-1] == os.getpid()
    monkeypatch.delenv("ARKAI_BESIDE")
    _append(notes, "One more line about hive scales.")
    edited = extract_op.extract_stage(Repo.at(notes), preload=True)
    assert (edited.extracted, edited.skipped) == (1, 1)
    assert len(seen.preloads) == 2
    assert _outputs(notes) == _outputs(other)


def test_the_load_is_waited_for_only_when_an_item_is_extracted(
    notes: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ARKAI_BESIDE", raising=False)
    extract_op.extract_stage(Repo.at(notes))
    seen = Seen(tmp_path, monkeypatch)
    seen.release.clear()
    # Nothing changed: the stage returns while the load still runs (its process ends now).
    noop = extract_op.extract_stage(Repo.at(notes), preload=True)
    assert noop.extracted == 0
    assert seen.entered.wait(60) and len(seen.threads) == 1
    loader = seen.threads[0]
    assert loader.is_alive()  # (held until released below)
    seen.release.set()
    loader.join(60)

    # A changed item: the extraction starts only once this run's load has ended.
    real = extract_op.run_extract
    started: list[bool] = []

    def run_extract(repo: Repo, **kw: Any) -> extract_op.ExtractSummary:
        started.append(seen.threads[1].is_alive() if len(seen.threads) == 2 else None)
        return real(repo, **kw)

    monkeypatch.setattr(extract_op, "run_extract", run_extract)
    seen.release.clear()
    threading.Timer(0.5, seen.release.set).start()
    _append(notes, "A line that makes the item change.")
    assert extract_op.extract_stage(Repo.at(notes), preload=True).extracted == 1
    assert started == [False]


def test_a_failing_preload_is_left_to_the_call_that_needs_it(
    notes: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ARKAI_BESIDE", raising=False)

    def broken(_provider: BuiltinProvider) -> None:
        raise RuntimeError("no engines here")

    monkeypatch.setattr(BuiltinProvider, "preload", broken)
    unhandled: list[BaseException | None] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: unhandled.append(args.exc_value))
    assert extract_op.extract_stage(Repo.at(notes), preload=True).extracted == 2
    assert unhandled == []  # (no traceback printed from the thread either)


def test_nothing_is_preloaded_where_the_calls_run_elsewhere(notes: Path) -> None:
    params = notes / "params.yaml"
    assert extract_op._preload(Repo.at(notes)) is not None  # (the builtin provider, local)
    params.write_text(
        params.read_text(encoding="utf-8").replace("executor: local", "executor: ray"),
        encoding="utf-8",
    )
    assert extract_op._preload(Repo.at(notes)) is None  # Ray's workers load their own


def test_a_walk_that_dies_fails_the_stage_and_publishes_nothing(
    notes: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ARKAI_BESIDE", raising=False)
    extract_op.extract_stage(Repo.at(notes))
    published = {f: (notes / manifest.PATHS[f]).read_bytes() for f in extract_op.MANIFESTS}
    here = os.getpid()
    real = manifest.snapshot

    def killed(*args: Any, **kw: Any) -> manifest.Snapshot:
        if os.getpid() != here:
            os.kill(os.getpid(), signal.SIGKILL)
        return real(*args, **kw)

    monkeypatch.setattr(manifest, "snapshot", killed)
    _append(notes, "A line the stage never sees.")
    with pytest.raises(BesideError, match=r"walk: .*killed by signal 9"):
        extract_op.extract_stage(Repo.at(notes), preload=True)
    assert {f: (notes / manifest.PATHS[f]).read_bytes() for f in extract_op.MANIFESTS} == published
    monkeypatch.setattr(manifest, "snapshot", real)
    assert extract_op.extract_stage(Repo.at(notes)).extracted == 1
