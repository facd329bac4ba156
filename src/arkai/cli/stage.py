"""The one runner of the DVC stage scripts (``stages/*.py``).

A stage script names the operation it runs and how its result is shown::

    exit_stage(run_stage("index", lambda repo, progress: run_index(repo, progress=progress),
                         show_index))

:func:`run_stage` opens the repo (``$ARKAI_REPO`` or the current folder), shows a progress bar
on stderr when attached to a terminal, calls the operation, renders its result and maps
errors to exit codes exactly as the CLI does (:func:`arkai.cli.guarded`) — without going
through the CLI's argument parsing. :func:`exit_stage` then ends the process without the
interpreter's teardown (see its docstring for why that is safe). Before the operation the
runner sets the cyclic garbage collector for a process that builds millions of long-lived
objects (:func:`tune_gc`) and has the C allocator map its large blocks
(:func:`tune_malloc`).

With ``$ARKAI_STAGE_METRICS`` set to a file, each stage appends one JSON line to it: the stage,
its exit code, the seconds from the process's start to the end of the stage (``wall_s``), of
which ``import_s`` before the runner was called, the CPU seconds it used (``cpu_s``, its
waited-for subprocesses included) and its peak resident memory (``maxrss_mb``;
``children_maxrss_mb`` for the subprocesses it waited for) — what ``bench/scale.py`` reads.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import os
import resource
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn, TypeVar

from arkai.cli import guarded
from arkai.cli.output import progress_bar
from arkai.ops import Repo

T = TypeVar("T")

METRICS_ENV = "ARKAI_STAGE_METRICS"
#: The cyclic collector's thresholds in a stage process (CPython's are 700, 10, 10).
GC_THRESHOLDS = (50_000, 20, 100)


def tune_gc() -> None:
    """Collect cycles less often: a stage holds the library's records, topics and summaries
    (millions of objects, nearly all alive until it ends, and few of them in cycles), and with
    CPython's thresholds the collector walks all of them again every time they grow by a
    quarter — at 10,000 items 11 full collections in the site stage, ≈ 2.5 CPU s of its 17.
    The objects that exist once the stage's modules are imported are frozen (never walked:
    they live as long as the process), and a young collection waits for 50,000 new objects
    instead of 700. Cyclic garbage is still collected; measured peak memory did not change
    (docs/scale.md, "The garbage collector in a stage process")."""
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)


#: Blocks of this many bytes and more are given their own mapping by glibc's ``malloc`` in a
#: stage process (its ``M_MMAP_THRESHOLD``; mallopt's parameter number below).
MMAP_THRESHOLD = 1 << 20
_M_MMAP_THRESHOLD = -3

#: Free memory at the top of the heap that glibc keeps for reuse instead of giving it back
#: (its ``M_TRIM_THRESHOLD``; by default 128 KB once the mapping threshold is set).
TRIM_THRESHOLD = 32 << 20
_M_TRIM_THRESHOLD = -1


def tune_malloc() -> bool:
    """Have glibc's ``malloc`` map every block of :data:`MMAP_THRESHOLD` bytes or more, and
    unmap it when it is freed, and keep :data:`TRIM_THRESHOLD` of free heap; True when it
    took the settings. By default the threshold moves
    up to the size of the largest mapped block freed (up to 32 MB), and from then on blocks
    below it come from the heap, which a stage's numpy temporaries (a block of the replay's
    similarities, a graph step's arrays) leave fragmented: the process keeps their pages after
    they are freed. Measured on the 20,000-item library, one changed item (issue 17): index
    361–387 → 321–324 MB, site 211–221 → 207, extract 262 → 249, the beliefs first build at
    10,000 items 282 → 252 MB, with no more CPU time (docs/scale.md, "The lexical engine updated
    in place; …"). Not glibc (another platform or C library): nothing is changed.

    Setting that threshold also fixes the heap's trim threshold at 128 KB: free memory at the
    top of the heap was given back as soon as it passed that, so a step's blocks under 1 MiB
    made and freed over and over (the lexical step's blocks of pairs, the topic step's
    arrays) had their pages faulted in afresh every time — 630,000 page faults and 1.8 s of
    kernel time in the index stage at 10,000 items, against 120,000 and 0.9 s untuned. The
    heap now keeps up to :data:`TRIM_THRESHOLD` of such memory for reuse (the stages' peaks
    unchanged at 10,000 items; docs/scale.md, "The heap kept for reuse")."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # pragma: no cover - a libc without mallopt
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(
        mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD)
    )


def run_stage(
    name: str,
    op: Callable[[Repo, Callable[..., None]], T],
    show: Callable[[T], int],
) -> int:
    """Run stage ``name``: ``op(repo, progress)``, then ``show(result)``; the exit code."""
    called = time.time()
    tune_gc()
    tune_malloc()

    def body() -> int:
        repo = Repo.open(stage=name)
        with progress_bar(name, quiet=False) as bar:

            def progress(done: int, total: int, what: str = "", *_: Any) -> None:
                bar(done, total, what)

            result = op(repo, progress)
        return show(result)

    code = guarded(body)
    metrics = os.environ.get(METRICS_ENV)
    if metrics:
        _record(Path(metrics), name, code, called)
    return code


def _age() -> float:
    """Seconds since this process started (Linux: ``/proc``, to the clock tick)."""
    with open("/proc/self/stat", encoding="ascii") as fh:
        fields = fh.read().rpartition(")")[2].split()
    with open("/proc/uptime", encoding="ascii") as fh:
        uptime = float(fh.read().split()[0])
    return uptime - int(fields[19]) / os.sysconf("SC_CLK_TCK")


def _record(path: Path, name: str, code: int, called: float) -> None:
    from arkai.ops.runs import own_peak_mb, record_stage

    end = time.time()
    started = end - _age()
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    record_stage(
        path,
        {
            "stage": name,
            "exit_code": code,
            "started": round(started, 3),
            "wall_s": round(end - started, 3),
            "import_s": round(max(0.0, called - started), 3),
            # CPU seconds (user + system) hold on a machine that others load too.
            "cpu_s": round(sum(r.ru_utime + r.ru_stime for r in (own, children)), 3),
            "maxrss_mb": own_peak_mb(),
            "children_maxrss_mb": round(children.ru_maxrss / 1024, 1),
        },
    )


def exit_stage(code: int) -> NoReturn:
    """End a stage process with ``code`` without tearing the interpreter down.

    Python's teardown frees every object and module one by one (models, indexes, the library
    in memory): issue 17 measured about a second of it per daily run at 1,000 items, all spent
    after the work was done. Skipping it is safe: when a stage's operation returns, every
    output it wrote has been handed to the kernel — its files are written and closed (through
    the one atomic writer: temp file, rename) and logs are flushed line by line — and
    ``os._exit`` discards nothing the kernel has (an ordinary exit makes nothing more
    durable), only the process's own buffers. Those are flushed here, and the ``atexit``
    handlers run (logging's flush, ``weakref.finalize`` clean-ups such as temporary folders).
    A non-daemon thread still running could be writing: then the process exits the ordinary
    way, which waits for it.
    """
    _flush()
    others = [t for t in threading.enumerate() if t is not threading.main_thread() and not t.daemon]
    if any(t.is_alive() for t in others):
        raise SystemExit(code)
    atexit._run_exitfuncs()
    _flush()
    os._exit(code)


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        # A closed pipe or stream: nothing more can reach it.
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
