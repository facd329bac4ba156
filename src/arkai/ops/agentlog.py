"""``arkai log-turn``: an agent conversation, turn by turn, for audit and replay (seed 003,
"Agent logs").

Each session is one JSONL file, ``.arkai/agent-logs/<session>.jsonl`` (local and derived, like
the rest of ``.arkai/``: git-ignored), one line per turn::

    {"at": "…Z", "n": 3, "role": "user" | "assistant" | "tool", "session": "…",
     "text": "…", "redacted": {"api_key": 1}}

The text is redacted with :func:`arkai.core.redact.redact` *before* it is written (secrets and
personal data never reach the disk; ``redacted`` counts what was replaced), and each line is
appended in one all-or-nothing write (:func:`arkai.adapters.fs.append_bytes`), so a crash
leaves no torn line. ``n`` numbers the turns of the session from 1. :func:`replay` reads a
session back; a line that cannot be read is reported, never dropped silently.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arkai.adapters.events import utc_now
from arkai.adapters.fs import append_bytes, read_repo_file
from arkai.adapters.repo import Repo
from arkai.adapters.store import iter_jsonl
from arkai.core import canonjson
from arkai.core.redact import redact
from arkai.errors import InvalidInputError, LibraryError, NotFoundError
from arkai.model.record import AsDict

__all__ = ["LOGS", "MAX_TURN_CHARS", "ROLES", "Turn", "log_turn", "replay", "session_path"]

LOGS = Path(".arkai") / "agent-logs"
ROLES = ("user", "assistant", "tool")
MAX_TURN_CHARS = 1_000_000
_SESSION = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


@dataclass(frozen=True)
class Turn(AsDict):
    """One logged turn."""

    session: str
    n: int
    role: str
    text: str
    at: str
    redacted: dict[str, int] = field(default_factory=dict)


def session_path(root: Path, session: str) -> Path:
    """The log file of ``session``; a session ID is 1–100 letters, digits, ``.``, ``_`` or
    ``-``, not starting with a dot or dash (so it can never leave the logs folder)."""
    if not _SESSION.fullmatch(session):
        raise InvalidInputError(
            f"bad session ID {session[:60]!r}",
            hint="use 1-100 letters, digits, '.', '_' or '-', starting with a letter or digit",
        )
    return root / LOGS / f"{session}.jsonl"


def _read(root: Path, session: str) -> tuple[list[Turn], list[str]]:
    path = session_path(root, session)
    data = read_repo_file(path, root, missing_ok=True)
    if data is None:
        return [], []
    problems: list[str] = []
    turns = list(iter_jsonl(data, path.relative_to(root), "not a turn", _turn, problems))
    return turns, problems


def _turn(d: dict[str, Any]) -> Turn:
    return Turn(str(d["session"]), int(d["n"]), str(d["role"]), str(d["text"]), str(d["at"]),
                dict(d.get("redacted") or {}))  # fmt: skip


def log_turn(repo: Repo, session: str, role: str, text: str, *, now: str | None = None) -> Turn:
    """Append one turn to ``session``'s log (redacted first); the turn as written."""
    path = session_path(repo.root, session)
    if role not in ROLES:
        raise InvalidInputError(f"unknown role {role!r}", hint=f"use one of {', '.join(ROLES)}")
    if not text.strip():
        raise InvalidInputError("the turn has no text")
    if len(text) > MAX_TURN_CHARS:
        raise InvalidInputError(f"the turn is longer than {MAX_TURN_CHARS:,} characters")
    clean, counts = redact(text)
    turns, _ = _read(repo.root, session)
    turn = Turn(session, (turns[-1].n if turns else 0) + 1, role, clean, now or utc_now(), counts)
    append_bytes(path, canonjson.dumps_line(turn.to_dict()).encode("utf-8"))
    return turn


@dataclass(frozen=True)
class Replay(AsDict):
    session: str
    turns: list[Turn]
    problems: list[str]
    """Lines of the log that could not be read (file:line and why)."""


def replay(repo: Repo, session: str) -> Replay:
    """Every turn of ``session``, in the order written. :class:`NotFoundError` when the session
    has no log."""
    path = session_path(repo.root, session)
    if read_repo_file(path, repo.root, missing_ok=True) is None:
        raise NotFoundError(f"no agent log for session {session!r} ({path.relative_to(repo.root)})")
    turns, problems = _read(repo.root, session)
    if not turns and problems:
        raise LibraryError(f"{problems[0]}; no turn of session {session!r} could be read")
    return Replay(session, turns, problems)
