"""Canonical JSON: sorted keys, UTF-8 (no ASCII escaping), ``\\n`` line ends, trailing newline.

Re-running a stage over unchanged input gives byte-identical files, so git diffs show only real
change.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

# One encoder each, made once: ``json.dumps`` with any option makes a new encoder per call,
# a quarter of the time of encoding a small record (the writers of JSONL files call these
# for every line). The bytes are those of ``json.dumps`` with the same options.
_INDENTED = json.JSONEncoder(sort_keys=True, ensure_ascii=False, indent=2)
_COMPACT = json.JSONEncoder(sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def dumps(obj: Any) -> str:
    """A JSON document, indented two spaces, keys sorted, ending with one newline."""
    return _INDENTED.encode(obj) + "\n"


def iter_dumps(obj: Any) -> Iterator[str]:
    """The text of :func:`dumps` in pieces (to hash or write a large document without holding
    its text whole)."""
    yield from _INDENTED.iterencode(obj)
    yield "\n"


def dumps_compact(obj: Any) -> str:
    """Any JSON value compact (keys sorted, non-ASCII kept), on one line, without a newline."""
    return _COMPACT.encode(obj)


def dumps_line(obj: Mapping[str, Any]) -> str:
    """One compact JSONL line (keys sorted), ending with a newline."""
    return dumps_compact(obj) + "\n"


def dumps_lines(objs: Iterable[Mapping[str, Any]]) -> str:
    """Several JSONL lines, in the order given."""
    return "".join(dumps_line(o) for o in objs)


def kind_of(value: Any) -> str:
    """What a parsed JSON value is, for messages: ``an object``, ``a list``, ``null`` …"""
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "a string"
    return "null" if value is None else f"a {type(value).__name__}"
