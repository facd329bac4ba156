"""Redaction of secrets and personal data (DESIGN §6: chats are redacted at ``add`` time).

``redact(text)`` replaces every value found with a typed placeholder such as
``[REDACTED:email]`` and returns how many of each kind it replaced — never the values. It is
pure, deterministic and idempotent: placeholders never match a rule, and the passes repeat
until nothing changes, so ``redact(redact(t)[0])[0] == redact(t)[0]``.

Detection runs on a *view* of the text in which HTML character references (``&#64;``,
``&lt;``, ``&#10;``) are decoded and ``<br>`` line breaks (also escaped, ``&lt;br&gt;``) read as
new lines; each value found is mapped back to the characters it was written with, and only
those are replaced, so the rest of the text keeps its bytes. The view costs one pass and is
only built when the text holds ``&`` or ``<br``; every rule is one regular-expression scan
with a cheap hint first, so the whole is linear in the text.

Detectors: arkai's own rules (:mod:`arkai.core.redact_rules`: keys and tokens of OpenAI,
Anthropic, GitHub, Slack, Stripe, Google, Hugging Face and AWS, private keys, JWTs, bearer
tokens, passwords in URLs and assignments, e-mail addresses (also ``[at]``), payment cards
(issuer + Luhn), IBANs (mod 97), US SSNs (issued ranges), UK NI numbers, phone numbers) and
detect-secrets' regex plugins (:mod:`arkai.core.redact_plugins`). Where two detections
overlap, the union is replaced once, under the kind of the one that starts first (the longer,
then the earlier rule, on a tie).
"""

from __future__ import annotations

import html
import re
from bisect import bisect_right
from collections.abc import Iterable, Iterator
from functools import lru_cache
from typing import Any

from arkai.core.fuzzy import fold_case
from arkai.core.redact_plugins import plugin_rules
from arkai.core.redact_rules import DIGIT_RUN, GENERIC_RULES, RULES, Rule, Span
from arkai.errors import InvalidInputError

_MAX_PASSES = 6
_PLACEHOLDER = re.compile(r"\[REDACTED:[a-z0-9_]+\]")
_MIN_SECRET = 6  # no kind matches fewer characters ("a@b.io")


def placeholder(kind: str) -> str:
    """The text a redacted ``kind`` value becomes."""
    return f"[REDACTED:{kind}]"


@lru_cache(maxsize=1)
def all_rules() -> tuple[Rule, ...]:
    """Every detector in priority order: arkai's rules for named formats, detect-secrets'
    plugins, then arkai's generic rules (``name = value``, bearer tokens, URL parameters)."""
    return RULES + plugin_rules() + GENERIC_RULES


def _kinds_in_order() -> tuple[str, ...]:
    seen: dict[str, None] = {}
    for rule in all_rules():
        seen.setdefault(rule.kind, None)
        for extra in rule.also_kinds:
            seen.setdefault(extra, None)
    return tuple(seen)


ALL_KINDS: tuple[str, ...] = _kinds_in_order()
#: The kinds that are personal data rather than credentials.
PERSONAL_KINDS = frozenset({"email", "iban", "credit_card", "us_ssn", "uk_nino", "phone"})
#: Every kind that is a credential: keys, tokens, passwords (in a URL, its query or an
#: assignment), private keys. What a configuration file must never hold in the clear.
SECRET_KINDS: tuple[str, ...] = tuple(k for k in ALL_KINDS if k not in PERSONAL_KINDS)


# --------------------------------------------------------------------------- the detection view

_VIEW_TOKEN = re.compile(
    r"&lt;br\s*/?&gt;|<br\s*/?>"
    r"|&(?:#[0-9]{1,7};?|#[xX][0-9a-fA-F]{1,6};?|[A-Za-z][A-Za-z0-9]{1,31};)",
    re.IGNORECASE,
)


class _View:
    """The text as detectors see it, and the way back to the original's offsets."""

    __slots__ = ("_tokens", "_vstarts", "text")

    def __init__(self, original: str) -> None:
        self._vstarts: list[int] = []
        self._tokens: list[tuple[int, int, int, int]] = []  # view start, view len, orig start, len
        if "&" not in original and "<br" not in original and "<BR" not in original:
            self.text = original
            return
        parts: list[str] = []
        last = 0
        vpos = 0
        for m in _VIEW_TOKEN.finditer(original):
            token = m.group(0)
            is_break = token.lower().startswith(("<br", "&lt;br"))
            decoded = "\n" if is_break else html.unescape(token)
            if decoded == token:
                continue
            parts.append(original[last : m.start()])
            vpos += m.start() - last
            self._vstarts.append(vpos)
            self._tokens.append((vpos, len(decoded), m.start(), len(token)))
            parts.append(decoded)
            vpos += len(decoded)
            last = m.end()
        parts.append(original[last:])
        self.text = "".join(parts)

    def to_original(self, i: int, *, end: bool) -> int:
        k = bisect_right(self._vstarts, i) - 1
        if k < 0:
            return i
        v, d, o, n = self._tokens[k]
        if i >= v + d:
            return o + n + (i - v - d)
        if i == v:
            return o
        return o + n if end else o


# ------------------------------------------------------------------------------------- the engine


_ALL = frozenset(ALL_KINDS)


def _check_kinds(kinds: Iterable[str]) -> frozenset[str]:
    if kinds is ALL_KINDS:
        return _ALL
    wanted = frozenset(kinds)
    unknown = sorted(wanted - _ALL)
    if unknown:
        raise InvalidInputError(
            f"redact: unknown kind(s) {', '.join(unknown)}; known: {', '.join(ALL_KINDS)}"
        )
    return wanted


@lru_cache(maxsize=64)
def _active(wanted: frozenset[str]) -> tuple[tuple[int, Rule], ...]:
    """The rules (with their priority) that can find one of ``wanted``."""
    return tuple(
        (priority, rule)
        for priority, rule in enumerate(all_rules())
        if rule.kind in wanted or wanted.intersection(rule.also_kinds)
    )


def _detect(text: str, wanted: frozenset[str]) -> list[tuple[int, int, int, str]]:
    """(start, end, rule priority, kind) of every value found in ``text``."""
    found: list[tuple[int, int, int, str]] = []
    lowered: str | None = None
    runs: list[tuple[int, int]] | None = None
    for priority, rule in _active(wanted):
        subject = text
        if rule.lowered:
            if lowered is None:
                lowered = fold_case(text)
            subject = lowered
        if rule.hint is not None and not rule.hint.search(subject):
            continue
        matches: Iterable[re.Match[str]]
        if rule.in_digit_runs:
            if runs is None:
                runs = [m.span() for m in DIGIT_RUN.finditer(text)]
            matches = (
                m
                for start, end in runs
                for m in rule.pattern.finditer(text, max(0, start - 1), end + 1)
            )
        else:
            matches = rule.pattern.finditer(subject)
        for m in matches:
            span: Span | None = rule.accept(m) if rule.accept else m.span(rule.group)
            if span is None or span[1] <= span[0] or _PLACEHOLDER.fullmatch(text, *span):
                continue
            kind = rule.kind_of(m) if rule.kind_of else rule.kind
            if kind in wanted:
                found.append((span[0], span[1], priority, kind))
    return found


def _merge(spans: list[tuple[int, int, int, str]]) -> list[tuple[int, int, str]]:
    """Overlapping spans → their union, labelled by the first (longest, then earliest rule)."""
    spans.sort(key=lambda s: (s[0], -s[1], s[2]))
    merged: list[tuple[int, int, str]] = []
    for start, end, _, kind in spans:
        if merged and start < merged[-1][1]:
            last = merged[-1]
            merged[-1] = (last[0], max(last[1], end), last[2])
        else:
            merged.append((start, end, kind))
    return merged


def _one_pass(text: str, wanted: frozenset[str], counts: dict[str, int]) -> str:
    view = _View(text)
    found = _detect(view.text, wanted)
    if not found:
        return text
    if view.text is not text:
        found = [
            (view.to_original(s, end=False), view.to_original(e, end=True), p, k)
            for s, e, p, k in found
        ]
    out: list[str] = []
    last = 0
    for start, end, kind in _merge(found):
        out.append(text[last:start])
        out.append(placeholder(kind))
        counts[kind] = counts.get(kind, 0) + 1
        last = end
    out.append(text[last:])
    return "".join(out)


def redact(text: str, kinds: Iterable[str] = ALL_KINDS) -> tuple[str, dict[str, int]]:
    """``text`` with every secret of ``kinds`` replaced by ``[REDACTED:<kind>]``, and the number
    replaced per kind (only kinds found; keys sorted). Unknown kinds raise InvalidInputError."""
    wanted = _check_kinds(kinds)
    counts: dict[str, int] = {}
    if len(text) < _MIN_SECRET or not wanted:
        return text, counts
    for _ in range(_MAX_PASSES):
        before = sum(counts.values())
        text = _one_pass(text, wanted, counts)
        if sum(counts.values()) == before:
            break
    return text, dict(sorted(counts.items()))


def without_credentials(text: str) -> str:
    """``text`` — a URL, a tool's message naming one — with every credential in it (a password
    before the ``@``, a token in the query, a key: :data:`SECRET_KINDS`) replaced, and personal
    data such as the user name in ``ssh://me@host`` left as it is: how arkai shows an endpoint."""
    return redact(text, SECRET_KINDS)[0]


def scrub(text: str) -> str:
    """``text`` with every kind redacted (for messages, logs and names; counts dropped)."""
    return redact(text)[0]


# Many short strings (a chat's messages, every string of its JSON) are redacted as one text, so
# each rule scans once instead of once per string. The separator breaks every rule's match (a
# line break, then characters no rule accepts); if a replacement swallowed one anyway, the
# strings are redacted one by one instead.
_SEP = "\n\u2063\u2063\n"


def redact_many(
    texts: list[str], kinds: Iterable[str] = ALL_KINDS
) -> tuple[list[str], dict[str, int]]:
    """``redact`` of each text (same results), and the counts summed over all of them."""
    if len(texts) > 1 and not any(_SEP in t for t in texts):
        joined, counts = redact(_SEP.join(texts), kinds)
        parts = joined.split(_SEP)
        if len(parts) == len(texts):
            return parts, counts
    done = [redact(t, kinds) for t in texts]
    return [t for t, _ in done], merge_counts(*(c for _, c in done))


def redact_json(value: Any, kinds: Iterable[str] = ALL_KINDS) -> Any:
    """A copy of parsed JSON with every string redacted (of ``kinds``), object keys included."""
    strings: list[str] = []
    _collect(value, strings)
    if not strings:
        return value
    # Each string is redacted on its own (redact_many), so a repeated one (a key of every
    # event in a batch) is redacted once.
    unique = list(dict.fromkeys(strings))
    done = dict(zip(unique, redact_many(unique, kinds)[0], strict=True))
    return _rebuild(value, iter([done[s] for s in strings]))


def _collect(value: Any, out: list[str]) -> None:
    if isinstance(value, str):
        out.append(value)
    elif isinstance(value, list):
        for v in value:
            _collect(v, out)
    elif isinstance(value, dict):
        for k, v in value.items():
            if isinstance(k, str):
                out.append(k)
            _collect(v, out)


def _rebuild(value: Any, cleaned: Iterator[str]) -> Any:
    if isinstance(value, str):
        return next(cleaned)
    if isinstance(value, list):
        return [_rebuild(v, cleaned) for v in value]
    if isinstance(value, dict):
        out: dict[Any, Any] = {}
        for k, v in value.items():
            key = next(cleaned) if isinstance(k, str) else k
            out[key] = _rebuild(v, cleaned)
        return out
    return value


def merge_counts(*many: dict[str, int]) -> dict[str, int]:
    """Sum several ``redact`` count maps (keys sorted)."""
    total: dict[str, int] = {}
    for counts in many:
        for kind, n in counts.items():
            total[kind] = total.get(kind, 0) + n
    return dict(sorted(total.items()))
