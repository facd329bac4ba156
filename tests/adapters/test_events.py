"""Run IDs: monotonic even within one microsecond or with the clock stepped back, and a short
form that names exactly one run."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from arkai.adapters import events
from arkai.errors import AmbiguousIdError, NotFoundError


def start(root: Path, now: datetime | None = None) -> str:
    log = events.RunLog(root=root, pipeline="test", run_id=events.new_run_id(root, now=now))
    log.emit("RunStarted", pipeline="test")
    return log.run_id


def test_runs_started_in_one_instant_sort_in_start_order(tmp_path: Path) -> None:
    instant = datetime(2026, 11, 23, 12, 0, 0, tzinfo=UTC)
    started = [start(tmp_path, now=instant) for _ in range(50)]
    assert events.list_runs(tmp_path) == started  # sorted order == start order
    assert len(set(started)) == 50


def test_a_clock_stepped_back_still_sorts_after_the_latest(tmp_path: Path) -> None:
    first = start(tmp_path, now=datetime(2026, 11, 23, 12, 0, 0, tzinfo=UTC))
    later = start(tmp_path, now=datetime(2026, 11, 23, 11, 0, 0, tzinfo=UTC) - timedelta(days=1))
    assert events.list_runs(tmp_path) == [first, later]


def test_default_ids_come_from_the_clock_and_are_monotonic(tmp_path: Path) -> None:
    ids = [events.RunLog(root=tmp_path, pipeline="p") for _ in range(3)]
    for log in ids:
        log.emit("RunStarted")
    assert events.list_runs(tmp_path) == [log.run_id for log in ids]


def test_the_short_id_names_one_run_and_a_date_prefix_is_ambiguous(tmp_path: Path) -> None:
    instant = datetime(2026, 11, 23, 12, 0, 0, tzinfo=UTC)
    started = [start(tmp_path, now=instant) for _ in range(20)]
    shorts = [events.short_run_id(r) for r in started]
    assert len(set(shorts)) == 20 and all(len(s) == 8 for s in shorts)
    for full, short in zip(started, shorts, strict=True):
        assert events.get_run(tmp_path, short) == full
        assert events.get_run(tmp_path, full) == full
    with pytest.raises(AmbiguousIdError):
        events.get_run(tmp_path, started[0][:8])  # "20261123" is every run of the day
    with pytest.raises(NotFoundError):
        events.get_run(tmp_path, "00000000")


def test_a_batch_of_events_is_what_one_emit_each_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``emit_many`` (a stage's per-item events in one write) logs the same lines, in order,
    redacted like ``emit``: a repeated string is redacted once, each occurrence replaced."""
    monkeypatch.setattr(events, "utc_now", lambda: "2026-11-24T12:00:00Z")
    secret = "https://user:hunter2pass@example.com/feed"
    rows = [{"content_id": f"{i:016x}", "source": secret, "n": i} for i in range(3)]
    one, many = (events.RunLog(root=tmp_path / d, pipeline="p", run_id="r") for d in "ab")
    for row in rows:
        one.emit("Item", **row)
    many.emit_many("Item", iter(rows))
    many.emit_many("Item", [])  # nothing to log: no line
    assert many.path.read_bytes() == one.path.read_bytes()
    lines = many.path.read_text().splitlines()
    assert len(lines) == 3 and "hunter2pass" not in many.path.read_text()
    assert all("[REDACTED" in line for line in lines)


_STEPS = """
import sys
from pathlib import Path
from arkai.adapters import events
log = events.RunLog(root=Path(sys.argv[1]), pipeline="p", run_id="r")
with log.step("small"):
    pass
with log.step("big"):
    held = b"x" * (200 * 2**20)  # every byte written: resident, not only reserved
    del held
with log.step("after"):
    pass
"""


def test_a_completed_step_names_the_peak_memory_it_reached(tmp_path: Path) -> None:
    """``maxrss_mb`` is the process's peak so far when a step ends: a step that holds 200 MiB
    ends that much above the step before it, and a later step never reports less. The peak is
    the program's own: started by a process holding 300 MiB, its first step reports far less
    (``ru_maxrss`` would start at the parent's peak)."""
    parent = b"p" * (300 * 2**20)
    subprocess.run([sys.executable, "-c", _STEPS, str(tmp_path)], check=True)
    del parent
    log = events.RunLog(root=tmp_path, pipeline="p", run_id="r")
    done = {
        e["step"]: e["maxrss_mb"]
        for e in events.read_events(log.path)
        if e["type"] == "StepCompleted"
    }
    assert done["small"] < 150
    assert done["big"] - done["small"] >= 195
    assert done["after"] >= done["big"]
