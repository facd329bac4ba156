"""The temp files of the atomic writer that a killed process leaves are removed by a later run
(:func:`arkai.adapters.fs.sweep_temps`; the index stage sweeps its folders first), and no
other file is."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from arkai.adapters.fs import sweep_temps
from arkai.adapters.itemcache import CACHE_DIR
from tests.conftest import Runner

_WRITER = """
import sys, time
from pathlib import Path
from arkai.adapters.fs import atomic_write

def write(fh):
    fh.write(b"x" * 4096)
    fh.flush()
    print("writing", flush=True)
    time.sleep(600)

atomic_write(Path(sys.argv[1]), write)
"""


def _writer(path: Path) -> subprocess.Popen[str]:
    """A process in the middle of writing ``path`` (its temp file made and written)."""
    proc = subprocess.Popen([sys.executable, "-c", _WRITER, str(path)], stdout=subprocess.PIPE,
                            text=True)  # fmt: skip
    assert proc.stdout is not None and proc.stdout.readline() == "writing\n"
    return proc


def _temps(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.rglob(".*.tmp"))


def test_the_temp_file_of_a_killed_writer_is_swept_and_a_running_ones_kept(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    killed = _writer(tmp_path / "sub" / "topics.json")
    killed.send_signal(signal.SIGKILL)
    killed.wait()
    running = _writer(tmp_path / "graph.json")
    try:
        (left,) = _temps(tmp_path / "sub")
        assert left.startswith(f".topics.json.{killed.pid}-")
        others = [".notes.tmp", "notes.tmp", f".x.{os.getpid()}-abcd.tmp", ".y.1-abc.tmp.bak"]
        for name in others:
            (tmp_path / name).write_text("kept")
        (tmp_path / f".dir.{killed.pid}-abcd.tmp").mkdir()  # not a file: kept
        (tmp_path / "link").symlink_to(tmp_path / "sub")  # not followed
        assert sweep_temps(tmp_path) == 0  # (not recursive: sub/ not looked at)
        assert sweep_temps(tmp_path, recursive=True) == 1
        assert _temps(tmp_path / "sub") == []
        (mine,) = [n for n in _temps(tmp_path) if n.startswith(".graph.json.")]
        assert mine.startswith(f".graph.json.{running.pid}-")  # its writer runs: kept
        for name in others:
            assert (tmp_path / name).read_text() == "kept"
        assert (tmp_path / f".dir.{killed.pid}-abcd.tmp").is_dir()
    finally:
        running.kill()
        running.wait()
    assert sweep_temps(tmp_path, recursive=True) == 1  # now its writer is gone too
    assert sweep_temps(tmp_path / "missing") == 0


def test_the_index_stage_sweeps_what_a_killed_run_left(kr: Path, arkai: Runner) -> None:
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    pid = int(dead.stdout)
    planted = [
        kr / "index" / f".topics.json.{pid}-k1q2.tmp",
        kr / "index" / "lexical" / f".weights.bin.{pid}-z9.tmp",
        kr / CACHE_DIR / f".rankings.tsv.{pid}-0a.tmp",
    ]
    for path in planted:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"\0" * 1024)
    assert arkai("--repo", kr, "reindex", "--quiet")[0] == 0
    assert not any(p.exists() for p in planted)
