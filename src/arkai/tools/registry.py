"""One tool registry and one invocation path (seed 004): look up → policy → validate input →
handler → validate output → audit. Every answer is an envelope
``{ok, data, error: {code, message, severity, retryable}, trace_id}``.

A tool is ``name@version`` with a description, JSON Schemas for its input and output (checked
with :mod:`jsonschema` on both sides), a ``side_effect`` flag and a handler that calls the same
``ops/`` function as the CLI command of the same name (so the CLI's ``--json`` output and the
tool's ``data`` have one shape). Adding a tool is one :class:`Tool` entry in
:mod:`arkai.tools.catalog`.
"""

from __future__ import annotations

import concurrent.futures
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import jsonschema

from arkai.adapters.repo import Repo
from arkai.core import canonjson
from arkai.tools import policy
from arkai.tools.audit import AuditLog
from arkai.tools.errors import ToolError, ToolFailure, from_exception

Handler = Callable[[Repo, dict[str, Any]], Any]


@dataclass(frozen=True)
class Tool:
    """One tool. ``handler(repo, args)`` gets arguments already checked against
    ``input_schema`` and returns what ``output_schema`` describes."""

    name: str
    version: str
    description: str
    input_schema: Mapping[str, Any]
    output_schema: Mapping[str, Any]
    handler: Handler
    side_effect: bool = False

    @property
    def ref(self) -> str:
        return f"{self.name}@{self.version}"

    def declaration(self) -> dict[str, Any]:
        """What ``tools/list`` shows (MCP field names)."""
        return {
            "name": self.name,
            "description": self.description,
            "inputSchema": dict(self.input_schema),
            "outputSchema": envelope_schema(self.output_schema),
            "annotations": {"readOnlyHint": not self.side_effect},
        }


@dataclass(frozen=True)
class Caller:
    """Who calls: ``role`` ``viewer`` (read tools) or ``editor`` (also write tools);
    ``transport`` (stdio, http, agent) for the audit; ``allow_write`` is the server's switch
    (``--allow-write``), without which no write tool runs whatever the role."""

    role: str = policy.VIEWER
    transport: str = "stdio"
    allow_write: bool = False


@dataclass(frozen=True)
class Limits:
    """Per-call bounds: the reply's size in bytes (canonical JSON of ``data``) and the
    handler's wall time. Result counts are bounded by each tool's input schema."""

    max_reply_bytes: int = 512_000
    timeout_s: float = 60.0


@dataclass(frozen=True)
class Envelope:
    ok: bool
    data: Any
    error: ToolError | None
    trace_id: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "data": self.data,
            "error": self.error.to_dict() if self.error else None,
            "trace_id": self.trace_id,
        }


#: The envelope's ``error``: compact, as it is declared once per tool (every token counts).
ERROR_SCHEMA: dict[str, Any] = {
    "type": ["object", "null"],
    "required": ["code", "message", "severity", "retryable"],
}


def envelope_schema(data: Mapping[str, Any]) -> dict[str, Any]:
    """The schema of a reply: the envelope with ``data`` as the tool's output (or null)."""
    return {
        "type": "object",
        "properties": {
            "ok": {"type": "boolean"},
            "data": {"anyOf": [dict(data), {"type": "null"}]},
            "error": ERROR_SCHEMA,
            "trace_id": {"type": "string"},
        },
        "required": ["ok", "data", "error", "trace_id"],
    }


def _check(schema: Mapping[str, Any], value: Any, what: str) -> None:
    """Raise ToolFailure naming the first place ``value`` breaks ``schema`` — the offending
    value itself is never echoed (it may be a megabyte, or a secret)."""
    validator = jsonschema.Draft202012Validator(schema)
    error = jsonschema.exceptions.best_match(validator.iter_errors(value))
    if error is None:
        return
    where = "/".join(str(p) for p in error.absolute_path) or "(top level)"
    rule = error.validator
    expected = error.validator_value
    if rule in ("properties", "required", "additionalProperties", "type", "enum"):
        detail = error.message if rule in ("required", "additionalProperties") else ""
        if rule == "type":
            detail = f"expected {expected}"
        elif rule == "enum":
            detail = f"expected one of {expected}"
    else:
        detail = f"violates {rule} {expected!r}"
    detail = detail[:200]
    code = "INVALID_ARGUMENTS" if what == "input" else "BAD_OUTPUT"
    message = (
        f"argument {where}: {detail}"
        if what == "input"
        else f"the tool's output does not match its schema at {where}: {detail}"
    )
    raise ToolFailure(ToolError(code, message, "warning" if what == "input" else "fatal"))


class Registry:
    """Tools by name. ``invoke`` is the only way a tool runs."""

    def __init__(self, tools: Iterable[Tool]) -> None:
        self._tools: dict[str, Tool] = {}
        #: Write tools run one at a time (HTTP clients may call concurrently).
        self._write_lock = threading.Lock()
        for tool in tools:
            if tool.name in self._tools:
                raise ValueError(f"tool {tool.name!r} is registered twice")
            jsonschema.Draft202012Validator.check_schema(tool.input_schema)
            jsonschema.Draft202012Validator.check_schema(tool.output_schema)
            self._tools[tool.name] = tool

    def __iter__(self) -> Iterator[Tool]:
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)

    def get(self, name: str) -> Tool:
        """By ``name`` or ``name@version`` (the version must be the registered one)."""
        base, _, version = name.partition("@")
        tool = self._tools.get(base)
        if tool is None or (version and version != tool.version):
            known = ", ".join(sorted(t.ref for t in self._tools.values()))
            shown = name if len(name) <= 80 else name[:79] + "…"
            raise ToolFailure(
                ToolError("UNKNOWN_TOOL", f"no tool {shown!r}; tools: {known}", "warning")
            )
        return tool

    def visible(self, caller: Caller) -> list[Tool]:
        """The tools ``caller`` may call (``tools/list``)."""
        return [t for t in self._tools.values() if policy.allows(t.side_effect, caller)]

    def invoke(
        self,
        repo: Repo,
        name: str,
        args: Any,
        caller: Caller,
        *,
        limits: Limits | None = None,
        audit: AuditLog | None = None,
    ) -> Envelope:
        """Run one call through the whole path and audit it. Every failure of the call is an
        envelope; only a stop request (KeyboardInterrupt) or an audit line that cannot be
        written (OSError: no call goes unaudited silently) raises."""
        limits = limits or Limits()
        audit = audit or AuditLog(repo.root)
        trace_id = uuid.uuid4().hex
        t0 = time.perf_counter()
        tool: Tool | None = None
        outcome, envelope = "error", None
        try:
            tool = self.get(name)
            policy.check(tool.name, tool.side_effect, caller)
            _check(tool.input_schema, args, "input")
            data = _run(tool, repo, dict(args), limits.timeout_s, self._write_lock)
            _check(tool.output_schema, data, "output")
            size = len(canonjson.dumps(data).encode("utf-8"))
            if size > limits.max_reply_bytes:
                raise ToolFailure(
                    ToolError(
                        "REPLY_TOO_LARGE",
                        f"the reply is {size} bytes, over the limit of {limits.max_reply_bytes};"
                        " ask for fewer results (k, limit, budget)",
                        "warning",
                    )
                )
            outcome, envelope = "ok", Envelope(True, data, None, trace_id)
        except ToolFailure as exc:
            outcome = "denied" if exc.error.code == "FORBIDDEN" else "error"
            envelope = Envelope(False, None, exc.error, trace_id)
        except Exception as exc:
            envelope = Envelope(False, None, from_exception(exc, repo.root), trace_id)
        ms = int((time.perf_counter() - t0) * 1000)
        assert envelope is not None
        audit.record(
            tool=tool.name if tool else name[:80],
            version=tool.version if tool else None,
            role=caller.role,
            transport=caller.transport,
            args=args,
            outcome=outcome,
            code=envelope.error.code if envelope.error else None,
            duration_ms=ms,
            trace_id=trace_id,
        )
        return envelope


def _run(
    tool: Tool, repo: Repo, args: dict[str, Any], timeout_s: float, lock: threading.Lock
) -> Any:
    """The handler on a worker thread, given up on after ``timeout_s`` (the thread finishes
    on its own; its result is dropped). A write tool holds ``lock`` while it runs."""

    def call() -> Any:
        if not tool.side_effect:
            return tool.handler(repo, args)
        with lock:
            return tool.handler(repo, args)

    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="tool")
    try:
        future = pool.submit(call)
        try:
            return future.result(timeout=timeout_s)
        except concurrent.futures.TimeoutError:
            raise ToolFailure(
                ToolError(
                    "TIMEOUT", f"{tool.ref} gave no answer within {timeout_s:g}s", "error", True
                )
            ) from None
    finally:
        pool.shutdown(wait=False)
