"""Append-only JSONL run logs under ``.arkai/runs/<run_id>/events.jsonl`` (DESIGN §10)."""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from arkai.core import canonjson
from arkai.core.redact import redact_json
from arkai.errors import AmbiguousIdError, NotFoundError

RUNS_DIR = Path(".arkai") / "runs"


def utc_now() -> str:
    """ISO-8601 UTC with a ``Z`` suffix, second precision."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def new_run_id() -> str:
    """Sortable and unique: ``YYYYmmddTHHMMSSZ-<6 hex>``."""
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(3)


@dataclass
class RunLog:
    """One run's event log. Each event is one line, appended and flushed at once."""

    root: Path
    pipeline: str
    run_id: str = field(default_factory=new_run_id)

    @property
    def path(self) -> Path:
        return self.root / RUNS_DIR / self.run_id / "events.jsonl"

    def emit(self, type_: str, **fields: Any) -> None:
        # Logs name inputs and errors, which may hold a secret (a URL's password): redact all.
        event = redact_json(
            {"type": type_, "timestamp": utc_now(), "run_id": self.run_id, **fields}
        )
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(canonjson.dumps_line(event))

    @contextmanager
    def step(self, name: str, **fields: Any) -> Iterator[dict[str, Any]]:
        """StepStarted … StepCompleted (or StepFailed) around a block; the block may add fields."""
        extra: dict[str, Any] = {}
        self.emit("StepStarted", step=name, **fields)
        t0 = time.perf_counter()
        try:
            yield extra
        except BaseException as exc:
            ms = int((time.perf_counter() - t0) * 1000)
            self.emit("StepFailed", step=name, duration_ms=ms, error=str(exc) or type(exc).__name__)
            raise
        ms = int((time.perf_counter() - t0) * 1000)
        self.emit("StepCompleted", step=name, duration_ms=ms, **extra)


@contextmanager
def run(root: Path, pipeline: str, **fields: Any) -> Iterator[RunLog]:
    """RunStarted … RunCompleted with status success / failed / interrupted."""
    log = RunLog(root=root, pipeline=pipeline)
    log.emit("RunStarted", pipeline=pipeline, **fields)
    t0 = time.perf_counter()
    status = "success"
    try:
        yield log
    except KeyboardInterrupt:
        status = "interrupted"
        raise
    except BaseException:
        status = "failed"
        raise
    finally:
        ms = int((time.perf_counter() - t0) * 1000)
        log.emit("RunCompleted", status=status, duration_ms=ms)


def read_events(path: Path) -> list[dict[str, Any]]:
    """Events of one log; a torn last line (crash mid-write) is skipped, not fatal."""
    events: list[dict[str, Any]] = []
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return events
    for line in text.splitlines():
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict):
            events.append(obj)
    return events


def list_runs(root: Path) -> list[str]:
    base = root / RUNS_DIR
    if not base.is_dir():
        return []
    return sorted(p.name for p in base.iterdir() if (p / "events.jsonl").is_file())


def get_run(root: Path, run_id: str) -> str:
    """The run ID that ``run_id`` (full, or a prefix of ≥ 8 characters) names."""
    runs = list_runs(root)
    if run_id in runs:
        return run_id
    found = [r for r in runs if len(run_id) >= 8 and r.startswith(run_id)]
    if len(found) == 1:
        return found[0]
    if found:
        raise AmbiguousIdError(f"run ID prefix {run_id!r} matches {len(found)} runs")
    raise NotFoundError(f"no run {run_id!r}", hint="`arkai runs` lists them")
