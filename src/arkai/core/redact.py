"""Redaction of secrets and personal data (DESIGN §6: chats are redacted at ``add`` time).

``redact(text)`` replaces every match with a typed placeholder such as ``[REDACTED:email]`` and
returns how many of each kind it replaced — never the values. It is pure and deterministic, and
idempotent: placeholders never match any pattern, and the passes repeat until nothing changes, so
``redact(redact(t)[0])[0] == redact(t)[0]``.

Kinds, applied in this order (earlier kinds win where matches overlap):

``private_key``
    A PEM ``-----BEGIN … PRIVATE KEY-----`` block through its ``-----END … PRIVATE KEY-----``
    line; a block cut off before its END line is redacted through its last base64 line.
``jwt``
    ``eyJ<header>.eyJ<payload>.<signature>`` (base64url segments).
``anthropic_key``
    ``sk-ant-…`` (20+ key characters).
``openai_key``
    ``sk-…``, ``sk-proj-…``, ``sk-svcacct-…`` (20+ key characters, at least one digit).
``github_token``
    ``ghp_``/``gho_``/``ghu_``/``ghs_``/``ghr_`` + 30+ alphanumerics, ``github_pat_…``.
``slack_token``
    ``xoxa-``/``xoxb-``/``xoxp-``/``xoxr-``/``xoxs-`` + 10+ characters.
``aws_access_key``
    ``AKIA``/``ASIA`` + 16 upper-case letters or digits.
``aws_secret``
    40 base64 characters after ``aws_secret_access_key=`` / ``: `` (also ``SecretAccessKey``);
    the key name is kept, only the value is replaced.
``email``
    ``local@domain.tld``; names ending in a file extension (``icon@2x.png``) are not e-mails.
``phone``
    ``+`` and 9–16 digits in groups (``+44 20 7946 0958``, ``+1 (555) 123-4567``), or the US
    forms ``(555) 123-4567``, ``555-123-4567``, ``555.123.4567``, ``555 123 4567`` (optionally
    ``1-`` first). Unseparated digit runs, dates, times, versions, IP addresses, UUIDs and hashes
    are never phones: a candidate must stand alone (no letter, digit, ``.``, ``-`` or ``/``
    glued to either end) and, without ``+``, have exactly the 3-3-4 shape.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from arkai.errors import InvalidInputError

ALL_KINDS: tuple[str, ...] = (
    "private_key",
    "jwt",
    "anthropic_key",
    "openai_key",
    "github_token",
    "slack_token",
    "aws_access_key",
    "aws_secret",
    "email",
    "phone",
)

_MAX_PASSES = 6
_MIN_SECRET = 6  # no kind matches fewer characters ("a@b.io")


def placeholder(kind: str) -> str:
    """The text a redacted ``kind`` value becomes."""
    return f"[REDACTED:{kind}]"


_PRIVATE_KEY = re.compile(
    r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
    r"(?:[A-Za-z0-9+/=\s:,.\-\\]*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
    r"|(?:[ \t]*(?:\r?\n|\\n)[ \t]*[A-Za-z0-9+/=]{8,})*)"
)
_JWT = re.compile(
    r"eyJ(?<![A-Za-z0-9_\-]eyJ)[A-Za-z0-9_\-]{6,}\.eyJ[A-Za-z0-9_\-]{6,}\.[A-Za-z0-9_\-]*"
    r"(?![A-Za-z0-9_\-])"
)
_ANTHROPIC = re.compile(r"sk-ant-(?<![A-Za-z0-9_\-]sk-ant-)[A-Za-z0-9_\-]{20,}")
_OPENAI = re.compile(r"sk-(?<![A-Za-z0-9_\-]sk-)(?!ant-)(?=[A-Za-z_\-]*[0-9])[A-Za-z0-9_\-]{20,}")
_GITHUB = re.compile(
    r"(?<![A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,})"
    r"(?![A-Za-z0-9_])"
)
_SLACK = re.compile(r"xox(?<![A-Za-z0-9]xox)[abprs]-[A-Za-z0-9\-]{10,}")
_AWS_ACCESS = re.compile(r"(?<![A-Za-z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])")
_AWS_SECRET = re.compile(
    r"((?i:aws_?secret_?(?:access_?)?key|secret_?access_?key)[\"']?\s*[:=]\s*[\"']?)"
    r"([A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])"
)
_EMAIL = re.compile(
    r"(?<![A-Za-z0-9._%+\-])[A-Za-z0-9][A-Za-z0-9._%+\-]{0,63}"
    r"@(?:[A-Za-z0-9](?:[A-Za-z0-9\-]{0,61}[A-Za-z0-9])?\.)+([A-Za-z]{2,24})"
    r"(?![A-Za-z0-9\-])"
)
_NOT_TLD_WORDS = (
    "png jpg jpeg gif svg webp ico bmp tif tiff avif heic pdf js mjs cjs ts tsx jsx css scss "
    "py rb go rs java kt c h cpp hpp cs php sh json yaml yml toml ini cfg lock md txt html htm "
    "xml csv zip gz tar wasm map vue svelte"
)
_NOT_TLDS = frozenset(_NOT_TLD_WORDS.split())
_DIGIT = re.compile(r"\d")
_GITHUB_HINT = re.compile(r"gh[pousr]_|github_pat_")
_EDGE_BEFORE = r"(?<![\w+.\-/])"
_EDGE_AFTER = r"(?!\w)(?![.\-/]\d)"
_PHONE = re.compile(
    _EDGE_BEFORE
    + r"(?:"
    + r"\+\d{1,3}(?:[ .\-]?(?:\(\d{1,4}\)|\d{1,5})){2,7}"
    + r"|(?:1[ .\-]?)?\(\d{3}\)[ .\-]?\d{3}[ .\-]\d{4}"
    + r"|(?:1([ .\-]))?\d{3}([ .\-])\d{3}\2\d{4}"
    + r")"
    + _EDGE_AFTER
)


def _email_ok(match: re.Match[str]) -> bool:
    return match.group(1).lower() not in _NOT_TLDS


def _phone_ok(match: re.Match[str]) -> bool:
    text = match.group(0)
    digits = sum(ch.isdigit() for ch in text)
    if text.startswith("+"):
        return 9 <= digits <= 16
    lead = match.group(1)
    if lead is not None and lead != match.group(2):
        return False  # "1-555 123 4567": mixed separators are not one number
    return digits >= 10


# kind → (cheap prefilter, pattern, accept(match) or None, group holding the secret (0 = all))
_Rule = tuple[Callable[[str], bool], re.Pattern[str], Callable[[re.Match[str]], bool] | None, int]
_RULES: dict[str, _Rule] = {
    "private_key": (lambda t: "PRIVATE KEY" in t, _PRIVATE_KEY, None, 0),
    "jwt": (lambda t: "eyJ" in t, _JWT, None, 0),
    "anthropic_key": (lambda t: "sk-ant-" in t, _ANTHROPIC, None, 0),
    "openai_key": (lambda t: "sk-" in t, _OPENAI, None, 0),
    "github_token": (lambda t: _GITHUB_HINT.search(t) is not None, _GITHUB, None, 0),
    "slack_token": (lambda t: "xox" in t, _SLACK, None, 0),
    "aws_access_key": (lambda t: "AKIA" in t or "ASIA" in t, _AWS_ACCESS, None, 0),
    "aws_secret": (lambda t: "ecret" in t or "ECRET" in t, _AWS_SECRET, None, 2),
    "email": (lambda t: "@" in t, _EMAIL, _email_ok, 0),
    "phone": (lambda t: _DIGIT.search(t) is not None, _PHONE, _phone_ok, 0),
}


def _check_kinds(kinds: Iterable[str]) -> tuple[str, ...]:
    if kinds is ALL_KINDS:
        return ALL_KINDS
    wanted = set(kinds)
    unknown = sorted(wanted - set(ALL_KINDS))
    if unknown:
        raise InvalidInputError(
            f"redact: unknown kind(s) {', '.join(unknown)}; known: {', '.join(ALL_KINDS)}"
        )
    return tuple(k for k in ALL_KINDS if k in wanted)


def _apply(kind: str, rule: _Rule, text: str, counts: dict[str, int]) -> str:
    prefilter, pattern, accept, group = rule
    if not prefilter(text):
        return text
    mark = placeholder(kind)

    def replace(match: re.Match[str]) -> str:
        if accept is not None and not accept(match):
            return match.group(0)
        counts[kind] = counts.get(kind, 0) + 1
        if group == 0:
            return mark
        whole = match.group(0)
        start = match.start(group) - match.start(0)
        end = match.end(group) - match.start(0)
        return whole[:start] + mark + whole[end:]

    return pattern.sub(replace, text)


def redact(text: str, kinds: Iterable[str] = ALL_KINDS) -> tuple[str, dict[str, int]]:
    """``text`` with every secret of ``kinds`` replaced by ``[REDACTED:<kind>]``, and the number
    replaced per kind (only kinds found; keys sorted). Unknown kinds raise InvalidInputError."""
    order = _check_kinds(kinds)
    counts: dict[str, int] = {}
    if len(text) < _MIN_SECRET:
        return text, counts
    for _ in range(_MAX_PASSES):
        before = sum(counts.values())
        for kind in order:
            text = _apply(kind, _RULES[kind], text, counts)
        if sum(counts.values()) == before:
            break
    return text, dict(sorted(counts.items()))


def merge_counts(*many: dict[str, int]) -> dict[str, int]:
    """Sum several ``redact`` count maps (keys sorted)."""
    total: dict[str, int] = {}
    for counts in many:
        for kind, n in counts.items():
            total[kind] = total.get(kind, 0) + n
    return dict(sorted(total.items()))
