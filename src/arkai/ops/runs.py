"""``arkai runs`` and ``arkai status``: the run log under ``.arkai/runs`` (adapters/events)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from arkai.adapters import events
from arkai.errors import NotFoundError


def list_recent(root: Path, limit: int = 20) -> dict[str, Any]:
    """``{"runs": [...]}``: the newest ``limit`` runs, newest first."""
    rows = []
    for run_id in events.list_runs(root)[-limit:][::-1] if limit > 0 else []:
        evs = events.read_events(root / events.RUNS_DIR / run_id / "events.jsonl")
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
    return {"runs": rows}


def run_status(root: Path, run_id: str | None = None) -> dict[str, Any]:
    """One run's status, event counts and events (default: the latest run)."""
    if run_id is None:
        latest = events.list_runs(root)[-1:]
        if not latest:
            raise NotFoundError("no runs yet", hint="runs are logged by add, extract, dvc repro…")
        rid = latest[0]
    else:
        rid = events.get_run(root, run_id)
    evs = events.read_events(root / events.RUNS_DIR / rid / "events.jsonl")
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
