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
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from typing import Any

from arkai.adapters import interrupt
from arkai.adapters.dvc import RemoteObjects
from arkai.errors import ArkaiError, PipelineError
from arkai.model.record import AsDict
from arkai.providers.runner import ResponseStore, response_problem

__all__ = ["PREFIX", "SyncResult", "pull_responses", "push_responses"]

#: Where responses live on a remote, beside DVC's ``files/md5/`` objects.
PREFIX = "arkai-responses"
_SHA = "sha256:"

#: Transfers in flight at once: each waits on the network (SFTP, S3), not on this machine.
JOBS = 8

Progress = Callable[[int, int, str], None]


@dataclass(frozen=True)
class Damaged(AsDict):
    """An entry that was not used: its key, where it is, and what is wrong with it."""

    key: str
    where: str
    problem: str


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


class _RemoteFailed(Exception):
    """The remote's own error (network, permissions, quota) in a worker thread."""

    def __init__(self, exc: Exception) -> None:
        super().__init__(str(exc))
        self.exc = exc


def _failed(
    what: str, remote: RemoteObjects, done: int, total: int, exc: Exception
) -> PipelineError:
    return PipelineError(
        f"remote {remote.name}: {what} stopped after {done} of {total} responses "
        f"({type(exc).__name__}: {exc})",
        hint="nothing partial was kept; run it again: it moves only what is missing",
    )


def _listed(remote: RemoteObjects) -> set[str]:
    try:
        return remote.oids()
    except Exception as exc:  # the remote's own errors: network, permissions, credentials
        raise PipelineError(
            f"remote {remote.name}: cannot list {remote.url}/{PREFIX} ({type(exc).__name__}: "
            f"{exc})",
            hint="check the remote's URL and credentials (`arkai remote list`)",
        ) from exc


def _each(
    what: str,
    remote: RemoteObjects,
    items: list[str],
    one: Callable[[str], Damaged | None],
    jobs: int,
    progress: Progress | None,
) -> tuple[int, list[Damaged]]:
    """Run ``one`` on every item, ``jobs`` at a time (each transfer waits on the network);
    returns (items done, damaged ones sorted by key). The first remote failure cancels what
    has not started, waits for what has, and raises PipelineError."""
    done, damaged = 0, []
    pool = ThreadPoolExecutor(max_workers=max(1, jobs), thread_name_prefix=f"arkai-{what}")
    try:
        futures = [pool.submit(one, item) for item in items]
        for n, future in enumerate(as_completed(futures), 1):
            interrupt.check(f"arkai remote {what}")
            try:
                bad = future.result()
            except _RemoteFailed as failed:
                raise _failed(what, remote, done, len(items), failed.exc) from failed.exc
            if bad is None:
                done += 1
            else:
                damaged.append(bad)
            if progress:
                progress(n, len(items), f"{what} responses")
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    return done, sorted(damaged, key=lambda d: d.key)


def push_responses(
    store: ResponseStore,
    remote: RemoteObjects,
    progress: Progress | None = None,
    *,
    jobs: int = JOBS,
) -> SyncResult:
    """Send every entry of ``store`` that ``remote`` lacks. A local entry that is not a
    usable record (torn, edited, foreign) is reported and not sent."""
    have = _listed(remote)
    local = store.list_keys()
    todo = [key for key in local if key.removeprefix(_SHA) not in have]

    def one(key: str) -> Damaged | None:
        problem: str | None = "vanished"
        try:
            raw = store.read_raw(key)
        except ArkaiError as exc:  # a symlink or special file in the store
            raw, problem = None, exc.message
        if raw is not None:
            problem = response_problem(key, raw)
        if raw is None or problem is not None:
            return Damaged(key, str(store.path(key)), problem or "vanished")
        try:
            remote.write(key.removeprefix(_SHA), raw)
        except Exception as exc:  # the remote's own errors: network, permissions, quota
            raise _RemoteFailed(exc) from exc
        return None

    try:
        remote.prepare([key.removeprefix(_SHA) for key in todo])
    except Exception as exc:  # the remote's own errors: network, permissions
        raise _failed("push", remote, 0, len(todo), exc) from exc
    sent, damaged = _each("push", remote, todo, one, jobs, progress)
    return SyncResult(sent, len(local) - len(todo), tuple(damaged))


def pull_responses(
    store: ResponseStore,
    remote: RemoteObjects,
    progress: Progress | None = None,
    *,
    jobs: int = JOBS,
) -> SyncResult:
    """File every entry of ``remote`` that ``store`` lacks, each checked before it is
    renamed into place; a damaged one is reported and left out."""
    local = {key.removeprefix(_SHA) for key in store.list_keys()}
    there = _listed(remote)
    todo = sorted(there - local)

    def one(oid: str) -> Damaged | None:
        key = _SHA + oid
        try:
            raw = remote.read(oid)
        except Exception as exc:  # the remote's own errors: network, permissions
            raise _RemoteFailed(exc) from exc
        problem = response_problem(key, raw)
        if problem is not None:
            return Damaged(key, f"{remote.url}/{PREFIX}/{oid[:2]}/{oid[2:]}", problem)
        store.put_raw(key, raw)
        return None

    filed, damaged = _each("pull", remote, todo, one, jobs, progress)
    return SyncResult(filed, len(there) - len(todo), tuple(damaged))
