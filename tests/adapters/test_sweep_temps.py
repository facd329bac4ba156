"""The temp files of the atomic writer that a killed process leaves are removed by a later run
(:func:`arkai.adapters.fs.sweep_temp`: the index stage sweeps its folders first, the manifest
walks of library/, extracted/, condensed/ and site/ and the site build's listing of its pages
as they pass them), and no other file is; nor is one whose writer ran elsewhere (another
machine or process namespace) until it has been left a day."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from arkai.adapters.fs import FOREIGN_TEMP_AGE_S, sweep_temp, sweep_temps, writer_tag
from arkai.adapters.itemcache import CACHE_DIR
from tests.conftest import Runner, dead_pid, other_writer_tag

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
        assert left.startswith(f".topics.json.{killed.pid}.{writer_tag()}-")
        others = [".notes.tmp", "notes.tmp", f".x.{os.getpid()}.{writer_tag()}-abcdefgh.tmp",
                  f".y.1.{writer_tag()}-abcdefgh.tmp.bak"]  # fmt: skip
        for name in others:
            (tmp_path / name).write_text("kept")
        (tmp_path / f".dir.{killed.pid}.{writer_tag()}-abcdefgh.tmp").mkdir()  # not a file: kept
        (tmp_path / "link").symlink_to(tmp_path / "sub")  # not followed
        assert sweep_temps(tmp_path) == 0  # (not recursive: sub/ not looked at)
        assert sweep_temps(tmp_path, recursive=True) == 1
        assert _temps(tmp_path / "sub") == []
        (mine,) = [n for n in _temps(tmp_path) if n.startswith(".graph.json.")]
        assert mine.startswith(f".graph.json.{running.pid}.{writer_tag()}-")  # it runs: kept
        for name in others:
            assert (tmp_path / name).read_text() == "kept"
        assert (tmp_path / f".dir.{killed.pid}.{writer_tag()}-abcdefgh.tmp").is_dir()
    finally:
        running.kill()
        running.wait()
    assert sweep_temps(tmp_path, recursive=True) == 1  # now its writer is gone too
    assert sweep_temps(tmp_path / "missing") == 0


def _entry(path: Path) -> os.DirEntry[str]:
    (found,) = [e for e in os.scandir(path.parent) if e.name == path.name]
    return found


def test_a_temp_file_is_judged_by_its_writers_id_only_where_the_id_is_its_own(
    tmp_path: Path,
) -> None:
    dead, tag, other = dead_pid(), writer_tag(), other_writer_tag()
    assert len(tag) == 8 and writer_tag() == tag  # (the same for every file of a process)
    cases = {
        f".a.json.{dead}.{tag}-x1y2z3w4.tmp": False,  # written here, its writer gone: removed
        f".b.json.{os.getppid()}.{tag}-x1y2z3w4.tmp": True,  # its writer runs: kept
        f".c.json.{dead}-x1y2z3w4.tmp": True,  # an earlier version's name: not here
        ".backup.2024-draft1.tmp": True,  # a person's name for a file: not ours
        f".i.json.{dead}.{tag}-x1y2z3.tmp": True,  # not mkstemp's eight characters
        f".d.json.{dead}.{other}-x1y2z3w4.tmp": True,  # written elsewhere, lately: kept
        f".e.json.{os.getppid()}.{other}-x1y2z3w4.tmp": False,  # written elsewhere, long ago
        f".f.json.{dead}.abc-x1y2z3w4.tmp": True,  # neither a tag nor an ID there: not ours
        f"g.json.{dead}.{tag}-x1y2z3w4.tmp": True,  # no leading dot: not one of ours
        f".h.json.{dead}.{tag}-x1y2z3w4.tmp.bak": True,
    }
    for name in cases:
        (tmp_path / name).write_text("x")
    old = (tmp_path / f".e.json.{os.getppid()}.{other}-x1y2z3w4.tmp").stat().st_mtime
    os.utime(tmp_path / f".e.json.{os.getppid()}.{other}-x1y2z3w4.tmp",
             (old - FOREIGN_TEMP_AGE_S - 60, old - FOREIGN_TEMP_AGE_S - 60))  # fmt: skip
    recent = old - FOREIGN_TEMP_AGE_S + 3600
    os.utime(tmp_path / f".d.json.{dead}.{other}-x1y2z3w4.tmp", (recent, recent))
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "t").write_text("x")
    (tmp_path / f".l.json.{dead}.{tag}-x1y2z3w4.tmp").symlink_to(tmp_path / "sub" / "t")
    assert sweep_temp(_entry(tmp_path / f".l.json.{dead}.{tag}-x1y2z3w4.tmp")) is False  # a link
    for name, kept in cases.items():
        assert sweep_temp(_entry(tmp_path / name)) is (not kept), name
        assert (tmp_path / name).exists() is kept, name
    assert (tmp_path / "sub" / "t").exists()
    # Where only arkai writes (the index stage's folders) an earlier version's name is taken
    # by its writer's ID; a person's name for a file still is not ours.
    assert sweep_temp(_entry(tmp_path / f".c.json.{dead}-x1y2z3w4.tmp"), untagged=True)
    assert not sweep_temp(_entry(tmp_path / ".backup.2024-draft1.tmp"), untagged=True)


def test_the_index_stage_sweeps_what_a_killed_run_left(kr: Path, arkai: Runner) -> None:
    pid = dead_pid()
    planted = [
        kr / "index" / f".topics.json.{pid}-k1q2w3e4.tmp",
        kr / "index" / "lexical" / f".weights.bin.{pid}-z9x8c7v6.tmp",
        kr / CACHE_DIR / f".rankings.tsv.{pid}.{writer_tag()}-0a1b2c3d.tmp",
    ]
    for path in planted:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"\0" * 1024)
    assert arkai("--repo", kr, "reindex", "--quiet")[0] == 0
    assert not any(p.exists() for p in planted)
