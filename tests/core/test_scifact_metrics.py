"""SciFact's metrics (Wadden et al. 2020, §4) on hand-worked cases."""

from __future__ import annotations

from pathlib import Path

import pytest

from arkai.errors import InvalidInputError
from arkai.search.scifact import (
    abstract_level,
    load_claims,
    load_corpus,
    recall_at_k,
    sentence_level,
)

GOLD = {
    1: {
        "10": [{"sentences": [1, 2], "label": "SUPPORT"}, {"sentences": [4], "label": "SUPPORT"}],
        "11": [{"sentences": [0], "label": "CONTRADICT"}],
    },
    2: {},
}
PRED = {
    1: {
        "10": {"sentences": [1, 2, 5], "label": "SUPPORT"},
        "11": {"sentences": [0], "label": "SUPPORT"},
        "12": {"sentences": [3], "label": "SUPPORT"},
    },
    2: {"20": {"sentences": [0], "label": "CONTRADICT"}},
}


def test_abstract_level_counts_pairs_labels_and_the_first_three_sentences() -> None:
    m = abstract_level(PRED, GOLD)
    # 4 predicted pairs, 2 gold pairs; only (1, "10") has the gold label.
    assert m["label_only"] == pytest.approx({"precision": 0.25, "recall": 0.5, "f1": 1 / 3})
    assert m["label_rationale"] == pytest.approx({"precision": 0.25, "recall": 0.5, "f1": 1 / 3})
    # A full rationale beyond the first three predicted sentences does not count.
    late = {1: {"10": {"sentences": [5, 6, 7, 1, 2], "label": "SUPPORT"}}}
    m = abstract_level(late, GOLD)
    assert m["label_only"]["precision"] == 1.0 and m["label_rationale"]["precision"] == 0.0


def test_sentence_level_needs_whole_rationales_and_the_label_for_label_credit() -> None:
    m = sentence_level(PRED, GOLD)
    # Gold: 4 sentences. Predicted: 6. Selected correctly: 1 and 2 of "10" (their rationale
    # is complete), 0 of "11"; with the label: only the two of "10".
    assert m["selection"] == pytest.approx({"precision": 0.5, "recall": 0.75, "f1": 0.6})
    assert m["selection_label"] == pytest.approx({"precision": 1 / 3, "recall": 0.5, "f1": 0.4})
    half = {1: {"10": {"sentences": [1], "label": "SUPPORT"}}}
    assert sentence_level(half, GOLD)["selection"]["precision"] == 0.0


def test_no_predictions_and_recall_at_k() -> None:
    assert abstract_level({}, GOLD)["label_only"] == {"precision": 0.0, "recall": 0.0, "f1": 0.0}
    rankings = {1: ["12", "10", "99", "11"], 2: ["20"]}
    assert recall_at_k(rankings, GOLD, 1) == 0.0
    assert recall_at_k(rankings, GOLD, 2) == 0.5
    assert recall_at_k(rankings, GOLD, 4) == 1.0


def test_a_bad_line_of_the_claims_or_corpus_file_is_named(tmp_path: Path) -> None:
    """SciFact files are read by the BEIR reader (one JSONL reader); the first bad line fails."""
    claims = tmp_path / "claims.jsonl"
    claims.write_text('{"id": 1, "claim": "c"}\n[1, 2]\n', encoding="utf-8")
    with pytest.raises(InvalidInputError, match=r"claims\.jsonl:2: not a JSON object"):
        load_claims(claims)
    claims.write_text('{"id": 1, "claim": "c", "evidence": {"7": []}}\n', encoding="utf-8")
    assert [c.evidence for c in load_claims(claims)] == [{"7": []}]
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text('{"doc_id": 7, "abstract": ["a."]}\n{"doc_id": 8\n', encoding="utf-8")
    with pytest.raises(InvalidInputError, match=r"corpus\.jsonl:2: not JSON"):
        load_corpus(tmp_path)
