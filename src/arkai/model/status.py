"""Enumerations of the evidence contract (seed 000, V1, plus the labelled V1.1 methods)."""

from __future__ import annotations

from typing import Final

RESOLVED: Final = "resolved"
AMBIGUOUS: Final = "ambiguous"
UNRESOLVED: Final = "unresolved"
STATUSES: Final = (RESOLVED, AMBIGUOUS, UNRESOLVED)

#: V1 methods are ``exact``, ``none`` and ``normalized_hint``. The rest are only ever produced
#: behind an explicit option, and always labelled so a reader knows the span is not a V1 match.
METHOD_EXACT: Final = "exact"
METHOD_NONE: Final = "none"
METHOD_NORMALIZED_HINT: Final = "normalized_hint"
METHOD_CASE_INSENSITIVE: Final = "case_insensitive"
METHOD_FUZZY: Final = "fuzzy"
METHOD_REANCHOR: Final = "reanchor"
METHODS: Final = (
    METHOD_EXACT,
    METHOD_NONE,
    METHOD_NORMALIZED_HINT,
    METHOD_CASE_INSENSITIVE,
    METHOD_FUZZY,
    METHOD_REANCHOR,
)

REASON_NO_MATCH: Final = "no_match"
REASON_MULTIPLE: Final = "multiple_matches"
REASON_NORMALIZED_ONLY: Final = "normalized_match_only"
REASONS: Final = (REASON_NO_MATCH, REASON_MULTIPLE, REASON_NORMALIZED_ONLY)

#: Match modes a caller may ask for. ``exact`` is V1 and the default.
MODE_EXACT: Final = "exact"
MODE_INSENSITIVE: Final = "insensitive"
MODE_FUZZY: Final = "fuzzy"
MODES: Final = (MODE_EXACT, MODE_INSENSITIVE, MODE_FUZZY)
