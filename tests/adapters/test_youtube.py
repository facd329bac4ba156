"""YouTubeSource: URL canonicalisation, offline attach, track choice, fallbacks, and failing
fast (and clearly) without a network.

No test here reaches beyond 127.0.0.1: the fetchers are fakes, or the real libraries run with
name resolution replaced (every host fails to resolve, or resolves to a silent local socket).
"""

from __future__ import annotations

import copy
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from arkai.adapters.http import FetchError
from arkai.adapters.params import DEFAULTS
from arkai.core.hashing import content_id, digest
from arkai.core.youtube import video_id
from arkai.errors import InvalidInputError
from arkai.sources import youtube
from arkai.sources.base import AddOptions
from arkai.sources.youtube import Track, YouTubeSource, canonical_url, choose_track
from tests.adapters.httpserver import LocalHTTPServer, http_server_fixture  # noqa: F401
from tests.conftest import TRANSCRIPTS

VID = "VMvdvP02f-Y"
CANONICAL = f"https://www.youtube.com/watch?v={VID}"
KALANICK = TRANSCRIPTS / "youtube_auto_vtt" / "kalanick_techcocktail_VMvdvP02f-Y.en.vtt"


def _opts(
    *, transcript: Path | None = None, title: str | None = None, **youtube_params: Any
) -> AddOptions:
    params = copy.deepcopy(DEFAULTS)
    if youtube_params:
        params["youtube"] = youtube_params
    return AddOptions(params=params, now="2024-06-01T12:00:00Z", transcript=transcript, title=title)


# --- canonicalisation ------------------------------------------------------------------------

FORMS = [
    f"https://www.youtube.com/watch?v={VID}",
    f"http://www.youtube.com/watch?v={VID}",
    f"https://youtube.com/watch?v={VID}",
    f"https://m.youtube.com/watch?v={VID}&feature=share",
    f"https://music.youtube.com/watch?v={VID}&si=AbCdEf123",
    f"https://www.youtube.com/watch?v={VID}&t=42s",
    f"https://www.youtube.com/watch?t=1m2s&v={VID}",
    f"https://www.youtube.com/watch?v={VID}&list=PLx0sYbCqOb8TBPRdmBHs5Iftvv9TPboYG&index=3",
    f"https://www.youtube.com/watch?v={VID}&pp=ygUFaGVsbG8%3D",
    f"https://www.youtube.com/watch?v={VID}&utm_source=newsletter&utm_medium=email",
    f"https://www.youtube.com/watch/?v={VID}",
    f"https://youtu.be/{VID}",
    f"https://youtu.be/{VID}?t=42",
    f"https://youtu.be/{VID}/",
    f"https://youtu.be/{VID}?si=xyz&feature=shared",
    f"https://www.youtube.com/shorts/{VID}",
    f"https://youtube.com/shorts/{VID}/?feature=share",
    f"https://www.youtube.com/embed/{VID}?start=42",
    f"https://www.youtube.com/live/{VID}?si=abc",
    f"https://www.youtube.com/v/{VID}",
    f"https://www.youtube-nocookie.com/embed/{VID}",
    f"HTTPS://WWW.YOUTUBE.COM/watch?v={VID}",
    f"https://YouTu.Be/{VID}",
    f"youtube.com/watch?v={VID}",
    f"www.youtube.com/watch?v={VID}&t=10",
    f"youtu.be/{VID}",
    f"//www.youtube.com/embed/{VID}",
    f"  https://youtu.be/{VID}  ",
    f"https://www.youtube.com/watch?v={VID}#t=30",
]


@pytest.mark.parametrize("url", FORMS)
def test_every_form_gives_the_one_canonical_url(url: str) -> None:
    assert video_id(url) == VID
    assert canonical_url(url) == CANONICAL
    assert YouTubeSource().match(url, None, b"")


def test_all_forms_are_one_content_id() -> None:
    assert len(FORMS) >= 15
    assert {content_id(canonical_url(u)) for u in FORMS} == {content_id(CANONICAL)}


NEGATIVES = [
    "https://www.youtube.com/watch?v=VMvdvP02f-",  # 10 characters
    "https://www.youtube.com/watch?v=VMvdvP02f-YY",  # 12 characters
    "https://www.youtube.com/watch?v=VMvdvP02f+Y",  # not base64url
    "https://www.youtube.com/watch",
    "https://www.youtube.com/",
    "https://www.youtube.com/channel/UCabcdefghijk",
    "https://www.youtube.com/@somechannel",
    "https://www.youtube.com/playlist?list=PLx0sYbCqOb8TBPRdmBHs5Iftvv9TPboYG",
    "https://www.youtube.com/embed/videoseries?list=PLx0sYbCqOb8TBPRdmBHs5Iftvv9TPboYG",
    f"https://www.youtube.com/shorts/{VID}/extra",
    f"https://youtu.be/{VID}/extra",
    f"https://notyoutube.com/watch?v={VID}",
    f"https://youtube.com.evil.example/watch?v={VID}",
    f"https://vimeo.com/{VID}",
    f"ftp://youtube.com/watch?v={VID}",
    f"file:///tmp/{VID}.vtt",
    f"https://www.youtube.com/watch?v={VID} extra",
    "",
    "not a url",
]


@pytest.mark.parametrize("url", NEGATIVES)
def test_not_a_video_url(url: str) -> None:
    assert video_id(url) is None
    assert not YouTubeSource().match(url, None, b"")
    with pytest.raises(InvalidInputError):
        canonical_url(url)


def test_an_existing_local_file_is_not_a_youtube_url(tmp_path: Path) -> None:
    path = tmp_path / "youtu.be" / VID
    path.parent.mkdir()
    path.write_text("hi")
    assert not YouTubeSource().match(str(path), path, b"hi")


# --- guard: nothing leaves the machine -------------------------------------------------------


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every name lookup and connection beyond loopback fails at once (and is recorded)."""
    attempts: list[str] = []
    real_getaddrinfo = socket.getaddrinfo

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host in ("127.0.0.1", "localhost", "::1"):
            return real_getaddrinfo(host, *args, **kwargs)
        attempts.append(str(host))
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    def gethostbyname(host: str) -> str:
        if host in ("127.0.0.1", "localhost"):
            return "127.0.0.1"
        attempts.append(host)
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    real_connect = socket.socket.connect

    def connect(self: socket.socket, address: Any) -> None:
        if isinstance(address, tuple) and address[0] not in ("127.0.0.1", "::1"):
            attempts.append(str(address[0]))
            raise OSError(101, "Network is unreachable (blocked by the test)")
        real_connect(self, address)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    monkeypatch.setattr(socket, "gethostbyname", gethostbyname)
    monkeypatch.setattr(socket.socket, "connect", connect)
    return attempts


def _join_workers(limit: float = 15.0) -> None:
    """Wait for abandoned fetch threads, so none outlives the test's patches."""
    deadline = time.monotonic() + limit
    for thread in threading.enumerate():
        if thread.name == "arkai-youtube":
            thread.join(max(0.0, deadline - time.monotonic()))


# --- offline attach --------------------------------------------------------------------------


@pytest.mark.shared_data
def test_attach_local_vtt_offline(monkeypatch: pytest.MonkeyPatch, no_network: list[str]) -> None:
    def forbidden(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("no network call may happen with --transcript")

    monkeypatch.setattr(youtube, "make_transcript_api", forbidden)
    monkeypatch.setattr(youtube, "make_ytdlp", forbidden)
    monkeypatch.setattr(youtube, "fetch_url", forbidden)
    [item] = YouTubeSource().acquire(
        f"https://youtu.be/{VID}?t=42", None, _opts(transcript=KALANICK)
    )
    assert no_network == []
    assert item.canonical == CANONICAL
    assert item.url == CANONICAL
    assert item.source_id == VID
    assert item.content_type == "youtube"
    assert item.title == f"YouTube {VID}"
    assert item.timed is True
    assert item.source_format == "vtt"
    assert set(item.files) == {"source.vtt", "transcript.md"}
    assert item.files["source.vtt"] == KALANICK.read_bytes()
    text = item.files["transcript.md"].decode()
    assert item.content_hash == digest(item.files["transcript.md"])
    assert item.meta == {
        "video_id": VID,
        "channel": None,
        "published": None,
        "duration_s": None,
        "transcript_source": "local",
        "transcript_file": KALANICK.name,
        "language": "en",
        "is_generated": None,
    }
    # YouTube's rolling auto-captions repeat each line; the transcript has each words once.
    assert text.startswith("[00:00:03] good to be here I love Chicago alright so yeah so my name")
    assert text.count("good to be here I love Chicago") == 1
    assert text.count("so yeah so my name is Travis") == 1
    assert len(text) < len(KALANICK.read_text()) / 4


def test_attach_with_title_and_json(tmp_path: Path) -> None:
    path = tmp_path / "captions.json"
    path.write_text('[{"text": "Hello there.", "start": 1.5, "duration": 2.0}]')
    [item] = YouTubeSource().acquire(
        f"youtube.com/shorts/{VID}", None, _opts(transcript=path, title="My title")
    )
    assert item.title == "My title"
    assert item.files["source.json"] == path.read_bytes()
    assert item.files["transcript.md"] == b"[00:00:01] Hello there.\n"
    assert item.meta["language"] is None


def test_attach_missing_file_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match=r"no such file"):
        YouTubeSource().acquire(CANONICAL, None, _opts(transcript=tmp_path / "nope.vtt"))


# --- track choice and fallbacks, with fake fetchers ------------------------------------------


@dataclass
class FakeSnippet:
    text: str
    start: float
    duration: float


@dataclass
class FakeTranscript:
    language_code: str
    is_generated: bool
    lines: list[str]

    def fetch(self) -> list[FakeSnippet]:
        return [FakeSnippet(t, float(2 * i), 2.0) for i, t in enumerate(self.lines)]


class FakeApi:
    def __init__(self, tracks: list[FakeTranscript] | Exception) -> None:
        self.tracks = tracks
        self.calls: list[str] = []

    def list(self, vid: str) -> list[FakeTranscript]:
        self.calls.append(vid)
        if isinstance(self.tracks, Exception):
            raise self.tracks
        return self.tracks


class FakeYDL:
    def __init__(self, info: dict[str, Any] | Exception, seen: list[dict[str, Any]]) -> None:
        self.info, self.seen = info, seen

    def __enter__(self) -> FakeYDL:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def extract_info(self, url: str, download: bool = True) -> dict[str, Any]:
        assert url == CANONICAL
        assert download is False
        if isinstance(self.info, Exception):
            raise self.info
        return self.info


INFO = {
    "id": VID,
    "title": "Travis Kalanick at Tech Cocktail",
    "channel": "Tech Cocktail",
    "upload_date": "20120301",
    "duration": 1834.4,
}


@pytest.fixture
def fakes(monkeypatch: pytest.MonkeyPatch, no_network: list[str]) -> Iterator[dict[str, Any]]:
    """Install fake fetchers; set ``state["api"]`` and ``state["info"]`` in the test."""
    state: dict[str, Any] = {"api": FakeApi(RuntimeError("api down")), "info": dict(INFO)}
    state["ydl_options"] = []
    state["timeouts"] = []

    def make_api(timeout: float) -> FakeApi:
        state["timeouts"].append(timeout)
        api: FakeApi = state["api"]
        return api

    def make_ydl(options: dict[str, Any]) -> FakeYDL:
        state["ydl_options"].append(options)
        return FakeYDL(state["info"], state["ydl_options"])

    monkeypatch.setattr(youtube, "make_transcript_api", make_api)
    monkeypatch.setattr(youtube, "make_ytdlp", make_ydl)
    yield state
    _join_workers()
    assert no_network == []


def test_manual_beats_generated_in_any_preferred_language() -> None:
    tracks = [
        Track("en", True),
        Track("de", False),
        Track("en-GB", False),
        Track("fr", False),
    ]
    assert choose_track(tracks, ["en"]) == Track("en-GB", False)  # manual variant > auto exact
    assert choose_track(tracks, ["de", "en"]) == Track("de", False)
    assert choose_track(tracks, ["es", "en"]) == Track("en-GB", False)
    assert choose_track([Track("en", True), Track("de", True)], ["de", "en"]) == Track("de", True)
    assert choose_track([Track("en-US", False), Track("en", False)], ["en"]) == Track("en", False)
    assert choose_track(tracks, ["ja"]) is None


def test_transcript_api_manual_track(fakes: dict[str, Any]) -> None:
    fakes["api"] = FakeApi(
        [
            FakeTranscript("en", True, ["auto words"]),
            FakeTranscript("en", False, ["Good to be here.", "I love Chicago."]),
        ]
    )
    [item] = YouTubeSource().acquire(f"https://youtu.be/{VID}?t=42", None, _opts())
    assert fakes["api"].calls == [VID]
    assert item.files["transcript.md"] == b"[00:00:00] Good to be here. I love Chicago.\n"
    assert set(item.files) == {"source.json", "transcript.md"}
    assert item.files["source.json"].decode().startswith('[\n {\n  "text": "Good to be here."')
    assert item.source_format == "ytjson"
    assert item.title == INFO["title"]
    assert item.meta == {
        "video_id": VID,
        "channel": "Tech Cocktail",
        "published": "2012-03-01",
        "duration_s": 1834,
        "transcript_source": "youtube-transcript-api",
        "language": "en",
        "is_generated": False,
    }
    assert 0 < fakes["timeouts"][0] <= 5.0  # half of the default 10 s budget


def test_language_order_from_params(fakes: dict[str, Any]) -> None:
    fakes["api"] = FakeApi(
        [
            FakeTranscript("en", False, ["Hello."]),
            FakeTranscript("de", True, ["Hallo."]),
        ]
    )
    [item] = YouTubeSource().acquire(CANONICAL, None, _opts(languages=["de", "en"]))
    assert item.meta["language"] == "en"  # manual en beats auto de
    fakes["api"] = FakeApi(
        [FakeTranscript("en", True, ["Hello."]), FakeTranscript("de", True, ["Hallo."])]
    )
    [item] = YouTubeSource().acquire(CANONICAL, None, _opts(languages=["de", "en"]))
    assert (item.meta["language"], item.meta["is_generated"]) == ("de", True)
    assert item.files["transcript.md"] == b"[00:00:00] Hallo.\n"
    assert fakes["ydl_options"][-1]["subtitleslangs"] == ["de", "en"]


def test_metadata_unreachable_keeps_the_transcript(fakes: dict[str, Any]) -> None:
    fakes["api"] = FakeApi([FakeTranscript("en", True, ["Hello."])])
    fakes["info"] = RuntimeError("yt-dlp broke")
    [item] = YouTubeSource().acquire(CANONICAL, None, _opts())
    assert item.title == f"YouTube {VID}"
    assert item.meta["channel"] is None and item.meta["published"] is None
    [item] = YouTubeSource().acquire(CANONICAL, None, _opts(title="Given"))
    assert item.title == "Given"


VTT = b"WEBVTT\n\n00:00:01.000 --> 00:00:03.000\n<v Travis>Good to be here.\n"


def test_falls_back_to_ytdlp_subtitles(fakes: dict[str, Any], http_server: LocalHTTPServer) -> None:
    http_server.route("/manual.vtt", body=VTT, content_type="text/vtt")
    http_server.route("/auto.vtt", body=b"WEBVTT\n\n00:00:01.000 --> 00:00:02.000\nauto\n")
    fakes["info"] = {
        **INFO,
        "subtitles": {
            "en-US": [
                {"ext": "json3", "url": http_server.url("/manual.json3")},
                {"ext": "vtt", "url": http_server.url("/manual.vtt")},
            ],
            "live_chat": [{"ext": "json", "url": http_server.url("/chat")}],
        },
        "automatic_captions": {"en": [{"ext": "vtt", "url": http_server.url("/auto.vtt")}]},
    }
    [item] = YouTubeSource().acquire(CANONICAL, None, _opts())
    assert fakes["api"].calls == [VID]  # tried first, failed
    assert [r.path for r in http_server.requests] == ["/manual.vtt"]
    assert item.files["source.vtt"] == VTT
    assert item.files["transcript.md"] == b"[00:00:01] Travis: Good to be here.\n"
    assert item.source_format == "vtt"
    assert item.meta["transcript_source"] == "yt-dlp"
    assert (item.meta["language"], item.meta["is_generated"]) == ("en-US", False)
    options = fakes["ydl_options"][0]
    assert options["skip_download"] is True and options["subtitlesformat"] == "vtt"
    assert options["quiet"] is True and options["cachedir"] is False
    assert 0 < options["socket_timeout"] <= 5.0


def test_ytdlp_auto_captions_when_no_manual(
    fakes: dict[str, Any], http_server: LocalHTTPServer
) -> None:
    http_server.route("/auto.vtt", body=VTT, content_type="text/vtt")
    fakes["info"] = {
        **INFO,
        "subtitles": {"fr": [{"ext": "vtt", "url": http_server.url("/fr.vtt")}]},
        "automatic_captions": {"en": [{"ext": "vtt", "url": http_server.url("/auto.vtt")}]},
    }
    [item] = YouTubeSource().acquire(CANONICAL, None, _opts())
    assert item.meta["is_generated"] is True
    assert [r.path for r in http_server.requests] == ["/auto.vtt"]


def test_both_fetchers_fail_is_one_clear_fetch_error(fakes: dict[str, Any]) -> None:
    fakes["api"] = FakeApi([FakeTranscript("ja", False, ["こんにちは"])])
    fakes["info"] = {**INFO, "subtitles": {}, "automatic_captions": {}}
    ref = f"https://youtu.be/{VID}?t=42"
    with pytest.raises(FetchError) as info:
        YouTubeSource().acquire(ref, None, _opts())
    msg = str(info.value)
    assert "\n" not in msg
    assert msg.startswith(f"{ref}: could not get a transcript (youtube-transcript-api: no ")
    assert "captions in en (on offer: ja)" in msg
    assert "yt-dlp: no captions in en (on offer: none)" in msg
    assert "--transcript FILE" in msg


def test_subtitle_url_404_is_reported(fakes: dict[str, Any], http_server: LocalHTTPServer) -> None:
    fakes["info"] = {**INFO, "subtitles": {"en": [{"ext": "vtt", "url": http_server.url("/x")}]}}
    with pytest.raises(FetchError, match=r"yt-dlp: http://127\.0\.0\.1:\d+/x: HTTP 404"):
        YouTubeSource().acquire(CANONICAL, None, _opts())


# --- the real libraries, without a network ---------------------------------------------------


def test_real_libraries_fail_fast_without_network(no_network: list[str]) -> None:
    started = time.monotonic()
    with pytest.raises(FetchError) as info:
        YouTubeSource().acquire(f"https://youtu.be/{VID}", None, _opts())
    elapsed = time.monotonic() - started
    _join_workers()
    msg = str(info.value)
    assert elapsed < 10, elapsed
    assert msg.startswith(f"https://youtu.be/{VID}: could not get a transcript (")
    assert "youtube-transcript-api: cannot resolve www.youtube.com (no network?)" in msg
    assert "yt-dlp: cannot resolve www.youtube.com (no network?)" in msg
    assert "--transcript FILE" in msg
    assert "\n" not in msg
    assert "www.youtube.com" in no_network  # both libraries really tried, and were refused


@pytest.fixture
def black_hole(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[socket.socket]]:
    """Every host name resolves to a local socket that accepts connections and never answers."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    server.settimeout(0.1)
    port = server.getsockname()[1]
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            accepted.append(conn)

    acceptor = threading.Thread(target=accept, daemon=True)
    acceptor.start()
    real_getaddrinfo = socket.getaddrinfo

    def getaddrinfo(host: Any, _port: Any, *args: Any, **kwargs: Any) -> Any:
        return real_getaddrinfo("127.0.0.1", port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    try:
        yield accepted
    finally:
        _join_workers()
        stop.set()
        acceptor.join(5)
        for conn in accepted:
            conn.close()
        server.close()


def test_real_libraries_give_up_on_a_silent_network(black_hole: list[socket.socket]) -> None:
    started = time.monotonic()
    with pytest.raises(FetchError) as info:
        YouTubeSource().acquire(CANONICAL, None, _opts(timeout_s=3))
    elapsed = time.monotonic() - started
    assert elapsed < 6, elapsed
    assert black_hole  # the libraries did connect (to the silent local socket)
    msg = str(info.value)
    assert "youtube-transcript-api: timed out" in msg
    assert "yt-dlp: " in msg and "timed out" in msg.split("yt-dlp: ", 1)[1]


def test_bad_params(no_network: list[str]) -> None:
    with pytest.raises(InvalidInputError, match=r"youtube\.timeout_s"):
        YouTubeSource().acquire(CANONICAL, None, _opts(timeout_s="soon"))
    with pytest.raises(InvalidInputError, match=r"youtube\.languages"):
        YouTubeSource().acquire(CANONICAL, None, _opts(languages={"en": 1}))
