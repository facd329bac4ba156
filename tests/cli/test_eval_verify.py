"""``arkai eval verify``: a tiny hand-written corpus in SciFact's format, and the real SciFact
train claims (shared data)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import SHARED_DATA, Runner

CORPUS = [
    {"doc_id": 1, "title": "Hive scales", "abstract": [
        "We weighed forty hives for two years.",
        "Urban hives gained more weight than rural hives.",
        "Weight gain tracked the flowering of lime trees."]},
    {"doc_id": 2, "title": "Sensor drift", "abstract": [
        "Temperature sensors drift after firmware updates.",
        "Recalibration removed the drift in every hive.",
        "Drift was largest in winter."]},
    {"doc_id": 3, "title": "Pasta", "abstract": [
        "Pasta cooks faster at sea level.", "Salt does not change the boiling time."]},
]  # fmt: skip
CLAIMS = [
    {"id": 1, "claim": "Urban hives gained more weight than rural hives.",
     "evidence": {"1": [{"sentences": [1], "label": "SUPPORT"}]}},
    {"id": 2, "claim": "Recalibration did not remove the sensor drift.",
     "evidence": {"2": [{"sentences": [1], "label": "CONTRADICT"}]}},
    {"id": 3, "claim": "Quantum zebras dislike violins.", "evidence": {}},
]  # fmt: skip


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_eval_verify_scores_and_writes_evaluator_predictions(tmp_path: Path, arkai: Runner) -> None:
    corpus, claims = _jsonl(tmp_path / "corpus.jsonl", CORPUS), _jsonl(tmp_path / "c.jsonl", CLAIMS)
    preds = tmp_path / "preds.jsonl"
    code, out, err = arkai("eval", "verify", "--corpus", tmp_path, "--claims", claims,
                           "--predictions", preds, "--json")  # fmt: skip
    assert code == 0, err
    report = json.loads(out)
    lines = [json.loads(x) for x in preds.read_text().splitlines()]
    assert [p["id"] for p in lines] == [1, 2, 3]
    assert lines[0]["evidence"]["1"] == {"sentences": [1], "label": "SUPPORT"}
    # Sentence 0 shares "sensor drift" (a partial verdict): selected too, and contradicted.
    assert lines[1]["evidence"]["2"] == {"sentences": [0, 1], "label": "CONTRADICT"}
    assert lines[2]["evidence"] == {}
    assert report["abstract_level"]["label_only"]["recall"] == 1.0
    assert report["sentence_level"]["selection_label"]["recall"] == 1.0
    assert report["retrieval_recall"]["recall@1"] == 1.0
    assert report["quotes"] > 0 and report["quotes_resolved_fraction"] == 1.0
    assert corpus.exists()
    code, _, err = arkai("eval", "verify", "--corpus", tmp_path / "nope.jsonl", "--claims", claims)
    assert code == 2 and "nope.jsonl" in err


@pytest.mark.shared_data
def test_eval_verify_on_scifact_train_claims(arkai: Runner) -> None:
    data = SHARED_DATA / "claims" / "scifact"
    args = ["--corpus", data / "corpus.jsonl", "--claims", data / "claims_train.jsonl"]
    code, out, err = arkai("eval", "verify", *args, "--limit", "25", "--json")
    assert code == 0, err
    report = json.loads(out)
    assert report["claims"] == 25 and report["quotes"] > 0
    assert report["quotes_resolved_fraction"] == 1.0
    assert report["retrieval_recall"]["recall@10"] > 0.5
    assert report["abstract_level"]["label_only"]["f1"] > 0.1
