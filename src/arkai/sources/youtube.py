"""YouTube videos: URL canonicalisation, transcripts from YouTube, or a local caption file.

Every URL form of one video (``youtu.be/X``, ``/shorts/X``, ``/embed/X``, ``m.``/``music.``
hosts, ``youtube-nocookie.com``, ``t=``/``list=``/``si=``/utm parameters, no scheme …) maps to
one canonical URL, ``https://www.youtube.com/watch?v=<id>``, hence to one content ID.

Getting the transcript, in order:

1. ``--transcript FILE`` (``AddOptions.transcript``): the local VTT/SRT/JSON file is the
   transcript; no network call is made at all (offline attach).
2. youtube-transcript-api: the video's caption tracks are listed, and the first of them in this
   order is fetched: a manually created track in the first preferred language, … in the last
   preferred language, then an auto-generated ("asr") track in the first preferred language, …
   (a language ``en`` also accepts regional variants such as ``en-GB`` after an exact ``en``).
   The snippets are kept as a youtube-transcript-api JSON list, ``source.json``.
3. yt-dlp: ``extract_info(download=False)`` runs in any case, for the metadata (title, channel,
   upload date, duration). When step 2 failed, its ``subtitles`` / ``automatic_captions`` are
   chosen from in the same order, and the chosen track's ``vtt`` URL is fetched with
   :func:`arkai.adapters.http.fetch` (so nothing is ever written to disk by yt-dlp), kept as
   ``source.vtt``.

Preferred languages come from ``params.yaml`` ``youtube.languages`` (default ``["en"]``). All
network work of one video shares one time budget, ``youtube.timeout_s`` (default 10 s): each
request's socket timeout is at most half of it, and each step runs on a worker thread that is
abandoned when the budget runs out, so an unreachable network costs at most about the budget.
When no transcript could be had, :class:`arkai.adapters.http.FetchError` names the URL, gives
both fetchers' reasons on one line and suggests ``--transcript FILE``.

Tests replace :func:`make_transcript_api`, :func:`make_ytdlp` or :func:`fetch_url` (module-level
on purpose) to exercise the choice logic without the network.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Any, TypeVar

from arkai.adapters.http import FetchError, fetch
from arkai.adapters.params import positive_number
from arkai.core.hashing import digest
from arkai.core.youtube import video_id
from arkai.errors import ArkaiError, InvalidInputError
from arkai.formats import parse_source, transcript_bytes
from arkai.sources.base import SOURCE_EXT, Acquired, AddOptions, read_transcript_file

T = TypeVar("T")

CANONICAL_PREFIX = "https://www.youtube.com/watch?v="
DEFAULT_LANGUAGES = ("en",)
DEFAULT_TIMEOUT_S = 10.0

_LANG_SUFFIX_RE = re.compile(r"^[a-z]{2,3}(?:-[A-Za-z0-9]{2,8})*$")


def canonical_url(url: str) -> str:
    """``https://www.youtube.com/watch?v=<id>`` for any form of a video URL.

    Raises :class:`InvalidInputError` naming ``url`` when it is not a YouTube video URL.
    """
    vid = video_id(url)
    if vid is None:
        raise InvalidInputError(f"{url}: not a YouTube video URL")
    return CANONICAL_PREFIX + vid


# --- the network seams (tests replace these) ------------------------------------------------


def make_transcript_api(timeout: float) -> Any:
    """A ``YouTubeTranscriptApi`` whose every HTTP request times out after ``timeout`` s."""
    import requests
    from youtube_transcript_api import YouTubeTranscriptApi

    class _Session(requests.Session):
        def request(self, *args: Any, **kwargs: Any) -> requests.Response:
            if kwargs.get("timeout") is None:
                kwargs["timeout"] = timeout
            return super().request(*args, **kwargs)

    session = _Session()
    return YouTubeTranscriptApi(http_client=session)


class _SilentLogger:
    """yt-dlp prints ``ERROR:`` lines even when quiet; arkai reports errors itself."""

    def debug(self, msg: str) -> None:
        pass

    def info(self, msg: str) -> None:
        pass

    def warning(self, msg: str) -> None:
        pass

    def error(self, msg: str) -> None:
        pass


def ytdlp_options(languages: Sequence[str], timeout: float) -> dict[str, Any]:
    """Options for yt-dlp: metadata and subtitle lists only; nothing downloaded or cached."""
    return {
        "skip_download": True,
        "writesubtitles": True,
        "writeautomaticsub": True,
        "subtitleslangs": list(languages),
        "subtitlesformat": "vtt",
        "quiet": True,
        "no_warnings": True,
        "noprogress": True,
        "noplaylist": True,
        "socket_timeout": timeout,
        "retries": 0,
        "extractor_retries": 0,
        "cachedir": False,
        "logger": _SilentLogger(),
    }


def make_ytdlp(options: dict[str, Any]) -> Any:
    """A ``yt_dlp.YoutubeDL`` (used as a context manager)."""
    import yt_dlp

    return yt_dlp.YoutubeDL(options)


def fetch_url(url: str, timeout: float) -> bytes:
    """GET a caption file (yt-dlp's subtitle URL)."""
    return fetch(url, timeout=timeout).data


# --- choosing a caption track ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Track:
    """One caption track on offer."""

    language: str
    is_generated: bool
    handle: Any = None
    """What the fetcher needs to fetch it (a youtube-transcript-api ``Transcript``, or yt-dlp's
    list of subtitle formats)."""


def choose_track(tracks: Sequence[Track], languages: Sequence[str]) -> Track | None:
    """The preferred track: manual before auto-generated, then ``languages`` in order, an
    exact language code before its regional variants (``en`` then ``en-GB``)."""
    for generated in (False, True):
        for lang in languages:
            want = lang.lower()
            pool = [t for t in tracks if t.is_generated == generated]
            exact = [t for t in pool if t.language.lower() == want]
            if exact:
                return exact[0]
            variants = sorted(
                (t for t in pool if t.language.lower().startswith(want + "-")),
                key=lambda t: t.language,
            )
            if variants:
                return variants[0]
    return None


def _on_offer(tracks: Iterable[Track]) -> str:
    names = sorted({t.language + (" (auto)" if t.is_generated else "") for t in tracks})
    return ", ".join(names) if names else "none"


@dataclass(frozen=True, slots=True)
class Captions:
    """A fetched transcript, as the bytes to keep as ``source.<ext>``."""

    data: bytes
    format: str
    """``ytjson`` or ``vtt``."""
    language: str
    is_generated: bool
    via: str
    """``youtube-transcript-api`` or ``yt-dlp``."""


class _NoTrack(Exception):
    """The fetcher answered, but offers no track in a preferred language."""


def fetch_with_transcript_api(vid: str, languages: Sequence[str], timeout: float) -> Captions:
    """Step 2 of the module doc."""
    api = make_transcript_api(timeout)
    tracks = [Track(str(t.language_code), bool(t.is_generated), t) for t in api.list(vid)]
    chosen = choose_track(tracks, languages)
    if chosen is None:
        raise _NoTrack(f"no captions in {', '.join(languages)} (on offer: {_on_offer(tracks)})")
    fetched = chosen.handle.fetch()
    entries = [
        {"text": str(s.text), "start": float(s.start), "duration": float(s.duration)}
        for s in fetched
    ]
    if not entries:
        raise _NoTrack(f"the {chosen.language} captions are empty")
    data = (json.dumps(entries, ensure_ascii=False, indent=1) + "\n").encode("utf-8")
    return Captions(data, "ytjson", chosen.language, chosen.is_generated, "youtube-transcript-api")


def fetch_info(url: str, languages: Sequence[str], timeout: float) -> dict[str, Any]:
    """yt-dlp's ``extract_info(download=False)`` for ``url``."""
    with make_ytdlp(ytdlp_options(languages, timeout)) as ydl:
        info = ydl.extract_info(url, download=False)
    if not isinstance(info, dict):
        raise _NoTrack("yt-dlp returned no video information")
    return info


def captions_from_info(info: dict[str, Any], languages: Sequence[str], timeout: float) -> Captions:
    """Step 3 of the module doc: choose among yt-dlp's tracks and fetch the VTT."""
    tracks: list[Track] = []
    for key, generated in (("subtitles", False), ("automatic_captions", True)):
        offered = info.get(key) or {}
        if isinstance(offered, dict):
            for lang, formats in offered.items():
                if lang != "live_chat" and isinstance(formats, list):
                    tracks.append(Track(str(lang), generated, formats))
    chosen = choose_track(tracks, languages)
    if chosen is None:
        raise _NoTrack(f"no captions in {', '.join(languages)} (on offer: {_on_offer(tracks)})")
    vtt = [
        f for f in chosen.handle if isinstance(f, dict) and f.get("ext") == "vtt" and f.get("url")
    ]
    if not vtt:
        raise _NoTrack(f"no VTT format for the {chosen.language} captions")
    data = fetch_url(str(vtt[0]["url"]), timeout)
    return Captions(data, "vtt", chosen.language, chosen.is_generated, "yt-dlp")


# --- running the steps under one time budget -------------------------------------------------


class _Budget:
    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.deadline = time.monotonic() + seconds

    def remaining(self) -> float:
        return self.deadline - time.monotonic()

    def socket_timeout(self) -> float:
        return max(1.0, min(self.remaining(), self.seconds / 2))


def _bounded(step: Callable[[], T], budget: _Budget) -> T:
    """Run ``step`` on a daemon thread; give up on it when the budget is spent."""
    left = budget.remaining()
    if left <= 0:
        raise TimeoutError("no time left")
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = step()
        except BaseException as exc:  # handed to the caller below
            box["error"] = exc

    worker = threading.Thread(target=run, name="arkai-youtube", daemon=True)
    worker.start()
    worker.join(left)
    if worker.is_alive():
        raise TimeoutError(f"gave up after {budget.seconds:g} s")
    if "error" in box:
        raise box["error"]
    value: T = box["value"]
    return value


def describe(exc: BaseException) -> str:
    """A short one-line reason for a fetcher's exception."""
    if isinstance(exc, _NoTrack | ArkaiError):
        return str(exc)
    if isinstance(exc, TimeoutError):
        return f"timed out ({exc})" if str(exc) else "timed out"
    module = type(exc).__module__
    name = type(exc).__name__
    text = " ".join(str(exc).split())
    if module.startswith("youtube_transcript_api"):
        return re.sub(r"(?<=[a-z])(?=[A-Z])", " ", name).lower()
    if module.startswith("requests") or module.startswith("urllib3"):
        if "Timeout" in name or "timed out" in text:
            return "timed out"
        host = re.search(r"host='([^']+)'", text)
        where = host.group(1) if host else "the server"
        if "resolve" in text.lower():
            return f"cannot resolve {where} (no network?)"
        return f"cannot connect to {where}"
    text = text.removeprefix("ERROR: ")
    text = re.split(r" \(caused by ", text, maxsplit=1)[0]
    if "Failed to resolve" in text or "Name or service not known" in text:
        return "cannot resolve www.youtube.com (no network?)"
    return text if len(text) <= 160 else text[:156] + " ..."


# --- the source kind -------------------------------------------------------------------------


def _languages(params: dict[str, Any]) -> list[str]:
    raw = (params.get("youtube") or {}).get("languages", list(DEFAULT_LANGUAGES))
    if isinstance(raw, str):
        raw = raw.split(",")
    if not isinstance(raw, list):
        raise InvalidInputError("params youtube.languages: expected a list of language codes")
    langs = [str(x).strip() for x in raw if str(x).strip()]
    return langs or list(DEFAULT_LANGUAGES)


def _iso_date(value: Any) -> str | None:
    text = str(value or "")
    if re.fullmatch(r"\d{8}", text):
        return f"{text[:4]}-{text[4:6]}-{text[6:]}"
    return None


def _duration(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        return None
    return round(value)


def _language_from_name(name: str) -> str | None:
    """``talk.en.vtt`` → ``en``; None when the name carries no language code."""
    suffixes = PurePath(name).suffixes
    if len(suffixes) >= 2:
        code = suffixes[-2][1:]
        if _LANG_SUFFIX_RE.fullmatch(code):
            return code
    return None


class YouTubeSource:
    """YouTube video URLs (see the module doc)."""

    name = "youtube"

    def match(self, ref: str, path: Path | None, head: bytes) -> bool:
        if path is not None and path.exists():
            return False
        return video_id(ref) is not None

    def acquire(self, ref: str, path: Path | None, opts: AddOptions) -> list[Acquired]:
        canonical = canonical_url(ref)
        vid = canonical.removeprefix(CANONICAL_PREFIX)
        if opts.transcript is not None:
            return [self._attach(vid, canonical, opts.transcript, opts)]
        return [self._download(ref.strip(), vid, canonical, opts)]

    def _attach(self, vid: str, canonical: str, file: Path, opts: AddOptions) -> Acquired:
        """Offline: the local caption file is this video's transcript."""
        _, parsed, files = read_transcript_file(file, opts.max_bytes)
        meta = {
            "video_id": vid,
            "channel": None,
            "published": None,
            "duration_s": None,
            "transcript_source": "local",
            "transcript_file": file.name,
            "language": _language_from_name(file.name),
            "is_generated": None,
        }
        return Acquired(
            canonical=canonical,
            source_id=vid,
            title=opts.title or parsed.title or f"YouTube {vid}",
            content_type="youtube",
            files=files,
            url=canonical,
            meta=meta,
            timed=parsed.timed,
            source_format=parsed.format,
            content_hash=digest(files["transcript.md"]),
        )

    def _download(self, ref: str, vid: str, canonical: str, opts: AddOptions) -> Acquired:
        languages = _languages(opts.params)
        budget = _Budget(
            positive_number(opts.params.get("youtube"), "youtube.timeout_s", DEFAULT_TIMEOUT_S)
        )
        reasons: list[str] = []
        captions: Captions | None = None
        try:
            captions = _bounded(
                lambda: fetch_with_transcript_api(vid, languages, budget.socket_timeout()),
                budget,
            )
        except Exception as exc:
            reasons.append(f"youtube-transcript-api: {describe(exc)}")
        info: dict[str, Any] | None = None
        try:
            info = _bounded(
                lambda: fetch_info(canonical, languages, budget.socket_timeout()), budget
            )
        except Exception as exc:
            if captions is None:
                reasons.append(f"yt-dlp: {describe(exc)}")
        if captions is None and info is not None:
            found = info
            try:
                captions = _bounded(
                    lambda: captions_from_info(found, languages, budget.socket_timeout()),
                    budget,
                )
            except Exception as exc:
                reasons.append(f"yt-dlp: {describe(exc)}")
        if captions is None:
            raise FetchError(
                f"{ref}: could not get a transcript ({'; '.join(reasons)})",
                hint="offline, or no captions? attach a caption file with --transcript FILE",
            )
        name = f"{canonical} captions"
        parsed = parse_source(name, captions.data, captions.format)
        transcript = transcript_bytes(parsed, name)
        info = info or {}
        title = str(info.get("title") or "").strip()
        channel = info.get("channel") or info.get("uploader")
        meta = {
            "video_id": vid,
            "channel": str(channel) if channel else None,
            "published": _iso_date(info.get("upload_date")),
            "duration_s": _duration(info.get("duration")),
            "transcript_source": captions.via,
            "language": captions.language,
            "is_generated": captions.is_generated,
        }
        ext = SOURCE_EXT[captions.format]
        return Acquired(
            canonical=canonical,
            source_id=vid,
            title=title or opts.title or f"YouTube {vid}",
            content_type="youtube",
            files={f"source.{ext}": captions.data, "transcript.md": transcript},
            url=canonical,
            meta=meta,
            timed=parsed.timed,
            source_format=captions.format,
            content_hash=digest(transcript),
        )
