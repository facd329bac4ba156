"""The one ``transcript.md`` grammar: what the writer emits, every reader parses back."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from arkai.core.grammar import (
    format_chat_header,
    format_timed,
    parse_line,
    speaker_of,
    strip_prefix,
)
from arkai.search.topics import clean_transcript

NAME_WORD = st.sampled_from(["Ana", "Émile", "Zoë", "O'Brien", "Jean-Luc", "Łukasz", "Ngũgĩ"])
SPEAKER = st.lists(NAME_WORD, min_size=1, max_size=3).map(" ".join)
WORDS = (
    st.text(
        alphabet=st.characters(
            blacklist_categories=("Cc", "Cs", "Zl", "Zp"), blacklist_characters=":"
        ),
        min_size=1,
        max_size=80,
    )
    .map(lambda t: " ".join(t.split()))
    .filter(bool)
)


@given(st.integers(0, 359_999), st.one_of(st.none(), SPEAKER), WORDS)
def test_timed_lines_round_trip(seconds: int, speaker: str | None, text: str) -> None:
    line = parse_line(format_timed(seconds, speaker, text))
    assert (line.kind, line.seconds, line.speaker, line.text) == ("timed", seconds, speaker, text)


@given(st.sampled_from(["human", "assistant", "user", "tool"]), st.one_of(st.none(), WORDS))
def test_chat_headers_round_trip(role: str, when: str | None) -> None:
    line = parse_line(format_chat_header(role, when))
    assert (line.kind, line.role, line.when) == ("chat_header", role, when)


def test_speakers_in_any_script_and_what_is_not_a_speaker() -> None:
    assert speaker_of("Émile: bonjour") == ("Émile", "bonjour")
    assert speaker_of("Ludwig van Beethoven: da") == ("Ludwig van Beethoven", "da")
    for text in ("So basically: yes", "note: x", "Dr.: y", "12: z", "https://x"):
        assert speaker_of(text) == (None, text)
    # A Markdown heading in a note is not a chat message.
    assert parse_line("### Results").kind == "heading"
    assert parse_line("### assistant").kind == "chat_header"


def test_every_reader_strips_the_same_prefixes() -> None:
    text = "[00:00:01] Émile: Bees cluster.\n### human · 2024-05-01 10:00 UTC\n## Heading\n"
    assert strip_prefix("[00:00:01] Émile: Bees cluster.") == "Bees cluster."
    # The topic index used to keep "Émile" (its speaker pattern was ASCII-only).
    assert clean_transcript(text) == "Bees cluster.\nHeading\n"
