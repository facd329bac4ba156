"""``arkai ask`` with the openai provider in every role, against the scripted OpenAI-compatible
server on 127.0.0.1 (tests/adapters/fake_llm.py): a synthesizer that fabricates a claim citing
a real match id, a validator that catches it, the loop ending in retraction or a disagreement
report; garbage and timeouts recorded, exit 3, and resumed from the cache."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from arkai.adapters.events import read_events
from arkai.search.research import parse_shard_input
from tests.adapters.fake_llm import FakeLLM, FakeRequest, fake_llm_fixture  # noqa: F401
from tests.conftest import SAMPLES, Runner

QUESTION = "what did the firmware update do to the hive sensors"
FABRICATED = "The firmware update was written by NASA engineers in 1999."
_FRAME = re.compile(r"^<<<(?:END )?INPUT [^>]*>>>$", re.MULTILINE)


def _body(text: str) -> str:
    return _FRAME.sub("", text).strip()


def shard_answer(text: str, req: FakeRequest) -> Any:
    """Every line that mentions the firmware, quoted whole."""
    _, _, chunks, lines = parse_shard_input(_body(text))
    hits = [ln for ln in lines if "firmware" in ln.text.lower()]
    return {
        "matches": [
            {"match_id": ln.match_id, "quote": ln.text.strip(), "context": ln.text,
             "timestamp": ln.date, "relevance": "high"}
            for ln in hits
        ],
        "coverage": {"method": "full_scan", "chunks_examined": chunks,
                     "chunks_with_matches": len({ln.match_id.rsplit(":L", 1)[0] for ln in hits})},
        "uncertainty": {"gaps": [], "confidence": "high" if hits else "none"},
    }  # fmt: skip


def synthesizer(retract: bool) -> Any:
    """Round 1: one true claim and one fabricated claim, both citing the first real match.
    Later rounds: retract the fabrication (``retract``) or insist on it."""

    def answer(text: str, req: FakeRequest) -> Any:
        payload = json.loads(_body(text))
        first = payload["evidence"][0]
        true = {"id": "c1", "text": first["quote"], "evidence": [first["match_id"]]}
        fake = {"id": "c2", "text": FABRICATED, "evidence": [first["match_id"]]}
        if payload["round"] > 1 and retract:
            return {"claims": [true], "retracted": ["c2"]}
        return {"claims": [true, fake], "retracted": []}

    return answer


def validator(text: str, req: FakeRequest) -> Any:
    """Grounded when every word of 4+ letters of the claim is in the quote, else unsupported."""
    body = _body(text)
    claims, _ = json.JSONDecoder().raw_decode(body, body.index("[", body.index("CLAIMS:")))
    out = []
    for c in claims:
        words = {w for w in re.findall(r"[a-z]{4,}", c["claim"].lower())}
        ok = words <= set(re.findall(r"[a-z]{4,}", c["quote"].lower()))
        note = "every word is in the quote" if ok else "words not in the quote"
        out.append({"id": c["id"], "verdict": "grounded" if ok else "unsupported", "note": note})
    return out


@pytest.fixture
def lib(kr: Path, arkai: Runner, fake_llm: FakeLLM) -> Path:
    code, _, err = arkai("--repo", kr, "add", SAMPLES / "field-notes-on-reproducibility.txt",
                         SAMPLES / "beekeeping-talk.vtt")  # fmt: skip
    assert code == 0, err
    params = yaml.safe_load((kr / "params.yaml").read_text())
    params["providers"]["openai"].update(
        {"base_url": fake_llm.base_url, "model": "fake-model", "api_key_env": "ARKAI_TEST_NO_KEY"}
    )
    params["extract"].update({"retries": 0, "backoff_s": 0})
    params["ask"].update({
        "shards": {"provider": "openai", "model": "shard-model"},
        "synthesizer": {"provider": "openai", "model": "synth-model"},
        "validator": {"provider": "openai", "model": "judge-model"},
        "timeout_s": 2,
    })  # fmt: skip
    (kr / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    fake_llm.answer("query_shard", shard_answer)
    fake_llm.answer("validate_claims", validator)
    return kr


def _calls(fake: FakeLLM, pattern: str) -> list[FakeRequest]:
    return [r for r in fake.chat_requests if r.pattern == pattern]


def test_fabricated_claim_ends_in_a_disagreement_report_never_in_the_answer(
    lib: Path, arkai: Runner, fake_llm: FakeLLM
) -> None:
    fake_llm.answer("synthesize_answer", synthesizer(retract=False))
    code, out, err = arkai("--repo", lib, "ask", QUESTION, "--json")
    assert code == 0, err
    record = json.loads(out)
    # Each role ran on its own model, as params chose.
    assert {r.model for r in _calls(fake_llm, "query_shard")} == {"shard-model"}
    assert {r.model for r in _calls(fake_llm, "synthesize_answer")} == {"synth-model"}
    assert {r.model for r in _calls(fake_llm, "validate_claims")} == {"judge-model"}
    # The fabrication cited a real, resolved match id; the validator still rejected it, three
    # times, and it is reported, not answered.
    cited = record["rounds"][0]["claims"][1]["evidence"][0]
    match = next(m for s in record["shards"] for m in s["matches"] if m["match_id"] == cited)
    assert match["status"] == "resolved"
    assert len(record["rounds"]) == 3 and len(_calls(fake_llm, "synthesize_answer")) == 3
    assert [v["verdict"] for r in record["rounds"] for v in r["verdicts"]] == [
        "grounded", "unsupported"] * 3  # fmt: skip
    assert record["agreement"] is False
    assert [(d["claim"], d["verdict"]) for d in record["disagreements"]] == [("c2", "unsupported")]
    assert [c["id"] for c in record["claims"]] == ["c1"]
    assert FABRICATED not in {c["text"] for c in record["claims"]}
    assert all(v["verdict"] == "grounded" for v in record["verdicts"])
    # Rounds 2 and 3 sent the synthesizer the validator's feedback on c2 only.
    second = json.loads(_body(_calls(fake_llm, "synthesize_answer")[1].input))
    assert [f["id"] for f in second["feedback"]] == ["c2"]
    events = read_events(lib / ".arkai" / "runs" / record["run_id"] / "events.jsonl")
    assert [e["round"] for e in events if e["type"] == "AskRound"] == [1, 2, 3]
    code, md, _ = arkai("--repo", lib, "ask", QUESTION)
    answer_part, _, rest = md.partition("## Disagreements")
    assert FABRICATED not in answer_part and FABRICATED in rest


def test_fabricated_claim_retracted_in_round_two_is_agreement(
    lib: Path, arkai: Runner, fake_llm: FakeLLM
) -> None:
    fake_llm.answer("synthesize_answer", synthesizer(retract=True))
    code, out, err = arkai("--repo", lib, "ask", QUESTION, "--json")
    assert code == 0, err
    record = json.loads(out)
    assert len(record["rounds"]) == 2 and record["agreement"] is True
    assert record["retracted"] == ["c2"] and record["disagreements"] == []
    assert [c["id"] for c in record["claims"]] == ["c1"]


def test_garbage_from_the_synthesizer_exits_3_recorded_then_resumes_from_the_cache(
    lib: Path, arkai: Runner, fake_llm: FakeLLM
) -> None:
    fake_llm.answer("synthesize_answer", lambda text, req: "I think the answer is bees.")
    code, _, err = arkai("--repo", lib, "ask", QUESTION)
    assert code == 3 and "synthesis round 1" in err and "re-run" in err
    runs = sorted((lib / ".arkai" / "runs").iterdir())
    events = read_events(runs[-1] / "events.jsonl")
    assert events[-1]["type"] == "RunCompleted" and events[-1]["status"] == "failed"
    shard_calls = len(_calls(fake_llm, "query_shard"))
    assert shard_calls >= 1
    fake_llm.answer("synthesize_answer", synthesizer(retract=True))
    code, _, err = arkai("--repo", lib, "ask", QUESTION)
    assert code == 0, err
    assert len(_calls(fake_llm, "query_shard")) == shard_calls  # the shards' answers: cached


def test_a_shard_that_times_out_exits_3(lib: Path, arkai: Runner, fake_llm: FakeLLM) -> None:
    fake_llm.set_mode("hang")
    code, _, err = arkai("--repo", lib, "ask", QUESTION)
    assert code == 3 and "shard implicit" in err


def test_each_shard_is_asked_once_and_its_matches_resolve(
    lib: Path, arkai: Runner, fake_llm: FakeLLM
) -> None:
    from tests.cli.test_ask import _shards_from

    code, out, _ = arkai("--repo", lib, "library", "--json")
    listing = json.loads(out)
    items = listing.get("items", listing) if isinstance(listing, dict) else listing
    _shards_from(lib, next(i["id"] for i in items if "Field notes" in i["title"]))
    fake_llm.answer("synthesize_answer", synthesizer(retract=True))
    code, out, err = arkai("--repo", lib, "ask", "how did the firmware change over time", "--json")
    assert code == 0, err
    record = json.loads(out)
    calls = _calls(fake_llm, "query_shard")
    assert len(calls) == 3  # every shard ("over time") and the item in no shard, one call each
    shards = [{ln.match_id.split(":")[0] for ln in parse_shard_input(_body(c.input))[3]}
              for c in calls]  # fmt: skip
    # Each call holds its own lines only: a shard's, or the implicit shard's (the talk).
    assert sorted(map(sorted, shards)) == [["item"], ["shard-001"], ["shard-002"]]
    cited = {mid for v in record["verdicts"] for mid in v["evidence"]}
    matches = {m["match_id"]: m for s in record["shards"] for m in s["matches"]}
    assert cited and all(matches[c]["status"] == "resolved" for c in cited)
    assert any(c.startswith("shard-00") for c in cited)


def test_a_shard_larger_than_the_context_is_read_whole_in_parts_each_with_the_question(
    lib: Path, arkai: Runner, fake_llm: FakeLLM
) -> None:
    params = yaml.safe_load((lib / "params.yaml").read_text())
    params["providers"]["openai"]["context_chars"] = 3000
    (lib / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    fake_llm.answer("synthesize_answer", synthesizer(retract=True))
    code, out, err = arkai("--repo", lib, "ask", QUESTION, "--json")
    assert code == 0, err
    calls = _calls(fake_llm, "query_shard")
    assert len(calls) > 2
    seen = []
    for c in calls:
        question, _, _, lines = parse_shard_input(_body(c.input))
        assert question == QUESTION and lines
        seen += [ln.match_id for ln in lines]
    assert len(seen) == len(set(seen))  # every line once, in exactly one part
    (shard,) = json.loads(out)["shards"]
    assert shard["coverage"]["method"] == "full_scan"
    assert shard["coverage"]["chunks_examined"] == 2
    assert {m["item"] for m in shard["matches"]} and all(
        m["status"] == "resolved" for m in shard["matches"]
    )
