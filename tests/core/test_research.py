"""The researcher of ``arkai ask``: scope, the builtin shard retrieval, and the builtin roles
(extractive synthesis, stance-checked verdicts)."""

from __future__ import annotations

import json

import pytest

from arkai.errors import InvalidInputError
from arkai.providers.builtin.answer import synthesize_answer
from arkai.providers.builtin.verdicts import conflict, validate_claims
from arkai.search.markup import parse_query
from arkai.search.research import (
    EvidenceLine,
    ShardSpan,
    needs_all_shards,
    parse_shard_input,
    search_shard,
    select_shards,
    shard_input,
)

SHARDS = [
    ShardSpan("shard-001", "2024-01-05", "2024-12-20"),
    ShardSpan("shard-002", "2025-01-02", "2025-06-30"),
    ShardSpan("shard-003", "2025-07-01", "2025-12-31"),
]


def test_in_date_is_a_period_and_cannot_be_combined() -> None:
    q = parse_query("sensors in:2025-03 in:notes")
    assert q.after is not None and q.before is not None
    assert (q.after.start.isoformat(), q.before.start.isoformat()) == ("2025-03-01", "2025-04-01")
    assert q.types == ("notes",) and q.terms == ("sensors",)
    for bad in ("x in:2025 after:2024", "x before:2026 in:2025", "x -in:2025"):
        with pytest.raises(InvalidInputError, match="period"):
            parse_query(bad)


def test_scope_every_shard_for_change_questions_else_overlapping_dates() -> None:
    assert needs_all_shards("How did our approach evolve?") is not None
    assert needs_all_shards("What is the hive weight?") is None
    _, chosen, reason = select_shards("how did the sensors change over time", SHARDS)
    assert chosen == ["shard-001", "shard-002", "shard-003"] and "every shard" in reason
    _, chosen, _ = select_shards("sensor calibration in:2025-03", SHARDS)
    assert chosen == ["shard-002"]
    _, chosen, _ = select_shards("sensor calibration after:2025-05 before:2025-08", SHARDS)
    assert chosen == ["shard-002", "shard-003"]
    _, chosen, reason = select_shards("how did it evolve before:2025", SHARDS)
    assert chosen == ["shard-001"] and "every shard" in reason


LINES = [
    EvidenceLine("shard-001:chunk-1:msg-1", "2025-01-10", "### user · 2025-01-10 09:00:00 UTC"),
    EvidenceLine("shard-001:chunk-1:msg-2", "2025-01-10", "We moved the hive scale to the roof."),
    EvidenceLine("shard-001:chunk-2:msg-4", "2025-04-02", "The scale drifts. Calibrate it weekly."),
    EvidenceLine("shard-001:chunk-2:msg-5", "2025-04-02", "Lunch was pasta | with basil."),
]


def test_shard_input_round_trips_and_builtin_search_returns_the_contract() -> None:
    text = shard_input(
        "how often do we calibrate it, weekly?", "after:2025-01 before:2025-06", 2, LINES
    )
    question, scope, chunks, lines = parse_shard_input(text)
    assert (question, scope, chunks, lines) == (
        "how often do we calibrate it, weekly?", "after:2025-01 before:2025-06", 2, LINES,
    )  # fmt: skip
    out = search_shard(text)
    matches = out["matches"]
    assert isinstance(matches, list)
    assert matches[0]["match_id"] == "shard-001:chunk-2:msg-4"
    top = matches[0]
    assert top["quote"] == "Calibrate it weekly." and top["relevance"] == "high"
    assert top["context"] == LINES[2].text and top["timestamp"] == "2025-04-02"
    assert "shard-001:chunk-1:msg-1" not in {m["match_id"] for m in matches}  # a header line
    with_matches = len({m["match_id"][:22] for m in matches})
    assert out["coverage"] == {
        "method": "full_scan", "chunks_examined": 2, "chunks_with_matches": with_matches,
    }  # fmt: skip
    # February, March and May: months in scope with no line.
    assert out["uncertainty"] == {
        "gaps": ["2025-02 to 2025-03: no data", "2025-05: no data"],
        "confidence": "high",
    }


def test_builtin_search_with_no_matching_words_has_no_matches_and_no_confidence() -> None:
    out = search_shard(shard_input("zebra quantum", "", 2, LINES))
    assert out["matches"] == [] and out["uncertainty"]["confidence"] == "none"  # type: ignore[index]


def test_stance_conflict_negation_and_direction() -> None:
    assert conflict("Aspirin increases bleeding risk.", "Aspirin decreased bleeding risk.")
    assert conflict("The drug does not lower pressure.", "The drug lowers pressure.")
    assert conflict("The drug lowers pressure.", "The drug lowers pressure in mice.") is None
    raw = json.dumps({"claims": [
        {"id": "a", "claim": "Exercise increases insulin sensitivity.",
         "quote": "Exercise decreased insulin sensitivity in the trial."},
        {"id": "b", "claim": "Exercise decreased insulin sensitivity.",
         "quote": "Exercise decreased insulin sensitivity in the trial."},
    ], "transcript": "Exercise decreased insulin sensitivity in the trial."})  # fmt: skip
    a, b = validate_claims(raw, stance=True)
    assert a["verdict"] == "partial" and a["stance"] == "contradicts"
    assert a["note"].startswith("contradicted:")
    assert b["verdict"] == "grounded" and b["stance"] == "supports"
    # Without stance the output is what it always was.
    assert "stance" not in validate_claims(raw)[0]


def test_builtin_synthesis_is_extractive_then_retracts_what_was_not_grounded() -> None:
    evidence = [
        {"match_id": "m1", "quote": "The scale drifts."},
        {"match_id": "m2", "quote": "The  scale drifts."},
        {"match_id": "m3", "quote": "Calibrate it weekly."},
    ]
    first = synthesize_answer(json.dumps({"question": "q", "round": 1, "evidence": evidence}), {})
    assert first == {"claims": [
        {"id": "c1", "text": "The scale drifts.", "evidence": ["m1", "m2"]},
        {"id": "c2", "text": "Calibrate it weekly.", "evidence": ["m3"]},
    ], "retracted": []}  # fmt: skip
    second = synthesize_answer(json.dumps({
        "question": "q", "round": 2, "evidence": evidence, "claims": first["claims"],
        "feedback": [{"id": "c2", "verdict": "partial", "note": "n"}]}), {})  # fmt: skip
    assert second == {"claims": first["claims"][:1], "retracted": ["c2"]}


@pytest.mark.parametrize("value", ["auto", "many", "0", -2, True, 2.5, None])
def test_builtin_synthesis_reads_a_bad_max_claims_as_the_default(value: object) -> None:
    evidence = [{"match_id": f"m{n}", "quote": f"Point number {n} holds."} for n in range(9)]
    raw = json.dumps({"question": "q", "round": 1, "evidence": evidence})
    out = synthesize_answer(raw, {"max_claims": value})
    assert len(out["claims"]) == 6
    assert len(synthesize_answer(raw, {"max_claims": "2"})["claims"]) == 2
