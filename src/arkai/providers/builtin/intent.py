"""``route_intent``: words → one arkai command, by a small deterministic keyword grammar for the
common verbs (search, ask, add, show, validate, status, library). Anything else gets an empty
command and the reason, so ``arkai do`` says it could not translate the words.

The input is the words; the output is the pattern's ``{"command": [...], "why": "..."}``.
"""

from __future__ import annotations

import re
from typing import Any

from arkai.core.intent import find_urls, split_tags

_POLITE = re.compile(
    r"^(?:please\s+|can\s+you\s+|could\s+you\s+|i\s+want\s+to\s+|let'?s\s+)+", re.I
)
_QUESTION = re.compile(
    r"^(?:what|how|why|who|whom|when|where|which|does|do|did|is|are|was|were|can|should)\b", re.I
)
_ID = r"(?P<id>[0-9a-f]{8,64})"
_RULES: list[tuple[str, re.Pattern[str]]] = [
    ("search", re.compile(
        r"^(?:search|find|look\s+(?:for|up)|grep|query)\s+(?:(?:for|about|on)\s+)?"
        r"(?:the\s+library\s+(?:for|about)\s+)?(?P<q>.+)$", re.I)),
    ("ask", re.compile(r"^(?:ask|answer|question)\s+(?:(?:me|about|the\s+library)\s+)?(?P<q>.+)$",
                       re.I)),
    ("show", re.compile(
        rf"^(?:show|open|display|describe)\s+(?:me\s+)?(?:the\s+)?(?:item\s+)?{_ID}\b", re.I)),
    ("add", re.compile(
        r"^(?:add|learn\s+from|ingest|import|save|remember\s+the\s+file)\s+(?:the\s+)?"
        r"(?:file\s+|folder\s+)?(?P<ref>\S+)", re.I)),
    ("validate", re.compile(r"\b(?:validate|verify|check)\b.*\b(?:evidence|claims|receipts|"
                            r"library|spans|quotes)\b|^(?:validate|verify)$", re.I)),
    ("status", re.compile(r"\b(?:status|progress)\b|\bwhat(?:'s| is) running\b", re.I)),
    ("library", re.compile(r"^(?:list|what(?:'s| is) in)\b.*\b(?:library|items)\b", re.I)),
]  # fmt: skip


def _clean(text: str) -> str:
    return " ".join(text.split()).strip(" .!")


def route_intent(text: str) -> dict[str, Any]:
    """The command for ``text`` (see the module doc)."""
    words = _POLITE.sub("", " ".join(text.split()))
    for verb, rule in _RULES:
        m = rule.search(words)
        if m is None:
            continue
        if verb in ("search", "ask"):
            query = _clean(m.group("q")).rstrip("?") if verb == "search" else _clean(m.group("q"))
            if query:
                return {
                    "command": [verb, query],
                    "why": f"'{verb}' rule: {verb} the words after it",
                }
        elif verb == "show":
            return {"command": ["show", m.group("id")], "why": "'show' rule with an item ID"}
        elif verb == "add":
            rest, tags = split_tags(words)
            refs = find_urls(rest) or [m.group("ref").rstrip(".,;")]
            argv = ["add", *refs] + (["--tags", ",".join(tags)] if tags else [])
            return {"command": argv, "why": "'add' rule" + (" with tags" if tags else "")}
        else:
            return {"command": [verb], "why": f"'{verb}' keyword"}
    if _QUESTION.match(words) or words.endswith("?"):
        return {"command": ["ask", _clean(words)], "why": "a question: ask the library"}
    return {"command": [], "why": "no rule of the builtin grammar matched these words"}
