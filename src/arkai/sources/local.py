"""Local transcript files (VTT, SRT, youtube-transcript-api JSON, text) and notes (Markdown,
``arkai remember``)."""

from __future__ import annotations

import re
from pathlib import Path

from arkai.core.hashing import digest, sha256_hex
from arkai.errors import InvalidInputError
from arkai.formats import parse_source, render_transcript
from arkai.sources.base import Acquired, AddOptions, read_transcript_file

_TRANSCRIPT_EXT = (".vtt", ".webvtt", ".srt", ".json", ".txt", ".text")
_NOTE_EXT = (".md", ".markdown")


_NUMBERED = re.compile(r"(?i)(?<![a-z])(season|episode|ep|part|chapter|vol)[ _-]*(\d+)_(\d+)(?!\d)")


def title_from_filename(name: str) -> str:
    """``beekeeping-talk.en.vtt`` → ``Beekeeping talk``; ``episode_1_1.srt`` →
    ``Episode 1.1`` (not ``Episode 1 1``)."""
    stem = name.split(".")[0] if not name.startswith(".") else name
    stem = _NUMBERED.sub(lambda m: f"{m[1]} {m[2]}.{m[3]}", stem)
    title = re.sub(r"[_\-]+", " ", stem).strip()
    return title[:1].upper() + title[1:] if title else "Untitled"


def acquire_file(ref: str, path: Path | None, content_type: str, opts: AddOptions) -> Acquired:
    """Parse a local subtitle/text file into an item (identity = hash of its bytes)."""
    if path is None:
        raise InvalidInputError(f"{ref}: not a local file")
    data, parsed, files = read_transcript_file(path, opts.max_bytes)
    sha = sha256_hex(data)
    return Acquired(
        canonical=f"file:sha256:{sha}",
        source_id=sha[:8],
        title=parsed.title or title_from_filename(path.name),
        content_type="notes" if parsed.format == "md" else content_type,
        files=files,
        meta={"filename": path.name},
        timed=parsed.timed,
        source_format=parsed.format,
        content_hash=digest(files["transcript.md"]),
    )


class TranscriptSource:
    """Local ``.vtt``, ``.srt``, youtube-transcript-api ``.json`` and ``.txt`` files."""

    name = "transcript"

    def match(self, ref: str, path: Path | None, head: bytes) -> bool:
        if path is None:
            return False
        if path.suffix.lower() in _TRANSCRIPT_EXT:
            return True
        start = head.lstrip()[:16]
        return start.startswith(b"WEBVTT") or bool(re.match(rb"\d+\r?\n\d\d:\d\d", start))

    def acquire(self, ref: str, path: Path | None, opts: AddOptions) -> list[Acquired]:
        return [acquire_file(ref, path, str(opts.params["add"]["default_type"]), opts)]


class NoteSource:
    """Markdown notes (``.md``) and text given to ``arkai remember`` (episodes)."""

    name = "note"

    def match(self, ref: str, path: Path | None, head: bytes) -> bool:
        return path is not None and path.suffix.lower() in _NOTE_EXT

    def acquire(self, ref: str, path: Path | None, opts: AddOptions) -> list[Acquired]:
        return [acquire_file(ref, path, "notes", opts)]


def remember_text(text: str, opts: AddOptions) -> Acquired:
    """An episode note from text: identity is the text itself, so the same note is one item."""
    body = text.strip()
    if not body:
        raise InvalidInputError("remember: the note is empty")
    data = (body + "\n").encode("utf-8")
    parsed = parse_source("note.md", data, "md")
    transcript = render_transcript(parsed).encode("utf-8")
    sha = sha256_hex(data)
    first = next((ln.strip("# ").strip() for ln in body.splitlines() if ln.strip()), "Note")
    title = opts.title or parsed.title or (first[:60] + ("…" if len(first) > 60 else ""))
    return Acquired(
        canonical=f"note:sha256:{sha}",
        source_id=sha[:8],
        title=title,
        content_type="notes",
        files={"source.md": data, "transcript.md": transcript},
        meta={"episode": True, "remembered_at": opts.now},
        source_format="md",
        content_hash=digest(transcript),
    )
