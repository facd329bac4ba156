"""The pipeline's DVC bookkeeping with manifests (docs/scale.md), in a real git + DVC repo:
a change reruns exactly the stages that read it, the result equals a build from scratch, and a
deleted or altered output is noticed."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
import yaml

from arkai.adapters import manifest
from tests.conftest import ROOT, SAMPLES, sh

pytestmark = pytest.mark.slow

NOTES = [SAMPLES / "note-2026-11-20.md", SAMPLES / "note-2026-11-23.md"]
ALL = {"extract", "condense", "index", "beliefs", "validate", "site"}


def _ran(out: str) -> set[str]:
    return set(re.findall(r"Running stage '(\w+)'", out))


def _changed(repo: Path) -> set[str]:
    """The stages `dvc status` reports as changed."""
    out = sh(repo, "dvc", "status").stdout
    return set(re.findall(r"^(\w+):", out, flags=re.MULTILINE))


def _outputs(repo: Path) -> dict[str, bytes]:
    """Every output the pipeline keeps (git-kept folders, manifests, catalog, beliefs)."""
    files = {}
    for folder in ("extracted", "condensed", "beliefs", "index/manifests", "site"):
        for path in sorted((repo / folder).rglob("*")):
            if path.is_file():
                files[path.relative_to(repo).as_posix()] = path.read_bytes()
    files["index/catalog.json"] = (repo / "index/catalog.json").read_bytes()
    return files


@pytest.mark.parametrize("path", [ROOT / "dvc.yaml", ROOT / "src/arkai/scaffold/dvc.yaml.in"])
def test_only_extract_and_condense_hash_the_big_folders(path: Path) -> None:
    # Issue 17: each directory dependency or output is walked by DVC on every run. library/,
    # extracted/ and condensed/ are each walked once (by the stage that writes their
    # manifest); site/ not at all (its manifest is the output).
    stages = yaml.safe_load(path.read_text(encoding="utf-8"))["stages"]
    for name, stage in stages.items():
        outs = {next(iter(o)) if isinstance(o, dict) else o for o in stage.get("outs", [])}
        listed = set(stage["deps"]) | outs
        for folder in ("library", "extracted", "condensed", "site"):
            if folder in listed:
                assert (name, folder) in {
                    ("extract", "library"),
                    ("extract", "extracted"),
                    ("condense", "condensed"),
                }, (name, folder)
    site_outs = [next(iter(o)) if isinstance(o, dict) else o for o in stages["site"]["outs"]]
    assert site_outs == [str(manifest.PATHS["site"])]


def test_one_change_reruns_its_readers_and_equals_a_build_from_scratch(tmp_path: Path) -> None:
    repo = tmp_path / "a"
    sh(tmp_path, "arkai", "init", str(repo))
    sh(repo, "arkai", "add", *map(str, NOTES), "--quiet")
    assert _ran(sh(repo, "dvc", "repro").stdout) == ALL
    sh(repo, "git", "add", "-A")
    sh(repo, "git", "commit", "-qm", "built")
    assert _ran(sh(repo, "dvc", "repro").stdout) == set()
    assert _changed(repo) == set()

    # One transcript changed: every stage reads the library, so every stage reruns.
    transcript = sorted((repo / "library").rglob("transcript.md"))[0]
    with open(transcript, "a", encoding="utf-8") as fh:
        fh.write("\nOne more line, added by an editor, about hive scales.\n")
    assert _changed(repo) == {"extract"}  # the manifest is rewritten when extract runs
    assert _ran(sh(repo, "dvc", "repro").stdout) == ALL
    assert _changed(repo) == set()

    # The same inputs built from scratch (the library and the extractions kept in git: an
    # extraction carries the time it was made): byte-identical outputs and manifests.
    fresh = tmp_path / "b"
    sh(tmp_path, "arkai", "init", str(fresh))
    for folder in ("library", "extracted", "condensed"):
        shutil.rmtree(fresh / folder)
        shutil.copytree(repo / folder, fresh / folder)
    sh(fresh, "dvc", "repro")
    assert _outputs(fresh) == _outputs(repo)

    # An extraction edited by hand (a reviewer's change): extract reruns (its output changed)
    # and the readers of extracted/ after it, not condense (it reads transcripts only).
    claims = sorted((repo / "extracted").rglob("claims.md"))[0]
    claims.write_text(claims.read_text(encoding="utf-8") + "\n", encoding="utf-8")
    assert _changed(repo) == {"extract"}
    ran = _ran(sh(repo, "dvc", "repro").stdout)
    assert ran == ALL - {"condense"}, ran

    # A tracked output deleted: `dvc status` names its stage and the stages that read it, and
    # `dvc repro` restores it.
    (repo / manifest.PATHS["condensed"]).unlink()
    assert _changed(repo) == {"condense", "index", "validate"}
    sh(repo, "dvc", "repro")
    assert _changed(repo) == set()
    assert _outputs(repo)["index/manifests/condensed.tsv"]

    # A site page deleted or edited by hand: DVC does not walk site/; `arkai doctor` compares
    # it with the manifest, and forcing the site stage renders those pages again.
    site_manifest = (repo / manifest.PATHS["site"]).read_bytes()
    pages = sorted((repo / "site").rglob("index.html"))
    pages[-1].write_text("<p>edited</p>", encoding="utf-8")
    pages[0].unlink()
    done = sh(repo, "arkai", "doctor", "--json", check=False)
    assert done.returncode == 1
    rel = [p.relative_to(repo / "site").as_posix() for p in pages]
    assert json.loads(done.stdout)["site_drift"] == [f"missing: {rel[0]}", f"changed: {rel[-1]}"]
    sh(repo, "dvc", "repro", "--force", "--single-item", "site")
    assert json.loads(sh(repo, "arkai", "doctor", "--json").stdout)["site_drift"] == []
    assert (repo / manifest.PATHS["site"]).read_bytes() == site_manifest
    assert _changed(repo) == set()
