"""The contract every source kind implements, and what it hands back."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from arkai.adapters.fs import read_input_file
from arkai.formats import ParsedSource, detect_format, parse_source, transcript_bytes

#: ``source.<ext>`` of a caption or text file, by the format :func:`detect_format` found.
SOURCE_EXT = {"vtt": "vtt", "srt": "srt", "ytjson": "json", "txt": "txt", "md": "md"}


@dataclass
class AddOptions:
    """Everything ``arkai add`` was told, plus the repo's params."""

    params: dict[str, Any]
    """Merged ``params.yaml`` (see ``arkai.adapters.params``)."""
    now: str
    """ISO-8601 UTC time of this run (passed in: sources never read the clock)."""
    tags: list[str] = field(default_factory=list)
    title: str | None = None
    """Title override (single input only)."""
    content_type: str | None = None
    """``--type`` override of the library folder."""
    transcript: Path | None = None
    """``--transcript FILE``: a local caption file to attach to a URL's identity (offline)."""
    all_branches: bool = False
    """Chat exports: keep non-active branches as separate items."""
    redact: bool | None = None
    """Force redaction on/off; None = the params default for the kind."""
    select: list[str] = field(default_factory=list)
    """Feeds: which episodes to add (GUIDs, 1-based numbers, or 'all'/'latest')."""

    @property
    def max_bytes(self) -> int:
        """``params.add.max_file_mb`` in bytes: the most an input file, a download or a ZIP
        member may hold (100 MB when the params leave it out or it is not a number)."""
        add = self.params.get("add") if isinstance(self.params, dict) else None
        value = add.get("max_file_mb", 100) if isinstance(add, dict) else 100
        try:
            return int(float(value) * 1_000_000)
        except (TypeError, ValueError):
            return 100_000_000


@dataclass
class Acquired:
    """One item, acquired and normalised, not yet written."""

    canonical: str
    """Canonical URL (``https://…``) or a scheme ref (``file:sha256:…``, ``chatgpt:<id>``);
    the content ID is ``sha256(canonical)[0:16]``."""
    source_id: str
    """Suffix of the folder name: video ID, conversation ID, or 8 hex of the content hash."""
    title: str
    """Unsanitised title (the writer sanitises)."""
    content_type: str
    """Library sub-folder, e.g. ``youtube``, ``podcasts``, ``articles``, ``pdfs``,
    ``notes``, ``transcripts`` or ``chats/chatgpt/2024/05``."""
    files: dict[str, bytes]
    """File name → bytes; must include ``transcript.md`` and one ``source.<ext>``."""
    url: str | None = None
    """Human-facing URL, when there is one."""
    meta: dict[str, Any] = field(default_factory=dict)
    """Extra metadata (channel, author, published, duration, platform, redactions, …)."""
    timed: bool = False
    source_format: str = ""
    """``vtt``, ``srt``, ``html``, ``pdf``, ``chatgpt``, …"""
    content_hash: str | None = None
    """Digest of the meaningful content, so a re-import can tell "changed" from "same"."""


class Source(Protocol):
    """A source kind. ``name`` is what ``--type``-style routing and ``routes.json`` store."""

    name: str

    def match(self, ref: str, path: Path | None, head: bytes) -> bool:
        """Layer-1 routing: True if this kind handles ``ref`` (a URL or a path; ``path`` set
        for existing local files, ``head`` = the file's first 64 KiB or b"")."""
        ...

    def acquire(self, ref: str, path: Path | None, opts: AddOptions) -> list[Acquired]:
        """Fetch/read and normalise. Raise ArkaiError subclasses naming ``ref`` on failure.
        Must not write anything anywhere."""
        ...


def read_transcript_file(
    path: Path, max_bytes: int
) -> tuple[bytes, ParsedSource, dict[str, bytes]]:
    """A local caption or text file (``arkai add FILE``, ``--transcript FILE``): its bytes, its
    parse, and the item's files (``source.<ext>`` and the ``transcript.md`` rendered from it)."""
    data = read_input_file(path, max_bytes=max_bytes)
    fmt = detect_format(path.name, data)
    parsed = parse_source(path.name, data, fmt)
    transcript = transcript_bytes(parsed, path)
    return data, parsed, {f"source.{SOURCE_EXT[fmt]}": data, "transcript.md": transcript}
