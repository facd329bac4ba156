"""Append-only JSONL run logs under ``.arkai/runs/<run_id>/events.jsonl`` (DESIGN §10)."""

from __future__ import annotations

import contextlib
import json
import re
import resource
import secrets
import sys
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from arkai.core import canonjson
from arkai.errors import AmbiguousIdError, NotFoundError

RUNS_DIR = Path(".arkai") / "runs"


def utc_now() -> str:
    """ISO-8601 UTC with a ``Z`` suffix, second precision."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


_RUN_ID = re.compile(r"^(\d{8}T\d{6}\.\d{6})Z-([0-9a-f]{8})$")


def short_run_id(run_id: str) -> str:
    """The distinct short form of a run ID: its random suffix (8 hex characters)."""
    m = _RUN_ID.match(run_id)
    return m.group(2) if m else run_id


def new_run_id(root: Path | None = None, *, now: datetime | None = None) -> str:
    """``YYYYmmddTHHMMSS.ffffffZ-<8 hex>``: sorts by start time and is monotonic.

    Runs started within the same microsecond as (or, with a clock stepped back, before) the
    newest run already under ``root`` are placed one microsecond after it, so "the latest run"
    is always the last in sorted order. The hex suffix is the short form, unique per run.
    """
    t = now or datetime.now(UTC)
    if root is not None:
        latest = next(
            (m for r in reversed(list_runs(root)) if (m := _RUN_ID.match(r)) is not None), None
        )
        if latest is not None:
            prev = datetime.strptime(latest.group(1), "%Y%m%dT%H%M%S.%f").replace(tzinfo=UTC)
            if t <= prev:
                t = prev + timedelta(microseconds=1)
    return t.strftime("%Y%m%dT%H%M%S.%fZ") + "-" + secrets.token_hex(4)


def append_jsonl(path: Path, record: dict[str, Any]) -> None:
    """Append ``record`` as one canonical JSON line to ``path`` (created with its folder),
    written with one ``write`` call and flushed: the one appender of every JSONL log."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(canonjson.dumps_line(record))


def append_jsonl_many(path: Path, records: list[dict[str, Any]]) -> None:
    """:func:`append_jsonl` of several records, in one ``write`` call."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as fh:
        fh.write("".join(canonjson.dumps_line(r) for r in records))


@dataclass
class RunLog:
    """One run's event log. Each event is one line, appended and flushed at once."""

    root: Path
    pipeline: str
    run_id: str = ""

    def __post_init__(self) -> None:
        if not self.run_id:
            self.run_id = new_run_id(self.root)

    @property
    def path(self) -> Path:
        return self.root / RUNS_DIR / self.run_id / "events.jsonl"

    def emit(self, type_: str, **fields: Any) -> None:
        # Logs name inputs and errors, which may hold a secret (a URL's password): redact all.
        from arkai.core.redact import redact_json  # (its rules load detect-secrets: ≈ 0.3 s)

        event = redact_json(
            {"type": type_, "timestamp": utc_now(), "run_id": self.run_id, **fields}
        )
        append_jsonl(self.path, event)

    def emit_many(self, type_: str, rows: Iterable[dict[str, Any]]) -> None:
        """One ``type_`` event per row, redacted together and appended with one write (a
        stage's per-item events, in their order)."""
        from arkai.core.redact import redact_json

        now = utc_now()
        batch = [{"type": type_, "timestamp": now, "run_id": self.run_id, **r} for r in rows]
        if batch:
            append_jsonl_many(self.path, redact_json(batch))

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
        self.emit("StepCompleted", step=name, duration_ms=ms, maxrss_mb=maxrss_mb(), **extra)


def maxrss_mb() -> float:
    """This process's peak resident memory so far, in MiB. Steps run one after another, so a
    step's ``maxrss_mb`` above the previous step's is its own peak.

    On Linux the kernel's high-water mark of this program (``VmHWM``): ``ru_maxrss`` starts a
    new program at its parent's peak (a stage started by a 400 MB process would report at
    least 400 MB); elsewhere ``ru_maxrss``."""
    with contextlib.suppress(OSError, ValueError), open("/proc/self/status", "rb") as fh:
        for line in fh:
            if line.startswith(b"VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)  # kB
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return round(peak / (2**20 if sys.platform == "darwin" else 1024), 1)  # bytes on macOS


def start(root: Path, pipeline: str, **fields: Any) -> RunLog:
    """A new run, its RunStarted emitted (ended by :func:`run` given it as ``started``): the
    index stage starts the beliefs stage's run before it forks the child that builds it, so
    that its own run, started after, is the latest (``arkai run resume`` and ``arkai runs
    show`` take the latest run)."""
    log = RunLog(root=root, pipeline=pipeline)
    log.emit("RunStarted", pipeline=pipeline, **fields)
    return log


@contextmanager
def run(
    root: Path, pipeline: str, *, started: RunLog | None = None, **fields: Any
) -> Iterator[RunLog]:
    """RunStarted … RunCompleted with status success / failed / interrupted. ``started``: a
    run whose RunStarted was emitted before (:func:`start`, by the process that forked this
    one): this block is its work and its end."""
    log = started if started is not None else start(root, pipeline, **fields)
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
    for line in text.split("\n"):  # not splitlines: U+2028 may sit inside a string
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
    """The run ID that ``run_id`` names: the full ID, its short form (the 8-hex suffix that
    `arkai runs` shows), or a prefix of the full ID that matches one run only."""
    runs = list_runs(root)
    if run_id in runs:
        return run_id
    found = [r for r in runs if short_run_id(r) == run_id.lower()]
    if not found and len(run_id) >= 8:
        found = [r for r in runs if r.startswith(run_id)]
    if len(found) == 1:
        return found[0]
    if found:
        raise AmbiguousIdError(
            f"run ID prefix {run_id!r} matches {len(found)} runs",
            hint="give the short ID `arkai runs` shows, or more of the full ID",
        )
    raise NotFoundError(f"no run {run_id!r}", hint="`arkai runs` lists them")
