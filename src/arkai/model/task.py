"""Tasks and goals (seed 002's tasks plugin), kept as small human-editable files in the repo.

A task is something to do — open or done, a priority, an optional due date, an optional goal it
rolls up to and the evidence IDs (claims) that motivate it. A goal is a larger objective. Both
are plain data here; :mod:`arkai.adapters.tasks` reads and writes them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date
from typing import Any

PRIORITIES = ("low", "medium", "high")
TASK_STATUSES = ("open", "done")  # goals have the same two
MAX_TITLE = 300
_EVIDENCE_ID = re.compile(r"^[0-9a-f]{8,64}$")


class TaskFieldError(ValueError):
    """A field of a task or goal is missing or has the wrong shape (the message names it)."""


def _text(d: dict[str, Any], key: str, *, required: bool = False) -> str | None:
    value = d.get(key)
    if value is None:
        if required:
            raise TaskFieldError(f"'{key}' is missing")
        return None
    if not isinstance(value, str):
        raise TaskFieldError(f"'{key}' must be text, not {type(value).__name__}")
    return value


def check_title(title: str) -> str:
    """A title stripped of surrounding space: one line, 1–300 characters."""
    t = " ".join(title.split())
    if not t:
        raise TaskFieldError("'title' is empty")
    if len(t) > MAX_TITLE:
        raise TaskFieldError(f"'title' is longer than {MAX_TITLE} characters")
    return t


def check_priority(priority: str) -> str:
    if priority not in PRIORITIES:
        raise TaskFieldError(f"'priority' must be one of {', '.join(PRIORITIES)}, not {priority!r}")
    return priority


def check_due(due: str | date | None) -> str | None:
    """``YYYY-MM-DD`` (YAML may hand over a date object)."""
    if due is None or due == "":
        return None
    text = due.isoformat() if isinstance(due, date) else str(due)
    try:
        return date.fromisoformat(text).isoformat()
    except ValueError:
        raise TaskFieldError(f"'due' must be a date YYYY-MM-DD, not {text!r}") from None


def check_evidence(ids: Any) -> tuple[str, ...]:
    if ids is None:
        return ()
    if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
        raise TaskFieldError("'evidence' must be a list of evidence IDs")
    for i in ids:
        if not _EVIDENCE_ID.match(i):
            raise TaskFieldError(f"'evidence' has {i!r}, which is not an evidence ID")
    return tuple(dict.fromkeys(ids))


def _shared_fields(d: dict[str, Any], known: tuple[str, ...]) -> dict[str, Any]:
    """The fields tasks and goals share, checked; ``other``: the keys outside ``known``."""
    status = _text(d, "status") or "open"
    if status not in TASK_STATUSES:
        raise TaskFieldError(f"'status' must be open or done, not {status!r}")
    return {
        "id": _text(d, "id", required=True) or "",
        "title": check_title(_text(d, "title", required=True) or ""),
        "status": status,
        "description": _text(d, "description"),
        "created_at": _str_or_none(d.get("created_at")),
        "completed_at": _str_or_none(d.get("completed_at")),
        "other": {k: v for k, v in d.items() if k not in known or k == "other"},
    }


def _as_dict(item: Task | Goal, optional: tuple[str, ...]) -> dict[str, Any]:
    """id, title, status, then each of ``optional`` that is set, then the unknown keys."""
    d: dict[str, Any] = {"id": item.id, "title": item.title, "status": item.status}
    for key in optional:
        value = getattr(item, key)
        if value is not None and value != ():
            d[key] = list(value) if isinstance(value, tuple) else value
    return d | {k: v for k, v in item.other.items() if k not in d}


_LAST = ("description", "created_at", "completed_at")


@dataclass(frozen=True, slots=True)
class Task:
    id: str
    title: str
    status: str = "open"
    priority: str = "medium"
    due: str | None = None
    goal: str | None = None
    evidence: tuple[str, ...] = ()
    description: str | None = None
    created_at: str | None = None
    completed_at: str | None = None
    other: dict[str, Any] = field(default_factory=dict, compare=False)
    """Keys a person added that arkai does not know: kept as written."""

    def to_dict(self) -> dict[str, Any]:
        return _as_dict(self, ("priority", "due", "goal", *_LAST, "evidence"))

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Task:
        return cls(
            **_shared_fields(d, cls.__slots__),
            priority=check_priority(_text(d, "priority") or "medium"),
            due=check_due(d.get("due")),
            goal=_text(d, "goal"),
            evidence=check_evidence(d.get("evidence")),
        )


@dataclass(frozen=True, slots=True)
class Goal:
    id: str
    title: str
    status: str = "open"
    description: str | None = None
    created_at: str | None = None
    completed_at: str | None = None
    other: dict[str, Any] = field(default_factory=dict, compare=False)

    def to_dict(self) -> dict[str, Any]:
        return _as_dict(self, _LAST)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Goal:
        return cls(**_shared_fields(d, cls.__slots__))


def _str_or_none(value: Any) -> str | None:
    # YAML turns an unquoted ISO timestamp into a datetime: keep its text form.
    if value is None:
        return None
    return value.isoformat() if hasattr(value, "isoformat") else str(value)
