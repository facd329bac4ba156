"""The pipeline's DVC bookkeeping with manifests (docs/scale.md), in a real git + DVC repo:
DVC walks no per-item folder (extract and condense run on every repro and keep the manifests
the other stages depend on), a change reruns exactly what reads it, a no-op leaves git clean,
the result equals a build from scratch, and a deleted or altered output is noticed."""

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
ALWAYS = {"extract", "condense"}
FOLDERS = ("library", "extracted", "condensed", "site")


def _run(repo: Path) -> tuple[set[str], str]:
    """`dvc repro`: the stages that ran, and its output."""
    out = sh(repo, "dvc", "repro").stdout
    return set(re.findall(r"Running stage '(\w+)'", out)), out


def _changed(repo: Path) -> set[str]:
    """The stages `dvc status` reports as changed, less the entries "always changed" (the
    filter scripts/ci/validate.sh applies)."""
    status = json.loads(sh(repo, "dvc", "status", "--json").stdout)
    return {
        stage for stage, changes in status.items() if set(map(str, changes)) - {"always changed"}
    }


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
def test_dvc_walks_no_per_item_folder(path: Path) -> None:
    # Issue 17: DVC walks every directory dependency and output on every run (≈ 0.9 ms per
    # item). No stage lists library/, extracted/, condensed/ or site/; extract and condense
    # run on every repro and their outputs are the manifests the other stages depend on.
    stages = yaml.safe_load(path.read_text(encoding="utf-8"))["stages"]
    for name, stage in stages.items():
        outs = [next(iter(o)) if isinstance(o, dict) else o for o in stage.get("outs", [])]
        listed = set(stage["deps"]) | set(outs)
        assert not listed & set(FOLDERS), (name, listed & set(FOLDERS))
        assert bool(stage.get("always_changed")) == (name in ALWAYS), name
        if name in ALWAYS:
            assert all(o.startswith("index/manifests/") for o in outs), (name, outs)
            # kept while the stage runs: rewritten only when a file changed
            assert all(o[next(iter(o))] == {"persist": True} for o in stage["outs"]), name
    outs = {n: [next(iter(o)) for o in stages[n]["outs"]] for n in ("extract", "condense", "site")}
    assert outs == {
        "extract": [str(manifest.PATHS["library"]), str(manifest.PATHS["extracted"])],
        "condense": [str(manifest.PATHS["condensed"])],
        "site": [str(manifest.PATHS["site"])],
    }
    # condense reads the transcripts through extract's manifest: it runs after extract.
    assert str(manifest.PATHS["library"]) in stages["condense"]["deps"]


@pytest.mark.parametrize("path", [ROOT / ".dvcignore", ROOT / "src/arkai/scaffold/dvcignore"])
def test_dvc_does_not_look_into_the_per_item_folders(path: Path) -> None:
    # DVC walks every folder of the workspace that is no output, looking for pipeline files:
    # measured at 10,000 items, 5.9 of a no-op's 7.5 CPU seconds (bench/dvc_noop.py).
    lines = path.read_text(encoding="utf-8").splitlines()
    assert {f"/{folder}/" for folder in FOLDERS} <= set(lines)


def test_each_change_reruns_its_readers_and_a_noop_leaves_git_clean(tmp_path: Path) -> None:
    repo = tmp_path / "a"
    sh(tmp_path, "arkai", "init", str(repo))
    sh(repo, "arkai", "add", *map(str, NOTES), "--quiet")
    assert _run(repo)[0] == ALL
    sh(repo, "git", "add", "-A")
    sh(repo, "git", "commit", "-qm", "built")
    lock = (repo / "dvc.lock").read_bytes()

    # A no-op: only the always-changed stages run, they find nothing to do, and neither
    # dvc.lock nor anything else git tracks changes.
    ran, out = _run(repo)
    assert ran == ALWAYS
    assert "extract: 0 extracted, 2 unchanged" in out and "condense: 0 condensed" in out
    assert (repo / "dvc.lock").read_bytes() == lock
    assert sh(repo, "git", "status", "--porcelain").stdout == ""
    assert _changed(repo) == set()

    # One transcript changed. `dvc status` no longer sees it before the run (DVC does not
    # walk library/); `arkai doctor` does. The run redoes exactly that item, and every stage
    # that reads the library reruns.
    transcript = sorted((repo / "library").rglob("transcript.md"))[0]
    with open(transcript, "a", encoding="utf-8") as fh:
        fh.write("\nOne more line, added by an editor, about hive scales.\n")
    assert _changed(repo) == set()
    doctor = sh(repo, "arkai", "doctor", "--json", check=False)
    rel = transcript.relative_to(repo / "library").as_posix()
    assert json.loads(doctor.stdout)["library_changed"] == [f"changed: {rel}"]
    ran, out = _run(repo)
    assert ran == ALL
    assert "extract: 1 extracted, 1 unchanged" in out
    assert re.search(r"condense: 1 condensed \(\d+ chunks?\), 1 unchanged", out), out
    assert _changed(repo) == set()
    assert json.loads(sh(repo, "arkai", "doctor", "--json").stdout)["library_changed"] == []

    # The same inputs built from scratch (the library and the extractions kept in git: an
    # extraction carries the time it was made): byte-identical outputs and manifests.
    fresh = tmp_path / "b"
    sh(tmp_path, "arkai", "init", str(fresh))
    for folder in ("library", "extracted", "condensed"):
        shutil.rmtree(fresh / folder)
        shutil.copytree(repo / folder, fresh / folder)
    sh(fresh, "dvc", "repro")
    assert _outputs(fresh) == _outputs(repo)

    # An extraction edited by hand (a reviewer's change): extract rewrites its manifest,
    # so the readers of extracted/ rerun; condense's work and manifest are untouched.
    condensed = (repo / manifest.PATHS["condensed"]).read_bytes()
    claims = sorted((repo / "extracted").rglob("claims.md"))[0]
    claims.write_text(claims.read_text(encoding="utf-8") + "\n", encoding="utf-8")
    ran, out = _run(repo)
    assert ran == ALL and "extract: 0 extracted" in out and "condense: 0 condensed" in out
    assert (repo / manifest.PATHS["condensed"]).read_bytes() == condensed

    # A condensed file edited by hand: condense rewrites its manifest, and only the stages
    # that read condensed/ (index, validate) rerun.
    path = sorted((repo / "condensed").rglob("condensed.json"))[0]
    data = json.loads(path.read_text(encoding="utf-8"))
    data["chunks"][0]["summary"] = "A summary a person wrote."
    path.write_text(json.dumps(data), encoding="utf-8")
    ran, out = _run(repo)
    assert ran == ALWAYS | {"index", "validate"} and "condense: 0 condensed" in out
    assert (repo / manifest.PATHS["condensed"]).read_bytes() != condensed

    # An item added, then one removed: each reruns every reader of the library.
    sh(repo, "arkai", "add", str(SAMPLES / "field-notes-on-reproducibility.txt"), "--quiet")
    ran, out = _run(repo)
    assert ran == ALL and "extract: 1 extracted, 2 unchanged" in out
    shutil.rmtree(transcript.parent)
    ran, out = _run(repo)
    assert ran == ALL and "1 removed" in out
    assert manifest.up_to_date(repo, "library") and manifest.up_to_date(repo, "condensed")
    assert str(transcript.parent.name) not in (repo / manifest.PATHS["extracted"]).read_text()

    # A manifest deleted: `dvc status` names it and the stages that read it; the next run
    # restores it (same bytes) and reruns nothing else.
    want = (repo / manifest.PATHS["library"]).read_bytes()
    (repo / manifest.PATHS["library"]).unlink()
    assert _changed(repo) >= {"extract", "index", "beliefs", "validate", "site"}
    assert _run(repo)[0] == ALWAYS
    assert (repo / manifest.PATHS["library"]).read_bytes() == want
    assert _changed(repo) == set()

    # A site page deleted or edited by hand: DVC does not walk site/; `arkai doctor` compares
    # it with the manifest, and forcing the site stage renders those pages again.
    site_manifest = (repo / manifest.PATHS["site"]).read_bytes()
    pages = sorted((repo / "site").rglob("index.html"))
    pages[-1].write_text("<p>edited</p>", encoding="utf-8")
    pages[0].unlink()
    done = sh(repo, "arkai", "doctor", "--json", check=False)
    assert done.returncode == 1
    rel_pages = [p.relative_to(repo / "site").as_posix() for p in pages]
    assert json.loads(done.stdout)["site_drift"] == [
        f"missing: {rel_pages[0]}",
        f"changed: {rel_pages[-1]}",
    ]
    sh(repo, "dvc", "repro", "--force", "--single-item", "site")
    assert json.loads(sh(repo, "arkai", "doctor", "--json").stdout)["site_drift"] == []
    assert (repo / manifest.PATHS["site"]).read_bytes() == site_manifest
    assert _changed(repo) == set()
