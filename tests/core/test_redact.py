"""Redaction: every kind found and counted, look-alikes left alone, idempotent, deterministic.

Secret-shaped strings are assembled at run time so that no scanner mistakes this file for a leak.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arkai.core.redact import ALL_KINDS, merge_counts, placeholder, redact
from arkai.errors import InvalidInputError

ALNUM = "aB3dE5fG7hJ9kL1mN2pQ4rS6tU8vW0xY"
OPENAI = "sk-" + ALNUM + "Zz12"
OPENAI_PROJ = "sk-" + "proj-" + ALNUM + "_-" + ALNUM
ANTHROPIC = "sk-" + "ant-" + "api03-" + ALNUM + ALNUM
AWS_ID = "AKIA" + "IOSFODNN7EXAMPL2"
AWS_TEMP = "ASIA" + "Y34FZKBOKMUTVV7A"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCY" + "EXAMPLEKEY"
GITHUB = "gh" + "p_" + ALNUM + "abcd"
GITHUB_PAT = "github_" + "pat_" + "11ABCDEFG0" + "_" + ALNUM + ALNUM
SLACK = "xo" + "xb-" + "123456789012-1234567890123-" + ALNUM
JWT = (
    "eyJ" + "hbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9"
    ".eyJ" + "zdWIiOiIxMjM0NTY3ODkwIn0"
    ".dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
)
PEM = (
    "-----BEGIN RSA " + "PRIVATE KEY-----\n"
    "MIIEpAIBAAKCAQEA7bq0vX2YQzEXAMPLEONLYexampleonly0123456789abcdefABCD\n"
    "q1w2e3r4t5y6u7i8o9p0ASDFGHJKLzxcvbnm==\n"
    "-----END RSA " + "PRIVATE KEY-----"
)

POSITIVES = [
    ("openai_key", f"my key is {OPENAI} ok", "my key is [REDACTED:openai_key] ok"),
    ("openai_key", f"OPENAI_API_KEY={OPENAI_PROJ}", "OPENAI_API_KEY=[REDACTED:openai_key]"),
    ("anthropic_key", f"key: {ANTHROPIC}", "key: [REDACTED:anthropic_key]"),
    ("aws_access_key", f"id {AWS_ID}.", "id [REDACTED:aws_access_key]."),
    ("aws_access_key", AWS_TEMP, "[REDACTED:aws_access_key]"),
    (
        "aws_secret",
        f"aws_secret_access_key = {AWS_SECRET}\n",
        "aws_secret_access_key = [REDACTED:aws_secret]\n",
    ),
    (
        "aws_secret",
        f'"SecretAccessKey": "{AWS_SECRET}"',
        '"SecretAccessKey": "[REDACTED:aws_secret]"',
    ),
    ("github_token", f"token {GITHUB}", "token [REDACTED:github_token]"),
    ("github_token", GITHUB_PAT, "[REDACTED:github_token]"),
    ("slack_token", f"({SLACK})", "([REDACTED:slack_token])"),
    ("jwt", f"Bearer {JWT}", "Bearer [REDACTED:jwt]"),
    ("private_key", f"key:\n{PEM}\nafter", "key:\n[REDACTED:private_key]\nafter"),
    ("email", "write to jane.doe+tag@example.co.uk today", "write to [REDACTED:email] today"),
    ("email", "<ops@mail.example.com>", "<[REDACTED:email]>"),
    ("phone", "call +1 (555) 123-4567 now", "call [REDACTED:phone] now"),
    ("phone", "London +44 20 7946 0958.", "London [REDACTED:phone]."),
    ("phone", "Berlin +49 (0)30 1234567", "Berlin [REDACTED:phone]"),
    ("phone", "+91 98765 43210", "[REDACTED:phone]"),
    ("phone", "(555) 123-4567", "[REDACTED:phone]"),
    ("phone", "555-123-4567", "[REDACTED:phone]"),
    ("phone", "555.123.4567", "[REDACTED:phone]"),
    ("phone", "1-800-555-1234", "[REDACTED:phone]"),
]

NEGATIVES = [
    "2024-05-01",
    "2024-05-01T10:30:00Z",
    "2025-10-15T04:37:47+00:00",
    "2024-05-01 10:30:00",
    "12:30:45",
    "1.2.3",
    "version 3.12.1 and v2.10.100.2000",
    "10.0.19041.1234",
    "192.168.100.200",
    "550e8400-e29b-41d4-a716-446655440000",
    "da39a3ee5e6b4b0d3255bfef95601890afd80709",
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "1767261600",
    "1767261600.5",
    "ISBN 978-3-16-148410-0",
    "$1,234,567.89",
    "ticket 12345678901234",
    "1234-5678-9012-3456",
    "call 555-1234",
    "UTC+05:30",
    "from 2019-2024 and 1999-2000",
    "icon@2x.png and logo@3x.webp",
    "@dataclass and user@localhost",
    "scikit-learn uses sk-learn",
    "task-management-framework-for-teams-123",
    "ASIA is a continent; AKIA alone",
    "eyJhbGciOiJIUzI1NiJ9 alone",
    "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n-----END PUBLIC KEY-----",
    "ghp_short",
    "xoxb-short",
    "aws_secret_access_key = tooShort",
    "[REDACTED:email] [REDACTED:phone]",
]


@pytest.mark.parametrize(("kind", "text", "expected"), POSITIVES)
def test_redacts_each_kind(kind: str, text: str, expected: str) -> None:
    clean, counts = redact(text)
    assert clean == expected
    assert counts == {kind: 1}


@pytest.mark.parametrize("text", NEGATIVES)
def test_leaves_look_alikes_alone(text: str) -> None:
    assert redact(text) == (text, {})


def test_counts_never_values_and_sorted() -> None:
    text = f"{OPENAI} a@b.io c@d.io {AWS_ID} +1 555 123 4567"
    clean, counts = redact(text)
    assert counts == {"aws_access_key": 1, "email": 2, "openai_key": 1, "phone": 1}
    assert list(counts) == sorted(counts)
    assert all(isinstance(v, int) for v in counts.values())
    for secret in (OPENAI, "a@b.io", AWS_ID, "555 123 4567"):
        assert secret not in clean


def test_anthropic_key_is_not_an_openai_key() -> None:
    assert redact(ANTHROPIC)[1] == {"anthropic_key": 1}


def test_aws_secret_keeps_the_key_name() -> None:
    clean, _ = redact(f"export AWS_SECRET_ACCESS_KEY='{AWS_SECRET}'")
    assert clean == "export AWS_SECRET_ACCESS_KEY='[REDACTED:aws_secret]'"


def test_truncated_private_key_block_is_redacted() -> None:
    cut = PEM.split("-----END")[0].rstrip()
    clean, counts = redact(f"{cut}\n\nthat is all")
    assert counts == {"private_key": 1}
    assert "MIIE" not in clean and clean.endswith("that is all")


def test_kinds_subset_and_unknown_kind() -> None:
    text = f"{OPENAI} a@b.io"
    assert redact(text, ["email"]) == (f"{OPENAI} [REDACTED:email]", {"email": 1})
    assert redact(text, []) == (text, {})
    with pytest.raises(InvalidInputError, match="unknown kind"):
        redact(text, ["passport"])


def test_placeholders_and_merge() -> None:
    assert placeholder("jwt") == "[REDACTED:jwt]"
    assert set(ALL_KINDS) >= {"openai_key", "email", "phone", "private_key"}
    assert merge_counts({"email": 1}, {"email": 2, "jwt": 1}) == {"email": 3, "jwt": 1}


def test_idempotent_on_known_cases() -> None:
    for _, text, _ in POSITIVES:
        once = redact(text)[0]
        assert redact(once) == (once, {})


FRAGMENTS = [
    OPENAI, ANTHROPIC, AWS_ID, GITHUB, SLACK, JWT, PEM, "a.b@example.com", "+1 555 123 4567",
    "555-123-4567", "2024-05-01", "1.2.3", "-", ".", "@", " ", "\n", "x", "7", "sk-", "+", "(",
    ")", "aws_secret_access_key=", AWS_SECRET, "[REDACTED:email]", "eyJ", "_",
]  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(FRAGMENTS), max_size=12))
def test_idempotent_and_deterministic_property(parts: list[str]) -> None:
    text = "".join(parts)
    once, counts = redact(text)
    assert redact(text) == (once, counts)
    assert redact(once) == (once, {})
    assert sum(counts.values()) == sum(once.count(placeholder(k)) for k in ALL_KINDS) - sum(
        text.count(placeholder(k)) for k in ALL_KINDS
    )
