"""``arkai runs`` and ``arkai status``: the run log (``.arkai/runs``), read-only."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arkai.adapters import events
from arkai.adapters.repo import Repo
from arkai.errors import NotFoundError
from arkai.model.record import AsDict

__all__ = ["RunInfo", "RunStatus", "list_runs", "record_stage", "run_status"]

NO_END = "running or interrupted"
"""The status of a run with no ``RunCompleted`` event."""


@dataclass(frozen=True)
class RunInfo(AsDict):
    """One row of ``arkai runs``."""

    run_id: str
    short_id: str
    pipeline: str | None
    started: str | None
    status: str
    duration_ms: int | None
    events: int


@dataclass(frozen=True)
class RunStatus(AsDict):
    """``arkai status``: one run's status, event counts and events."""

    run_id: str
    status: str
    event_counts: dict[str, int]
    events: list[dict[str, Any]]


def _events(repo: Repo, run_id: str) -> list[dict[str, Any]]:
    return events.read_events(repo.root / events.RUNS_DIR / run_id / "events.jsonl")


def list_runs(repo: Repo, limit: int = 20) -> list[RunInfo]:
    """The newest ``limit`` runs, newest first: IDs, pipeline, start, status, duration."""
    rows = []
    for run_id in events.list_runs(repo.root)[-limit:][::-1]:
        evs = _events(repo, run_id)
        start = next((e for e in evs if e.get("type") == "RunStarted"), {})
        end = next((e for e in evs if e.get("type") == "RunCompleted"), {})
        rows.append(
            RunInfo(
                run_id=run_id,
                short_id=events.short_run_id(run_id),
                pipeline=start.get("pipeline"),
                started=start.get("timestamp"),
                status=end.get("status", NO_END),
                duration_ms=end.get("duration_ms"),
                events=len(evs),
            )
        )
    return rows


def run_status(repo: Repo, run_id: str | None = None) -> RunStatus:
    """One run (short or full ID; default the latest): status, event counts and events."""
    if run_id is None:
        latest = events.list_runs(repo.root)[-1:]
        if not latest:
            raise NotFoundError("no runs yet", hint="runs are logged by add, extract, dvc repro…")
        rid = latest[0]
    else:
        rid = events.get_run(repo.root, run_id)
    evs = _events(repo, rid)
    end = next((e for e in evs if e.get("type") == "RunCompleted"), None)
    counts: dict[str, int] = {}
    for e in evs:
        counts[str(e.get("type"))] = counts.get(str(e.get("type")), 0) + 1
    return RunStatus(rid, str(end.get("status")) if end else NO_END, counts, evs)


def own_peak_mb() -> float:
    """This process's peak resident memory in MiB, its own program's (not the peak of the
    process that started it, which ``ru_maxrss`` starts from): :func:`events.maxrss_mb`."""
    return events.maxrss_mb()


def record_stage(path: Path, record: dict[str, Any]) -> None:
    """Append one DVC stage's process figures (``$ARKAI_STAGE_METRICS``, :mod:`arkai.cli.stage`)
    to ``path`` as one JSON line: what ``bench/scale.py`` reads."""
    events.append_jsonl(path, record)
