"""``arkai add``: turn local transcript files into library items (DESIGN §2–3)."""

from __future__ import annotations

import re
import shutil
import tempfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arkai.adapters import events
from arkai.adapters.fs import atomic_write_bytes, read_input_file
from arkai.adapters.layout import LIBRARY, METADATA, TRANSCRIPT, iter_items
from arkai.adapters.params import load_params
from arkai.adapters.store import write_json
from arkai.core.hashing import content_id, digest, sha256_hex
from arkai.core.titles import folder_name, sanitize_title
from arkai.errors import ArkaiError, InvalidInputError, SourceFormatError
from arkai.formats import ParsedSource, detect_format, parse_source, render_transcript

METADATA_SCHEMA_VERSION = 2
_TYPE_RE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,39}$")
_EXT = {"vtt": "vtt", "srt": "srt", "ytjson": "json", "txt": "txt", "md": "md"}
_DEFAULT_TYPE = {"md": "notes"}


@dataclass
class AddResult:
    """What happened to one input."""

    source: str
    """The path as the user gave it."""
    status: str
    """``added`` | ``exists`` | ``failed``."""
    id: str | None = None
    title: str | None = None
    path: str | None = None
    """Item folder relative to the repo root."""
    error: str | None = None
    exit_code: int = 0
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        d = {
            "source": self.source,
            "status": self.status,
            "id": self.id,
            "title": self.title,
            "path": self.path,
            "error": self.error,
        }
        d.update(self.details)
        return d


def parse_tags(raw: str | Sequence[str] | None) -> list[str]:
    """``"a, b"`` or ``["a", "b,c"]`` → sorted unique lower-case tags."""
    if raw is None:
        return []
    parts = [raw] if isinstance(raw, str) else list(raw)
    tags = {t.strip().lower() for p in parts for t in p.split(",")}
    return sorted(t for t in tags if t)


def check_type(content_type: str) -> str:
    if not _TYPE_RE.match(content_type):
        raise InvalidInputError(
            f"invalid --type {content_type!r}: use lower-case letters, digits, '-' or '_'"
        )
    return content_type


def title_from_filename(name: str) -> str:
    """``beekeeping-talk.en.vtt`` → ``Beekeeping talk``."""
    stem = name.split(".")[0] if not name.startswith(".") else name
    title = re.sub(r"[_\-]+", " ", stem).strip()
    return title[:1].upper() + title[1:] if title else "Untitled"


def build_metadata(
    *,
    data: bytes,
    parsed: ParsedSource,
    transcript: bytes,
    filename: str,
    title: str,
    content_type: str,
    tags: list[str],
    created_at: str,
) -> dict[str, Any]:
    """``metadata.json`` (schema v2 of the seed) for a local file."""
    ref = f"file:sha256:{sha256_hex(data)}"
    ext = _EXT[parsed.format]
    source_name = f"source.{ext}"
    return {
        "schema_version": METADATA_SCHEMA_VERSION,
        "id": content_id(ref),
        "canonical_ref": ref,
        "ref": ref,
        "url": None,
        "source_id": sha256_hex(data)[:8],
        "title": title,
        "content_type": content_type,
        "tags": tags,
        "created_at": created_at,
        "source": {"filename": filename, "format": parsed.format, "bytes": len(data)},
        "timed": parsed.timed,
        "artifacts": {"source": f"./{source_name}", "transcript": f"./{TRANSCRIPT}"},
        "artifact_digests": {source_name: digest(data), TRANSCRIPT: digest(transcript)},
    }


def write_item(root: Path, meta: dict[str, Any], files: dict[str, bytes]) -> Path:
    """Create the item folder atomically: build it beside its final place, then rename."""
    type_dir = root / LIBRARY / str(meta["content_type"])
    final: Path = type_dir / folder_name(str(meta["title"]), str(meta["source_id"]))
    if final.exists():
        raise ArkaiError(f"{final}: already exists and belongs to another item; nothing written")
    type_dir.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".adding-", dir=type_dir))
    try:
        for name, blob in files.items():
            atomic_write_bytes(tmp / name, blob)
        write_json(tmp / METADATA, meta)
        tmp.rename(final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return final


def add_file(
    root: Path,
    path: Path,
    *,
    now: str,
    tags: list[str] | None = None,
    title: str | None = None,
    content_type: str | None = None,
    known_ids: dict[str, Path] | None = None,
) -> AddResult:
    """Add one local transcript file. Raises ArkaiError on bad input; writes nothing then."""
    params = load_params(root)
    max_bytes = int(float(params["add"]["max_file_mb"]) * 1_000_000)
    data = read_input_file(path, max_bytes=max_bytes)
    fmt = detect_format(path.name, data)
    parsed = parse_source(path.name, data, fmt)
    transcript = render_transcript(parsed).encode("utf-8")
    if not transcript.strip():
        raise SourceFormatError(f"{path}: no text found")
    ctype = check_type(content_type or _DEFAULT_TYPE.get(fmt, params["add"]["default_type"]))
    clean_title = sanitize_title(title or parsed.title or title_from_filename(path.name))
    meta = build_metadata(
        data=data,
        parsed=parsed,
        transcript=transcript,
        filename=path.name,
        title=clean_title,
        content_type=ctype,
        tags=tags or [],
        created_at=now,
    )
    ids = known_ids if known_ids is not None else item_paths(root)
    if meta["id"] in ids:
        existing = ids[meta["id"]]
        return AddResult(
            source=str(path),
            status="exists",
            id=meta["id"],
            title=clean_title,
            path=str(existing.relative_to(root)),
        )
    files = {f"source.{_EXT[fmt]}": data, TRANSCRIPT: transcript}
    final = write_item(root, meta, files)
    ids[meta["id"]] = final
    return AddResult(
        source=str(path),
        status="added",
        id=meta["id"],
        title=clean_title,
        path=str(final.relative_to(root)),
        details={"format": fmt, "timed": parsed.timed},
    )


def item_paths(root: Path) -> dict[str, Path]:
    return {item.id: item.path for item in iter_items(root)}


def add_paths(
    root: Path,
    paths: Iterable[Path],
    *,
    now: str,
    tags: list[str] | None = None,
    title: str | None = None,
    content_type: str | None = None,
    progress: Callable[[int, int, str], None] | None = None,
) -> list[AddResult]:
    """Add each path; one bad input is reported and never stops or undoes the others."""
    todo = list(paths)
    known = item_paths(root)
    results: list[AddResult] = []
    with events.run(root, "add", inputs=len(todo)) as log:
        for n, path in enumerate(todo):
            if progress:
                progress(n, len(todo), str(path))
            with log.step("add", source=str(path)) as info:
                try:
                    res = add_file(
                        root,
                        path,
                        now=now,
                        tags=tags,
                        title=title,
                        content_type=content_type,
                        known_ids=known,
                    )
                except ArkaiError as exc:
                    res = AddResult(str(path), "failed", error=str(exc), exit_code=exc.exit_code)
                info.update(status=res.status, content_id=res.id, error=res.error)
            results.append(res)
        if progress:
            progress(len(todo), len(todo), "")
    return results
