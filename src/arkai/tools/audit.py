"""The audit log of tool calls: ``.arkai/audit/<YYYY-MM-DD>.jsonl``, one line per call —
allowed or denied — with the time, tool, version, caller role, a digest of the arguments
(sha256 of their canonical JSON; never the arguments themselves), the outcome, the duration
and the trace ID (docs/agents.md, "Audit")."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arkai.adapters import events
from arkai.core import canonjson

AUDIT_DIR = Path(".arkai") / "audit"


def args_digest(args: Any) -> str:
    """``sha256:<hex>`` of the canonical JSON of ``args`` (``repr`` for what is not JSON)."""
    try:
        data = canonjson.dumps(args).encode("utf-8")
    except (TypeError, ValueError):
        data = repr(args).encode("utf-8", errors="replace")
    return "sha256:" + hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class AuditLog:
    """Appends to ``<root>/.arkai/audit/<date>.jsonl`` (UTC date of each call)."""

    root: Path

    def path_for(self, time: str) -> Path:
        return self.root / AUDIT_DIR / f"{time[:10]}.jsonl"

    def record(
        self,
        *,
        tool: str,
        version: str | None,
        role: str,
        transport: str,
        args: Any,
        outcome: str,
        code: str | None,
        duration_ms: int,
        trace_id: str,
    ) -> dict[str, Any]:
        now = events.utc_now()
        line = {
            "time": now,
            "tool": tool,
            "version": version,
            "role": role,
            "transport": transport,
            "args_sha256": args_digest(args),
            "outcome": outcome,
            "code": code,
            "duration_ms": duration_ms,
            "trace_id": trace_id,
        }
        events.append_jsonl(self.path_for(now), line)
        return line
