"""arkai's own detection rules for ``redact`` (detect-secrets' plugins add more).

A :class:`Rule` is a pattern, an optional cheap ``hint`` (the rule is skipped on text without
it), and an optional ``accept`` that checks a candidate (a checksum, a shape) and returns the
span to replace, or None. Numbers that carry a checksum are only redacted when it holds.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Protocol

from arkai.core.redact_checks import card_ok, iban_ok, nino_ok, phone_digits_ok, ssn_ok

Span = tuple[int, int]


@dataclass(frozen=True, slots=True)
class Needles:
    """A hint made of literal strings: ``in`` is far faster than any pattern."""

    words: tuple[str, ...]

    def search(self, text: str) -> bool:
        return any(word in text for word in self.words)


def words(*literal: str) -> Needles:
    return Needles(literal)


class Finder(Protocol):
    """What a rule's pattern does: a compiled pattern, or several run as one (a plugin's)."""

    def finditer(
        self, string: str, pos: int = ..., endpos: int = ...
    ) -> Iterator[re.Match[str]]: ...


@dataclass(frozen=True, slots=True)
class Rule:
    """One detector: what it finds (``kind``) and how."""

    kind: str
    """The placeholder's label, ``[REDACTED:<kind>]``."""
    pattern: Finder
    hint: re.Pattern[str] | Needles | None = None
    """Searched first; when absent from the text the rule is skipped."""
    accept: Callable[[re.Match[str]], Span | None] | None = None
    """The span to replace for a candidate, or None to leave it; default: ``group``'s span."""
    group: int = 0
    kind_of: Callable[[re.Match[str]], str] | None = None
    """The kind of one match, when a rule finds several (default: ``kind``)."""
    also_kinds: tuple[str, ...] = ()
    """The other kinds ``kind_of`` may return."""
    lowered: bool = False
    """Hint and pattern run on the lower-cased text (the pattern is written in lower case), which
    is much faster than a case-insensitive pattern; spans are the same."""
    in_digit_runs: bool = False
    """Matches are runs of digits, ``+ ( ) . -`` and spaces: the pattern runs only on such runs
    that hold 9 or more characters (found once for all such rules)."""


def _c(pattern: str, flags: int = 0) -> re.Pattern[str]:
    return re.compile(pattern, flags)


# Edges: a value never starts or ends inside a longer run of letters/digits.
_NB = r"(?<![A-Za-z0-9])"
_NA = r"(?![A-Za-z0-9])"


def _whole_if(
    check: Callable[[str], bool], group: int = 0
) -> Callable[[re.Match[str]], Span | None]:
    def accept(m: re.Match[str]) -> Span | None:
        return m.span(group) if check(m.group(group)) else None

    return accept


def _has_digit_and_letter(value: str) -> bool:
    return any(c.isdigit() for c in value) and any(c.isalpha() for c in value)


# ------------------------------------------------------------------------------ keys and tokens

_PRIVATE_KEY = _c(
    r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
    r"(?:[A-Za-z0-9+/=\s:,.\-\\]*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
    r"|(?:[ \t]*(?:\r?\n|\\r?\\n)[ \t]*[A-Za-z0-9+/=]{8,})*)"
)
_PUTTY_KEY = _c(r"PuTTY-User-Key-File-\d+:[^\n]*(?:\n[^\n]*){0,60}?\nPrivate-MAC: *[0-9a-fA-F]+")
_JWT = _c(
    r"(?<![A-Za-z0-9\-])eyJ[A-Za-z0-9_\-]{6,}\.eyJ[A-Za-z0-9_\-]{6,}\.[A-Za-z0-9_\-]*"
    r"(?![A-Za-z0-9_\-])"
)
_ANTHROPIC = _c(r"sk-ant-(?<![A-Za-z0-9\-]sk-ant-)[A-Za-z0-9_\-]{20,}")
_OPENAI = _c(r"sk-(?<![A-Za-z0-9\-]sk-)(?!ant-)(?=[A-Za-z_\-]*[0-9])[A-Za-z0-9_\-]{20,}")
_GITHUB = _c(
    r"g(?<![A-Za-z0-9]g)(?:h[pousr]_[A-Za-z0-9]{30,}|ithub_pat_[A-Za-z0-9_]{40,})"
    r"(?![A-Za-z0-9])"
)
_SLACK = _c(r"x(?<![A-Za-z0-9]x)(?:ox[abeoprs]-[A-Za-z0-9\-]{10,}|app-\d-[A-Za-z0-9\-]{10,})")
_SLACK_HOOK = _c(
    r"http(?:s)?://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/\-]{8,}"
)
# Webhook URLs that are their own credential (anyone holding one can post): Discord's, Microsoft
# Teams' (Office 365 connectors, old and new hosts) and Zapier's catch hooks, the URL whole as
# Slack's above.
_WEBHOOK = _c(
    r"https://(?:(?:ptb\.|canary\.)?discord(?:app)?\.com/api/(?:v\d+/)?webhooks/\d{15,22}/"
    r"[A-Za-z0-9_\-]{40,}"
    r"|(?:outlook\.office(?:365)?\.com/webhook|[a-z0-9\-]+\.webhook\.office\.com/webhookb2)/"
    r"[A-Za-z0-9@/\-]{40,}"
    r"|hooks\.zapier\.com/hooks/catch/\d+/[A-Za-z0-9]{5,}/?)"
)
_STRIPE = _c(_NB + r"(?:[srp]k_(?:live|test)_[0-9A-Za-z]{10,247}|whsec_[A-Za-z0-9+/=]{20,})")
_GOOGLE_KEY = _c(r"AIza(?<![A-Za-z0-9]AIza)[0-9A-Za-z_\-]{35}(?![A-Za-z0-9_\-])")
_GOOGLE_OAUTH = _c(
    r"(?<![A-Za-z0-9\-])(?:GOCSPX-[A-Za-z0-9_\-]{20,}|ya29\.[0-9A-Za-z_\-]{20,}"
    r"|1//0[0-9A-Za-z_\-]{30,})"
)
_HUGGINGFACE = _c(r"(?<![A-Za-z0-9])(?:hf_|api_org_)[A-Za-z0-9]{30,}(?![A-Za-z0-9])")
_AWS_ACCESS = _c(r"A(?<![A-Za-z0-9]A)(?:KIA|SIA|BIA|CCA)[A-Z0-9]{16}" + _NA)
_AWS_SECRET = _c(
    r"((?:aws_?secret_?(?:access_?)?key|secret_?access_?key)[\"']?\s*[:=]\s*[\"']?)"
    r"([a-z0-9/+=]{40})(?![a-z0-9/+=])"
)

# --------------------------------------------------------------------------- credentials in text

# scheme://user:password@host — the password is the part up to the last "@" before the host.
_URL_PASSWORD = _c(r"://[^\s:/?#@\"'<>\[\]]*:([^\s/?#\"'<>]+)@(?=[A-Za-z0-9\[])")
_BEARER = _c(
    r"(?:(?<![a-z])bearer\s+|(?<![a-z])authorization\s*[:=]\s*[\"']?(?:basic|token|bearer)?\s*)"
    r"([a-z0-9\-._~+/]{16,}=*)"
)
_ASSIGN_KEY = (
    r"(?:(pass(?:word|wd|phrase)?|pwd)|secret|api[_\-]?key|apikey"
    r"|access[_\-]?token|auth[_\-]?token|refresh[_\-]?token|private[_\-]?key)"
)
_ASSIGNMENT = _c(
    _ASSIGN_KEY + r"[\"']?[ \t]*(?:=|:|=>|:=)[ \t]*"
    r"(?:\"([^\"\n]{4,200})\"|'([^'\n]{4,200})'|([^\s\"'`,;&<>\[\]{}()]{6,200}))"
)
# A query parameter named for a credential; ``x-amz-`` and ``x-goog-`` are the prefixes of
# presigned S3 and Cloud Storage links (their signature and session token).
_URL_SECRET = _c(
    r"[?&](?:x-(?:amz|goog)-)?(?:access_token|api_?key|auth|token|client_secret|password|passwd"
    r"|secret|sig|signature|key|security-token)=([^&\s#\"'<>\[\]]{8,})"
)
_IDENTIFIER = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*(?:\.[A-Za-z_$][A-Za-z0-9_$]*)*(?:\(\))?")
_DUMMY = re.compile(
    r"(?i)^[<{\[(]*(?:x+|\*+|\.+|none|null|nil|true|false|undefined|changeme|pass(?:word|wd)?"
    r"|pwd|pw|secret|token|key|your[_\-]?\w*|my[_\-]?\w*)[>}\])]*$"
)


def is_dummy(value: str) -> bool:
    """A stand-in, not a value: ``password``, ``<password>``, ``xxx``, ``***``, ``your_key``."""
    return _DUMMY.match(value) is not None


def _real_value(m: re.Match[str]) -> Span | None:
    return None if is_dummy(m.group(1)) else m.span(1)


def _assignment_value(m: re.Match[str]) -> Span | None:
    for group, quoted in ((2, True), (3, True), (4, False)):
        value = m.group(group)
        if value is None:
            continue
        if _DUMMY.match(value) or value.lower().startswith(
            ("${", "{{", "<", "%", "$(", "[redacted")
        ):
            return None
        if _looks_like_code(value) if not quoted else _only_words(value):
            return None
        return m.span(group)
    return None


def _only_words(value: str) -> bool:
    """A quoted label ("Password", "Enter your password"), not a password: letters and spaces."""
    return all(c.isalpha() or c == " " for c in value)


def _looks_like_code(value: str) -> bool:
    """A bare value that reads as a name in code (``settings.SECRET``, ``getpass()``,
    ``hashed_pw``) rather than a literal: an identifier chain without digits, or with a dot."""
    if not _IDENTIFIER.fullmatch(value):
        return False
    return "." in value or "(" in value or not any(c.isdigit() for c in value)


def _assignment_kind(m: re.Match[str]) -> str:
    return "password" if m.group(1) is not None else "secret"


def _token_value(m: re.Match[str]) -> Span | None:
    value = m.group(1)
    if value.lower().startswith("[redacted") or not _has_digit_and_letter(value):
        return None
    return m.span(1)


# ----------------------------------------------------------------------------- e-mail addresses

_EMAIL = _c(
    r"(?<![A-Za-z0-9._%+\-])[A-Za-z0-9][A-Za-z0-9._%+\-]{0,63}"
    r"@((?:[A-Za-z0-9](?:[A-Za-z0-9\-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,24})"
    r"(?![A-Za-z0-9\-])"
)
_AT = r"\s*(?:\[at\]|\(at\)|\{at\}|<at>)\s*"
_DOT = r"(?:\s*(?:\[dot\]|\(dot\)|\{dot\}|<dot>)\s*|\.)"
_EMAIL_SPELLED = _c(
    r"(?i)(?<![A-Za-z0-9._%+\-])[A-Za-z0-9][A-Za-z0-9._%+\-]{0,63}" + _AT
    + r"[A-Za-z0-9\-]{1,63}(?:" + _DOT + r"[A-Za-z0-9\-]{1,63})*" + _DOT + r"[A-Za-z]{2,24}"
    + r"(?![A-Za-z0-9\-])"
)  # fmt: skip
_NOT_TLD_WORDS = (
    "png jpg jpeg gif svg webp ico bmp tif tiff avif heic pdf js mjs cjs ts tsx jsx css scss "
    "py rb go rs java kt c h cpp hpp cs php sh json yaml yml toml ini cfg lock md txt html htm "
    "xml csv zip gz tar wasm map vue svelte docx xlsx pptx doc xls ppt mp3 mp4 mov wav"
)
_NOT_TLDS = frozenset(_NOT_TLD_WORDS.split())


def _email_span(m: re.Match[str]) -> Span | None:
    """The address; a file extension glued after it (``a@b.com.pdf``) is not part of it."""
    after = m.string[m.end() : m.end() + 2]
    if after.startswith("@") or (after.startswith(":") and after[1:].strip()):
        return None  # "a@b.c@d": an object path; "git@host:org/repo": an SSH remote
    before = m.string[max(0, m.start() - 300) : m.start()].rsplit(None, 1)[-1:]
    if before and "://" in before[0] and not re.search(r"://.*[/?#]", before[0]):
        return None  # "scheme://user:pass@host": the password rule's, not an address
    labels = m.group(1).split(".")
    if any(label.isdigit() for label in labels):
        return None
    while len(labels) >= 2 and labels[-1].lower() in _NOT_TLDS:
        labels.pop()
    if len(labels) < 2 or not labels[-1].isalpha() or len(labels[-1]) < 2:
        return None
    return m.start(), m.start(1) + len(".".join(labels))


# ---------------------------------------------------------------------------- numbers with rules

_NUM_BEFORE = r"(?<![0-9A-Za-z.,\-/+])"
_NUM_AFTER = r"(?![0-9A-Za-z\-/+]|[.,][0-9])"
_CARD = _c(
    r"(?<![0-9])\d{4}(?:\d{8,15}|([ \-])\d{4}\1\d{4}\1\d{1,7}|([ \-])\d{6}\2\d{4,5})(?![0-9])"
)
_IBAN = _c(_NB + r"[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?" + _NA)
_SSN = _c(r"(?<![0-9\-])\d{3}([- ])\d{2}\1\d{4}(?![0-9\-])")
_SSN_LABELLED = _c(
    r"(?<![A-Za-z])(?:SSN|ssn|Ssn|[Ss]ocial [Ss]ecurity (?:[Nn]umber|[Nn]o\.?))"
    r"\W{0,3}(\d{9})(?![0-9])"
)
_NINO = _c(_NB + r"[A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z] ?\d{2} ?\d{2} ?\d{2} ?[A-D]" + _NA)
# Digit groups are possessive (``\d{1,5}+``): a long digit run is never re-split, so a hostile
# "+111…" costs linear time, not one try per way to cut it.
_PHONE = _c(
    r"(?<![A-Za-z0-9+.\-/)\]])(?:"
    r"\+\d{1,3}+(?:[ .\-]?(?:\(\d{1,4}\)|\d{1,5}+)){2,7}"
    r"|(?:1[ .\-]?)?\(\d{3}\)[ .\-]?\d{3}[ .\-]\d{4}"
    r"|(?:1([ .\-]))?\d{3}([ .\-])\d{3}\2\d{4}"
    r")(?!\w)(?![.\-/]\d)"
)
_PHONE_00 = _c(
    _NUM_BEFORE + r"00[1-9]\d{0,2}+(?:[ .\-]?(?:\(\d{1,4}\)|\d{1,5}+)){2,7}" + _NUM_AFTER
)
_PHONE_UK = _c(
    _NUM_BEFORE
    + r"(?:\(0[1-9]\d{1,3}\)[ \-]?\d{3,4}[ \-]?\d{3,4}|0[1-9]\d{1,3}[ \-]\d{3,4}[ \-]?\d{3,4}"
    + r"|07[1-9]\d{8})"
    + _NUM_AFTER
)


def _phone_ok(m: re.Match[str]) -> Span | None:
    text = m.group(0)
    if text.startswith("+"):
        return m.span() if phone_digits_ok(text, 10, 15) else None
    lead = m.group(1)
    if lead is not None and lead != m.group(2):
        return None  # "1-555 123 4567": mixed separators are not one number
    return m.span() if phone_digits_ok(text, 10, 16) else None


def _phone_00_ok(m: re.Match[str]) -> Span | None:
    text = m.group(0)
    groups = re.findall(r"\d+", text[2:])
    if all(len(g) == 2 for g in groups) or not phone_digits_ok(text[2:], 9, 15):
        return None  # "00 11 22 33 44" is a hex dump, not a number
    return m.span()


def _phone_uk_ok(m: re.Match[str]) -> Span | None:
    return m.span() if phone_digits_ok(m.group(0), 10, 11) else None


def _hint(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


DIGIT_RUN = re.compile(r"[\d+(](?:[().\- +]{0,2}\d){8,}")
"""Where ``in_digit_runs`` rules look: 9+ digits, at most two of ``( ) . - +`` or spaces between
two of them (so no date or time is one)."""

RULES: tuple[Rule, ...] = (
    Rule("private_key", _PRIVATE_KEY, words("PRIVATE KEY")),
    Rule("private_key", _PUTTY_KEY, words("PuTTY-User-Key")),
    Rule("jwt", _JWT, words("eyJ")),
    Rule("anthropic_key", _ANTHROPIC, words("sk-ant-")),
    Rule("openai_key", _OPENAI, words("sk-")),
    Rule("github_token", _GITHUB, words("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_")),
    Rule("slack_webhook", _SLACK_HOOK, words("hooks.slack.com")),
    Rule("slack_token", _SLACK, words("xox", "xapp-")),
    Rule("webhook_url", _WEBHOOK, words("/webhook", "hooks.zapier.com")),
    Rule("stripe_key", _STRIPE, words("k_live_", "k_test_", "whsec_")),
    Rule("google_api_key", _GOOGLE_KEY, words("AIza")),
    Rule("google_oauth", _GOOGLE_OAUTH, words("GOCSPX-", "ya29.", "1//0")),
    Rule("huggingface_token", _HUGGINGFACE, words("hf_", "api_org_")),
    Rule("aws_access_key", _AWS_ACCESS, words("AKIA", "ASIA", "ABIA", "ACCA")),
    Rule("aws_secret", _AWS_SECRET, words("secret"), group=2, lowered=True),
    Rule("url_password", _URL_PASSWORD, words("://"), _real_value),
    Rule("email", _EMAIL, words("@"), _email_span),
    Rule(
        "email",
        _EMAIL_SPELLED,
        words("at]", "at)", "at}", "at>", "AT]", "AT)", "AT}", "AT>", "At]", "At)"),
    ),
    Rule("iban", _IBAN, _hint("[A-Z]{2}\\d\\d ?[A-Z0-9]{4}"), _whole_if(iban_ok)),
    Rule("credit_card", _CARD, None, _whole_if(card_ok), in_digit_runs=True),
    Rule("us_ssn", _SSN, None, _whole_if(ssn_ok), in_digit_runs=True),
    Rule(
        "us_ssn",
        _SSN_LABELLED,
        _hint("(?<![A-Za-z])(?:SSN|ssn|Ssn)|ocial [Ss]ecurity"),
        _whole_if(ssn_ok, 1),
    ),
    Rule("uk_nino", _NINO, _hint("[A-Z]{2} ?\\d\\d ?\\d\\d ?\\d\\d ?[A-D]"), _whole_if(nino_ok)),
    Rule("phone", _PHONE, None, _phone_ok, in_digit_runs=True),
    Rule("phone", _PHONE_00, None, _phone_00_ok, in_digit_runs=True),
    Rule("phone", _PHONE_UK, None, _phone_uk_ok, in_digit_runs=True),
)

GENERIC_RULES: tuple[Rule, ...] = (
    Rule("bearer_token", _BEARER, words("bearer", "authorization"), _token_value, lowered=True),
    Rule("url_secret", _URL_SECRET, _hint("[?&][a-z_\\-]+="), _token_value, lowered=True),
    Rule(
        "password",
        _ASSIGNMENT,
        _hint(_ASSIGN_KEY + "[\"']?[ \t]*[:=]"),
        _assignment_value,
        kind_of=_assignment_kind,
        also_kinds=("secret",),
        lowered=True,
    ),
)
