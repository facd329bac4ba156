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


@dataclass(frozen=True)
class SpanCheck:
    """Where a span is now: recomputed from the current artifact."""

    line: int
    column: int
    slice: str
    video_timestamp: str | None
    page: int | None
    valid: bool
    utf8_byte_offset: tuple[int, int]
    problems: tuple[str, ...]


@dataclass(frozen=True)
class EvidenceInfo:
    """``arkai evidence show``: one evidence line with its receipt checked against the file."""

    id: str
    content_id: str
    title: str
    claim: str
    quote: str
    status: str
    resolution: dict[str, Any]
    confidence: float
    extractor: str
    file: str
    verified: bool
    span: SpanCheck | None

    def to_dict(self) -> dict[str, Any]:
        out = {k: v for k, v in vars(self).items() if k != "span"}
        sp = self.span
        if sp is None:
            keys = ("line", "column", "slice", "video_timestamp", "page", "valid")
            return out | dict.fromkeys(keys) | {"problems": []}
        return out | vars(sp) | {"utf8_byte_offset": list(sp.utf8_byte_offset),
                                 "problems": list(sp.problems)}  # fmt: skip


def describe(loc: Located) -> EvidenceInfo:
    """Everything ``evidence show`` prints, recomputed from the current transcript."""
    item, line = loc.item, loc.line
    path = item.path / (line.span.artifact if line.span else "transcript.md")
    check = None
    if line.span is not None:
        data = read_repo_file(path, item.root, missing_ok=True) or b""
        doc = Document(data)
        valid = span_is_valid(data, line.span)
        start = min(line.span.start, len(data))
        ln, col = doc.line_col(start)
        check = SpanCheck(
            ln, col, data[start : min(line.span.end, len(data))].decode("utf-8", errors="replace"),
            line.span.video_timestamp, doc.page_at(start), valid,
            (line.span.start, line.span.end),
            tuple(check_receipt(doc, evidence_receipt(line, item.id))) if valid else (),
        )  # fmt: skip
    return EvidenceInfo(
        line.id, item.id, item.title, line.claim, line.quote, line.status,
        line.resolution.to_dict(), line.confidence, line.extractor,
        str(path.relative_to(item.root)), line.verified, check,
    )  # fmt: skip


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


def show(repo: Repo, ident: str) -> EvidenceInfo:
    """``arkai evidence show``: :func:`describe` of the line ``ident`` names."""
    return describe(find_evidence(repo, ident))


def open_command(repo: Repo, ident: str) -> list[str]:
    """``arkai evidence open``: the editor command that opens the transcript at the span."""
    info = show(repo, ident)
    sp = info.span
    line, col = (sp.line, sp.column) if sp else (1, 1)
    return editor_command(repo.root / info.file, line or 1, col or 1)


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
