"""Source formats: real caption files, golden fixtures, malformed input and the rendering rules."""

from __future__ import annotations

import html
import re
from itertools import pairwise
from pathlib import Path

import pytest

from arkai.errors import ResourceLimitError, SourceFormatError
from arkai.formats import (
    Cue,
    ParsedSource,
    decode_text,
    detect_format,
    parse_source,
    render_transcript,
)
from arkai.formats import decode as decode_module
from tests.conftest import SHARED_DATA

DATA = SHARED_DATA / "transcripts"
FIXTURES = Path(__file__).parents[1] / "fixtures" / "formats"

REAL = sorted(
    [
        *DATA.glob("youtube_auto_vtt/*.vtt"),
        *DATA.glob("virtual_coffee_srt/*.srt"),
        *DATA.glob("3b1b_human_captions/*/captions.srt"),
        *DATA.glob("youtube_transcript_api_json/*.json"),
    ]
)
AUTO_VTT = sorted(DATA.glob("youtube_auto_vtt/*.vtt"))
PODCASTS = sorted(DATA.glob("virtual_coffee_srt/*.srt"))
GOLDEN = sorted(p for p in FIXTURES.iterdir() if not p.name.endswith(".expected.md"))

LINE_RE = re.compile(r"^\[(\d{2}):(\d{2}):(\d{2})\] (\S.*)$")
SENTENCE_END_RE = re.compile(r"[.?!…][\"'”’)\]]*$")


def _ids(paths: list[Path]) -> list[str]:
    return [p.name if p.parent.name != "2017_neural-networks" else "3b1b.srt" for p in paths]


def _render(path: Path) -> str:
    return render_transcript(parse_source(path.name, path.read_bytes()))


def _timed_lines(text: str, speakers: set[str] | None = None) -> list[tuple[int, str | None, str]]:
    """``(seconds, speaker, text)`` of each line of a rendered timed transcript."""
    out = []
    for line in text.splitlines():
        m = LINE_RE.match(line)
        assert m is not None, line
        hours, minutes, seconds, body = m.groups()
        speaker, sep, rest = body.partition(": ")
        if sep and speaker in (speakers or set()):
            body = rest
        else:
            speaker = ""
        out.append((int(hours) * 3600 + int(minutes) * 60 + int(seconds), speaker or None, body))
    return out


def _speakers(parsed: ParsedSource) -> set[str]:
    return {c.speaker for c in parsed.cues if c.speaker}


def _words(text: str, speakers: set[str] | None = None) -> list[str]:
    return " ".join(body for _, _, body in _timed_lines(text, speakers)).split()


# --- real files ------------------------------------------------------------------------------


@pytest.mark.shared_data
def test_real_data_is_present() -> None:
    assert len(REAL) >= 9 and AUTO_VTT and PODCASTS


@pytest.mark.shared_data
@pytest.mark.parametrize("path", REAL, ids=_ids(REAL))
def test_real_file_renders_clean_monotonic_lines(path: Path) -> None:
    parsed = parse_source(path.name, path.read_bytes())
    assert parsed.timed and parsed.cues
    assert parsed.format == {".vtt": "vtt", ".srt": "srt", ".json": "ytjson"}[path.suffix]
    assert all(c.text and c.text == " ".join(c.text.split()) for c in parsed.cues)
    assert all(c.start is not None for c in parsed.cues)
    starts = [c.start or 0.0 for c in parsed.cues]
    assert starts == sorted(starts)

    text = render_transcript(parsed)
    assert text.endswith("\n") and not text.endswith("\n\n")
    assert "\r" not in text
    lines = text.split("\n")[:-1]
    assert all(line and line == line.rstrip() for line in lines)
    timed = _timed_lines(text, _speakers(parsed))
    seconds = [t for t, _, _ in timed]
    assert seconds == sorted(seconds)
    assert seconds[0] == int(starts[0])
    # Nothing lost, nothing added: the lines hold exactly the cues' words, in order.
    assert _words(text, _speakers(parsed)) == " ".join(c.text for c in parsed.cues).split()
    assert max(len(body) for _, _, body in timed) <= 300


@pytest.mark.shared_data
@pytest.mark.parametrize("path", REAL, ids=_ids(REAL))
def test_real_file_rendering_is_stable_when_read_back(path: Path) -> None:
    text = _render(path)
    assert render_transcript(parse_source("transcript.md", text.encode())) == text
    assert _render(path) == text


@pytest.mark.shared_data
@pytest.mark.parametrize("path", REAL, ids=_ids(REAL))
def test_real_file_crlf_and_bom_give_the_same_text(path: Path) -> None:
    data = path.read_bytes().replace(b"\r\n", b"\n")
    expected = render_transcript(parse_source(path.name, data))
    crlf = b"\xef\xbb\xbf" + data.replace(b"\n", b"\r\n")
    assert render_transcript(parse_source(path.name, crlf)) == expected
    utf16 = data.decode("utf-8").encode("utf-16")
    assert render_transcript(parse_source(path.name, utf16)) == expected


def _repeats_immediately(words: list[str], min_len: int = 8, max_len: int = 60) -> str | None:
    """A run of ``min_len``+ words followed at once by the same run, if there is one."""
    for n in range(min_len, max_len + 1):
        run = 0
        for i in range(len(words) - n):
            run = run + 1 if words[i] == words[i + n] else 0
            if run >= n:
                return " ".join(words[i - n + 1 : i + 1])
    return None


@pytest.mark.shared_data
@pytest.mark.parametrize("path", AUTO_VTT, ids=_ids(AUTO_VTT))
def test_auto_vtt_says_each_word_once(path: Path) -> None:
    text = _render(path)
    bodies = [body for _, _, body in _timed_lines(text)]
    assert all(a != b for a, b in pairwise(bodies))
    assert _repeats_immediately(" ".join(bodies).split()) is None

    # What was spoken, read independently: the last line of every cue longer than YouTube's
    # 10 ms repeat cues holds the words that cue adds.
    spoken: list[str] = []
    for block in path.read_text(encoding="utf-8").split("\n\n")[1:]:
        lines = block.split("\n")
        m = re.match(r"(\d+):(\d+):([\d.]+) --> (\d+):(\d+):([\d.]+)", lines[0])
        if m is None:
            continue
        h1, m1, s1, h2, m2, s2 = m.groups()
        start = int(h1) * 3600 + int(m1) * 60 + float(s1)
        if int(h2) * 3600 + int(m2) * 60 + float(s2) - start < 0.05:
            continue
        texts = [" ".join(html.unescape(re.sub(r"<[^>]*>", "", x)).split()) for x in lines[1:]]
        texts = [t for t in texts if t]
        if texts:
            spoken.extend(texts[-1].split())
    assert _words(text) == spoken


@pytest.mark.shared_data
@pytest.mark.parametrize("path", AUTO_VTT, ids=_ids(AUTO_VTT))
def test_auto_vtt_lines_stay_within_thirty_seconds_of_cues(path: Path) -> None:
    parsed = parse_source(path.name, path.read_bytes())
    timed = _timed_lines(render_transcript(parsed))
    starts = {int(c.start or 0) for c in parsed.cues}
    assert all(t in starts for t, _, _ in timed)
    gaps = [b - a for (a, _, _), (b, _, _) in pairwise(timed)]
    cue_gaps = sorted(c.start or 0 for c in parsed.cues)
    longest_silence = max(b - a for a, b in pairwise(cue_gaps))
    assert max(gaps) <= 31 + longest_silence


@pytest.mark.shared_data
@pytest.mark.parametrize("path", PODCASTS, ids=_ids(PODCASTS))
def test_podcast_speaker_labels_are_preserved(path: Path) -> None:
    source = path.read_text(encoding="utf-8")
    labels = re.findall(r"^\d\d:\d\d:\d\d,\d+ --> .*\n([A-Z][\w ]{0,30}): ", source, re.M)
    assert labels
    parsed = parse_source(path.name, path.read_bytes())
    assert [c.speaker for c in parsed.cues if c.speaker] == labels
    timed = _timed_lines(render_transcript(parsed), set(labels))
    assert {speaker for _, speaker, _ in timed} - {None} == set(labels)
    # Every labelled turn starts a line of its own.
    turns = [s for i, (_, s, _) in enumerate(timed) if s and (i == 0 or timed[i - 1][1] != s)]
    assert len(turns) == sum(1 for a, b in zip([None, *labels], labels, strict=False) if a != b)


# --- golden fixtures ------------------------------------------------------------------------


@pytest.mark.parametrize("path", GOLDEN, ids=[p.name for p in GOLDEN])
def test_golden_fixture(path: Path) -> None:
    expected = (FIXTURES / f"{path.name}.expected.md").read_text(encoding="utf-8")
    assert _render(path) == expected


def test_vtt_voices_settings_and_entities() -> None:
    parsed = parse_source("voices.vtt", (FIXTURES / "voices.vtt").read_bytes())
    assert parsed == ParsedSource(
        format="vtt",
        cues=(
            Cue(1.0, "We are in New York City & it's a > lovely day.", "Roger Bingham"),
            Cue(
                4.5,
                "We're actually at the Lucern Hotel, just down the street from the museum.",
                "Neil deGrasse Tyson",
            ),
            Cue(8.0, "And with the Lucern <right there> we have a view.", "Roger Bingham"),
            Cue(8.0, "We do.", "Neil deGrasse Tyson"),
            Cue(3602.25, "漢 is a character.", "Neil deGrasse Tyson"),
        ),
        timed=True,
        title=None,
    )


def test_vtt_growing_captions_keep_only_new_words() -> None:
    data = b"WEBVTT\n\n00:01.000 --> 00:02.000\nhello there\n\n00:02.000 --> 00:03.000\n"
    data += b"hello there my friends\n\n00:03.000 --> 00:04.000\nhello there my friends how are"
    assert render_transcript(parse_source("g.vtt", data)) == (
        "[00:00:01] hello there my friends how are\n"
    )


def test_vtt_repeated_human_cues_are_kept() -> None:
    data = b"WEBVTT\n\n00:01.000 --> 00:02.000\nNo.\n\n00:02.000 --> 00:03.000\nNo.\n\n"
    data += b"00:03.000 --> 00:04.000\nAbsolutely not.\n\n00:04.000 --> 00:05.000\nFine."
    assert [c.text for c in parse_source("h.vtt", data).cues] == [
        "No.",
        "No.",
        "Absolutely not.",
        "Fine.",
    ]


def test_srt_tolerates_missing_index_blank_lines_and_dot_times() -> None:
    data = b"00:00:01.000 --> 00:00:02.000\nfirst\n\nstill first\n2\n00:00:03,5 --> 00:00:04,000\n"
    data += b"<font color=red>second</font> {\\an8}cue\n"
    parsed = parse_source("s.srt", data)
    assert parsed.cues == (Cue(1.0, "first still first"), Cue(3.5, "second cue"))


def test_ytjson_entities_newlines_and_bogus_durations() -> None:
    parsed = parse_source("e.json", (FIXTURES / "entries.json").read_bytes())
    assert [c.text for c in parsed.cues] == [
        "we're going to look at",
        "lists and tuples & sets",
        "first lists",
    ]
    assert parsed.cues[-1].start == 5.25


def test_markdown_title_and_lines() -> None:
    parsed = parse_source("notes.md", (FIXTURES / "notes.md").read_bytes())
    assert parsed.title == "Notes on the Engine"
    assert not parsed.timed and all(c.start is None for c in parsed.cues)
    assert "The engine was designed to compute tables. It was never finished." in [
        c.text for c in parsed.cues
    ]
    assert parse_source("n.md", b"Intro\n\n# Real title #\n").title == "Real title"
    assert parse_source("n.md", b"---\ntitle: 'Front'\n---\n# Heading\n").title == "Front"
    assert parse_source("n.md", b"Heading\n=======\n\ntext\n").title == "Heading"
    assert parse_source("n.md", b"## Only a subheading\n").title is None


def test_txt_paragraphs() -> None:
    parsed = parse_source("p.txt", b"one\ntwo  three\n \n\n four\n")
    assert parsed == ParsedSource(
        "txt", (Cue(None, "one two three"), Cue(None, "four")), timed=False, title=None
    )
    assert render_transcript(parsed) == "one two three\n\nfour\n"


def test_timestamped_text_reads_as_timed() -> None:
    parsed = parse_source("t.txt", b"[00:00:05] Ada: Hello.\n\n[01:02:03] Plain line.\n")
    assert parsed.timed
    assert parsed.cues == (Cue(5.0, "Hello.", "Ada"), Cue(3723.0, "Plain line."))


# --- rendering rules -------------------------------------------------------------------------


def _timed(*cues: tuple[float, str] | tuple[float, str, str]) -> ParsedSource:
    return ParsedSource("srt", tuple(Cue(*c) for c in cues), timed=True, title=None)


def test_line_ends_at_sentence_end_once_long_enough() -> None:
    short = "Short one."
    long_ = "This sentence is long enough to close the line on its own, surely."
    text = render_transcript(_timed((1.9, short), (2, long_), (5, "Next."), (6, "Then more.")))
    assert text == f"[00:00:01] {short} {long_}\n[00:00:05] Next. Then more.\n"


def test_sentence_split_across_cues_is_joined() -> None:
    text = render_transcript(
        _timed(
            (0, "It's sloppily written and rendered at an extremely low resolution,"),
            (4.2, "but your brain has no trouble recognizing it, says Mr. Smith"),
            (7, "with e.g. me. and this continues."),
        )
    )
    assert text.count("\n") == 1  # one sentence: no break after "Mr." or "e.g." or before "and"


def test_speaker_change_breaks_line_and_speaker_carries() -> None:
    text = render_transcript(
        _timed((0, "Hi", "Ada"), (1, "there"), (2, "Hello.", "Bob"), (3, "Yo"))
    )
    assert text == "[00:00:00] Ada: Hi there\n[00:00:02] Bob: Hello. Yo\n"


def test_unpunctuated_lines_respect_char_and_time_limits() -> None:
    cues = [(i * 2.5, f"word{i} and some more words") for i in range(200)]
    timed = _timed_lines(render_transcript(_timed(*cues)))
    assert len(timed) > 10
    assert all(len(body) <= 300 for _, _, body in timed)
    assert all(b - a <= 30 for (a, _, _), (b, _, _) in pairwise(timed))
    slow = [(i * 10.0, f"word {i} of a slow and unpunctuated talk") for i in range(10)]
    assert [t for t, _, _ in _timed_lines(render_transcript(_timed(*slow)))] == [0, 30, 60, 90]


def test_overlong_cue_is_split_between_words() -> None:
    text = render_transcript(_timed((3661.9, " ".join(["abcdefghi"] * 100))))
    bodies = [body for _, _, body in _timed_lines(text)]
    assert len(bodies) == 4 and all(len(b) <= 300 for b in bodies)
    assert text.startswith("[01:01:01] ")


def test_short_sentence_is_never_broken_by_time() -> None:
    text = render_transcript(_timed((0, "We paused"), (45, "for a long time."), (50, "Then on.")))
    assert text == "[00:00:00] We paused for a long time.\n[00:00:50] Then on.\n"


def test_untimed_render() -> None:
    parsed = ParsedSource("txt", (Cue(None, "a"), Cue(None, "b")), timed=False, title=None)
    assert render_transcript(parsed) == "a\n\nb\n"


# --- detection and decoding ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "data", "fmt"),
    [
        ("a.en.VTT", b"", "vtt"),
        ("a.srt", b"", "srt"),
        ("a.json", b"", "ytjson"),
        ("a.txt", b"", "txt"),
        ("a.markdown", b"", "md"),
        ("captions", b"\xef\xbb\xbfWEBVTT\n\n00:01.000 --> 00:02.000\nhi\n", "vtt"),
        ("captions", b"1\r\n00:00:01,000 --> 00:00:02,000\r\nhi\r\n", "srt"),
        ("captions", b'[{"text": "hi", "start": 1.0, "duration": 2.0}]', "ytjson"),
    ],
)
def test_detect_format(name: str, data: bytes, fmt: str) -> None:
    assert detect_format(name, data) == fmt


def test_decode_text() -> None:
    assert decode_text("a.txt", b"\xef\xbb\xbfcaf\xc3\xa9") == "café"
    assert decode_text("a.txt", "café\r\n".encode("utf-16-be").join([b"\xfe\xff", b""])) == (
        "café\r\n"
    )
    with pytest.raises(
        SourceFormatError, match=r"^a\.txt: not valid UTF-8 \(byte 0xe9 at offset 3\)"
    ):
        decode_text("a.txt", b"caf\xe9")


def test_size_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(decode_module, "MAX_SOURCE_BYTES", 10)
    with pytest.raises(ResourceLimitError, match=r"^big\.txt: "):
        parse_source("big.txt", b"x" * 11)


@pytest.mark.parametrize(
    ("name", "data", "message"),
    [
        ("talk.vtt", b"WEBVTT\n\n00:00:01.000 --> 00:0", "line 3: bad cue timing"),
        ("talk.vtt", b"WEBVTT\n\n1\n00:0x:01.000 --> 00:00:02.000\nhi\n", "line 4: bad cue timing"),
        ("talk.vtt", b"WEBVTT\n\nNOTE nothing but a note\n", "no subtitle cues found"),
        ("cut.srt", b"1\n00:00:01,000 --> 00:00:0", "line 2: bad subtitle timing"),
        ("x.srt", b"just some words\nand more\n", "no subtitle cues found"),
        ("x.srt", b"1\n00:00:01,000 --> 00:00:02,000\n\n", "no subtitle cues found"),
        ("garbage.srt", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "not valid UTF-8 (byte 0x89 at"),
        ("garbage.vtt", bytes(range(255, 0, -1)), "not valid UTF-16"),
        (
            "latin.txt",
            "Grüße aus Köln".encode("latin-1"),
            "not valid UTF-8 (byte 0xfc at offset 2)",
        ),
        ("nul.txt", b"text\x00more", "binary data"),
        ("empty.vtt", b"", "file is empty"),
        ("blank.md", b" \r\n\t\n", "file is empty"),
        ("bom.txt", b"\xef\xbb\xbf\n", "file is empty"),
        ("x.json", b'{"text": "hi", "start": 1}', "not a youtube-transcript-api list of"),
        ("x.json", b'[["hi", 1.0, 2.0]]', "not a youtube-transcript-api list of"),
        ("x.json", b'[{"text": "hi", "start": "1"}]', "not a youtube-transcript-api list of"),
        ("x.json", b'[{"text": "hi", "start": -1}]', "not a youtube-transcript-api list of"),
        ("x.json", b"[]", "no transcript entries"),
        ("x.json", b'[{"text": "hi"', "not valid JSON"),
        ("notes", b"plain words", "cannot tell the source format"),
    ],
)
def test_bad_input_raises_naming_the_file(name: str, data: bytes, message: str) -> None:
    with pytest.raises(SourceFormatError) as info:
        parse_source(name, data)
    text = str(info.value)
    assert text.startswith(f"{name}: ")
    assert message in text
    assert "\n" not in text


def test_unknown_format_argument() -> None:
    with pytest.raises(SourceFormatError, match=r"^a\.txt: unknown source format 'docx'"):
        parse_source("a.txt", b"hi", fmt="docx")
    assert parse_source("a.data", b"hi", fmt="text").format == "txt"
