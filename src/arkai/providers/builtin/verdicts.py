"""``validate_claims``: a verdict per claim from the lexical support of its quote.

The support of a claim is the content words (stop words and filler removed, plurals folded) of
its quote and of the transcript sentence(s) the quote lies in. ``overlap`` is the share of the
claim's content words found there (numbers must match exactly; other words may differ in their
ending, e.g. "compiled" / "compiler"): ``grounded`` from 0.8, ``partial`` from 0.4, else
``unsupported``. A quote that is not in a given transcript caps the verdict at ``partial``.
The note states the overlap and the missing words.

With ``stance`` (``variables: {stance: true}``, what ``arkai ask`` and ``arkai eval verify``
send) each verdict also carries ``stance``: ``contradicts`` when the quote reverses the claim —
an odd number of negations in one and not the other ("not", "no", "never", "without", "fails"
…), or opposite directions ("increases" / "decreases", "higher" / "lower" …), the reason
leading the note; else ``supports`` (grounded / partial) or ``none``. The verdict stays the
lexical one: the caller decides what a contradiction means (``arkai ask`` counts it as
unsupported; ``arkai eval verify`` labels the abstract CONTRADICT).

Input (``Request.input``): JSON ``{"claims": [{"id", "claim", "quote"}], "transcript": str}``,
a bare JSON list of claims (no transcript), or the runner's ``CLAIMS:`` JSON list followed by
``TRANSCRIPT:`` and the transcript text.
"""

from __future__ import annotations

import json
from typing import Any

from arkai.errors import InvalidInputError
from arkai.patterns.render import CLAIMS_HEADER, split_claims_input
from arkai.providers.base import ProviderError
from arkai.providers.builtin.text import STOPWORDS, Unit, build_units, stem, tokens

GROUNDED = 0.8
PARTIAL = 0.4
MAX_MISSING_SHOWN = 8
_NEGATION_WORDS = (
    "not no never none nobody nothing without cannot cant neither nor lack lacks lacking "
    "absent absence fail fails failed unable"
)
NEGATIONS = frozenset(_NEGATION_WORDS.split())
#: Opposite directions: a word of one side in the claim and only words of the other in the quote.
OPPOSITES = (
    ("increas", "decreas"), ("higher", "lower"), ("more", "less"), ("greater", "smaller"),
    ("rais", "reduc"), ("positiv", "negativ"), ("improv", "worsen"), ("enhanc", "inhibit"),
    ("promot", "suppress"), ("activat", "inhibit"), ("gain", "loss"), ("up", "down"),
    ("benefi", "harm"), ("above", "below"), ("elevat", "reduc"), ("accelerat", "slow"),
)  # fmt: skip


def parse_input(raw: str) -> tuple[list[dict[str, Any]], str]:
    """``(claims, transcript)`` from any of the accepted input forms (see the module doc)."""
    body = raw.removeprefix("\ufeff").lstrip()
    if body.startswith(CLAIMS_HEADER):  # the runner's form (patterns.claims_input)
        try:
            return split_claims_input(body)
        except InvalidInputError as exc:
            raise ProviderError(exc.message) from None
    transcript = ""
    try:
        value = json.loads(body) if body else []
    except json.JSONDecodeError as exc:
        raise ProviderError(
            f"validate_claims input is not JSON ({exc.msg})",
            hint='send {"claims": [{"id", "claim", "quote"}], "transcript": "..."}',
        ) from None
    if isinstance(value, dict):
        transcript = str(value.get("transcript") or "")
        value = value.get("claims", [])
    if not isinstance(value, list) or not all(isinstance(c, dict) for c in value):
        raise ProviderError("validate_claims input: claims must be a list of objects")
    return value, transcript


def _terms(text: str) -> dict[str, str]:
    """Content words of ``text``: stem → the word as written (lower case), in order."""
    out: dict[str, str] = {}
    for tok in tokens(text):
        if tok.isdigit() or (len(tok) > 1 and tok not in STOPWORDS):
            out.setdefault(stem(tok.replace("'", "")), tok)
    return out


def _matches(word: str, support: set[str], prefixes: set[str]) -> bool:
    if word in support:
        return True
    if word.isdigit() or len(word) < 5:
        return False
    return word[:5] in prefixes


def _context(units: list[Unit], start: int, end: int) -> str:
    """The text of the units overlapping ``start..end``."""
    return " ".join(u.text for u in units if u.start < end and u.end > start)


def verdict(claim: str, quote: str, transcript: str, units: list[Unit] | None) -> dict[str, str]:
    """``{"verdict", "note"}`` for one claim (see the module doc)."""
    terms = _terms(claim)
    words = list(terms)
    if not words:
        return {"verdict": "unsupported", "note": "the claim has no content words to check"}
    found = True
    context = ""
    if transcript and quote:
        pos = transcript.find(quote)
        if pos < 0:
            pos = transcript.lower().find(quote.lower())
        found = pos >= 0
        if found and units is not None:
            context = _context(units, pos, pos + len(quote))
    support = set(_terms(quote)) | set(_terms(context))
    prefixes = {w[:5] for w in support if len(w) >= 5 and not w.isdigit()}
    missing = [w for w in words if not _matches(w, support, prefixes)]
    hit = len(words) - len(missing)
    ratio = hit / len(words)
    if ratio >= GROUNDED:
        label = "grounded"
    elif ratio >= PARTIAL:
        label = "partial"
    else:
        label = "unsupported"
    note = f"overlap {ratio:.2f} ({hit}/{len(words)} content words)"
    if missing:
        shown = ", ".join(terms[w] for w in missing[:MAX_MISSING_SHOWN])
        more = f" and {len(missing) - MAX_MISSING_SHOWN} more" if len(missing) > 8 else ""
        note += f"; missing: {shown}{more}"
    else:
        note += "; every content word is in the quote or its sentence"
    if not quote:
        label = "unsupported"
        note = "no quote given; " + note
    elif not found:
        if label == "grounded":
            label = "partial"
        note = "quote not found in the transcript; " + note
    return {"verdict": label, "note": note}


def _negations(words: list[str]) -> int:
    return sum(1 for w in words if w in NEGATIONS or w.endswith("n't"))


def _sides(words: list[str]) -> set[tuple[int, int]]:
    out = set()
    for w in words:
        for n, pair in enumerate(OPPOSITES):
            for side, prefix in enumerate(pair):
                if w == prefix or (len(prefix) > 3 and w.startswith(prefix)):
                    out.add((n, side))
    return out


def conflict(claim: str, quote: str) -> str | None:
    """Why ``quote`` reverses ``claim`` (negation or opposite direction), or None."""
    cw, qw = tokens(claim), tokens(quote)
    if _negations(cw) % 2 != _negations(qw) % 2:
        return "one of claim and quote is negated and the other is not"
    cs, qs = _sides(cw), _sides(qw)
    for n, side in sorted(cs):
        if (n, 1 - side) in qs and (n, side) not in qs:
            a, b = OPPOSITES[n][side], OPPOSITES[n][1 - side]
            return f"the claim says {a}…, the quote {b}…"
    return None


def validate_claims(raw: str, *, stance: bool = False) -> list[dict[str, Any]]:
    """The ``validate_claims`` output for the request input ``raw``."""
    claims, transcript = parse_input(raw)
    units = build_units(transcript) if transcript else None
    out: list[dict[str, Any]] = []
    for item in claims:
        claim, quote = str(item.get("claim") or ""), str(item.get("quote") or "")
        result: dict[str, Any] = verdict(claim, quote, transcript, units)
        if stance:
            why = conflict(claim, quote) if quote else None
            if why is not None:
                result["note"] = f"contradicted: {why}; " + result["note"]
                result["stance"] = "contradicts"
            else:
                grounded = result["verdict"] != "unsupported"
                result["stance"] = "supports" if grounded else "none"
        ident = item.get("id")
        out.append({"id": "" if ident is None else str(ident), **result})
    return out
