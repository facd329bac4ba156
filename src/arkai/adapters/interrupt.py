"""Stopping promptly: one process-wide stop flag that SIGTERM and SIGINT raise, and waits that
end when it is raised.

A run sets it up with :func:`stop_on_signals` (main thread only): a signal raises the flag and
a ``KeyboardInterrupt`` in the main thread. Worker threads never see the ``KeyboardInterrupt``;
they notice the flag instead: :func:`sleep` returns early by raising :class:`Interrupted`, HTTP
exchanges are cut by their watchdog (``adapters.http``) and child processes are killed
(``providers.command``). So every blocking wait in a provider call ends within a fraction of a
second and the run's thread pool can be joined.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

from arkai.errors import ArkaiError

#: How often blocking waits look at the stop flag (seconds).
POLL_S = 0.1
EXIT_INTERRUPTED = 130

_STOP = threading.Event()


class Interrupted(ArkaiError):
    """The run was asked to stop (SIGTERM / SIGINT); finished work is kept."""

    exit_code = EXIT_INTERRUPTED


def request_stop() -> None:
    """Raise the stop flag: every :func:`sleep` and guarded wait ends."""
    _STOP.set()


def clear_stop() -> None:
    """Lower the stop flag (a new run in the same process; tests)."""
    _STOP.clear()


def stop_requested() -> bool:
    return _STOP.is_set()


def check(what: str = "run") -> None:
    """Raise :class:`Interrupted` when a stop was requested."""
    if _STOP.is_set():
        raise Interrupted(f"{what}: stopped by a signal")


def sleep(seconds: float, what: str = "run") -> None:
    """Sleep ``seconds``, or raise :class:`Interrupted` as soon as a stop is requested."""
    if _STOP.wait(max(0.0, seconds)):
        raise Interrupted(f"{what}: stopped by a signal while waiting")


class StopSignal(KeyboardInterrupt):
    """What a stop signal raises in the main thread: a ``KeyboardInterrupt`` to every handler
    (``except KeyboardInterrupt``, click's Ctrl-C handling), but not that exact class. CPython
    marks an exact ``KeyboardInterrupt`` that ends an ``exec``/``eval`` of source text (which
    ``dataclasses`` and ``namedtuple`` run when a class is made, as a lazy import may do at
    any moment) as unhandled even when it is caught later, and then ends the process with
    SIGINT at exit instead of its exit code: the run's 130 became a death by signal 2 about
    once in twelve stops."""


#: How long after a stop signal that landed inside the import machinery it is sent again.
RESIGNAL_S = 0.01


def in_import_machinery(frame: FrameType | None) -> bool:
    """Whether ``frame`` (where a signal interrupted the main thread) is the import system's own
    code, e.g. a module lock's weakref callback, where an exception raised is not propagated."""
    return frame is not None and frame.f_code.co_filename.startswith("<frozen importlib")


@contextmanager
def stop_on_signals() -> Iterator[None]:
    """While inside, SIGTERM and SIGINT raise the stop flag and a ``KeyboardInterrupt`` in the
    main thread. The flag is lowered on entry and on exit (outside the main thread: a no-op)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: FrameType | None) -> None:
        request_stop()
        if in_import_machinery(frame):
            # Raised inside the import system's lock callbacks it would be printed as an
            # "Exception ignored" traceback and lost; the signal is sent again a moment later,
            # to land once the import has let go (the stop flag is already up).
            threading.Timer(RESIGNAL_S, os.kill, (os.getpid(), signum)).start()
            return
        raise StopSignal

    _STOP.clear()
    old = {sig: signal.signal(sig, handler) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for sig, previous in old.items():
            signal.signal(sig, previous)
        _STOP.clear()
