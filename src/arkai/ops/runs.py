"""``arkai runs`` and ``arkai status``: the run log (``.arkai/runs``), read-only."""

from __future__ import annotations

from typing import Any

from arkai.adapters import events
from arkai.adapters.repo import Repo
from arkai.errors import NotFoundError

__all__ = ["list_runs", "run_status"]


def _events(repo: Repo, run_id: str) -> list[dict[str, Any]]:
    return events.read_events(repo.root / events.RUNS_DIR / run_id / "events.jsonl")


def list_runs(repo: Repo, limit: int = 20) -> list[dict[str, Any]]:
    """The newest ``limit`` runs, newest first: IDs, pipeline, start, status, duration."""
    rows = []
    for run_id in events.list_runs(repo.root)[-limit:][::-1]:
        evs = _events(repo, run_id)
        start = next((e for e in evs if e.get("type") == "RunStarted"), {})
        end = next((e for e in evs if e.get("type") == "RunCompleted"), {})
        rows.append(
            {
                "run_id": run_id,
                "short_id": events.short_run_id(run_id),
                "pipeline": start.get("pipeline"),
                "started": start.get("timestamp"),
                "status": end.get("status", "running or interrupted"),
                "duration_ms": end.get("duration_ms"),
                "events": len(evs),
            }
        )
    return rows


def run_status(repo: Repo, run_id: str | None = None) -> dict[str, Any]:
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
    return {
        "run_id": rid,
        "status": end.get("status") if end else "running or interrupted",
        "event_counts": counts,
        "events": evs,
    }
