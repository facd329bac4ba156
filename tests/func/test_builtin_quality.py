"""The builtin provider on real data: every real transcript, SciFact abstracts, real chats.

Run with ``pytest -s -m slow tests/func/test_builtin_quality.py`` to see the figures: claims
and entities per transcript (entities per hour of talk), claims per SciFact abstract, and
throughput of the four transcript patterns on ten-minute (~1,500-word) talks.
"""

from __future__ import annotations

import json
import re
import statistics
import time
from typing import Any

import pytest

from arkai.core.document import Document
from arkai.core.resolve import resolve_quote
from arkai.formats import parse_source, render_transcript
from arkai.providers.base import Request
from arkai.providers.builtin import BuiltinProvider
from tests.conftest import SHARED_DATA, TRANSCRIPTS
from tests.core.test_builtin_provider import assert_verbatim, needs_model, quotes_of

pytestmark = [pytest.mark.slow, pytest.mark.shared_data, needs_model]

SCIFACT = SHARED_DATA / "claims" / "scifact"
CHATS = SHARED_DATA / "chat_exports"
SCIFACT_DOCS = 300
TALK_WORDS = 1500
PATTERNS = ("extract_claims", "extract_entities", "extract_wisdom", "summarize")
_STAMP = re.compile(r"^\[(\d\d):(\d\d):(\d\d)\]", re.MULTILINE)
PROVIDER = BuiltinProvider()


def call(pattern: str, text: str) -> Any:
    return json.loads(PROVIDER.complete(Request(pattern, "", text), timeout=120).text)


def real_transcripts() -> list[tuple[str, str]]:
    """``(name, transcript.md text)`` of every real source file, rendered by arkai.formats."""
    out: list[tuple[str, str]] = []
    for path in sorted(TRANSCRIPTS.rglob("*")):
        if path.suffix not in (".srt", ".vtt", ".json", ".txt") or "timings" in path.name:
            continue
        text = render_transcript(parse_source(path.name, path.read_bytes()))
        out.append((f"{path.parent.name}/{path.name}", text))
    return out


def hours(text: str) -> tuple[float, str]:
    """Duration from the last ``[HH:MM:SS]`` stamp, else from words at 150 words a minute."""
    stamps = _STAMP.findall(text)
    if stamps:
        h, m, s = (int(x) for x in stamps[-1])
        return (h * 3600 + m * 60 + s) / 3600, "last timestamp"
    return len(text.split()) / 150 / 60, "150 words/min"


@pytest.fixture(scope="module")
def transcripts() -> list[tuple[str, str]]:
    return real_transcripts()


def _norm(text: str) -> str:
    return " ".join(re.findall(r"\w+", text.lower()))


def test_real_transcripts(transcripts: list[tuple[str, str]]) -> None:
    print(f"\n{'transcript':58} {'words':>6} {'hours':>5} {'claims':>6} {'ents':>5} {'ents/h':>7}")
    for name, text in transcripts:
        claims = call("extract_claims", text)
        entities = call("extract_entities", text)["entities"]
        wisdom = call("extract_wisdom", text)
        summary = call("summarize", text)
        assert claims, name
        keys = [_norm(c["quote"]) for c in claims]
        assert len(keys) == len(set(keys)), name
        for claim in claims:
            assert len(claim["quote"].split()) >= 6, (name, claim)  # no caption fragments
            assert 0.5 <= claim["confidence"] <= 0.95
        everything = [claims, entities, wisdom, summary]
        quotes = [q for value in everything for q in quotes_of(value)]
        for quote in quotes:
            assert_verbatim(text, quote)  # substring, one line, no timestamp, no speaker
        # The entity cap follows the text's length (one per CHARS_PER_ENTITY characters).
        from arkai.providers.builtin.entities import CHARS_PER_ENTITY, MAX_ENTITIES, MIN_ENTITIES

        assert len(entities) <= min(MAX_ENTITIES, max(MIN_ENTITIES, len(text) // CHARS_PER_ENTITY))
        duration, how = hours(text)
        rate = len(entities) / duration
        print(
            f"{name[:58]:58} {len(text.split()):>6} {duration:>5.2f} {len(claims):>6} "
            f"{len(entities):>5} {rate:>7.1f}  ({how}; {len(quotes)} quotes verbatim)"
        )


def test_real_chats() -> None:
    from arkai.sources.chats import parse_conversations
    from arkai.sources.chats.common import render_transcript as render_chat

    if not CHATS.is_dir():
        pytest.skip(f"no shared data at {CHATS}")
    counts = {"chats": 0, "decisions": 0, "discoveries": 0, "procedures": 0, "quotes": 0}
    for path in sorted(CHATS.rglob("*.json")):
        try:
            convs, _ = parse_conversations(path.name, json.loads(path.read_text("utf-8")))
        except Exception:  # not a chat export the parsers accept: not this test's subject
            continue
        for conv in convs:
            text = render_chat(conv.title, conv.messages)
            out = call("condense_chat", text)
            counts["chats"] += 1
            for key in ("decisions", "discoveries", "procedures"):
                counts[key] += len(out[key])
            for quote in quotes_of(out):
                assert_verbatim(text, quote)
                counts["quotes"] += 1
            for quote in quotes_of(call("extract_claims", text)):
                assert_verbatim(text, quote)
    print(f"\ncondense_chat on real exports: {counts}")
    assert counts["chats"] > 0


def scifact_abstracts(limit: int = SCIFACT_DOCS) -> list[str]:
    corpus: dict[int, list[str]] = {}
    with (SCIFACT / "corpus.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            doc = json.loads(line)
            corpus[int(doc["doc_id"])] = doc["abstract"]
    ids: list[int] = []
    with (SCIFACT / "claims_train.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            for doc_id in json.loads(line)["cited_doc_ids"]:
                if doc_id in corpus and doc_id not in ids:
                    ids.append(doc_id)
    return [" ".join(corpus[i]) for i in ids[:limit]]


def test_scifact_abstracts_claims_resolve_exactly() -> None:
    if not SCIFACT.is_dir():
        pytest.skip(f"no shared data at {SCIFACT}")
    abstracts = scifact_abstracts()
    per_abstract: list[int] = []
    statuses: dict[str, int] = {}
    for text in abstracts:
        claims = call("extract_claims", text)
        per_abstract.append(len(claims))
        doc = Document(text.encode("utf-8"))
        for claim in claims:
            match = resolve_quote(doc, claim["quote"])
            statuses[match.resolution.status] = statuses.get(match.resolution.status, 0) + 1
            assert match.resolution.method == "exact"
            assert match.resolution.status == "resolved", claim["quote"]
    total = sum(per_abstract)
    print(
        f"\nSciFact: {len(abstracts)} abstracts, {total} claims, "
        f"{statistics.mean(per_abstract):.2f} per abstract (median "
        f"{statistics.median(per_abstract):.0f}, max {max(per_abstract)}); "
        f"resolution {statuses}"
    )
    assert total > 0


def _talks(transcripts: list[tuple[str, str]]) -> list[str]:
    """Real transcripts cut at line ends into ~1,500-word ten-minute talks."""
    talks: list[str] = []
    for _, text in transcripts:
        lines: list[str] = []
        words = 0
        for line in text.splitlines(keepends=True):
            lines.append(line)
            words += len(line.split())
            if words >= TALK_WORDS:
                talks.append("".join(lines))
                lines, words = [], 0
    return talks


def test_throughput_report(transcripts: list[tuple[str, str]]) -> None:
    talks = _talks(transcripts)
    call("extract_entities", "[00:00:01] Warm-up: Alice met Bob in Paris.\n")  # load the model
    start = time.perf_counter()
    for talk in talks:
        for pattern in PATTERNS:
            call(pattern, talk)
    elapsed = time.perf_counter() - start
    per_minute = len(talks) / elapsed * 60
    print(
        f"\nthroughput: {len(talks)} ten-minute talks (~{TALK_WORDS} words), all of "
        f"{', '.join(PATTERNS)}: {elapsed:.1f} s in one process = {per_minute:.0f} talks/min "
        f"on one core ({elapsed / len(talks) * 1000:.0f} ms/talk); target 60/min on 2 cores"
    )
    assert talks
