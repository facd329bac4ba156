"""People's decisions are never lost: reviews are keyed by a stable claim ID that survives edits
moving text around a quote, carried across re-extraction, and a review that matches no claim
is reported, never dropped (issue 10, "People's decisions and files are never lost")."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from arkai.adapters.store import read_evidence
from arkai.core.hashing import evidence_id
from arkai.model.evidence import EvidenceLine
from tests.conftest import SAMPLES, Runner

QUOTE_WORDS = "dataset institute publishes firmware version cryptographic hash"


@pytest.fixture
def lib(kr: Path, arkai: Runner) -> Path:
    params = kr / "params.yaml"
    data = yaml.safe_load(params.read_text(encoding="utf-8"))
    data["index"]["embedder"] = "none"
    params.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    code, _, err = arkai("--repo", kr, "add", SAMPLES / "field-notes-on-reproducibility.txt")
    assert code == 0, err
    code, _, err = arkai("--repo", kr, "extract", "--quiet")
    assert code == 0, err
    return kr


def review_key(line: EvidenceLine) -> str:
    """The stable claim ID (seed 000's unresolved-tier ID), computed here from its inputs."""
    return evidence_id(line.content_id, line.extractor, line.quote_sha256, None)


def review_of(line: EvidenceLine) -> dict[str, Any]:
    return dict(line.to_dict().get("review") or {})


def rejected(line: EvidenceLine) -> bool:
    return review_of(line).get("status") == "rejected"


def item_folder(kr: Path) -> Path:
    return next((kr / "library").rglob("metadata.json")).parent


def evidence(kr: Path) -> list[EvidenceLine]:
    return read_evidence(next((kr / "extracted").rglob("evidence.jsonl")))


def target(kr: Path) -> EvidenceLine:
    """A resolved claim about firmware versions (what the search below finds)."""
    return next(
        ln for ln in evidence(kr) if ln.status == "resolved" and "firmware version" in ln.quote
    )


def same_claim(kr: Path, old: EvidenceLine) -> EvidenceLine:
    return next(ln for ln in evidence(kr) if ln.quote == old.quote and ln.claim == old.claim)


def insert_above(kr: Path, text: str) -> None:
    transcript = item_folder(kr) / "transcript.md"
    data = transcript.read_bytes()
    cut = data.index(b"\n\n") + 2
    transcript.write_bytes(data[:cut] + text.encode() + b"\n\n" + data[cut:])


def searched_claims(kr: Path, arkai: Runner) -> set[str]:
    code, out, err = arkai("--repo", kr, "reindex", "--quiet")
    assert code == 0, err
    code, out, err = arkai("--repo", kr, "search", QUOTE_WORDS, "--json")
    assert code == 0, err
    found: set[str] = set()

    def walk(obj: Any) -> None:
        if isinstance(obj, dict):
            if "evidence_id" in obj:
                found.add(str(obj["evidence_id"]))
            for v in obj.values():
                walk(v)
        elif isinstance(obj, list):
            for v in obj:
                walk(v)

    walk(json.loads(out))
    return found


def test_rejection_survives_text_inserted_above(lib: Path, arkai: Runner) -> None:
    old = target(lib)
    assert old.id in searched_claims(lib, arkai), "the search below must find the claim"
    code, _, err = arkai("--repo", lib, "review", old.id, "--reject", "--by", "ana", "--json")
    assert code == 0, err
    entries = yaml.safe_load((item_folder(lib) / "review.yaml").read_text())["claims"]
    assert list(entries) == [review_key(old)], "filed under the stable claim ID"
    assert arkai("--repo", lib, "extract", "--quiet")[0] == 0
    assert rejected(same_claim(lib, old))
    assert old.id not in searched_claims(lib, arkai)

    insert_above(lib, "An editor's note, added later, that moves every byte below it.")
    assert arkai("--repo", lib, "extract", "--quiet")[0] == 0
    moved = same_claim(lib, old)
    assert moved.id != old.id and moved.span is not None and old.span is not None
    assert moved.span.start > old.span.start
    assert rejected(moved), "the rejection was lost when the claim moved"
    assert review_of(moved)["by"] == "ana"
    assert moved.id not in searched_claims(lib, arkai)
    code, out, _ = arkai("--repo", lib, "review", "--pending", "--json")
    pend = json.loads(out)
    assert moved.id not in {r["id"] for r in pend["pending"]} and pend["orphaned"] == []


def test_old_span_keyed_reviews_migrate_transparently(lib: Path, arkai: Runner) -> None:
    """A review.yaml written before stable keys (keyed by the span-tier evidence ID) keeps
    working across two edits that each shift the claim."""
    old = target(lib)
    path = item_folder(lib) / "review.yaml"
    path.write_text(f"claims:\n  {old.id}: {{status: rejected, note: legacy}}\n")
    assert arkai("--repo", lib, "extract", "--quiet")[0] == 0
    assert rejected(same_claim(lib, old))
    for n in range(2):
        insert_above(lib, f"Inserted paragraph number {n}.")
        assert arkai("--repo", lib, "extract", "--quiet")[0] == 0
        line = same_claim(lib, old)
        assert line.id != old.id and rejected(line), f"lost after edit {n + 1}"
        assert review_of(line)["note"] == "legacy"
    assert path.read_text() == f"claims:\n  {old.id}: {{status: rejected, note: legacy}}\n"
    # Reviewing the claim again files it under the stable key and retires the old key.
    code, _, err = arkai("--repo", lib, "review", line.id, "--accept", "--by", "ana")
    assert code == 0, err
    assert list(yaml.safe_load(path.read_text())["claims"]) == [review_key(old)]


def test_a_review_that_matches_no_claim_is_reported_not_dropped(lib: Path, arkai: Runner) -> None:
    old = target(lib)
    assert arkai("--repo", lib, "review", old.id, "--reject", "--by", "ana")[0] == 0
    path = item_folder(lib) / "review.yaml"
    before = path.read_bytes()
    transcript = item_folder(lib) / "transcript.md"
    data = transcript.read_bytes()
    transcript.write_bytes(data.replace(old.quote.encode(), b"This sentence was rewritten."))
    assert arkai("--repo", lib, "extract", "--quiet")[0] == 0
    assert all(ln.quote != old.quote for ln in evidence(lib))
    assert path.read_bytes() == before, "review.yaml is never rewritten by the pipeline"
    code, out, _ = arkai("--repo", lib, "validate", "--json")
    report = json.loads(out)
    assert report["summary"]["orphaned_reviews"] == 1
    assert report["items"][0]["orphaned_reviews"] == [review_key(old)]
    code, out, _ = arkai("--repo", lib, "review", "--pending")
    assert f"orphaned review {review_key(old)} (rejected)" in out
    code, out, _ = arkai("--repo", lib, "extract", "--force", "--json")
    assert code == 0
    assert json.loads(out)["orphaned_reviews"] == {old.content_id: [review_key(old)]}
