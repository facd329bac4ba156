"""PodcastSource: episodes, selection, transcripts by type, skips, and clear errors.

The feeds and transcripts under ``tests/fixtures/podcast/`` are synthetic (written for these
tests); ``{base}`` in them is replaced by the local server's URL.
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from arkai.adapters.http import FetchError
from arkai.adapters.params import DEFAULTS
from arkai.core.hashing import digest, sha256_hex
from arkai.errors import InvalidInputError, SourceFormatError
from arkai.sources.base import AddOptions
from arkai.sources.podcast import (
    PodcastSource,
    TranscriptLink,
    looks_like_feed,
    parse_feed,
)
from tests.adapters.httpserver import LocalHTTPServer, http_server_fixture  # noqa: F401

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "podcast"
NOW = "2024-06-01T12:00:00Z"


def _opts(*select: str, transcript: Path | None = None) -> AddOptions:
    return AddOptions(
        params=copy.deepcopy(DEFAULTS), now=NOW, select=list(select), transcript=transcript
    )


def _fixture(name: str, base: str) -> bytes:
    return (FIXTURES / name).read_bytes().replace(b"{base}", base.encode())


@pytest.fixture
def pod(http_server: LocalHTTPServer) -> LocalHTTPServer:
    """The server with the RSS feed, the Atom feed and their transcripts."""
    base = http_server.url("")
    http_server.route(
        "/feed.rss", body=_fixture("feed.rss", base), content_type="application/rss+xml"
    )
    http_server.route(
        "/feed.atom", body=_fixture("feed.atom", base), content_type="application/atom+xml"
    )
    for name, ctype in [
        ("0001.vtt", "text/vtt"),
        ("0001.json", "application/json"),
        ("0002.srt", "application/x-subrip"),
        ("triangle.json", "application/json"),
        ("chart.html", "text/html; charset=utf-8"),
    ]:
        http_server.route(f"/t/{name}", body=(FIXTURES / name).read_bytes(), content_type=ctype)
    return http_server


def _fetched(server: LocalHTTPServer) -> list[str]:
    return [r.path for r in server.requests]


# --- routing ---------------------------------------------------------------------------------


def test_match_urls_and_files(tmp_path: Path) -> None:
    src = PodcastSource()
    for url in [
        "https://example.org/podcast.rss",
        "https://example.org/show/feed.xml",
        "https://example.org/feed",
        "https://example.org/blog/feed/",
        "https://feeds.example.org/show-name",
        "https://feed.podhost.example/abc",
        "https://example.org/podcast/rss",
    ]:
        assert src.match(url, None, b""), url
    for url in ["https://example.org/article", "https://www.youtube.com/watch?v=VMvdvP02f-Y"]:
        assert not src.match(url, None, b""), url
    rss = (FIXTURES / "feed.rss").read_bytes()
    atom = (FIXTURES / "feed.atom").read_bytes()
    assert src.match("x.rss", tmp_path / "x.rss", rss)
    assert src.match("x.xml", tmp_path / "x.xml", atom)
    assert src.match("x.atom", tmp_path / "x.atom", atom)
    assert not src.match("x.xml", tmp_path / "x.xml", b"<?xml version='1.0'?><urlset></urlset>")
    assert not src.match("x.vtt", tmp_path / "x.vtt", rss)
    assert looks_like_feed(b"\xef\xbb\xbf<?xml version='1.0'?>\n<!-- c -->\n<rss version='2.0'>")
    assert looks_like_feed(b"<rdf:RDF xmlns:rdf='http://www.w3.org/1999/02/22-rdf-syntax-ns#'>")


# --- listing ---------------------------------------------------------------------------------


def test_list_episodes_reads_every_podcast_transcript() -> None:
    base = "http://127.0.0.1:9"
    episodes = parse_feed(_fixture("feed.rss", base), f"{base}/feed.rss").episodes
    assert [e.number for e in episodes] == [1, 2, 3]
    assert [e.guid for e in episodes] == ["orchard-0003", "orchard-0002", "orchard-0001"]
    mail, pruning, bees = episodes
    assert mail.title == "Listener Mail: Frost & Blossoms"
    assert mail.transcripts == ()
    assert mail.duration_s == 750
    assert pruning.published == "2024-02-19T08:00:00Z"
    assert pruning.link == "https://orchard.example/episodes/pruning"
    assert pruning.duration_s == 1805
    assert pruning.transcripts == (
        TranscriptLink(f"{base}/t/0002.srt", "application/x-subrip", "en", None),
    )
    # feedparser 6 keeps only the last <podcast:transcript>; both are read from the XML.
    assert bees.transcripts == (
        TranscriptLink(f"{base}/t/0001.json", "application/json", "en", None),
        TranscriptLink(f"{base}/t/0001.vtt", "text/vtt", "en", "captions"),
    )
    assert [t.kind for t in bees.ranked_transcripts()] == ["vtt", "json"]
    assert bees.audio_url == f"{base}/audio/0001.mp3?utm_source=feed"
    assert bees.duration_s == 41 * 60 + 7


def test_no_selection_lists_the_episodes(pod: LocalHTTPServer) -> None:
    with pytest.raises(InvalidInputError) as info:
        PodcastSource().acquire(pod.url("/feed.rss"), None, _opts())
    msg = str(info.value)
    assert msg.startswith(pod.url("/feed.rss") + ": choose episodes with --episode N")
    assert "'The Orchard Hour' has 3" in msg
    assert "1. 2024-03-04  Listener Mail: Frost & Blossoms  [no transcript]" in msg
    assert "2. 2024-02-19  Pruning Old Apple Trees  [transcript: srt]" in msg
    assert "3. 2024-02-05  Bees in Winter  [transcript: vtt, json]" in msg
    assert _fetched(pod) == ["/feed.rss"]  # no transcript fetched before choosing


# --- acquiring -------------------------------------------------------------------------------


def test_vtt_episode_keeps_voices_and_prefers_vtt(pod: LocalHTTPServer) -> None:
    feed_url = pod.url("/feed.rss")
    [item] = PodcastSource().acquire(feed_url, None, _opts("3"))
    text = item.files["transcript.md"].decode()
    assert text.startswith(
        "[00:00:01] Ana Ruiz: Welcome back to The Orchard Hour. "
        "Today we talk about bees in winter.\n"
    )
    assert "] Tom Okafor: Thanks, Ana. A strong colony clusters" in text
    assert "] Ana Ruiz: So the workers shiver to keep the cluster warm?" in text
    assert item.files["source.vtt"] == (FIXTURES / "0001.vtt").read_bytes()
    assert "/t/0001.json" not in _fetched(pod)  # VTT beats JSON, though JSON is listed first
    assert item.canonical == "podcast-guid:orchard-0001"  # the GUID, not a made-up URL
    assert item.source_id == sha256_hex(item.canonical.encode())[:8]
    assert item.content_type == "podcasts"
    assert item.title == "Bees in Winter"
    assert item.timed is True
    assert item.source_format == "vtt"
    assert item.content_hash == digest(item.files["transcript.md"])
    assert item.meta["podcast"] == "The Orchard Hour"
    assert item.meta["episode_guid"] == "orchard-0001"
    assert item.meta["published"] == "2024-02-05T08:00:00Z"
    assert item.meta["audio_url"] == pod.url("/audio/0001.mp3?utm_source=feed")
    assert item.meta["duration"] == 41 * 60 + 7
    assert item.meta["transcript_url"] == pod.url("/t/0001.vtt")
    assert item.meta["transcript_type"] == "text/vtt"


def test_srt_episode_keeps_name_labels(pod: LocalHTTPServer) -> None:
    [item] = PodcastSource().acquire(pod.url("/feed.rss"), None, _opts("orchard-0002"))
    text = item.files["transcript.md"].decode()
    assert "Priya Nair: Old apple trees forgive a lot, but not a hard cut all at once." in text
    assert "] Sam Lee: How much would you take off in a single winter?" in text
    assert item.source_format == "srt"
    assert item.url == "https://orchard.example/episodes/pruning"
    assert set(item.files) == {"source.srt", "transcript.md"}


def test_all_skips_the_episode_without_transcript(pod: LocalHTTPServer) -> None:
    items, warnings = PodcastSource().acquire_with_warnings(
        pod.url("/feed.rss"), None, _opts("all")
    )
    assert [i.title for i in items] == ["Pruning Old Apple Trees", "Bees in Winter"]
    assert warnings == [
        f"{pod.url('/feed.rss')}: episode 'Listener Mail: Frost & Blossoms' has no transcript "
        "(podcast:transcript); attach one with --transcript FILE"
    ]
    assert len({i.canonical for i in items}) == 2


def test_only_chosen_episode_without_transcript_is_an_error(pod: LocalHTTPServer) -> None:
    with pytest.raises(SourceFormatError) as info:
        PodcastSource().acquire(pod.url("/feed.rss"), None, _opts("1"))
    assert str(info.value) == (
        f"{pod.url('/feed.rss')}: episode 'Listener Mail: Frost & Blossoms' has no transcript "
        "(podcast:transcript); attach one with --transcript FILE"
    )


def test_latest_numbers_and_repeats(pod: LocalHTTPServer) -> None:
    src, url = PodcastSource(), pod.url("/feed.rss")
    items, warnings = src.acquire_with_warnings(url, None, _opts("latest", "2", "orchard-0002"))
    assert [i.title for i in items] == ["Pruning Old Apple Trees"]  # latest is #1: skipped
    assert len(warnings) == 1
    items = src.acquire(url, None, _opts("3,2"))
    assert [i.title for i in items] == ["Bees in Winter", "Pruning Old Apple Trees"]
    with pytest.raises(InvalidInputError, match=r"no episode 4; the feed has 3"):
        src.acquire(url, None, _opts("4"))
    with pytest.raises(InvalidInputError, match=r"no episode with GUID 'nope'"):
        src.acquire(url, None, _opts("nope"))


def test_attach_local_transcript_to_an_episode(pod: LocalHTTPServer, tmp_path: Path) -> None:
    local = tmp_path / "mail.srt"
    local.write_text("1\n00:00:01,000 --> 00:00:03,000\nAna Ruiz: Letters about frost.\n")
    [item] = PodcastSource().acquire(pod.url("/feed.rss"), None, _opts("1", transcript=local))
    assert item.title == "Listener Mail: Frost & Blossoms"
    assert item.files["transcript.md"] == b"[00:00:01] Ana Ruiz: Letters about frost.\n"
    assert item.meta["transcript_source"] == "local"
    assert _fetched(pod) == ["/feed.rss"]


def test_missing_transcript_url_names_it(pod: LocalHTTPServer) -> None:
    base = pod.url("")
    feed = _fixture("feed.rss", base).replace(b"/t/0002.srt", b"/t/gone.srt")
    pod.route("/gone.rss", body=feed, content_type="application/rss+xml")
    with pytest.raises(FetchError) as info:
        PodcastSource().acquire(pod.url("/gone.rss"), None, _opts("2"))
    msg = str(info.value)
    assert pod.url("/t/gone.srt") in msg
    assert "HTTP 404" in msg
    assert "'Pruning Old Apple Trees'" in msg


def test_broken_preferred_transcript_falls_back_to_next_type(pod: LocalHTTPServer) -> None:
    pod.route("/t/0001.vtt", body=b"not found", status=404)
    [item] = PodcastSource().acquire(pod.url("/feed.rss"), None, _opts("3"))
    assert item.source_format == "podcast-json"
    assert item.files["transcript.md"] == b"[00:00:01] Ana Ruiz: JSON copy of the bees episode.\n"


def test_an_episode_reached_through_a_second_feed_url_is_the_same_item(
    pod: LocalHTTPServer,
) -> None:
    from arkai.sources.podcast import Episode, Feed, episode_canonical

    [a] = PodcastSource().acquire(pod.url("/feed.rss"), None, _opts("3"))
    mirror = pod.url("/feed.rss") + "?utm_source=mirror"  # another address, same feed
    [b] = PodcastSource().acquire(mirror, None, _opts("3"))
    assert a.canonical == b.canonical and a.source_id == b.source_id

    def ep(guid: str | None, audio: str | None = None) -> Episode:
        return Episode(1, guid, "Ep", None, audio, None, None)

    one = Feed("a", "https://feeds.one.example/show.rss", "Show")
    two = Feed("b", "https://mirror.two.example/feed/show", "Show")
    for e in (ep("3f0e8c1a-uuid-like"), ep(None, "https://cdn.example/ep1.mp3")):
        assert episode_canonical(one, e) == episode_canonical(two, e)
    # A short GUID alone is scoped by its feed: "12" repeats across podcasts.
    assert episode_canonical(one, ep("12")) != episode_canonical(two, ep("12"))
    # ... but the enclosure names the episode when there is one.
    assert (
        episode_canonical(one, ep("12", "https://cdn.example/e12.mp3"))
        == "https://cdn.example/e12.mp3"
    )
    assert not episode_canonical(one, ep("orchard-0001")).startswith("https://")


def test_local_feed_file(pod: LocalHTTPServer, tmp_path: Path) -> None:
    path = tmp_path / "orchard.rss"
    path.write_bytes(_fixture("feed.rss", pod.url("")))
    [item] = PodcastSource().acquire(str(path), path, _opts("3"))
    # The feed's atom:link rel="self" gives the same identity as adding the URL.
    [same] = PodcastSource().acquire(pod.url("/feed.rss"), None, _opts("3"))
    assert item.canonical == same.canonical
    assert item.files == same.files


# --- Atom, JSON and HTML transcripts ---------------------------------------------------------


def test_atom_feed_with_json_and_html_transcripts(pod: LocalHTTPServer) -> None:
    url = pod.url("/feed.atom")
    triangle, chart = PodcastSource().acquire(url, None, _opts("all"))
    assert triangle.canonical == "https://sky.example/episodes/summer-triangle"  # URL GUID
    assert triangle.meta["podcast"] == "Night Sky Notes"
    assert triangle.meta["published"] == "2024-05-02T20:00:00Z"
    assert triangle.source_format == "podcast-json"
    assert triangle.timed is True
    assert triangle.files["transcript.md"].decode() == (
        "[00:00:00] Mira Chen: Look east after dark and find the brightest star, Vega. "
        "Then trace down to Altair and across to Deneb.\n"
        "[00:00:06] Leo Park: And those three make the Summer Triangle? "
        "It looks bigger than I expected.\n"
    )
    assert chart.source_format == "html"
    assert chart.timed is True  # every paragraph has a <time>
    text = chart.files["transcript.md"].decode()
    assert text.startswith("[00:00:00] Mira Chen: Hold the chart over your head")
    assert "[00:00:07] Leo Park: Why are east and west swapped on it?" in text
    assert "not down at the ground & that flips one axis." in text
    assert "console.log" not in text
    assert chart.canonical == "podcast-guid:urn:uuid:5f1c8a2e-0000-4000-8000-000000000002"


def test_untimed_html_keeps_speakers() -> None:
    from arkai.formats import render_transcript
    from arkai.sources.podcast import parse_html_transcript

    html = b"<p><b>Ana:</b> First point.</p><cite>Tom</cite><p>Second point.</p>"
    parsed = parse_html_transcript("t.html", html)
    assert parsed.timed is False
    assert render_transcript(parsed) == "Ana: First point.\n\nTom: Second point.\n"


# --- feed-level errors -----------------------------------------------------------------------


def test_malformed_feed_names_it(tmp_path: Path) -> None:
    path = tmp_path / "broken.rss"
    path.write_bytes((FIXTURES / "malformed.rss").read_bytes())
    with pytest.raises(SourceFormatError) as info:
        PodcastSource().acquire(str(path), path, _opts("all"))
    assert str(info.value).startswith(f"{path}: not a readable RSS/Atom feed (")


def test_html_page_is_not_a_feed() -> None:
    with pytest.raises(SourceFormatError, match=r"^page: not an RSS or Atom feed$"):
        parse_feed(b"<html><body><p>hello</p></body></html>", "page")


def test_feed_without_any_transcript(http_server: LocalHTTPServer) -> None:
    feed = (
        b'<?xml version="1.0"?><rss version="2.0"><channel><title>Quiet</title>'
        b"<item><title>One</title><guid>q1</guid></item>"
        b"<item><title>Two</title><guid>q2</guid></item></channel></rss>"
    )
    http_server.route("/quiet.xml", body=feed, content_type="application/xml")
    url = http_server.url("/quiet.xml")
    with pytest.raises(SourceFormatError) as info:
        PodcastSource().acquire(url, None, _opts())
    assert str(info.value).startswith(
        f"{url}: no episode of this feed has a transcript (podcast:transcript)"
    )


def test_unreachable_feed_is_a_fetch_error(http_server: LocalHTTPServer) -> None:
    url = http_server.url("/missing.rss")
    with pytest.raises(FetchError, match=r"missing\.rss: HTTP 404"):
        PodcastSource().acquire(url, None, _opts("all"))
