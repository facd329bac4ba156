"""``arkai evidence show|open|reanchor``: look up and repair single evidence lines."""

from __future__ import annotations

import os
import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arkai.adapters import events
from arkai.adapters.fs import read_repo_file
from arkai.adapters.layout import ENTITIES, EVIDENCE, EXTRACTION, MIN_PREFIX, Item, iter_items
from arkai.adapters.store import (
    read_entities,
    read_evidence,
    read_json,
    write_evidence,
    write_json,
)
from arkai.core.document import Document
from arkai.core.evidence import evidence_from_match
from arkai.core.hashing import digest
from arkai.core.reanchor import reanchor_quote
from arkai.errors import AmbiguousIdError, InvalidInputError, NotFoundError
from arkai.model.entity import Mention
from arkai.model.evidence import EvidenceLine
from arkai.ops.validate import span_is_valid


@dataclass(frozen=True, slots=True)
class Located:
    """An evidence line and the item it belongs to."""

    item: Item
    line: EvidenceLine


def find_evidence(root: Path, ident: str) -> Located:
    """The evidence line whose ID is ``ident`` or starts with it (≥ 8 characters)."""
    ident = ident.strip().lower()
    if len(ident) < MIN_PREFIX:
        raise InvalidInputError(f"evidence ID {ident!r} is too short: give at least {MIN_PREFIX}")
    found: list[Located] = []
    for item in iter_items(root):
        for line in read_evidence(item.extracted / EVIDENCE):
            if line.id == ident:
                return Located(item, line)
            if line.id.startswith(ident):
                found.append(Located(item, line))
    if len(found) == 1:
        return found[0]
    if found:
        raise AmbiguousIdError(f"evidence ID prefix {ident!r} matches {len(found)} lines")
    raise NotFoundError(f"no evidence line with ID {ident!r}")


def describe(loc: Located) -> dict[str, Any]:
    """Everything ``evidence show`` prints, recomputed from the current transcript."""
    item, line = loc.item, loc.line
    path = item.path / (line.span.artifact if line.span else "transcript.md")
    info: dict[str, Any] = {
        "id": line.id,
        "content_id": item.id,
        "title": item.title,
        "claim": line.claim,
        "quote": line.quote,
        "status": line.status,
        "resolution": line.resolution.to_dict(),
        "confidence": line.confidence,
        "extractor": line.extractor,
        "file": str(path.relative_to(item.root)),
        "line": None,
        "column": None,
        "slice": None,
        "video_timestamp": None,
        "valid": None,
    }
    if line.span is not None:
        data = read_repo_file(path, item.root, missing_ok=True) or b""
        doc = Document(data)
        valid = span_is_valid(data, line.span)
        start = min(line.span.start, len(data))
        ln, col = doc.line_col(start)
        info.update(
            line=ln,
            column=col,
            slice=data[start : min(line.span.end, len(data))].decode("utf-8", errors="replace"),
            video_timestamp=line.span.video_timestamp,
            valid=valid,
            utf8_byte_offset=[line.span.start, line.span.end],
        )
    return info


def editor_command(path: Path, line: int, col: int) -> list[str]:
    """The command that opens ``path`` at ``line:col``: ``$EDITOR`` if set, else VS Code."""
    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR")
    if editor:
        argv = shlex.split(editor)
        name = Path(argv[0]).name
        if name in {"code", "code-insiders", "codium", "cursor"}:
            return [*argv, "-g", f"{path}:{line}:{col}"]
        if name in {"vim", "nvim", "vi", "nano", "emacs", "emacsclient", "micro", "kak"}:
            return [*argv, f"+{line}", str(path)]
        if name in {"subl", "hx", "zed"}:
            return [*argv, f"{path}:{line}:{col}"]
        return [*argv, str(path)]
    return [shutil.which("code") or "code", "-g", f"{path}:{line}:{col}"]


def reanchor_item(
    root: Path, item: Item, *, threshold: float, only: str | None = None
) -> dict[str, Any]:
    """Repair stale spans of one item in place; returns counts and the ID changes."""
    data = item.transcript_bytes()
    doc = Document(data)
    lines = read_evidence(item.extracted / EVIDENCE)
    out: list[EvidenceLine] = []
    changed: list[dict[str, Any]] = []
    kept = 0
    with events.run(root, "reanchor", content_id=item.id) as log:
        for line in lines:
            stale = line.span is not None and not span_is_valid(data, line.span)
            if not stale or (only is not None and line.id != only):
                out.append(line)
                kept += 1
                continue
            match = reanchor_quote(doc, line.quote, line.span, threshold=threshold)
            new = evidence_from_match(
                content_id=line.content_id,
                claim=line.claim,
                quote=line.quote,
                confidence=line.confidence,
                extractor=line.extractor,
                ts=line.ts,
                match=match,
            )
            extra = {**line.extra, "reanchored_from": line.id}
            new = EvidenceLine.from_dict({**extra, **new.to_dict()})
            out.append(new)
            changed.append({"old_id": line.id, "new_id": new.id, "status": new.status})
            log.emit(
                "EvidenceResolved",
                evidence_id=new.id,
                previous_id=line.id,
                old_status="stale",
                new_status=new.status,
                method=new.resolution.method,
            )
    write_evidence(item.extracted / EVIDENCE, out)
    mentions = reanchor_mentions(item, doc, threshold) if only is None else 0
    meta = read_json(item.extracted / EXTRACTION)
    if meta is not None and (changed or mentions):
        meta["transcript_digest"] = digest(data)
        meta["reanchored"] = True
        write_json(item.extracted / EXTRACTION, meta)
    return {
        "content_id": item.id,
        "unchanged": kept,
        "reanchored": sum(c["status"] != "unresolved" for c in changed),
        "unresolved": sum(c["status"] == "unresolved" for c in changed),
        "mentions_reanchored": mentions,
        "changes": changed,
    }


def reanchor_mentions(item: Item, doc: Document, threshold: float) -> int:
    """Repair stale entity-mention spans in ``entities.json`` the same way; returns how many
    mentions were re-anchored (or became unresolved)."""
    path = item.extracted / ENTITIES
    document = read_entities(path)
    fixed = 0
    for entity in document["entities"]:
        for n, raw in enumerate(entity.get("mentions", [])):
            mention = Mention.from_dict(raw)
            if mention.span is None or span_is_valid(doc.data, mention.span):
                continue
            match = reanchor_quote(doc, mention.quote, mention.span, threshold=threshold)
            entity["mentions"][n] = Mention(
                mention.quote, mention.quote_sha256, match.resolution, match.span
            ).to_dict()
            fixed += 1
    if fixed:
        write_json(path, document)
    return fixed
