"""``arkai evidence show|open|reanchor``: look up and repair single evidence lines."""

from __future__ import annotations

import os
import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arkai.adapters.fs import read_repo_file
from arkai.adapters.layout import EVIDENCE, MIN_PREFIX, Item, iter_items
from arkai.adapters.store import (
    read_evidence,
)
from arkai.core.document import Document
from arkai.core.receipts import check_receipt, evidence_receipt, span_is_valid
from arkai.errors import AmbiguousIdError, InvalidInputError, NotFoundError
from arkai.model.evidence import EvidenceLine


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
        "page": None,
        "valid": None,
        "verified": line.verified,
        "problems": [],
    }
    if line.span is not None:
        data = read_repo_file(path, item.root, missing_ok=True) or b""
        doc = Document(data)
        valid = span_is_valid(data, line.span)
        receipt = evidence_receipt(line, item.id)
        info["problems"] = check_receipt(doc, receipt) if valid else []
        start = min(line.span.start, len(data))
        ln, col = doc.line_col(start)
        info.update(
            line=ln,
            column=col,
            slice=data[start : min(line.span.end, len(data))].decode("utf-8", errors="replace"),
            video_timestamp=line.span.video_timestamp,
            page=doc.page_at(start),
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
