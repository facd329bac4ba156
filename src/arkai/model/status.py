"""Enumerations of the evidence contract (seed 000, V1, plus the labelled V1.1 extensions).

Only an exact byte match is ``resolved`` / ``ambiguous`` (:data:`VERIFIED`). A span found any
other way has its own status and is never counted as valid: ``matched_case_insensitive``
(``--match-mode insensitive``), ``matched_fuzzy`` (``--match-mode fuzzy``) and
``reanchored_fuzzy`` (a re-anchor suggestion after a transcript edit, waiting for a person to
accept it with ``arkai evidence reanchor --accept``).
"""

from __future__ import annotations

from typing import Final

RESOLVED: Final = "resolved"
AMBIGUOUS: Final = "ambiguous"
UNRESOLVED: Final = "unresolved"
MATCHED_CASE_INSENSITIVE: Final = "matched_case_insensitive"
MATCHED_FUZZY: Final = "matched_fuzzy"
REANCHORED_FUZZY: Final = "reanchored_fuzzy"
#: Statuses with a span whose bytes equal the quote: the only ones counted as valid receipts.
VERIFIED: Final = (RESOLVED, AMBIGUOUS)
#: Statuses with a span that is *not* an exact match: shown, labelled, never counted as valid.
UNVERIFIED_SPAN: Final = (MATCHED_CASE_INSENSITIVE, MATCHED_FUZZY, REANCHORED_FUZZY)
STATUSES: Final = (RESOLVED, AMBIGUOUS, UNRESOLVED, *UNVERIFIED_SPAN)

#: V1 methods are ``exact``, ``none`` and ``normalized_hint``. The rest are only ever produced
#: behind an explicit option, and always labelled so a reader knows the span is not a V1 match.
METHOD_EXACT: Final = "exact"
METHOD_NONE: Final = "none"
METHOD_NORMALIZED_HINT: Final = "normalized_hint"
METHOD_CASE_INSENSITIVE: Final = "case_insensitive"
METHOD_FUZZY: Final = "fuzzy"
METHOD_REANCHOR: Final = "reanchor"
#: A re-anchor suggestion a person accepted: the quote became the text at the new span.
METHOD_REANCHOR_ACCEPTED: Final = "reanchor_accepted"
METHODS: Final = (
    METHOD_EXACT,
    METHOD_NONE,
    METHOD_NORMALIZED_HINT,
    METHOD_CASE_INSENSITIVE,
    METHOD_FUZZY,
    METHOD_REANCHOR,
    METHOD_REANCHOR_ACCEPTED,
)


def is_verified(status: str) -> bool:
    """True for an exact byte match (``resolved`` / ``ambiguous``), the only valid receipts."""
    return status in VERIFIED


REASON_NO_MATCH: Final = "no_match"
REASON_MULTIPLE: Final = "multiple_matches"
REASON_NORMALIZED_ONLY: Final = "normalized_match_only"
REASONS: Final = (REASON_NO_MATCH, REASON_MULTIPLE, REASON_NORMALIZED_ONLY)

#: Match modes a caller may ask for. ``exact`` is V1 and the default.
MODE_EXACT: Final = "exact"
MODE_INSENSITIVE: Final = "insensitive"
MODE_FUZZY: Final = "fuzzy"
MODES: Final = (MODE_EXACT, MODE_INSENSITIVE, MODE_FUZZY)
