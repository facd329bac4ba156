"""Tests of the benchmarks in bench/ (each loaded by its file: bench/ is no package, and on
sys.path its scripts would shadow real modules, ``site`` and ``mcp`` among them)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from types import ModuleType

from tests.conftest import ROOT


def run_bench(name: str, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """``python bench/<name>.py ARGS`` in a process of its own, its output captured."""
    return subprocess.run([sys.executable, str(ROOT / "bench" / f"{name}.py"), *args],
                          capture_output=True, text=True, timeout=timeout, check=False)  # fmt: skip


def load_bench(name: str) -> ModuleType:
    """bench/<name>.py as the module ``bench_<name>`` (registered, as its dataclasses need)."""
    spec = importlib.util.spec_from_file_location(f"bench_{name}", ROOT / "bench" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[f"bench_{name}"] = module
    spec.loader.exec_module(module)
    return module
