"""A stop signal (SIGTERM/SIGINT under ``arkai.adapters.interrupt.stop_on_signals``) caught by
the run ends the process with the run's own exit code — never a death by SIGINT.

CPython marks an exact ``KeyboardInterrupt`` that ends an ``exec``/``eval`` of source text as
unhandled, even when a caller catches it, and a ``python -m`` process then kills itself with
SIGINT at exit. ``dataclasses`` and ``namedtuple`` exec source text whenever a class is made
(a lazy import can do it at any moment), so a SIGTERM landing there turned ``arkai``'s 130
into ``-2`` now and then (tests/func/test_interrupt_builtin.py failed about once in twelve
runs). The handler raises ``StopSignal``, a ``KeyboardInterrupt`` subclass, which CPython does
not mark."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from arkai.adapters import interrupt

# The signal is sent by the process to itself inside exec'd source text, so the handler runs
# there, every time.
MODULE = """\
from arkai.adapters import interrupt

with interrupt.stop_on_signals():
    try:
        exec("import os, signal\\nos.kill(os.getpid(), signal.{sig})\\nfor _ in range(10**7): pass")
    except KeyboardInterrupt as exc:
        print(type(exc).__name__, interrupt.stop_requested())
raise SystemExit(130)
"""


@pytest.mark.parametrize("sig", ["SIGTERM", "SIGINT"])
def test_a_stop_inside_exec_source_exits_with_the_code_given(tmp_path: Path, sig: str) -> None:
    (tmp_path / "stopper.py").write_text(MODULE.format(sig=sig), encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "stopper"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120, check=False)  # fmt: skip
    assert proc.stdout == "StopSignal True\n", proc.stderr
    assert proc.returncode == 130, proc.stderr


def test_stop_signal_is_a_keyboard_interrupt() -> None:
    # Every `except KeyboardInterrupt` (click's Ctrl-C handling, arkai.cli.guarded) sees it.
    assert issubclass(interrupt.StopSignal, KeyboardInterrupt)
    assert interrupt.StopSignal is not KeyboardInterrupt


# A stop signal that lands inside the import system's own code (a module lock's weakref
# callback, during a lazy import): an exception raised there is printed as "Exception ignored"
# with a traceback and lost, so the handler sends the signal again a moment later instead.
RESENT = """\
import signal, time, types
from arkai.adapters import interrupt

with interrupt.stop_on_signals():
    handler = signal.getsignal(signal.SIGTERM)
    code = types.SimpleNamespace(co_filename="<frozen importlib._bootstrap>")
    handler(signal.SIGTERM, types.SimpleNamespace(f_code=code))
    print("returned", interrupt.stop_requested(), flush=True)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            pass
        print("never sent again")
    except KeyboardInterrupt as exc:
        print("sent again", type(exc).__name__)
raise SystemExit(130)
"""


def test_a_stop_inside_the_import_machinery_is_sent_again(tmp_path: Path) -> None:
    (tmp_path / "resent.py").write_text(RESENT, encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "resent"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120, check=False)  # fmt: skip
    assert proc.stdout == "returned True\nsent again StopSignal\n", proc.stderr
    assert proc.returncode == 130 and "Traceback" not in proc.stderr, proc.stderr
    assert interrupt.in_import_machinery(None) is False
