"""Readers and writers for an item's extraction files (``evidence.jsonl``, ``entities.json``)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from arkai.adapters.fs import read_repo_file, write_if_changed
from arkai.core import canonjson
from arkai.errors import LibraryError
from arkai.model.evidence import EvidenceLine

ENTITIES_SCHEMA_VERSION = 1
T = TypeVar("T")


def iter_jsonl(
    data: bytes | Iterable[bytes],
    label: Path | str,
    what: str,
    parse: Callable[[Any], T],
    problems: list[str] | None = None,
) -> Iterator[T]:
    """Each non-blank line of a JSON Lines file — its bytes, or its lines as a binary file
    gives them (read a line at a time: never the whole file in memory) — parsed by
    ``parse``. A line that is not JSON or that ``parse`` rejects is a LibraryError
    ``<label>:<n>: <what> (<why>)`` — or, given ``problems``, that message goes there and the
    line is skipped (and bytes that are not UTF-8 are replaced instead of failing the
    file)."""
    for n, row in enumerate(_rows(data, label, problems is None), 1):
        if not row.strip():
            continue
        try:
            value = parse(json.loads(row))
        except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
            if problems is None:
                raise LibraryError(f"{label}:{n}: {what} ({exc})") from None
            problems.append(f"{label}:{n}: {what} ({exc})")
            continue
        yield value


def _rows(data: bytes | Iterable[bytes], label: Path | str, strict: bool) -> Iterator[str]:
    """The lines of a JSON Lines file as text: bytes decoded whole (one invalid byte fails
    the file before any line is given), a file's lines one at a time (the byte named by its
    offset in the file). Bytes that are not UTF-8 are replaced unless ``strict``."""
    errors = "strict" if strict else "replace"
    if isinstance(data, bytes):
        try:
            text = data.decode("utf-8", errors=errors)
        except UnicodeDecodeError as exc:
            raise LibraryError(f"{label}: not valid UTF-8 ({exc.reason} at byte "
                               f"{exc.start})") from None  # fmt: skip
        # Lines end at \n only: str.splitlines would also split at U+2028, U+0085 and other
        # characters that JSON writes unescaped inside strings (canonjson keeps non-ASCII as
        # is). A binary file's lines end at \n only too.
        yield from text.split("\n")
        return
    at = 0
    for raw in data:
        try:
            yield raw.decode("utf-8", errors=errors)
        except UnicodeDecodeError as exc:
            raise LibraryError(f"{label}: not valid UTF-8 ({exc.reason} at byte "
                               f"{at + exc.start})") from None  # fmt: skip
        at += len(raw)


def read_json_as(
    path: Path, root: Path, what: str, parse: Callable[[Any], T],
    object_hook: Callable[[dict[str, Any]], Any] | None = None,
) -> T | None:  # fmt: skip
    """The JSON file ``path`` (read safely below ``root``) parsed by ``parse``; None when it is
    missing. Bytes that are not UTF-8 JSON are a LibraryError ``<path>: not valid JSON (<why>)``,
    a value ``parse`` rejects one ``<path>: <what> (<why>)``. ``object_hook``: as
    :func:`json.loads`'s (each object as it is decoded → what stands for it)."""
    data = read_repo_file(path, root, missing_ok=True)
    if data is None:
        return None
    try:
        value = json.loads(data.decode("utf-8"), object_hook=object_hook)
    except (UnicodeDecodeError, ValueError) as exc:
        raise LibraryError(f"{path}: not valid JSON ({exc})") from None
    except RecursionError:
        raise LibraryError(f"{path}: not valid JSON (nested too deeply)") from None
    try:
        return parse(value)
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise LibraryError(f"{path}: {what} ({exc})") from None


def evidence_sort_key(line: EvidenceLine) -> tuple[int, int, str]:
    """Stable order: by span start (unresolved last), then ID — deterministic and merge-friendly."""
    if line.span is None:
        return (1, 0, line.id)
    return (0, line.span.start, line.id)


def read_evidence(path: Path) -> list[EvidenceLine]:
    """Parse ``evidence.jsonl``; a missing file is an empty list, a bad line, a link or a special
    file is an error naming the file."""
    raw = read_repo_file(path, path.parent, missing_ok=True)
    if raw is None:
        return []
    return parse_evidence(raw, path)


def parse_evidence(raw: bytes, path: Path) -> list[EvidenceLine]:
    """The lines of an ``evidence.jsonl`` already read into ``raw`` (``path`` names it in
    errors)."""
    return list(iter_jsonl(raw, path, "bad evidence line", evidence_line))


def evidence_line(obj: Any) -> EvidenceLine:
    """One parsed line of ``evidence.jsonl`` (ValueError when it is not an object)."""
    if not isinstance(obj, dict):
        raise ValueError("not a JSON object")
    return EvidenceLine.from_dict(obj)


def evidence_bytes(lines: Iterable[EvidenceLine]) -> bytes:
    """The bytes of an ``evidence.jsonl``: the lines canonically, sorted, deduplicated by ID."""
    unique = {line.id: line for line in lines}
    ordered = sorted(unique.values(), key=evidence_sort_key)
    return canonjson.dumps_lines(line.to_dict() for line in ordered).encode("utf-8")


def write_evidence(path: Path, lines: Iterable[EvidenceLine]) -> bool:
    """Write the lines canonically, sorted, deduplicated by ID. True if the file changed."""
    return write_if_changed(path, evidence_bytes(lines))


def read_json(
    path: Path, object_hook: Callable[[dict[str, Any]], Any] | None = None
) -> dict[str, Any] | None:
    """A JSON object file, or None when missing. Malformed files raise LibraryError.
    ``object_hook``: as :func:`json.loads`'s."""
    return read_json_as(path, path.parent, "not a JSON object", json_object, object_hook)


def read_own_json(path: Path) -> dict[str, Any]:
    """A JSON object a tool wrote for itself (a derived record, never a person's file): ``{}``
    when missing — or damaged, so that the tool writes it anew rather than fail every run
    until someone deletes it."""
    try:
        return read_json(path) or {}
    except LibraryError:
        return {}


def json_object(value: Any) -> dict[str, Any]:
    """``value`` when it is a JSON object; a TypeError otherwise (a ``parse`` for the readers
    above)."""
    if not isinstance(value, dict):
        raise TypeError(f"got {canonjson.kind_of(value)}")
    return value


def json_bytes(obj: Any) -> bytes:
    """The bytes :func:`write_json` writes: canonical JSON."""
    return canonjson.dumps(obj).encode("utf-8")


def write_json(path: Path, obj: Any) -> bool:
    """Canonical JSON, atomically, only when the content changed."""
    return write_if_changed(path, json_bytes(obj))


def read_entities(path: Path) -> dict[str, Any]:
    """``entities.json`` (seed schema v1); an empty document when missing."""
    obj = read_json(path)
    if obj is None:
        return {"schema_version": ENTITIES_SCHEMA_VERSION, "entities": []}
    if not isinstance(obj.get("entities"), list):
        raise LibraryError(f"{path}: 'entities' must be a list")
    return obj
