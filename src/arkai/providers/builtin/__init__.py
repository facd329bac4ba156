"""The ``builtin`` provider: offline, deterministic, extractive (DESIGN §5).

Each pattern has its own module:

- ``extract_claims`` (:mod:`.claims`): claims worth citing (:mod:`.worth` filters,
  :mod:`.standalone` claim text), ranked by TF-IDF centrality; how many follows the content.
- ``extract_entities`` (:mod:`.entities`): spaCy NER (``ner`` only) plus TF-IDF concepts.
- ``extract_wisdom`` and ``summarize`` (:mod:`.wisdom`): extractive sections.
- ``condense_chat`` (:mod:`.condense`): decisions, discoveries and procedures of a chat.
- ``validate_claims`` (:mod:`.verdicts`): lexical support of each claim by its quote.
- ``route_intent`` (:mod:`.intent`): words → one arkai command by a keyword grammar.
- ``synthesize_answer`` (:mod:`.answer`): an extractive answer, each claim a cited quote.

Every quote is a verbatim slice of one line of ``Request.input`` — never its ``[HH:MM:SS]``
timestamp or ``Speaker:`` label — so it resolves exactly. The same input gives byte-identical
output. The provider ignores ``Request.system`` (the prompt) and ``model``; it reads
``options["variables"]`` (``max_claims``, an upper bound; ``min_words``, ``max_words``). Work is
CPU-bound and not interruptible, so ``timeout`` is not enforced (a ten-minute talk takes well
under a second).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from arkai.providers.base import ProviderError, Request, Response

VERSION = "3"
"""Bumped whenever an output for the same input may change."""

NO_TEXT = "The input has no text."
"""The summary (and takeaway) of an empty input: the patterns' schemas require non-empty ones."""

_EMPTY: dict[str, Any] = {
    "extract_claims": [],
    "extract_entities": {"entities": []},
    "extract_wisdom": {
        "summary": NO_TEXT,
        "ideas": [],
        "insights": [],
        "quotes": [],
        "facts": [],
        "references": [],
        "one_sentence_takeaway": NO_TEXT,
    },
    "summarize": {"summary": NO_TEXT, "points": []},
    "condense_chat": {"summary": NO_TEXT, "decisions": [], "discoveries": [], "procedures": []},
    "validate_claims": [],
    "route_intent": {"command": [], "why": "no words"},
    "synthesize_answer": {"claims": [], "retracted": []},
}
PATTERNS = tuple(_EMPTY)
"""The patterns it implements (each with its answer to an empty input above)."""


def _variables(options: Mapping[str, Any]) -> Mapping[str, Any]:
    value = options.get("variables")
    return value if isinstance(value, Mapping) else {}


def _run(pattern: str, text: str, variables: Mapping[str, Any]) -> tuple[Any, list[str]]:
    """The value (and warnings) of ``pattern`` on ``text``. Each engine is imported on first
    use: spaCy and scikit-learn are slow to load."""
    if pattern == "extract_claims":
        from arkai.providers.builtin.claims import extract_claims

        return extract_claims(text, variables), []
    if pattern == "extract_entities":
        from arkai.providers.builtin.entities import extract_entities

        return extract_entities(text, variables), []
    if pattern in ("extract_wisdom", "summarize"):
        from arkai.providers.builtin.wisdom import extract_wisdom, summarize

        if pattern == "summarize":
            return summarize(text, variables), []
        return extract_wisdom(text, variables)
    if pattern == "condense_chat":
        from arkai.providers.builtin.condense import condense_chat

        return condense_chat(text, variables), []
    if pattern == "validate_claims":
        from arkai.providers.builtin.verdicts import validate_claims

        return validate_claims(text, stance=bool(variables.get("stance"))), []
    if pattern == "route_intent":
        from arkai.providers.builtin.intent import route_intent

        return route_intent(text), []
    from arkai.providers.builtin.answer import synthesize_answer

    return synthesize_answer(text, variables), []


class BuiltinProvider:
    """Offline extractive provider; see the module doc."""

    name = "builtin"

    def __init__(self, config: Mapping[str, Any] | None = None) -> None:
        """``config`` is ``params["providers"]["builtin"]``; nothing in it is read yet."""
        self.config: Mapping[str, Any] = dict(config or {})

    def complete(self, request: Request, *, timeout: float) -> Response:
        if request.pattern not in _EMPTY:
            raise ProviderError(
                f"builtin provider has no implementation of pattern {request.pattern}; "
                "use a remote provider"
            )
        text = request.input
        if not text.strip():
            value: Any = _EMPTY[request.pattern]
            warnings = ["empty input"]
        else:
            value, warnings = _run(request.pattern, text, _variables(request.options))
        meta: dict[str, Any] = {"provider_version": VERSION}
        if warnings:
            meta["warnings"] = warnings
        return Response(text=json.dumps(value, ensure_ascii=False), meta=meta)

    def context_chars(self, model: str | None) -> int:
        """Whole transcripts in one call: quotes are chosen against the full text."""
        return 50_000_000

    def preload(self) -> None:
        """Import the extraction patterns' engines and load spaCy's pipeline now, as their
        first call would (≈ 0.6 s): a caller that will make such calls does it while it waits
        on something else (the extract stage, while its walk runs in another process)."""
        from scipy import sparse  # noqa: F401  (claims' ranking)

        from arkai.providers.builtin import claims, verdicts, wisdom  # noqa: F401
        from arkai.providers.builtin.entities import load_model

        load_model()


__all__ = ["PATTERNS", "VERSION", "BuiltinProvider"]
