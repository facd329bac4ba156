"""DVC's files left torn by a killed DVC (``.dvc/tmp/rwlock``, ``dvc.lock``): found, and set
aside only when that is safe (:func:`arkai.adapters.dvc.clear_torn`). The real DVC and ``arkai
run`` / ``resume`` / ``doctor`` on such files: tests/func/test_dvc_torn.py."""

from __future__ import annotations

import fcntl
import json
import os
from pathlib import Path

import pytest

from arkai.adapters.dvc import (
    LOCKFILE,
    RWLOCK,
    TORN_LOCKFILE,
    clear_torn,
    dvc_temps,
    torn_lockfile,
    torn_rwlock,
)

#: What a DVC leaves when it is killed between truncating the rwlock file and writing it, and
#: when it is killed part way through writing it.
TORN_RWLOCK = [b"", b'{"read": {"extract": [{"pid": 12', b"\xff\xfe", b"[]", b"null"]

LOCK = ("schema: '2.0'\nstages:\n  extract:\n    cmd: python stages/extract.py\n"
        "  index:\n    cmd: python stages/index.py\n")  # fmt: skip
#: A dvc.lock DVC stops at: empty (killed between truncating and writing), cut inside a quoted
#: value, a conflict's markers, not UTF-8.
TORN_LOCK = [b"", b"schema: '2.0'\nstages:\n  extract:\n    cmd: 'python st", b"<<<<<<< HEAD\n",
             b"\xff\xfe\x00"]  # fmt: skip


def _repo(tmp_path: Path, rwlock: bytes | None = None, lock: bytes | None = None) -> Path:
    (tmp_path / ".dvc" / "tmp").mkdir(parents=True)
    (tmp_path / ".dvc" / "config").write_text("[core]\n    autostage = true\n")
    if rwlock is not None:
        (tmp_path / RWLOCK).write_bytes(rwlock)
    if lock is not None:
        (tmp_path / LOCKFILE).write_bytes(lock)
    return tmp_path


@pytest.mark.parametrize("data", TORN_RWLOCK)
def test_a_torn_rwlock_is_found_and_removed(tmp_path: Path, data: bytes) -> None:
    root = _repo(tmp_path, rwlock=data, lock=LOCK.encode())
    assert torn_rwlock(root) and not torn_lockfile(root)
    assert clear_torn(root) == [f"removed {RWLOCK}: a DVC killed while writing it left it torn"]
    assert not (root / RWLOCK).exists() and not torn_rwlock(root)
    assert (root / LOCKFILE).read_text() == LOCK  # loads: left as it is
    assert clear_torn(root) == []  # nothing left to do


@pytest.mark.parametrize("data", TORN_LOCK)
def test_a_torn_lockfile_is_found_and_set_aside(tmp_path: Path, data: bytes) -> None:
    root = _repo(tmp_path, rwlock=b"{}", lock=data)
    assert torn_lockfile(root) and not torn_rwlock(root)
    (done,) = clear_torn(root)
    assert done.startswith(f"moved {LOCKFILE} to {TORN_LOCKFILE}")
    assert not (root / LOCKFILE).exists() and (root / TORN_LOCKFILE).read_bytes() == data
    assert (root / RWLOCK).read_bytes() == b"{}"
    assert clear_torn(root) == []


@pytest.mark.parametrize(
    "data",
    [b"{}", json.dumps({"read": {"a": [{"pid": 1, "cmd": "dvc repro"}]}, "write": {}}).encode()],
)
def test_files_dvc_can_load_are_never_touched(tmp_path: Path, data: bytes) -> None:
    # (a lock file cut where it still loads included: DVC runs the stages it lacks again)
    for lock in (LOCK, LOCK[: LOCK.index("  index")]):
        root = _repo(tmp_path / str(len(lock)), rwlock=data, lock=lock.encode())
        assert not torn_rwlock(root) and not torn_lockfile(root) and clear_torn(root) == []
        assert (root / RWLOCK).read_bytes() == data and (root / LOCKFILE).read_text() == lock


def test_no_files_are_not_torn(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    assert not torn_rwlock(root) and not torn_lockfile(root) and clear_torn(root) == []
    assert not (root / RWLOCK).exists() and not (root / LOCKFILE).exists()


@pytest.mark.parametrize(("lock", "name"), [("rwlock.lock", RWLOCK), ("lock", LOCKFILE)])
def test_a_torn_file_is_left_while_a_dvc_holds_its_lock(
    tmp_path: Path, lock: str, name: str
) -> None:
    """DVC holds ``rwlock.lock`` while it reads or writes ``rwlock``, and the repo's ``lock``
    while it writes ``dvc.lock`` (flock, through zc.lockfile): a file that looks torn then may
    be one being written, and is left alone."""
    root = _repo(tmp_path, rwlock=b"", lock=b"")
    guard = os.open(root / ".dvc" / "tmp" / lock, os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(guard, fcntl.LOCK_EX | fcntl.LOCK_NB)  # (another open file: as DVC's)
        done = clear_torn(root)
        assert len(done) == 1 and name not in done[0].split(":")[0]
        assert (root / name).read_bytes() == b""
    finally:
        os.close(guard)
    (done,) = clear_torn(root)  # the lock released: set aside
    assert done.split(":")[0].split()[1] == name


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("config", "[core]\n    hardlink_lock = true\n"),
        ("config.local", "[core]\n    hardlink_lock = True\n"),
        ("config", "[core\nnot ini at all"),
    ],
)
def test_a_repo_with_another_kind_of_lock_is_left_alone(
    tmp_path: Path, name: str, text: str
) -> None:
    """``core.hardlink_lock`` makes DVC lock with lock files that ``flock`` does not exclude
    (and a config that cannot be read might say so): the files are only reported."""
    root = _repo(tmp_path, rwlock=b"", lock=b"")
    (root / ".dvc" / name).write_text(text)
    assert torn_rwlock(root) and torn_lockfile(root) and clear_torn(root) == []
    assert (root / RWLOCK).exists() and (root / LOCKFILE).exists()


DVC_YAML = """stages:
  extract:
    cmd: python stages/extract.py
    outs:
      - index/manifests/library.tsv:
          persist: true
  index:
    cmd: python stages/index.py
    outs:
      - index/vectors
      - ${folder}/x.json
  validate:
    cmd: python stages/validate.py
    metrics:
      - reports/validation.json:
          cache: false
"""


def test_the_temp_files_a_killed_dvc_left_beside_its_outputs_are_removed_under_its_lock(
    tmp_path: Path,
) -> None:
    """DVC puts an output in place through a temp file beside it (``.<22 characters>.tmp``);
    a DVC killed then leaves it in ``index/manifests/`` for good (seen once in
    tests/func/test_kill_anywhere.py). Removed while holding the repo's lock, which every DVC
    command that writes outputs holds; other files, folders not named by an output, a name of
    another shape and a DVC holding the lock are left alone."""
    root = _repo(tmp_path)
    (root / "dvc.yaml").write_text(DVC_YAML)
    for folder in ("index/manifests", "index/vectors/sub", "reports", "library/a"):
        (root / folder).mkdir(parents=True)
    left = [root / "index/manifests/.9duvCUYHGQvfCJxmblYqUA.tmp",
            root / "index/vectors/sub/.AbC-_defghijklmnopqrst.tmp",
            root / "reports/.0123456789abcdefghijkl.tmp"]  # fmt: skip
    others = [
        root / "index/manifests/library.tsv",
        root / "index/manifests/.short.tmp",
        root / "index/manifests/.9duvCUYHGQvfCJxmblYqUA.tmp.bak",
        root / "library/a/.9duvCUYHGQvfCJxmblYqUA.tmp",  # not an output's folder
        root / "index/.9duvCUYHGQvfCJxmblYqUA.tmp",
    ]  # (index/ itself is none either)
    for path in left + others:
        path.write_text("x")
    (root / "index/manifests/.zzzzzzzzzzzzzzzzzzzzzz.tmp").mkdir()  # a folder: left
    assert dvc_temps(root) == sorted(left)
    guard = os.open(root / ".dvc" / "tmp" / "lock", os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(guard, fcntl.LOCK_EX | fcntl.LOCK_NB)  # a DVC at work: nothing removed
        assert clear_torn(root) == [] and all(p.exists() for p in left)
    finally:
        os.close(guard)
    (done,) = clear_torn(root)
    assert done.startswith("removed 3 temp file(s) a killed DVC left: index/manifests/.9duv")
    assert not any(p.exists() for p in left) and all(p.exists() for p in others)
    assert clear_torn(root) == []
