"""The declared tool surface — what ``tools/list`` shows an agent — and its cost in tokens
(:func:`arkai.core.tokens.count_tokens` of its JSON)."""

from __future__ import annotations

import json
from typing import Any

from arkai.core.tokens import count_tokens
from arkai.tools.policy import EDITOR
from arkai.tools.registry import Caller, Registry


def tools_list(registry: Registry, *, allow_write: bool) -> dict[str, Any]:
    """``{"tools": [...], "tokens": N}`` for an editor of a server with or without
    ``--allow-write`` (a viewer sees the read tools, as without it)."""
    caller = Caller(role=EDITOR, allow_write=allow_write)
    tools = [t.declaration() for t in registry.visible(caller)]
    text = json.dumps({"tools": tools}, ensure_ascii=False, separators=(",", ":"))
    return {"tools": tools, "tokens": count_tokens(text)}
