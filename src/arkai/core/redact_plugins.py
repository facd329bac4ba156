"""detect-secrets' regex plugins as ``redact`` rules (offline: their ``verify`` is never called).

Each plugin class's ``denylist`` patterns are run over the whole text (the library itself scans
line by line and reports values, not positions). High-entropy and keyword plugins are left out:
they flag git hashes, UUIDs and ordinary code. The JWT and private-key plugins are left out too:
arkai's own rules find the whole token / the whole key block, where the plugins find a prefix.
So are the Artifactory plugin (its ``AP…`` password prefix is too short to tell from words)
and the IBM Cloud, IBM COS, SoftLayer and Cloudant plugins: their ``name = value`` patterns
cost more than all the others together, and arkai's ``password``/``secret`` assignment rule
finds those values (``ibm_api_key = …``).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from detect_secrets.plugins.aws import AWSKeyDetector
from detect_secrets.plugins.azure_storage_key import AzureStorageKeyDetector
from detect_secrets.plugins.basic_auth import BasicAuthDetector
from detect_secrets.plugins.discord import DiscordBotTokenDetector
from detect_secrets.plugins.github_token import GitHubTokenDetector
from detect_secrets.plugins.gitlab_token import GitLabTokenDetector
from detect_secrets.plugins.mailchimp import MailchimpDetector
from detect_secrets.plugins.npm import NpmDetector
from detect_secrets.plugins.openai import OpenAIDetector
from detect_secrets.plugins.pypi_token import PypiTokenDetector
from detect_secrets.plugins.sendgrid import SendGridDetector
from detect_secrets.plugins.slack import SlackDetector
from detect_secrets.plugins.square_oauth import SquareOAuthDetector
from detect_secrets.plugins.stripe import StripeDetector
from detect_secrets.plugins.telegram_token import TelegramBotTokenDetector
from detect_secrets.plugins.twilio import TwilioKeyDetector

from arkai.core.redact_rules import Needles, Rule, Span, is_dummy

# plugin class → (kind of each denylist pattern (the last repeats), replace the capture group?,
# a hint that any match contains: literal strings, or a pattern)
_PLUGINS: tuple[tuple[type, tuple[str, ...], bool, str | tuple[str, ...]], ...] = (
    (
        AWSKeyDetector,
        ("aws_access_key", "aws_secret"),
        True,
        ("A3T", "ABIA", "ACCA", "AKIA", "ASIA", "aws", "AWS", "Aws"),
    ),
    (AzureStorageKeyDetector, ("azure_storage_key",), False, ("AccountKey=",)),
    (BasicAuthDetector, ("url_password",), True, ("://",)),
    (DiscordBotTokenDetector, ("discord_token",), False, r"\.[A-Za-z\d_-]{6}\.[A-Za-z\d_-]{27}"),
    (GitHubTokenDetector, ("github_token",), False, ("ghp_", "gho_", "ghu_", "ghs_", "ghr_")),
    (
        GitLabTokenDetector,
        ("gitlab_token",),
        False,
        (
            "glpat-",
            "gldt-",
            "glft-",
            "glsoat-",
            "glrt-",
            "glcbt-",
            "glimt-",
            "glptt-",
            "glagent-",
            "gloas-",
            "GR1348941",
        ),
    ),
    (MailchimpDetector, ("mailchimp_key",), False, r"-us\d"),
    (NpmDetector, ("npm_token",), True, ("_authToken",)),
    (OpenAIDetector, ("openai_key",), False, ("T3BlbkFJ",)),
    (PypiTokenDetector, ("pypi_token",), False, ("pypi-",)),
    (SendGridDetector, ("sendgrid_key",), False, ("SG.",)),
    (SlackDetector, ("slack_token", "slack_webhook"), False, ("xox", "hooks.slack")),
    (SquareOAuthDetector, ("square_secret",), False, ("sq0csp-",)),
    (StripeDetector, ("stripe_key",), False, ("k_live_",)),
    (TelegramBotTokenDetector, ("telegram_token",), False, r":[0-9A-Za-z_-]{35}"),
    (TwilioKeyDetector, ("twilio_key",), False, r"(?:AC|SK)[a-z0-9]{32}"),
)
_EDGE = " \t\r\n\"'=:"


def _span_of(use_group: bool) -> Callable[[re.Match[str]], Span | None]:
    """The capture group holding the value (when asked for), else the match less its edges."""

    def accept(m: re.Match[str]) -> Span | None:
        start, end = m.span()
        if use_group and m.lastindex:
            found = [m.span(g) for g in range(1, m.lastindex + 1) if m.group(g)]
            if found:
                start, end = max(found, key=lambda s: s[1] - s[0])
        text = m.string
        while start < end and text[start] in _EDGE:
            start += 1
        while end > start and text[end - 1] in _EDGE:
            end -= 1
        if end - start < 6 or text.startswith("[REDACTED", start) or is_dummy(text[start:end]):
            return None
        return start, end

    return accept


def plugin_rules() -> tuple[Rule, ...]:
    """One rule per denylist pattern of each plugin used."""
    rules: list[Rule] = []
    for cls, kinds, use_group, hint in _PLUGINS:
        found_first = Needles(hint) if isinstance(hint, tuple) else re.compile(hint)
        patterns: list[re.Pattern[str]] = list(getattr(cls, "denylist"))  # noqa: B009
        for i, pattern in enumerate(patterns):
            kind = kinds[min(i, len(kinds) - 1)]
            rules.append(Rule(kind, pattern, found_first, _span_of(use_group)))
    return tuple(rules)


PLUGIN_NAMES: tuple[str, ...] = tuple(entry[0].__name__ for entry in _PLUGINS)
