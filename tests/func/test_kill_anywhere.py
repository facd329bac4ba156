"""A ``dvc repro`` killed (SIGKILL, its whole process group) at some moment of its run, then
``arkai run``, leaves every output byte for byte as a twin library that got the same edits and
was never killed (extraction timestamps aside). Whatever moment the kill lands on — inside a
stage, between two, while DVC writes its own files (``arkai run`` sets a torn one aside:
tests/func/test_dvc_torn.py) — the outputs must come out the same, so the test holds for any
timing; the moments are spread over one measured run."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import SAMPLES, sh, tool_env

pytestmark = pytest.mark.slow

OUTPUTS = ("extracted", "condensed", "index", "beliefs", "site", "reports")
#: When an item was extracted (the one thing two runs at two moments make differently), and
#: the manifest of extracted/ that digests those files.
_STAMP = re.compile(rb'"(extracted_at|ts)": ?"[^"]*"')
_SKIP = {"index/manifests/extracted.tsv"}


def _outputs(root: Path) -> dict[str, str]:
    """Each output file's digest. A temp file of the atomic writer (``.*.tmp``) is none: a
    kill can leave one beside a per-item file (DVC and the manifests pass over them); the index
    stage sweeps those beside its own files (asserted by the caller)."""
    found: dict[str, str] = {}
    for top in OUTPUTS:
        for path in sorted((root / top).rglob("*")):
            rel = path.relative_to(root).as_posix()
            if path.is_symlink() or not path.is_file() or rel in _SKIP:
                continue
            if path.name.startswith(".") and path.name.endswith(".tmp"):
                continue
            data = path.read_bytes()
            if top == "extracted":
                data = _STAMP.sub(b"-", data)
            found[rel] = hashlib.sha256(data).hexdigest()
    return found


def _edit(root: Path, step: int) -> None:
    transcripts = sorted((root / "library").rglob("transcript.md"))
    path = transcripts[step % len(transcripts)]
    if step == 2:
        shutil.rmtree(path.parent)  # an item removed
        return
    with path.open("a", encoding="utf-8") as fh:
        fh.write(f"\n[00:59:0{step}] Round {step} notes that Kubernetes clusters need care.\n")


def _killed_at(root: Path, after_s: float) -> None:
    proc = subprocess.Popen(["dvc", "repro"], cwd=root, env=tool_env(), start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        proc.wait(after_s)
    except subprocess.TimeoutExpired:
        pass
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def test_a_run_killed_anywhere_then_run_again_gives_the_outputs_of_one_never_killed(
    tmp_path: Path,
) -> None:
    a = tmp_path / "a"
    sh(tmp_path, "arkai", "init", str(a))
    sources = ("beekeeping-talk.vtt", "compilers-podcast.srt", "note-2026-11-20.md")
    sh(a, "arkai", "add", *(str(SAMPLES / s) for s in sources))
    sh(a, "dvc", "repro")
    b = tmp_path / "b"
    shutil.copytree(a, b, symlinks=True)

    for step, share in enumerate((0.3, 0.6, 0.9)):
        _edit(a, step)
        _edit(b, step)
        began = time.monotonic()
        sh(b, "dvc", "repro")  # the twin, never killed: also how long such a run takes
        _killed_at(a, share * (time.monotonic() - began))
        sh(a, "arkai", "run")
        assert _outputs(a) == _outputs(b), f"step {step}: killed at {share:.0%} of a run"
        assert not list((a / "index").rglob(".*.tmp")), step  # swept by the index stage
