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

import importlib
import re
import sys
from collections.abc import Callable, Iterator

from arkai.core.redact_rules import Needles, Rule, Span, is_dummy

# plugin (its module under ``detect_secrets.plugins`` and class) → (kind of each denylist
# pattern (the last repeats), replace the capture group?, a hint that any match contains:
# literal strings, or a pattern)
_PLUGINS: tuple[tuple[str, str, tuple[str, ...], bool, str | tuple[str, ...]], ...] = (
    (
        "aws",
        "AWSKeyDetector",
        ("aws_access_key", "aws_secret"),
        True,
        ("A3T", "ABIA", "ACCA", "AKIA", "ASIA", "aws", "AWS", "Aws"),
    ),
    ("azure_storage_key", "AzureStorageKeyDetector", ("azure_storage_key",), False,
     ("AccountKey=",)),
    ("basic_auth", "BasicAuthDetector", ("url_password",), True, ("://",)),
    ("discord", "DiscordBotTokenDetector", ("discord_token",), False,
     r"\.[A-Za-z\d_-]{6}\.[A-Za-z\d_-]{27}"),
    ("github_token", "GitHubTokenDetector", ("github_token",), False,
     ("ghp_", "gho_", "ghu_", "ghs_", "ghr_")),
    (
        "gitlab_token",
        "GitLabTokenDetector",
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
    ("mailchimp", "MailchimpDetector", ("mailchimp_key",), False, r"-us\d"),
    ("npm", "NpmDetector", ("npm_token",), True, ("_authToken",)),
    ("openai", "OpenAIDetector", ("openai_key",), False, ("T3BlbkFJ",)),
    ("pypi_token", "PypiTokenDetector", ("pypi_token",), False, ("pypi-",)),
    ("sendgrid", "SendGridDetector", ("sendgrid_key",), False, ("SG.",)),
    ("slack", "SlackDetector", ("slack_token", "slack_webhook"), False, ("xox", "hooks.slack")),
    ("square_oauth", "SquareOAuthDetector", ("square_secret",), False, ("sq0csp-",)),
    ("stripe", "StripeDetector", ("stripe_key",), False, ("k_live_",)),
    ("telegram_token", "TelegramBotTokenDetector", ("telegram_token",), False,
     r":[0-9A-Za-z_-]{35}"),
    ("twilio", "TwilioKeyDetector", ("twilio_key",), False, r"(?:AC|SK)[a-z0-9]{32}"),
)  # fmt: skip
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


class _Denylist:
    """A plugin's ``denylist`` patterns as one rule's pattern: each pattern's matches in turn
    (the order the rules of one pattern each were run in). The plugin is imported the first
    time its hint is in a text: most texts (a run's events, say) hold no plugin's hint, and a
    process that redacts only such texts never imports detect-secrets (≈ 0.1 s a process)."""

    def __init__(self, module: str, name: str, kinds: tuple[str, ...]) -> None:
        self.module, self.name, self.kinds = module, name, kinds
        self._patterns: tuple[re.Pattern[str], ...] | None = None
        self._kind: dict[int, str] = {}

    def patterns(self) -> tuple[re.Pattern[str], ...]:
        if self._patterns is None:
            plugin = importlib.import_module(f"detect_secrets.plugins.{self.module}")
            found = tuple(getattr(plugin, self.name).denylist)
            self._kind = {id(p): self.kinds[min(i, len(self.kinds) - 1)]
                          for i, p in enumerate(found)}  # fmt: skip
            self._patterns = found
        return self._patterns

    def finditer(
        self, string: str, pos: int = 0, endpos: int = sys.maxsize
    ) -> Iterator[re.Match[str]]:
        for pattern in self.patterns():
            yield from pattern.finditer(string, pos, endpos)

    def kind_of(self, m: re.Match[str]) -> str:
        """The kind of the pattern that made ``m``."""
        return self._kind[id(m.re)]


def plugin_rules() -> tuple[Rule, ...]:
    """One rule per plugin used: its denylist patterns, each match labelled with its
    pattern's kind (their matches sorted as when each pattern was a rule of its own: the
    same spans, in the same order, so the same labels win)."""
    rules: list[Rule] = []
    for module, name, kinds, use_group, hint in _PLUGINS:
        found_first = Needles(hint) if isinstance(hint, tuple) else re.compile(hint)
        patterns = _Denylist(module, name, kinds)
        rules.append(Rule(kinds[0], patterns, found_first, _span_of(use_group),
                          kind_of=patterns.kind_of, also_kinds=kinds[1:]))  # fmt: skip
    return tuple(rules)


PLUGIN_NAMES: tuple[str, ...] = tuple(entry[1] for entry in _PLUGINS)
