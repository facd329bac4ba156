"""Nothing is read from outside the library: links and special files inside ``library/``,
``patterns/`` and files named by params are refused — with an error naming the file — by
extract, reindex, site and validate; the other items go on (issue 10)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from tests.conftest import SAMPLES, Runner

SECRET = "TOP-SECRET-3d1f9a"


@pytest.fixture
def lib(kr: Path, arkai: Runner, tmp_path: Path) -> Path:
    params = kr / "params.yaml"
    data = yaml.safe_load(params.read_text(encoding="utf-8"))
    data["index"]["embedder"] = "none"
    params.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    code, _, err = arkai(
        "--repo", kr, "add", SAMPLES / "field-notes-on-reproducibility.txt",
        SAMPLES / "note-2026-11-20.md", "--quiet",
    )  # fmt: skip
    assert code == 0, err
    (tmp_path / "outside.md").write_text(f"# Outside\n\n{SECRET} lives outside the repo.\n")
    return kr


def victim(kr: Path) -> Path:
    """The reproducibility item's folder (the other item must keep working)."""
    return next(p.parent for p in (kr / "library").rglob("transcript.md") if "Field" in str(p))


def link_transcript_to_outside(kr: Path) -> Path:
    t = victim(kr) / "transcript.md"
    t.unlink()
    t.symlink_to(kr.parent / "outside.md")
    return t


def link_transcript_to_passwd(kr: Path) -> Path:
    t = victim(kr) / "transcript.md"
    t.unlink()
    t.symlink_to("/etc/passwd")
    return t


def link_transcript_to_environ(kr: Path) -> Path:
    t = victim(kr) / "transcript.md"
    t.unlink()
    t.symlink_to("/proc/self/environ")
    return t


def link_review(kr: Path) -> Path:
    r = victim(kr) / "review.yaml"
    r.symlink_to(kr.parent / "outside.md")
    return r


def link_item_folder(kr: Path) -> Path:
    folder = victim(kr)
    outside = kr.parent / "outside-item"
    shutil.copytree(folder, outside)
    (outside / "transcript.md").write_text(f"{SECRET} was copied here.\n")
    shutil.rmtree(folder)
    folder.symlink_to(outside)
    return folder


ATTACKS: dict[str, Callable[[Path], Path]] = {
    "transcript->outside": link_transcript_to_outside,
    "transcript->/etc/passwd": link_transcript_to_passwd,
    "transcript->/proc/self/environ": link_transcript_to_environ,
    "review.yaml->outside": link_review,
}


def leaked(kr: Path) -> list[str]:
    """Files under extracted/, index/, site/ or .site-build/ holding outside text."""
    needles = [SECRET.encode(), b"root:x:0:0", os.environ.get("HOME", "/root").encode() + b"\0"]
    out = []
    for top in ("extracted", "index", "site", ".site-build", "reports"):
        for p in (kr / top).rglob("*"):
            if p.is_file() and any(n in p.read_bytes() for n in needles):
                out.append(str(p))
    return out


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_extract_validate_reindex_refuse_links(lib: Path, arkai: Runner, attack: str) -> None:
    bad = ATTACKS[attack](lib)
    code, out, err = arkai("--repo", lib, "extract", "--quiet", "--json")
    assert code == 3, err
    assert str(bad) in err and ("symbolic link" in err or "is a" in err)
    summary = json.loads(out) if out.strip() else None
    assert summary is None or summary["extracted"] == 1
    assert len(list((lib / "extracted").rglob("evidence.jsonl"))) == 1, "the other item goes on"

    code, out, err = arkai("--repo", lib, "validate")
    assert code == 1 and str(bad) in out + err

    code, out, err = arkai("--repo", lib, "reindex", "--quiet")
    assert code != 0 and str(bad) in err
    assert leaked(lib) == []


def test_site_refuses_links(lib: Path, arkai: Runner) -> None:
    assert arkai("--repo", lib, "extract", "--quiet")[0] == 0
    bad = link_transcript_to_passwd(lib)
    code, _, err = arkai("--repo", lib, "site", "build")
    assert code != 0 and str(bad) in err and "symbolic link" in err
    assert leaked(lib) == []


def test_a_linked_item_folder_is_refused(lib: Path, arkai: Runner) -> None:
    bad = link_item_folder(lib)
    code, out, err = arkai("--repo", lib, "extract", "--quiet")
    assert code == 3
    assert str(bad) in err
    code, out, err = arkai("--repo", lib, "validate")
    assert code == 1 and str(bad) in out
    assert leaked(lib) == []


def test_linked_pattern_and_params_files_are_refused(lib: Path, arkai: Runner) -> None:
    system = lib / "patterns" / "extract_claims" / "system.md"
    system.unlink()
    system.symlink_to(lib.parent / "outside.md")
    code, _, err = arkai("--repo", lib, "extract", "--quiet")
    assert code == 3 and str(system) in err and "symbolic link" in err
    assert leaked(lib) == []

    synonyms = lib / "synonyms.yaml"
    synonyms.unlink(missing_ok=True)
    synonyms.symlink_to("/etc/passwd")
    system.unlink()
    shutil.copy(Path(__file__).parents[2] / "patterns" / "extract_claims" / "system.md", system)
    assert arkai("--repo", lib, "extract", "--quiet")[0] == 0
    code, _, err = arkai("--repo", lib, "reindex", "--quiet")
    assert code != 0 and str(synonyms) in err

    params = lib / "params.yaml"
    real = lib.parent / "params-real.yaml"
    params.rename(real)
    params.symlink_to(real)
    code, _, err = arkai("--repo", lib, "validate")
    assert code != 0 and str(params) in err


def _cli(kr: Path, *args: str) -> subprocess.CompletedProcess[str]:
    # A subprocess with a timeout: a reader that blocked on the FIFO would hang this test.
    return subprocess.run(
        [sys.executable, "-c", "import sys; from arkai.cli import main; "
         "raise SystemExit(main(sys.argv[1:]))", "--repo", str(kr), *args],
        capture_output=True, text=True, timeout=300,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[2] / "src")},
    )  # fmt: skip


def test_a_fifo_is_refused_without_blocking(lib: Path) -> None:
    t = victim(lib) / "transcript.md"
    t.unlink()
    os.mkfifo(t)
    runs = (
        (("extract", "--quiet"), 3),
        (("validate",), 1),
        (("reindex", "-q"), 1),
        (("site", "build", "--no-mkdocs", "--quiet"), 1),
    )
    for args, code in runs:
        proc = _cli(lib, *args)
        assert proc.returncode == code, proc.stderr
        assert str(t) in proc.stdout + proc.stderr and "FIFO" in proc.stdout + proc.stderr
