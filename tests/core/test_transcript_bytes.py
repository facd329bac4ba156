"""``transcript_bytes``: the one check that a source rendered to some text."""

from __future__ import annotations

import pytest

from arkai.errors import SourceFormatError
from arkai.formats import Cue, ParsedSource, parse_source, transcript_bytes


def test_text_renders_to_utf8_bytes() -> None:
    parsed = parse_source("a.txt", "Émile spoke.\n".encode())
    assert transcript_bytes(parsed, "a.txt") == "Émile spoke.\n".encode()


@pytest.mark.parametrize("timed", [True, False])
def test_a_source_with_no_text_is_an_error_naming_it(timed: bool) -> None:
    cues = () if timed else (Cue(start=None, text=" "),)
    empty = ParsedSource(format="vtt", cues=cues, timed=timed, title=None)
    with pytest.raises(SourceFormatError, match=r"^https://x\.test/t\.vtt: no text found$"):
        transcript_bytes(empty, "https://x.test/t.vtt")
