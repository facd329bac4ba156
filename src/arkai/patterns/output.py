"""Repairing and validating what a model returned for a pattern (DESIGN §5).

:func:`parse_output` turns raw model text into the JSON value the pattern's schema describes,
or raises :class:`OutputError` with a one-line reason. It is pure (no I/O) and linear in the
text for ordinary outputs. Steps:

1. Drop a leading BOM. Empty or blank text → ``no JSON found``.
2. If the whole text is strict JSON, that is the value.
3. Otherwise look for JSON values inside it: fences (```` ```json ````), chatter before
   (``Here is the JSON:``) and after (notes, sign-offs) are skipped by scanning for an opening
   ``{`` or ``[``. The text's first non-blank character always counts as a start; later ones
   count only when they look like JSON (``{`` followed by ``"`` or ``}``; ``[`` followed by ``{``,
   ``[``, ``"`` or ``]``; comments allowed in between), so prose such as ``[see above]`` is
   passed over. From a start, the matching close is found with a scanner that knows strings
   (braces and brackets inside ``"..."`` and escaped quotes ``\\"`` do not count).
4. Each candidate is parsed strictly. Only when that fails is it parsed leniently: ``//`` and
   ``/* */`` comments and trailing commas (``[1, 2,]``) outside strings are blanked out, and raw
   control characters (a literal newline) inside strings are accepted. Single-quoted strings,
   ``NaN``/``Infinity``, and unquoted keys are never accepted.
5. With a schema, the value is coerced at the top level only: an object with a single key
   holding an array is unwrapped when the schema wants an array (``{"claims": [...]}``); an
   array is wrapped when the schema wants an object whose one required property is an array
   (``[...]`` → ``{"entities": [...]}``); a one-element array holding an object is unwrapped
   when the schema wants an object. Then the value is validated
   (:func:`arkai.patterns.model.first_violation`).
6. The first candidate that parses and validates wins. When none does, the error reported is
   that of the largest candidate (the payload is nearly always the biggest JSON value in the
   text); a value that starts but never closes ends the search as truncated.

Without a schema (fabric users' free-text patterns) the first JSON value found is returned.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from typing import Any, Literal

from arkai.errors import EXIT_PIPELINE, ArkaiError
from arkai.patterns.model import (
    VERBATIM,
    PathSeg,
    Pattern,
    first_violation,
)

__all__ = ["OutputError", "iter_verbatim", "parse_json", "parse_output"]

Kind = Literal["no_json", "invalid_json", "schema"]


class OutputError(ArkaiError):
    """A model's output could not be turned into the pattern's JSON.

    ``message`` is one line: ``no JSON found``, ``invalid JSON at line L col C: …`` or
    ``schema: $.[3].quote: required property missing``. ``raw`` is the whole text as received.
    ``kind`` is ``no_json``, ``invalid_json`` or ``schema``; ``path`` the JSON path of a schema
    violation; ``line``/``column`` (1-based) where JSON parsing failed.
    """

    exit_code = EXIT_PIPELINE

    def __init__(
        self,
        message: str,
        *,
        raw: str,
        kind: Kind,
        path: str | None = None,
        line: int | None = None,
        column: int | None = None,
    ) -> None:
        super().__init__(message)
        self.raw = raw
        self.kind = kind
        self.path = path
        self.line = line
        self.column = column


def parse_output(pattern: Pattern, text: str) -> Any:
    """The JSON value in ``text`` (a model's answer to ``pattern``), repaired and validated
    against ``pattern.schema``. Raises :class:`OutputError`."""
    return parse_json(text, pattern.schema)


def parse_json(text: str, schema: Mapping[str, Any] | None = None) -> Any:
    """:func:`parse_output` for a bare schema (or none)."""
    body = text.removeprefix("\ufeff")
    if not body.strip():
        raise OutputError("no JSON found (empty output)", raw=text, kind="no_json")
    worst: tuple[int, OutputError] | None = None
    for size, found in _candidates(body, text):
        if isinstance(found, OutputError):
            error = found
        else:
            if schema is None:
                return found.value
            value = _coerce(schema, found.value)
            violation = first_violation(schema, value)
            if violation is None:
                return value
            path, problem = violation
            error = OutputError(f"schema: {path}: {problem}", raw=text, kind="schema", path=path)
        if worst is None or size > worst[0]:
            worst = (size, error)
    if worst is not None:
        raise worst[1]
    raise OutputError("no JSON found", raw=text, kind="no_json")


# --------------------------------------------------------------------------------------------
# Finding candidates

_START = re.compile(r"[\[{]")
_LOOKS_LIKE_JSON = re.compile(r"\{\s*(?:[\"}]|//|/\*)|\[\s*(?:[\[{\"\]]|//|/\*)")
_OUTSIDE = re.compile(r"[\[\]{}\"]|//|/\*")
_INSIDE = re.compile(r"[\"\\]")
_OPENER = {"]": "[", "}": "{"}


class _Parsed:
    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


def _candidates(body: str, raw: str) -> Iterator[tuple[int, _Parsed | OutputError]]:
    """``(size, parsed value or syntax error)`` for each JSON-looking value in ``body``."""
    try:
        yield len(body), _Parsed(_strict(body))
        return
    except (ValueError, RecursionError):
        pass
    first = len(body) - len(body.lstrip())
    pos = 0
    while (m := _START.search(body, pos)) is not None:
        start = m.start()
        if start != first and not _LOOKS_LIKE_JSON.match(body, start):
            pos = start + 1
            continue
        end, unclosed = _match_close(body, start)
        if unclosed is not None:
            line, col = _line_col(body, len(body))
            sline, scol = _line_col(body, start)
            where = f"invalid JSON at line {line} col {col}"
            message = (
                f"{where}: output ends inside {unclosed} "
                f"(value opened at line {sline} col {scol} is never closed; truncated?)"
            )
            err = OutputError(message, raw=raw, kind="invalid_json", line=line, column=col)
            yield len(body) - start, err
            return
        yield end - start, _parse_candidate(body, start, end, raw)
        pos = end


def _match_close(s: str, start: int) -> tuple[int, str | None]:
    """From the bracket at ``start``: ``(index after its matching close, None)``, or
    ``(len(s), what is open)`` when the text ends first. A mismatched close (``{]``) ends the
    value too; the parser then reports it."""
    stack: list[str] = []
    pos = start
    n = len(s)
    while (m := _OUTSIDE.search(s, pos)) is not None:
        tok, j = m.group(), m.start()
        if tok == '"':
            k = j + 1
            while True:
                q = _INSIDE.search(s, k)
                if q is None:
                    return n, "a string"
                if q.group() == "\\":
                    k = q.start() + 2
                    continue
                k = q.start() + 1
                break
            pos = k
        elif tok == "//":
            nl = s.find("\n", j)
            pos = n if nl < 0 else nl + 1
        elif tok == "/*":
            close = s.find("*/", j + 2)
            if close < 0:
                return n, "a comment"
            pos = close + 2
        elif tok in "[{":
            stack.append(tok)
            pos = j + 1
        else:
            if stack.pop() != _OPENER[tok] or not stack:
                return j + 1, None
            pos = j + 1
    return n, f"an unclosed '{stack[-1]}'" if stack else "a value"


# --------------------------------------------------------------------------------------------
# Parsing one candidate


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


_STRICT = json.JSONDecoder(parse_constant=_reject_constant)
_LENIENT = json.JSONDecoder(parse_constant=_reject_constant, strict=False)
_STRING = r'"[^"\\]*(?:\\.[^"\\]*)*"'
_COMMENTS = re.compile(_STRING + r"|//[^\n]*|/\*.*?\*/", re.DOTALL)
_TRAILING_COMMA = re.compile(_STRING + r"|,(?=\s*[\]}])")


def _strict(text: str) -> Any:
    return _STRICT.decode(text)


def _blank(match: re.Match[str]) -> str:
    tok = match.group()
    if tok.startswith('"'):
        return tok
    return "".join("\n" if c == "\n" else " " for c in tok)


def _relax(text: str) -> str:
    """``text`` with comments and trailing commas outside strings replaced by spaces (newlines
    kept), so every offset still points at the same character."""
    return _TRAILING_COMMA.sub(_blank, _COMMENTS.sub(_blank, text))


def _parse_candidate(body: str, start: int, end: int, raw: str) -> _Parsed | OutputError:
    text = body[start:end]
    try:
        return _Parsed(_STRICT.decode(text))
    except (ValueError, RecursionError):
        pass
    try:
        return _Parsed(_LENIENT.decode(_relax(text)))
    except json.JSONDecodeError as exc:
        offset, problem = start + exc.pos, exc.msg
    except ValueError as exc:  # NaN / Infinity
        offset, problem = start, str(exc)
    except RecursionError:
        offset, problem = start, "nested too deeply"
    line, col = _line_col(body, offset)
    return OutputError(
        f"invalid JSON at line {line} col {col}: {problem}",
        raw=raw,
        kind="invalid_json",
        line=line,
        column=col,
    )


def _line_col(text: str, offset: int) -> tuple[int, int]:
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1


# --------------------------------------------------------------------------------------------
# Coercion and quotes


def _coerce(schema: Mapping[str, Any], value: Any) -> Any:
    wanted = schema.get("type")
    if wanted == "array" and isinstance(value, dict) and len(value) == 1:
        (inner,) = value.values()
        if isinstance(inner, list):
            return inner
    if wanted == "object" and isinstance(value, list):
        key = _sole_array_property(schema)
        if key is not None:
            return {key: value}
        if len(value) == 1 and isinstance(value[0], dict):
            return value[0]
    return value


def _sole_array_property(schema: Mapping[str, Any]) -> str | None:
    """The property an array should be wrapped in: the one required property, or the one
    property when none is required — provided its schema says ``type: array``."""
    props = schema.get("properties", {})
    required = schema.get("required", [])
    names = required if required else list(props)
    if len(names) != 1:
        return None
    sub = props.get(names[0])
    return names[0] if isinstance(sub, Mapping) and sub.get("type") == "array" else None


def iter_verbatim(
    schema: Mapping[str, Any] | None, value: Any
) -> Iterator[tuple[tuple[PathSeg, ...], str]]:
    """Every string in ``value`` whose schema node says ``x-verbatim: true``, as
    ``(path segments, text)`` in document order — the quotes to resolve to spans. Format a path
    with :func:`arkai.patterns.model.format_path`. Follows ``properties`` and ``items``."""
    if schema is not None:
        yield from _walk(schema, value, ())


def _walk(
    schema: Any, value: Any, path: tuple[PathSeg, ...]
) -> Iterator[tuple[tuple[PathSeg, ...], str]]:
    if not isinstance(schema, Mapping):
        return
    if schema.get(VERBATIM) is True and isinstance(value, str):
        yield path, value
        return
    if isinstance(value, dict):
        for name, sub in schema.get("properties", {}).items():
            if name in value:
                yield from _walk(sub, value[name], (*path, name))
    elif isinstance(value, list):
        items = schema.get("items")
        for i, item in enumerate(value):
            yield from _walk(items, item, (*path, i))
