"""The response store shared through a DVC remote (``arkai remote push|pull``, docs/team.md).

Responses are not a DVC stage output (several stages and commands write the one store), so
``dvc push`` cannot carry them. They travel beside DVC's objects on the same remote instead,
under :data:`PREFIX`, one object per key named by the key's hex digits. The exchange is a
union: an entry the other side has is skipped (never overwritten), nothing is ever deleted,
and every record is checked (:func:`~arkai.providers.runner.response_problem`) before it is
sent or filed, so a damaged entry is reported and never used.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NoReturn

from arkai.adapters import interrupt
from arkai.adapters.dvc import RemoteObjects
from arkai.errors import ArkaiError, PipelineError
from arkai.providers.runner import ResponseStore, response_problem

__all__ = ["PREFIX", "SyncResult", "pull_responses", "push_responses"]

#: Where responses live on a remote, beside DVC's ``files/md5/`` objects.
PREFIX = "arkai-responses"
_SHA = "sha256:"

Progress = Callable[[int, int, str], None]


@dataclass(frozen=True)
class Damaged:
    """An entry that was not used: its key, where it is, and what is wrong with it."""

    key: str
    where: str
    problem: str

    def to_dict(self) -> dict[str, str]:
        return {"key": self.key, "where": self.where, "problem": self.problem}


@dataclass(frozen=True)
class SyncResult:
    """What one push or pull of the response store did."""

    transferred: int
    """Entries sent (push) or filed into the local store (pull)."""
    present: int
    """Entries skipped because the other side already had them."""
    damaged: tuple[Damaged, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "transferred": self.transferred,
            "present": self.present,
            "damaged": [d.to_dict() for d in self.damaged],
        }


def _stopped(what: str, done: int, total: int, remote: RemoteObjects, exc: Exception) -> NoReturn:
    raise PipelineError(
        f"remote {remote.name}: {what} stopped after {done} of {total} responses "
        f"({type(exc).__name__}: {exc})",
        hint="nothing partial was kept; run it again: it transfers only what is missing",
    ) from exc


def push_responses(
    store: ResponseStore, remote: RemoteObjects, progress: Progress | None = None
) -> SyncResult:
    """Send every entry of ``store`` that ``remote`` lacks. A local entry that is not a
    usable record (torn, edited, foreign) is reported and not sent."""
    have = remote.oids()
    local = store.list_keys()
    todo = [key for key in local if key.removeprefix(_SHA) not in have]
    damaged: list[Damaged] = []
    sent = 0
    for n, key in enumerate(todo, 1):
        interrupt.check("arkai remote push")
        problem: str | None = "vanished"
        try:
            raw = store.read_raw(key)
        except ArkaiError as exc:  # a symlink or special file in the store
            raw, problem = None, exc.message
        if raw is not None:
            problem = response_problem(key, raw)
        if raw is None or problem is not None:
            damaged.append(Damaged(key, str(store.path(key)), problem or "vanished"))
            continue
        try:
            remote.write(key.removeprefix(_SHA), raw)
        except Exception as exc:  # the remote's own errors: network, permissions, quota
            _stopped("push", sent, len(todo), remote, exc)
        sent += 1
        if progress:
            progress(n, len(todo), key)
    return SyncResult(sent, len(local) - len(todo), tuple(damaged))


def pull_responses(
    store: ResponseStore, remote: RemoteObjects, progress: Progress | None = None
) -> SyncResult:
    """File every entry of ``remote`` that ``store`` lacks, each checked before it is
    renamed into place; a damaged one is reported and left out."""
    local = {key.removeprefix(_SHA) for key in store.list_keys()}
    there = remote.oids()
    todo = sorted(there - local)
    damaged: list[Damaged] = []
    filed = 0
    for n, oid in enumerate(todo, 1):
        interrupt.check("arkai remote pull")
        key = _SHA + oid
        try:
            raw = remote.read(oid)
        except Exception as exc:  # the remote's own errors: network, permissions
            _stopped("pull", filed, len(todo), remote, exc)
        problem = response_problem(key, raw)
        if problem is not None:
            damaged.append(Damaged(key, f"{remote.url}/{PREFIX}/{oid[:2]}/{oid[2:]}", problem))
            continue
        store.put_raw(key, raw)
        filed += 1
        if progress:
            progress(n, len(todo), key)
    return SyncResult(filed, len(there) - len(todo), tuple(damaged))
