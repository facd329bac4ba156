"""Work run beside the caller in a forked child process: the one way a stage splits its work
over two processes — the index stage (:func:`arkai.ops.index.run_index`: the lexical, vector
and shard steps run while the caller ranks topics and builds the graph, and the beliefs
stage's build beside both; docs/index-format.md, "Two processes") and the extract stage
(:func:`arkai.ops.extract.extract_stage`: the walk of the folders runs while the caller loads
the provider's engines).

The child is a fork, so it starts with everything the caller has loaded (nothing is pickled
but the result); it writes its own files (each atomically, as everywhere) and returns a small
picklable value. The caller waits for it with :meth:`Beside.join`, which gives that value or
raises the child's exception (its class and message; an exception that cannot be sent back
becomes an :class:`~arkai.errors.ArkaiError` naming it). A child that dies without an answer
(killed, out of memory) is an error naming the signal or exit status; the caller's own error
or interrupt kills the child before it is raised (:meth:`Beside.stop`), and on Linux the
child is killed when the caller dies (``PR_SET_PDEATHSIG``), so no orphan goes on writing.

Where there is no ``fork`` (Windows), one CPU only, or ``ARKAI_BESIDE=0``, the work runs in
the caller, at once, in the same order as written: the same files either way (tested).
"""

from __future__ import annotations

import contextlib
import mmap
import os
import pickle
import signal
import struct
import sys
from collections.abc import Callable
from multiprocessing import get_all_start_methods, get_context
from multiprocessing.connection import Connection
from typing import Any, Generic, TypeVar

from arkai.errors import ArkaiError

T = TypeVar("T")

#: ``0`` runs the work in the caller; anything else (or unset) forks where that is possible.
ENV = "ARKAI_BESIDE"
#: How often :meth:`Beside.join` passes the child's progress on while it waits (seconds).
POLL_S = 0.1
#: How long a stopped child has to end after SIGTERM before it is killed (seconds).
STOP_GRACE_S = 5.0

_PR_SET_PDEATHSIG = 1
_PROGRESS = struct.Struct("=qq")

#: What the work is given to report its progress: ``(done, total)``.
Report = Callable[[int, int], None]


class BesideError(ArkaiError):
    """The child ended without an answer (killed by a signal, or exited)."""


def forking() -> bool:
    """Whether work given to :class:`Beside` runs in a child process here."""
    if os.environ.get(ENV, "").strip() == "0" or "fork" not in get_all_start_methods():
        return False
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - no sched_getaffinity (macOS)
        cpus = os.cpu_count() or 1
    return cpus > 1


class Beside(Generic[T]):
    """``work(report)`` run in a forked child from :meth:`start` (or in the caller when
    :func:`forking` says no, or ``fork`` is false: work that is not safe in a fork, such as a
    Ray client's); :meth:`join` gives its result. Use as a context manager: leaving the block
    kills a child still running."""

    def __init__(self, name: str, work: Callable[[Report], T], *, fork: bool = True) -> None:
        self.name = name
        self._work = work
        self._fork = fork
        self._done: tuple[T] | None = None
        self._proc: Any = None
        self._conn: Connection | None = None
        self._progress: mmap.mmap | None = None

    def __enter__(self) -> Beside[T]:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def forked(self) -> bool:
        return self._proc is not None

    def start(self, report: Report | None = None) -> None:
        """Fork the child (or, where :func:`forking` says no, run the work now, its progress
        to ``report``)."""
        if not (self._fork and forking()):
            self._done = (self._work(report or _nothing),)
            return
        ctx = get_context("fork")
        # (done, total), written by the child: an anonymous shared mapping, inherited by the
        # fork (no file, no lock: a torn read only shows a progress figure late).
        progress = mmap.mmap(-1, _PROGRESS.size)
        reader, writer = ctx.Pipe(duplex=False)
        parent = os.getpid()
        proc = ctx.Process(
            target=_child, args=(self._work, writer, progress, parent), name=f"arkai-{self.name}"
        )
        proc.start()
        writer.close()  # (the child holds its end: EOF here when it ends)
        self._proc, self._conn, self._progress = proc, reader, progress

    def join(self, report: Report | None = None) -> T:
        """The work's result. While the child runs, its progress goes to ``report``."""
        if self._done is not None:
            return self._done[0]
        if self._proc is None or self._conn is None or self._progress is None:
            raise RuntimeError(f"{self.name}: join before start")
        progress, seen = self._progress, (-1, -1)

        def relay() -> None:
            nonlocal seen
            now = _PROGRESS.unpack_from(progress)
            if report is not None and now != seen and now[1] > 0:
                report(*now)
                seen = now

        message: Any = None
        while True:
            relay()
            if self._conn.poll(POLL_S):
                try:
                    message = self._conn.recv()
                except (EOFError, OSError):
                    message = None
                break
            if not self._proc.is_alive() and not self._conn.poll(0):
                break
        relay()  # (the last figure the child gave)
        self._proc.join()
        code = self._proc.exitcode
        self._close()
        if message is None:
            how = f"killed by signal {-code}" if code is not None and code < 0 else f"exit {code}"
            raise BesideError(f"{self.name}: its process ended without an answer ({how})")
        kind, value = message
        if kind == "error":
            raise _exception(value)
        result: T = value
        self._done = (result,)
        return result

    def stop(self) -> None:
        """Kill the child if it still runs (SIGTERM, then SIGKILL after
        :data:`STOP_GRACE_S`) and wait for it."""
        proc = self._proc
        if proc is None:
            return
        if proc.is_alive():
            proc.terminate()
            proc.join(STOP_GRACE_S)
            if proc.is_alive():
                proc.kill()
        proc.join()
        self._close()

    def _close(self) -> None:
        if self._conn is not None:
            self._conn.close()
        if self._proc is not None:
            self._proc.close()
        if self._progress is not None:
            self._progress.close()
        self._proc = self._conn = self._progress = None


def _nothing(_done: int, _total: int) -> None:
    pass


def _child(
    work: Callable[[Report], Any], conn: Connection, progress: mmap.mmap, parent: int
) -> None:
    _die_with(parent)
    # Fresh objects over the same descriptors: a thread of the caller (a progress bar's) may
    # have held the old ones' locks at the fork, and no thread here would ever release them.
    sys.stdout = open(1, "w", encoding="utf-8", errors="replace", closefd=False)  # noqa: SIM115
    sys.stderr = open(2, "w", encoding="utf-8", errors="replace", closefd=False)  # noqa: SIM115

    def report(done: int, total: int) -> None:
        _PROGRESS.pack_into(progress, 0, done, total)

    try:
        result: tuple[str, Any] = ("ok", work(report))
    except BaseException as exc:  # every failure goes back to the caller
        result = ("error", _sendable(exc))
    conn.send(result)
    conn.close()
    # Skip the teardown (as a stage process does: arkai.cli.stage.exit_stage): every file the
    # work wrote is closed, and the caller's objects are not this process's to free.
    with contextlib.suppress(OSError, ValueError):
        sys.stdout.flush()
        sys.stderr.flush()
    os._exit(0)


def _die_with(parent: int) -> None:
    """Have the kernel kill this process when ``parent`` dies (Linux), and end now if it is
    already gone."""
    if sys.platform.startswith("linux"):
        import ctypes

        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:
        os._exit(1)


def _sendable(exc: BaseException) -> tuple[bytes | None, str, str]:
    """The exception pickled (when it round-trips), its class name and its text."""
    data: bytes | None
    try:
        data = pickle.dumps(exc)
        pickle.loads(data)
    except Exception:  # any class that does not round-trip
        data = None
    return data, type(exc).__name__, str(exc)


def _exception(value: tuple[bytes | None, str, str]) -> BaseException:
    data, name, text = value
    if data is not None:
        with contextlib.suppress(Exception):
            exc = pickle.loads(data)
            if isinstance(exc, BaseException):
                return exc
    return ArkaiError(f"{name}: {text}" if text else name)
