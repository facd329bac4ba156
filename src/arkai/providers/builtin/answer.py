"""``synthesize_answer``: an extractive answer — each claim is a cited quote, word for word.

Round 1: the evidence in the order given (the researcher sends it most relevant first), one
claim per distinct quote, at most ``max_claims`` (default 6), each citing every match whose
quote is the same text. A quote that cannot state anything — a question, fewer than
:data:`MIN_WORDS` words ("Good night, everyone."), or filler by the claim extractor's rules —
is left out, unless nothing else is left. Later rounds (``feedback`` present): a claim the
validator did not ground cannot be given better evidence by an extractive synthesizer, so it is
retracted; every other claim is kept unchanged. Deterministic.

Input: JSON ``{"question", "evidence": [{"match_id", "quote", …}], "round", "claims",
"feedback": [{"id", "verdict", "note"}]}``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from arkai.providers.base import ProviderError
from arkai.providers.builtin.text import positive_int

MAX_CLAIMS = 6
MIN_WORDS = 5


def _states_something(quote: str) -> bool:
    from arkai.providers.builtin.worth import filler_reason

    return (
        not quote.rstrip().endswith("?")
        and len(quote.split()) >= MIN_WORDS
        and filler_reason(quote) is None
    )


def _payload(raw: str) -> dict[str, Any]:
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ProviderError(f"synthesize_answer input is not JSON ({exc.msg})") from None
    if not isinstance(value, dict) or not isinstance(value.get("evidence", []), list):
        raise ProviderError("synthesize_answer input must be an object with an evidence list")
    return value


def synthesize_answer(raw: str, variables: Mapping[str, Any]) -> dict[str, Any]:
    """The ``synthesize_answer`` output for the request input ``raw``."""
    payload = _payload(raw)
    feedback = payload.get("feedback") or []
    if feedback:
        flagged = {str(f.get("id")) for f in feedback if isinstance(f, dict)}
        claims = [c for c in payload.get("claims") or [] if isinstance(c, dict)]
        kept = [c for c in claims if str(c.get("id")) not in flagged]
        return {"claims": kept, "retracted": sorted(flagged)}
    limit = positive_int(variables.get("max_claims")) or MAX_CLAIMS
    evidence = [ev for ev in payload.get("evidence") or [] if isinstance(ev, dict)]
    stating = [ev for ev in evidence if _states_something(str(ev.get("quote") or ""))]
    by_quote: dict[str, list[str]] = {}
    for ev in stating or evidence:
        quote = " ".join(str(ev.get("quote") or "").split())
        ident = str(ev.get("match_id") or "")
        if not quote or not ident:
            continue
        if quote not in by_quote and len(by_quote) >= limit:
            continue
        by_quote.setdefault(quote, [])
        if ident not in by_quote[quote]:
            by_quote[quote].append(ident)
    claims = [
        {"id": f"c{n}", "text": quote, "evidence": ids}
        for n, (quote, ids) in enumerate(by_quote.items(), 1)
    ]
    return {"claims": claims, "retracted": []}
