"""The whole path in a real git + DVC repo: init, add, ``dvc repro``, drift, repair."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import pytest

from arkai.adapters import beside, events
from tests.conftest import ROOT, SAMPLES, TRANSCRIPTS, sh

pytestmark = pytest.mark.slow

BIN = Path(sys.executable).parent


@pytest.mark.shared_data
def test_init_add_repro_drift_reanchor(tmp_path: Path) -> None:
    repo = tmp_path / "knowledge"
    sh(tmp_path, "arkai", "init", str(repo))
    assert (repo / ".git").is_dir() and (repo / ".dvc").is_dir()
    # A fresh scaffold builds at once, with an empty library.
    sh(repo, "dvc", "repro")
    assert json.loads((repo / "reports/validation.json").read_text())["items"] == 0

    sources = [
        SAMPLES / "beekeeping-talk.vtt",
        SAMPLES / "compilers-podcast.srt",
        SAMPLES / "field-notes-on-reproducibility.txt",
        SAMPLES / "note-2026-11-20.md",
        TRANSCRIPTS / "virtual_coffee_srt" / "episode_2_6.srt",
        TRANSCRIPTS / "youtube_auto_vtt" / "kalanick_techcocktail_VMvdvP02f-Y.en.vtt",
        TRANSCRIPTS / "youtube_transcript_api_json" / "9OeznAkyQz4_transcript.json",
    ]
    sh(repo, "arkai", "add", *map(str, sources), "--tags", "test")
    out = sh(repo, "dvc", "repro").stdout
    if beside.forking():
        # The index stage built the beliefs beside its own work, and the beliefs stage that
        # DVC ran after it kept that build (docs/index-format.md, "Two processes").
        assert "beliefs, built beside the index:" in out
        runs = [events.read_events(repo / events.RUNS_DIR / r / "events.jsonl")
                for r in events.list_runs(repo)]  # fmt: skip
        stage = [r for r in runs if r[0].get("pipeline") == "beliefs"][-1]
        assert [e["step"] for e in stage if e["type"] == "StepCompleted"] == ["episodes", "kept"]
    report = json.loads((repo / "reports/validation.json").read_text())
    assert report["items"] == 7 and report["stale"] == 0 and report["valid"] > 40
    # The condense stage condensed every item; the index stage packed the chunks into shards.
    condensed = sorted((repo / "condensed").rglob("condensed.json"))
    assert len(condensed) == 7
    chunks = sum(len(json.loads(p.read_text())["chunks"]) for p in condensed)
    manifest = json.loads((repo / "index/shards/manifest.json").read_text())
    assert sum(s["chunks"] for s in manifest["shards"]) == chunks >= 7

    # The graph exports are written beside the index's DVC outputs but are not among them:
    # not in dvc.lock, no copy in DVC's cache (each run would keep one); the index's manifest
    # lists their digests (`arkai doctor` compares them).
    listed = json.loads((repo / "index/manifest.json").read_text())["files"]
    for name in ("graph.json", "graph.graphml"):
        data = (repo / "index" / name).read_bytes()
        assert listed[name] == "sha256:" + hashlib.sha256(data).hexdigest()
        md5 = hashlib.md5(data).hexdigest()
        assert not (repo / ".dvc/cache/files/md5" / md5[:2] / md5[2:]).exists(), name
        assert f"index/{name}" not in (repo / "dvc.lock").read_text()
    md5 = hashlib.md5((repo / "index/topics.json").read_bytes()).hexdigest()
    assert (repo / ".dvc/cache/files/md5" / md5[:2] / md5[2:]).is_file()  # the control

    # dvc metrics show reads the validation report.
    metrics = sh(repo, "dvc", "metrics", "show", "--json").stdout
    assert '"stale": 0' in metrics.replace(" ", "").replace('"stale":0', '"stale": 0')

    sh(repo, "git", "add", "-A")
    sh(repo, "git", "commit", "-qm", "library")
    # Nothing changed: the pipeline is up to date and the tree stays clean.
    out = sh(repo, "dvc", "repro").stdout
    assert "didn't change" in out or "up to date" in out
    assert sh(repo, "git", "status", "--porcelain").stdout == ""

    # Drift: someone edits a transcript without re-running the pipeline.
    item = next(p.parent for p in (repo / "library").rglob("source.srt"))
    assert "podcast" in item.name.lower() or "episode" in item.name.lower()
    if "episode" in item.name.lower():
        item = next(p.parent for p in (repo / "library").rglob("source.srt") if "podcast" in str(p))
    transcript = item / "transcript.md"
    transcript.write_bytes(b"[00:00:00] (Intro music.)\n" + transcript.read_bytes())
    proc = sh(repo, "arkai", "validate", check=False)
    assert proc.returncode == 1
    assert "STALE" in proc.stdout and "stale evidence" in proc.stderr
    cid = json.loads((item / "metadata.json").read_text())["id"]
    sh(repo, "arkai", "evidence", "reanchor", cid)
    sh(repo, "arkai", "validate")

    # `dvc repro` re-extracts only the edited item and the pipeline passes again.
    before = {p: p.stat().st_mtime_ns for p in (repo / "extracted").rglob("evidence.jsonl")}
    sh(repo, "dvc", "repro")
    after = {p: p.stat().st_mtime_ns for p in (repo / "extracted").rglob("evidence.jsonl")}
    changed = [p for p in after if before.get(p) != after[p]]
    assert all(item.name in str(p) for p in changed)
    assert json.loads((repo / "reports/validation.json").read_text())["stale"] == 0

    # Validation runs as a DVC stage: committed stale evidence fails `dvc repro`.
    sh(repo, "git", "add", "-A")
    sh(repo, "git", "commit", "-qm", "edit")
    ev = next((repo / "extracted").rglob("evidence.jsonl"))
    first = json.loads(ev.read_text().splitlines()[0])
    first["span"]["slice_sha256"] = "sha256:" + "0" * 64
    lines = ev.read_text().splitlines()
    lines[0] = json.dumps(first, sort_keys=True)
    ev.write_text("\n".join(lines) + "\n")
    proc = sh(repo, "dvc", "repro", check=False)
    assert proc.returncode != 0


def test_this_repo_scaffold_matches_init() -> None:
    """The project's own pipeline files are exactly what `arkai init` writes."""
    from arkai.ops.init import scaffold_files

    files = scaffold_files()
    for rel in ("dvc.yaml", "params.yaml", "synonyms.yaml", "mkdocs.yml", "stages/extract.py",
                "stages/index.py", "stages/validate.py", "stages/site.py",
                "stages/condense.py"):  # fmt: skip
        assert (ROOT / rel).read_bytes() == files[rel], rel
    for rel, data in files.items():
        if rel.startswith("patterns/"):
            assert (ROOT / rel).read_bytes() == data, rel


def test_ingest_adds_then_builds(tmp_path: Path) -> None:
    repo = tmp_path / "kb"
    sh(tmp_path, "arkai", "init", str(repo))
    proc = sh(repo, "arkai", "ingest", str(SAMPLES / "note-2026-11-20.md"), "--tags", "notes")
    assert "added" in proc.stdout
    report = json.loads((repo / "reports/validation.json").read_text())
    assert report["items"] == 1 and report["valid"] >= 1 and report["stale"] == 0
    assert (repo / "dvc.lock").is_file()
