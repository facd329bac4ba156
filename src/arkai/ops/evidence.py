"""``arkai evidence show|open|reanchor``: look up and repair single evidence lines."""

from __future__ import annotations

import os
import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arkai.adapters.fs import read_input_file, read_repo_file
from arkai.adapters.layout import EVIDENCE, MIN_PREFIX, Item
from arkai.adapters.repo import Repo
from arkai.adapters.store import (
    read_evidence,
)
from arkai.core.document import Document
from arkai.core.fuzzy import DEFAULT_THRESHOLD
from arkai.core.receipts import check_receipt, evidence_receipt, span_is_valid
from arkai.core.resolve import Match, resolve_quote
from arkai.errors import AmbiguousIdError, InvalidInputError, NotFoundError
from arkai.model.evidence import EvidenceLine


@dataclass(frozen=True, slots=True)
class Located:
    """An evidence line and the item it belongs to."""

    item: Item
    line: EvidenceLine


def find_evidence(repo: Repo, ident: str) -> Located:
    """The evidence line whose ID is ``ident`` or starts with it (≥ 8 characters)."""
    ident = ident.strip().lower()
    if len(ident) < MIN_PREFIX:
        raise InvalidInputError(f"evidence ID {ident!r} is too short: give at least {MIN_PREFIX}")
    found: list[Located] = []
    for item in repo.items():
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


def show(repo: Repo, ident: str) -> dict[str, Any]:
    """``arkai evidence show``: :func:`describe` of the line ``ident`` names."""
    return describe(find_evidence(repo, ident))


def open_command(repo: Repo, ident: str) -> list[str]:
    """``arkai evidence open``: the editor command that opens the transcript at the span."""
    info = show(repo, ident)
    return editor_command(repo.root / info["file"], info["line"] or 1, info["column"] or 1)


@dataclass(frozen=True)
class Resolved:
    """``arkai evidence resolve``: the text resolved against and what the quote matched."""

    data: bytes
    match: Match

    @property
    def slice(self) -> str | None:
        sp = self.match.span
        return None if sp is None else self.data[sp.start : sp.end].decode("utf-8", "replace")

    def to_dict(self) -> dict[str, Any]:
        m = self.match
        return {
            "status": m.resolution.status,
            "resolution": m.resolution.to_dict(),
            "span": m.span.to_dict() if m.span else None,
        }


def resolve(
    repo: Repo | None,
    target: str,
    quote: str,
    *,
    mode: str = "exact",
    threshold: float | None = None,
) -> Resolved:
    """Resolve ``quote`` against a file (``target`` a path; ``repo`` may be None) or an item's
    transcript (``target`` a content ID); read-only. ``threshold`` defaults to the repo's
    ``extract.fuzzy_threshold`` (for a file, the core default)."""
    path = Path(target)
    if path.is_file():
        data = read_input_file(path, max_bytes=2_000_000_000)
        thr = threshold if threshold is not None else DEFAULT_THRESHOLD
    else:
        if repo is None:
            raise InvalidInputError(f"{target}: no such file, and no knowledge repo here")
        data = repo.item(target).transcript_bytes()
        default = float(repo.param("extract.fuzzy_threshold"))
        thr = threshold if threshold is not None else default
    match = resolve_quote(Document(data), quote, mode=mode, fuzzy_threshold=thr)
    return Resolved(data, match)
