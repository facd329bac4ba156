"""One bad ``metadata.json``, ``review.yaml``, ``extraction.json`` or ``evidence.jsonl`` does not
stop extract, validate or search for the whole library: the file is reported, that item
skipped, the rest done, and the command exits non-zero at the end (issue 10)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from tests.conftest import SAMPLES, Runner


@pytest.fixture
def lib(kr: Path, arkai: Runner) -> Path:
    params = kr / "params.yaml"
    data = yaml.safe_load(params.read_text(encoding="utf-8"))
    data["index"]["embedder"] = "none"
    params.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    code, _, err = arkai(
        "--repo", kr, "add", SAMPLES / "field-notes-on-reproducibility.txt",
        SAMPLES / "note-2026-11-20.md", "--quiet",
    )  # fmt: skip
    assert code == 0, err
    assert arkai("--repo", kr, "extract", "--quiet")[0] == 0
    assert arkai("--repo", kr, "reindex", "--quiet")[0] == 0
    return kr


def folders(kr: Path) -> tuple[Path, Path]:
    """(the reproducibility lecture's folder — the bad one —, the note's folder)."""
    metas = sorted((kr / "library").rglob("metadata.json"))
    bad = next(m.parent for m in metas if "Field" in m.parent.name)
    good = next(m.parent for m in metas if m.parent != bad)
    return bad, good


def extracted(kr: Path, folder: Path) -> Path:
    return kr / "extracted" / folder.relative_to(kr / "library")


def drop_outputs(kr: Path, folder: Path) -> Path:
    """Remove an item's extraction so the next run must redo it; returns the marker path."""
    out = extracted(kr, folder)
    shutil.rmtree(out)
    return out / "extraction.json"


def receipts(path: Path) -> list[tuple[str, str, object]]:
    rows = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]
    return [(r["id"], r["quote"], r["span"]) for r in rows]


def test_bad_metadata(lib: Path, arkai: Runner) -> None:
    bad, good = folders(lib)
    kept = (extracted(lib, bad) / "evidence.jsonl").read_bytes()
    (bad / "metadata.json").write_text("{not json", encoding="utf-8")
    marker = drop_outputs(lib, good)
    code, _, err = arkai("--repo", lib, "extract", "--quiet")
    assert code == 3 and str(bad / "metadata.json") in err and "not valid JSON" in err
    assert json.loads(marker.read_text())["status"] == "ok", "the good item was extracted"
    assert (extracted(lib, bad) / "evidence.jsonl").read_bytes() == kept, "nothing lost"

    code, out, _ = arkai("--repo", lib, "validate", "-v")
    assert code == 1 and str(bad / "metadata.json") in out
    assert "ok " in out and "1 unreadable or failed" in out

    code, out, err = arkai("--repo", lib, "search", "bees", "--json")
    assert code == 0, err


def test_bad_review(lib: Path, arkai: Runner) -> None:
    bad, good = folders(lib)
    review = bad / "review.yaml"
    review.write_text("claims: [unclosed\n", encoding="utf-8")
    marker = drop_outputs(lib, good)
    code, _, err = arkai("--repo", lib, "extract", "--quiet")
    assert code == 3 and str(review) in err and "not valid YAML" in err
    assert json.loads(marker.read_text())["status"] == "ok"
    assert review.read_text() == "claims: [unclosed\n", "a person's file is never rewritten"

    code, out, _ = arkai("--repo", lib, "validate")
    assert code == 1 and str(review) in out

    code, out, err = arkai("--repo", lib, "search", "firmware version cryptographic hash")
    assert code == 1 and str(review) in err
    assert "Field notes on reproducibility" in out, "results are still shown"


def test_torn_extraction_marker_is_redone(lib: Path, arkai: Runner) -> None:
    bad, _ = folders(lib)
    marker = extracted(lib, bad) / "extraction.json"
    marker.write_text('{"schema_version": 2, "key": "sha', encoding="utf-8")
    code, out, _ = arkai("--repo", lib, "validate")
    assert code == 1 and str(marker) in out
    code, out, err = arkai("--repo", lib, "extract", "--json")
    assert code == 0, err
    assert json.loads(out)["extracted"] == 1
    assert json.loads(marker.read_text())["status"] == "ok"
    assert arkai("--repo", lib, "validate")[0] == 0


def test_torn_evidence_is_rebuilt_with_only_and_force(lib: Path, arkai: Runner) -> None:
    bad, _ = folders(lib)
    evidence = extracted(lib, bad) / "evidence.jsonl"
    whole = evidence.read_bytes()
    before = receipts(evidence)
    evidence.write_bytes(whole[: len(whole) // 2])
    code, out, _ = arkai("--repo", lib, "validate")
    assert code == 1 and str(evidence) in out
    content_id = json.loads((bad / "metadata.json").read_text())["id"]
    code, _, err = arkai("--repo", lib, "extract", "--only", content_id[:8], "--force", "--quiet")
    assert code == 0, err
    assert receipts(evidence) == before
    assert arkai("--repo", lib, "validate")[0] == 0


def test_validate_reports_items_with_no_extraction(lib: Path, arkai: Runner) -> None:
    code, _, err = arkai("--repo", lib, "add", SAMPLES / "compilers-podcast.srt", "--quiet")
    assert code == 0, err
    code, out, err = arkai("--repo", lib, "validate", "--json")
    assert code == 1
    report = json.loads(out)
    assert report["summary"]["not_extracted"] == 1 and not report["summary"]["ok"]
    assert [i["extracted"] for i in report["items"]].count(False) == 1
    code, out, err = arkai("--repo", lib, "validate")
    assert code == 1 and "not extracted yet" in out
