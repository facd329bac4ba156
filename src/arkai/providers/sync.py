"""The response store shared through a DVC remote (``arkai remote push|pull``, docs/team.md).

Responses are not a DVC stage output (several stages and commands write the one store), so
``dvc push`` cannot carry them. They travel beside DVC's objects on the same remote instead,
under :data:`PREFIX`, one object per key named by the key's hex digits. The exchange is a
union: an entry the other side has is skipped (never overwritten), nothing is ever deleted,
and every record is checked (:func:`~arkai.providers.runner.response_problem`) before it is
sent or filed, so a damaged entry is reported and never used.
"""

from __future__ import annotations

import gc
import queue
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from typing import Any, TypeVar

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
#: Seconds a remote may go without completing anything before a push or pull gives up
#: (params.yaml ``remote.timeout_s``): one 1 MB response over a slow link fits well within.
TIMEOUT_S = 60.0
#: How often the waiting thread looks at the clock and the stop flag.
_POLL_S = 0.1

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


class _Stalled(Exception):
    """Nothing finished for ``timeout`` seconds: the remote stopped answering."""


def _failed(
    what: str, remote: RemoteObjects, done: int, total: int, exc: Exception
) -> PipelineError:
    return PipelineError(
        f"remote {remote.name}: {what} stopped after {done} of {total} responses, "
        f"{total - done} {_LEFT[what]} ({type(exc).__name__}: {exc})",
        hint="nothing partial was kept; run it again: it moves only what is missing",
    )


def _stalled(
    what: str, remote: RemoteObjects, done: int, total: int, timeout: float
) -> PipelineError:
    return PipelineError(
        f"remote {remote.name}: {what} stalled: {remote.url} did not answer for {timeout:g} s; "
        f"{done} of {total} responses moved, {total - done} {_LEFT[what]}",
        hint="nothing partial was kept; run it again when the remote answers (it moves only "
        "what is missing); params.yaml remote.timeout_s sets how long to wait",
    )


#: What a push or pull that stopped early left undone.
_LEFT = {"push": "not sent", "pull": "not received"}

T = TypeVar("T")
R = TypeVar("R")


def _bounded(
    items: list[T], one: Callable[[T], R], jobs: int, timeout: float, what: str
) -> Iterator[R]:
    """``one(item)`` for every item, ``jobs`` at a time, yielding each result as it comes.

    A remote that stops answering must not hang the command, and a thread blocked in a
    network read cannot be cancelled: the workers are daemon threads, so when nothing
    finishes for ``timeout`` seconds this raises :class:`_Stalled` and leaves them behind
    (the process exits without joining them). The first exception of ``one`` stops what has
    not started, waits (at most ``timeout``) for what is in flight, and is raised. A stop
    requested by a signal raises :class:`~arkai.adapters.interrupt.Interrupted` likewise.
    """
    todo: queue.SimpleQueue[T] = queue.SimpleQueue()
    for item in items:
        todo.put(item)
    results: queue.SimpleQueue[tuple[bool, Any]] = queue.SimpleQueue()
    stop = threading.Event()

    def work() -> None:
        while not stop.is_set():
            try:
                item = todo.get_nowait()
            except queue.Empty:
                return
            try:
                results.put((True, one(item)))
                continue
            except BaseException as exc:  # handed to the caller below
                failed = _detached(exc)
            # What the failed transfer left in reference cycles is finalized now, on this
            # thread, while fsspec's event loop still runs (best effort: a collection already
            # under way on another thread makes this one a no-op).
            gc.collect()
            results.put((False, failed))

    workers = [
        threading.Thread(target=work, name=f"arkai-{what}", daemon=True)
        for _ in range(max(1, min(jobs, len(items))))
    ]
    for worker in workers:
        worker.start()
    try:
        left = len(items)
        last = time.monotonic()
        while left:
            interrupt.check(f"arkai remote {what}")
            try:
                ok, value = results.get(timeout=_POLL_S)
            except queue.Empty:
                if time.monotonic() - last >= timeout:
                    raise _Stalled() from None
                continue
            left -= 1
            last = time.monotonic()
            if not ok:
                stop.set()
                deadline = last + timeout
                for worker in workers:
                    worker.join(max(0.0, deadline - time.monotonic()))
                raise value
            yield value
    finally:
        stop.set()


def _detached(exc: BaseException) -> BaseException:
    """``exc`` and the exceptions it chains, without their tracebacks.

    A traceback keeps the frames of the failed transfer alive, and with them the remote file
    object it was writing (fsspec's SFTP file). Freed later by the garbage collector at
    interpreter exit, that file's finalizer closes it through fsspec's event loop, whose
    thread is gone by then, and waits for it forever: a push that failed hung at exit with
    exit status 3 decided. Without the tracebacks the file is freed in the worker."""
    seen: set[int] = set()
    todo: list[BaseException | None] = [exc]
    while todo:
        one = todo.pop()
        if one is None or id(one) in seen:
            continue
        seen.add(id(one))
        one.__traceback__ = None
        todo += [one.__cause__, one.__context__]
    return exc


def _call(what: str, remote: RemoteObjects, call: Callable[[], T], timeout: float) -> T:
    """One remote call (a listing, a folder made) bounded like every transfer."""
    return next(iter(_bounded([call], lambda c: c(), 1, timeout, what)))


def _listed(remote: RemoteObjects, timeout: float) -> set[str]:
    try:
        return _call("list", remote, remote.oids, timeout)
    except _Stalled:
        raise PipelineError(
            f"remote {remote.name}: cannot list {remote.url}/{PREFIX}: no answer for "
            f"{timeout:g} s; nothing was moved",
            hint="check that the remote is up and reachable (`arkai remote list`); params.yaml "
            "remote.timeout_s sets how long to wait",
        ) from None
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
    timeout: float,
) -> tuple[int, list[Damaged]]:
    """Run ``one`` on every item, ``jobs`` at a time (each transfer waits on the network);
    returns (items done, damaged ones sorted by key). A remote failure, or no transfer
    finishing for ``timeout`` seconds, raises PipelineError saying how many were left."""
    done, damaged = 0, []
    try:
        for n, bad in enumerate(_bounded(items, one, jobs, timeout, what), 1):
            if bad is None:
                done += 1
            else:
                damaged.append(bad)
            if progress:
                progress(n, len(items), f"{what} responses")
    except _RemoteFailed as failed:
        raise _failed(what, remote, done, len(items), failed.exc) from failed.exc
    except _Stalled:
        raise _stalled(what, remote, done, len(items), timeout) from None
    return done, sorted(damaged, key=lambda d: d.key)


def push_responses(
    store: ResponseStore,
    remote: RemoteObjects,
    progress: Progress | None = None,
    *,
    jobs: int = JOBS,
    timeout: float = TIMEOUT_S,
) -> SyncResult:
    """Send every entry of ``store`` that ``remote`` lacks. A local entry that is not a
    usable record (torn, edited, foreign) is reported and not sent. A remote that does not
    answer for ``timeout`` seconds fails the push (PipelineError), it never hangs."""
    have = _listed(remote, timeout)
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

    oids = [key.removeprefix(_SHA) for key in todo]
    for prefix in sorted({oid[:2] for oid in oids}):
        # Each folder made before the threads write into it (one call each: bounded alike).
        mine = [oid for oid in oids if oid.startswith(prefix)]
        try:
            _call("prepare", remote, partial(remote.prepare, mine), timeout)
        except _Stalled:
            raise _stalled("push", remote, 0, len(todo), timeout) from None
        except Exception as exc:  # the remote's own errors: network, permissions
            raise _failed("push", remote, 0, len(todo), exc) from exc
    sent, damaged = _each("push", remote, todo, one, jobs, progress, timeout)
    return SyncResult(sent, len(local) - len(todo), tuple(damaged))


def pull_responses(
    store: ResponseStore,
    remote: RemoteObjects,
    progress: Progress | None = None,
    *,
    jobs: int = JOBS,
    timeout: float = TIMEOUT_S,
) -> SyncResult:
    """File every entry of ``remote`` that ``store`` lacks, each checked before it is
    renamed into place; a damaged one is reported and left out. A remote that does not
    answer for ``timeout`` seconds fails the pull (PipelineError), it never hangs."""
    local = {key.removeprefix(_SHA) for key in store.list_keys()}
    there = _listed(remote, timeout)
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

    filed, damaged = _each("pull", remote, todo, one, jobs, progress, timeout)
    return SyncResult(filed, len(there) - len(todo), tuple(damaged))
