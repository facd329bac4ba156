"""A DVC killed while it rewrites ``.dvc/tmp/rwlock`` or ``dvc.lock`` leaves the file empty or
cut (DVC truncates it, then writes): every later ``dvc`` command stops at it. ``arkai doctor``
says so and ``arkai run`` / ``arkai resume`` set it aside and go on (the rules:
tests/adapters/test_dvc_torn.py)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from arkai.adapters import events
from arkai.adapters.dvc import LOCKFILE, RWLOCK, TORN_LOCKFILE
from tests.conftest import SAMPLES, sh, tool_env

pytestmark = pytest.mark.slow


def test_run_and_resume_go_on_past_files_a_killed_dvc_left_torn(tmp_path: Path) -> None:
    repo = tmp_path / "kb"
    sh(tmp_path, "arkai", "init", str(repo))
    sh(repo, "dvc", "repro")
    rwlock = repo / RWLOCK
    assert json.loads(rwlock.read_text()) is not None  # DVC's own, readable

    rwlock.write_bytes(b"")  # as a DVC killed between truncating and writing it leaves it
    stuck = sh(repo, "dvc", "repro", check=False)
    assert stuck.returncode != 0 and "RWLock-file" in stuck.stderr + stuck.stdout

    doctor = sh(repo, "arkai", "doctor", "--json", check=False)
    assert doctor.returncode == 1
    report = json.loads(doctor.stdout)
    assert report["dvc_torn"] == [RWLOCK] and not report["healthy"]
    text = sh(repo, "arkai", "doctor", check=False).stdout
    assert f"{RWLOCK} is torn" in text and "`arkai run`" in text
    assert rwlock.read_bytes() == b""  # doctor only reads

    ran = sh(repo, "arkai", "run")
    assert f"removed {RWLOCK}" in ran.stderr
    assert json.loads(rwlock.read_text()) is not None  # DVC wrote its own again
    assert json.loads(sh(repo, "arkai", "doctor", "--json").stdout)["dvc_torn"] == []

    lock = (repo / LOCKFILE).read_bytes()
    (repo / LOCKFILE).write_bytes(b"")
    stuck = sh(repo, "dvc", "repro", check=False)
    assert stuck.returncode != 0 and "dvc.lock" in stuck.stderr + stuck.stdout
    assert json.loads(sh(repo, "arkai", "doctor", "--json", check=False).stdout)["dvc_torn"] == [
        LOCKFILE
    ]
    ran = sh(repo, "arkai", "run")
    assert f"moved {LOCKFILE} to {TORN_LOCKFILE}" in ran.stderr
    assert (repo / TORN_LOCKFILE).read_bytes() == b""
    assert (repo / LOCKFILE).read_bytes() == lock  # every stage run again: the same record
    # Nothing changed to DVC (extract and condense are "always changed" stages).
    status = sh(repo, "dvc", "status").stdout.splitlines()
    assert {ln.strip() for ln in status if ln.startswith("\t")} <= {"always changed"}

    # A real DVC killed while its extract stage runs (the stage loads spaCy for a second or
    # more: seen running, then killed), the file then cut part way through.
    sh(repo, "arkai", "add", str(SAMPLES / "note-2026-11-20.md"))
    before = set(events.list_runs(repo))
    proc = subprocess.Popen(["dvc", "repro"], cwd=repo, env=tool_env(), start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        deadline = time.monotonic() + 300
        while not set(events.list_runs(repo)) - before:
            assert proc.poll() is None and time.monotonic() < deadline, "no extract run seen"
            time.sleep(0.02)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    assert not list((repo / "extracted").rglob("extraction.json"))  # killed before the end
    rwlock.write_bytes(b'{"read": {"extract": [{"pid"')
    resumed = sh(repo, "arkai", "resume")
    assert f"removed {RWLOCK}" in resumed.stderr and "resuming run" in resumed.stderr
    (record,) = (repo / "extracted").rglob("extraction.json")
    assert json.loads(record.read_text())["status"] == "ok"
    assert (repo / "reports" / "validation.json").is_file()
