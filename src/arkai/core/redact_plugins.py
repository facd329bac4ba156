"""detect-secrets' regex plugins as ``redact`` rules (offline: their ``verify`` is never called).

Each plugin class's ``denylist`` patterns are run over the whole text (the library itself scans
line by line and reports values, not positions). High-entropy and keyword plugins are left out:
they flag git hashes, UUIDs and ordinary code. The JWT and private-key plugins are left out too:
arkai's own rules find the whole token / the whole key block, where the plugins find a prefix.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from detect_secrets.plugins.artifactory import ArtifactoryDetector
from detect_secrets.plugins.aws import AWSKeyDetector
from detect_secrets.plugins.azure_storage_key import AzureStorageKeyDetector
from detect_secrets.plugins.basic_auth import BasicAuthDetector
from detect_secrets.plugins.cloudant import CloudantDetector
from detect_secrets.plugins.discord import DiscordBotTokenDetector
from detect_secrets.plugins.github_token import GitHubTokenDetector
from detect_secrets.plugins.gitlab_token import GitLabTokenDetector
from detect_secrets.plugins.ibm_cloud_iam import IbmCloudIamDetector
from detect_secrets.plugins.ibm_cos_hmac import IbmCosHmacDetector
from detect_secrets.plugins.mailchimp import MailchimpDetector
from detect_secrets.plugins.npm import NpmDetector
from detect_secrets.plugins.openai import OpenAIDetector
from detect_secrets.plugins.pypi_token import PypiTokenDetector
from detect_secrets.plugins.sendgrid import SendGridDetector
from detect_secrets.plugins.slack import SlackDetector
from detect_secrets.plugins.softlayer import SoftlayerDetector
from detect_secrets.plugins.square_oauth import SquareOAuthDetector
from detect_secrets.plugins.stripe import StripeDetector
from detect_secrets.plugins.telegram_token import TelegramBotTokenDetector
from detect_secrets.plugins.twilio import TwilioKeyDetector

from arkai.core.redact_rules import Rule, Span

# plugin class → (kind of each denylist pattern (the last repeats), replace the capture group?)
_PLUGINS: tuple[tuple[type, tuple[str, ...], bool], ...] = (
    (AWSKeyDetector, ("aws_access_key", "aws_secret"), True),
    (ArtifactoryDetector, ("artifactory_token",), False),
    (AzureStorageKeyDetector, ("azure_storage_key",), False),
    (BasicAuthDetector, ("url_password",), True),
    (CloudantDetector, ("cloudant_credential",), True),
    (DiscordBotTokenDetector, ("discord_token",), False),
    (GitHubTokenDetector, ("github_token",), False),
    (GitLabTokenDetector, ("gitlab_token",), False),
    (IbmCloudIamDetector, ("ibm_cloud_key",), True),
    (IbmCosHmacDetector, ("ibm_cos_hmac",), True),
    (MailchimpDetector, ("mailchimp_key",), False),
    (NpmDetector, ("npm_token",), True),
    (OpenAIDetector, ("openai_key",), False),
    (PypiTokenDetector, ("pypi_token",), False),
    (SendGridDetector, ("sendgrid_key",), False),
    (SlackDetector, ("slack_token", "slack_webhook"), False),
    (SoftlayerDetector, ("softlayer_key",), True),
    (SquareOAuthDetector, ("square_secret",), False),
    (StripeDetector, ("stripe_key",), False),
    (TelegramBotTokenDetector, ("telegram_token",), False),
    (TwilioKeyDetector, ("twilio_key",), False),
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
        if end - start < 6 or text.startswith("[REDACTED", start):
            return None
        return start, end

    return accept


def plugin_rules() -> tuple[Rule, ...]:
    """One rule per denylist pattern of each plugin used."""
    rules: list[Rule] = []
    for cls, kinds, use_group in _PLUGINS:
        patterns: list[re.Pattern[str]] = list(getattr(cls, "denylist"))  # noqa: B009
        for i, pattern in enumerate(patterns):
            kind = kinds[min(i, len(kinds) - 1)]
            rules.append(Rule(kind, pattern, None, _span_of(use_group)))
    return tuple(rules)


PLUGIN_NAMES: tuple[str, ...] = tuple(cls.__name__ for cls, _, _ in _PLUGINS)
