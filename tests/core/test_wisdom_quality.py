"""Summary and wisdom of the builtin provider on real shared transcripts: they lead with what the
talk is about, the takeaway is a central claim, and no sentence is repeated within an item."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import pytest

from arkai.formats import parse_source, render_transcript
from arkai.providers.builtin.claims import rank_units
from arkai.providers.builtin.wisdom import central_order, extract_wisdom, summarize
from tests.conftest import TRANSCRIPTS

TALKS = [
    "virtual_coffee_srt/episode_1_1.srt",
    "3b1b_human_captions/2017_neural-networks/captions.srt",
    "youtube_auto_vtt/kalanick_techcocktail_VMvdvP02f-Y.en.vtt",
    "youtube_transcript_api_json/9OeznAkyQz4_transcript.json",
]
GREETING = re.compile(
    r"^(?:hey|hi|hello|welcome|good (?:morning|evening)|thanks?\b|i'm \w+ and|my name is|"
    r"this is (?:season|episode|the))",
    re.IGNORECASE,
)


@cache
def transcript(rel: str) -> str:
    src = TRANSCRIPTS / rel
    if not src.exists():
        pytest.skip("needs ../shared/data")
    return render_transcript(parse_source(src.name, src.read_bytes()))


def _sentences(summary: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.!?…])\s+", summary.strip()) if s]


def _norm(text: str) -> str:
    return " ".join(re.findall(r"\w+", text.lower()))


@pytest.mark.parametrize("rel", TALKS, ids=lambda r: Path(r).stem[:20])
def test_summarize_points_never_repeat_the_summary(rel: str) -> None:
    out = summarize(transcript(rel), {})
    in_summary = {_norm(s) for s in _sentences(out["summary"])}
    points = [_norm(p["text"]) for p in out["points"]]
    assert points and len(set(points)) == len(points)
    assert not in_summary & set(points)
    assert not GREETING.match(out["summary"]), out["summary"][:120]


def test_podcast_summary_does_not_open_with_the_host_introduction() -> None:
    out = summarize(transcript(TALKS[0]), {})
    assert not GREETING.match(out["summary"]), out["summary"][:120]
    assert "Virtual Coffee" in out["summary"] or "open source" in out["summary"]


def test_central_order_puts_the_sentence_nearest_the_whole_first() -> None:
    text = "".join(
        f"[00:00:{i:02d}] {line}\n"
        for i, line in enumerate(
            [
                "The weather in the valley was mild that spring and the roads were dry.",
                "Honeybees forage for nectar and pollen across several kilometres of fields.",
                "A honeybee colony stores nectar as honey and pollen as bee bread in the comb.",
                "Honeybees dance to tell the colony where nectar and pollen can be found.",
                "The colony needs nectar and pollen all season to raise new honeybees.",
            ]
        )
    )
    ranking = rank_units(text)
    order = central_order(ranking, list(ranking.candidates))
    assert "weather" not in order[0].claim
    assert "weather" in order[-1].claim


@pytest.mark.slow
@pytest.mark.parametrize("rel", TALKS, ids=lambda r: Path(r).stem[:20])
def test_wisdom_repeats_no_sentence(rel: str) -> None:
    value, _ = extract_wisdom(transcript(rel), {})
    takeaway = _norm(value["one_sentence_takeaway"])
    summary = [_norm(s) for s in _sentences(value["summary"])]
    assert takeaway not in summary
    texts = [*summary, takeaway]
    for section in ("ideas", "insights", "facts"):
        texts += [_norm(x["text"]) for x in value[section]]
    texts += [_norm(q) for q in value["quotes"]]
    repeated = {t for t in texts if texts.count(t) > 1}
    assert not repeated, repeated
    assert not GREETING.match(value["summary"]), value["summary"][:120]
