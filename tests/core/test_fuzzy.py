"""Fuzzy quote location (``arkai.core.fuzzy``) and its use by ``resolve_quote(mode="fuzzy")``."""

from __future__ import annotations

import random

import pytest

from arkai.core.document import Document
from arkai.core.fuzzy import DEFAULT_THRESHOLD, SMALL_TEXT, FuzzyIndex, fuzzy_find
from arkai.core.resolve import resolve_quote

WORDS = [
    "river",
    "stone",
    "market",
    "garden",
    "window",
    "lantern",
    "copper",
    "meadow",
    "harbour",
    "signal",
    "candle",
    "orchard",
    "engine",
    "ladder",
    "mirror",
    "pocket",
    "ribbon",
    "saddle",
    "thunder",
    "violet",
    "anchor",
    "basket",
    "cellar",
    "donkey",
    "feather",
    "glacier",
    "hammer",
    "island",
    "jacket",
    "kettle",
    "lemon",
    "marble",
    "needle",
    "oyster",
    "pepper",
    "quarry",
    "rabbit",
    "silver",
    "tunnel",
    "umbrella",
    "velvet",
    "walnut",
    "yellow",
    "zipper",
    "bridge",
    "castle",
    "forest",
    "planet",
]


def _sentences(n: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        body = " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 14)))
        out.append(f"Speaker {i % 3}: the {body} went by.")
    return out


def _transcript(sentences: list[str]) -> str:
    return "".join(f"[00:{i // 60:02d}:{i % 60:02d}] {s}\n" for i, s in enumerate(sentences))


SENTENCES = _sentences(120)
TEXT = _transcript(SENTENCES)


def _swap(sentence: str, index: int, new: str) -> str:
    words = sentence.split(" ")
    assert words[index] != new
    words[index] = new
    return " ".join(words)


def test_long_text_takes_the_indexed_path() -> None:
    assert len(TEXT) > 3 * SMALL_TEXT


@pytest.mark.parametrize("k", [0, 17, 64, 119])
def test_one_altered_word_is_found_where_the_sentence_is(k: int) -> None:
    quote = _swap(SENTENCES[k], 5, "saxophone")
    assert quote not in TEXT
    found = fuzzy_find(TEXT, quote)
    assert found is not None
    start, end, score = found
    true_start = TEXT.index(SENTENCES[k])
    true_end = true_start + len(SENTENCES[k])
    assert start < true_end and true_start < end
    assert abs(start - true_start) <= 2 and abs(end - true_end) <= 2
    assert 0 < score < 100


def test_absent_sentence_is_not_found() -> None:
    absent = "Meanwhile the committee postponed its decision about the new library building."
    assert fuzzy_find(TEXT, absent) is None
    # Made of the transcript's own vocabulary, in an order it never has.
    shuffled = "the " + " ".join(WORDS[::3][:12]) + " went by."
    assert shuffled not in TEXT
    assert fuzzy_find(TEXT, shuffled) is None


def test_near_duplicate_elsewhere_does_not_win() -> None:
    original = "the committee approved the new budget for the harbour project on friday"
    worse = "the committee rejected the old budget for the harbour project on friday"
    closer = "the committee approved the new budget for the harbor project on friday"
    text = _transcript([*SENTENCES[:30], worse, *SENTENCES[30:90], closer, *SENTENCES[90:]])
    found = fuzzy_find(text, original)
    assert found is not None
    start, end, _ = found
    assert text[start:end] == closer


def test_short_quote_one_word_off_is_found_but_two_words_off_is_not() -> None:
    sentence = SENTENCES[40]
    words = sentence.split(" ")
    short = " ".join(words[3:8])
    one_off = _swap(short, 2, "saxophone")
    found = fuzzy_find(TEXT, one_off)
    assert found is not None
    # Below the plain threshold: accepted because only one word differs.
    assert found[2] < DEFAULT_THRESHOLD
    assert TEXT[found[0] : found[1]] == short
    two_off = _swap(one_off, 4, "trombone")
    assert fuzzy_find(TEXT, two_off) is None


def test_threshold_100_means_no_relaxation() -> None:
    quote = _swap(SENTENCES[10], 5, "saxophone")
    assert fuzzy_find(TEXT, quote, threshold=100.0) is None


def test_case_differences_do_not_cost_points() -> None:
    quote = SENTENCES[33].upper()
    found = fuzzy_find(TEXT, quote)
    assert found is not None
    assert found[2] == 100.0
    assert TEXT[found[0] : found[1]] == SENTENCES[33]


def test_index_is_reusable_and_matches_fuzzy_find() -> None:
    index = FuzzyIndex(TEXT)
    for k in (3, 50, 99):
        quote = _swap(SENTENCES[k], 4, "saxophone")
        assert index.find(quote) == fuzzy_find(TEXT, quote)


@pytest.mark.parametrize("quote", ["", "   ", "!!! ???"])
def test_quotes_without_words_are_not_found_in_long_texts(quote: str) -> None:
    assert fuzzy_find(TEXT, quote) is None


def test_resolve_quote_maps_fuzzy_span_to_bytes_after_non_ascii_text() -> None:
    sentences = [*SENTENCES[:50], "Café — crème brûlée, naïve façade.", *SENTENCES[50:]]
    text = _transcript(sentences)
    data = text.encode("utf-8")
    quote = _swap(SENTENCES[70], 6, "saxophone")
    match = resolve_quote(Document(data), quote, mode="fuzzy")
    assert match.resolution.method == "fuzzy"
    assert match.resolution.status == "matched_fuzzy"
    assert match.span is not None
    sliced = data[match.span.start : match.span.end].decode("utf-8")
    assert sliced == SENTENCES[70]
    assert match.span.video_timestamp == "00:01:11"


def test_resolve_quote_exact_mode_ignores_fuzzy_matches() -> None:
    quote = _swap(SENTENCES[70], 6, "saxophone")
    match = resolve_quote(Document(TEXT.encode()), quote)
    assert match.resolution.status == "unresolved"
