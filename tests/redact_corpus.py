"""Planted secrets for the redaction tests and ``bench/redact.py``: ≥ 100 values of ≥ 25 kinds.

Every value is made up and assembled at run time (checksums computed here), so no scanner
mistakes this file for a leak and no real person's data is in it. ``PLANTED`` is a list of
(kind, value as written, the needle that must never reach disk); the needle is the part a
reader could use (for a password in a URL, the password; for an HTML-escaped e-mail, the
decoded address is checked too, see ``needles``).
"""

from __future__ import annotations

import html
import random
import string

_RNG = random.Random(20261123)


def _chars(n: int, alphabet: str = string.ascii_letters + string.digits) -> str:
    return "".join(_RNG.choice(alphabet) for _ in range(n))


def _luhn_complete(prefix: str, length: int) -> str:
    body = prefix + "".join(_RNG.choice(string.digits) for _ in range(length - len(prefix) - 1))
    for check in string.digits:
        candidate = body + check
        total = 0
        for i, ch in enumerate(reversed(candidate)):
            n = int(ch) * (2 if i % 2 else 1)
            total += n - 9 if n > 9 else n
        if total % 10 == 0:
            return candidate
    raise AssertionError("unreachable")


def _iban(country: str, bban: str) -> str:
    moved = bban + country + "00"
    check = 98 - int("".join(str(int(c, 36)) for c in moved)) % 97
    raw = f"{country}{check:02d}{bban}"
    return " ".join(raw[i : i + 4] for i in range(0, len(raw), 4))


def _pem(kind: str, sep: str) -> str:
    lines = [_chars(64, string.ascii_letters + string.digits + "+/") for _ in range(4)]
    head, tail = f"-----BEGIN {kind}PRIVATE KEY-----", f"-----END {kind}PRIVATE KEY-----"
    return sep.join([head, *lines, tail])


def _build() -> list[tuple[str, str, str]]:
    out: list[tuple[str, str, str]] = []

    def add(kind: str, value: str, needle: str | None = None) -> None:
        out.append((kind, value, needle if needle is not None else value))

    for prefix, length in (
        ("4", 16), ("51", 16), ("37", 15), ("6011", 16), ("4", 19), ("3530", 16), ("36", 14),
        ("62", 16), ("2221", 16),
    ):  # fmt: skip
        add("credit_card", _luhn_complete(prefix, length))
    card = _luhn_complete("55", 16)
    add("credit_card", " ".join(card[i : i + 4] for i in range(0, 16, 4)), card[-8:])
    card = _luhn_complete("4", 16)
    add("credit_card", "-".join(card[i : i + 4] for i in range(0, 16, 4)), card[-8:])
    for country, bban in (
        ("DE", "37040044" + "0532013000"),
        ("GB", "NWBK" + "60161331926819"),
        ("FR", "20041010050500013M02606"),
        ("NL", "ABNA0417164300"),
        ("ES", "21000418450200051332"),
        ("IT", "X0542811101000000123456"),
    ):
        iban = _iban(country, bban)
        add("iban", iban, iban.replace(" ", "")[4:16])
    for area, group, serial in (
        (123, 45, 6789),
        (219, 9, 9999),
        (501, 12, 3456),
        (78, 5, 1120),
        (665, 31, 2024),
    ):
        add("us_ssn", f"{area:03d}-{group:02d}-{serial:04d}")
    add("us_ssn", "SSN: 212" + "456789", "212456789")
    for phone in (
        "020 7946 0958", "07700 900123", "(0161) 496 0123", "0044 20 7946 0958",
        "0049 30 1234 5678", "+44 7700 900456", "+1 (415) 555-0132", "415-555-0199",
        "+33 1 44 55 66 77", "0033 6 12 34 56 78",
    ):  # fmt: skip
        add("phone", phone)
    for email in (
        "jane.roe@example.org", "ops+alerts@mail.example.co.uk", "k.tanaka@example.jp",
        "first_last@sub.example.io",
    ):  # fmt: skip
        add("email", email)
    add("email", "tim&#64;example.net", "tim@example.net")
    add("email", "ana&#x40;example.com", "ana@example.com")
    add("email", "max [at] example [dot] com", "max [at] example")
    add("email", "lee(at)example.org", "lee(at)example")
    for nino in ("AB 12 34 56 C", "JK123456A", "CE 98 76 54 B"):
        add("uk_nino", nino)
    add("stripe_key", "sk_" + "live_" + _chars(24))
    add("stripe_key", "rk_" + "live_" + _chars(24))
    add("stripe_key", "sk_" + "test_" + _chars(32))
    add("stripe_key", "whsec_" + _chars(32))
    add("google_api_key", "AIza" + _chars(35, string.ascii_letters + string.digits + "_-"))
    add("google_api_key", "AIza" + "Sy" + _chars(33))
    add("google_oauth", "GOCSPX-" + _chars(28))
    add("google_oauth", "ya29." + _chars(60))
    add("huggingface_token", "hf_" + _chars(34, string.ascii_letters))
    add("huggingface_token", "hf_" + _chars(34))
    add("slack_webhook", "https://hooks.slack.com/services/T0" + _chars(8, string.ascii_uppercase)
        + "/B0" + _chars(8, string.ascii_uppercase) + "/" + _chars(24))  # fmt: skip
    add("webhook_url", "https://discord.com/api/webhooks/1234567890" + _chars(8, string.digits)
        + "/" + _chars(68, string.ascii_letters + string.digits + "_-"))  # fmt: skip
    guid = "0a1b2c3d-4e5f-6789-abcd-ef0123456789"
    add("webhook_url", f"https://contoso.webhook.office.com/webhookb2/{guid}@{guid}"
        f"/IncomingWebhook/{_chars(32, string.hexdigits.lower()[:16])}/{guid}")  # fmt: skip
    add("webhook_url", "https://outlook.office.com/webhook/" + guid + "@" + guid
        + "/IncomingWebhook/" + _chars(32, "0123456789abcdef") + "/" + guid)  # fmt: skip
    add("webhook_url", "https://hooks.zapier.com/hooks/catch/" + _chars(7, string.digits) + "/"
        + _chars(7, string.ascii_lowercase + string.digits) + "/")  # fmt: skip
    tok = "987654321:" + _chars(35, string.ascii_letters + string.digits + "_-")
    add("telegram_token", f"https://api.telegram.org/bot{tok}/sendMessage", tok)
    sig = _chars(64, "0123456789abcdef")
    add("url_secret", "https://b.s3.amazonaws.com/r.pdf?X-Amz-Date=20261201T000000Z"
        f"&X-Amz-Signature={sig}", sig)  # fmt: skip
    tok = "IQoJb3JpZ2luX2Vj" + _chars(40)
    add("url_secret", f"https://b.s3.amazonaws.com/r.pdf?X-Amz-Security-Token={tok}&x=1", tok)
    sig = _chars(64, "0123456789abcdef")
    add("url_secret", f"https://storage.googleapis.com/b/o.pdf?X-Goog-Signature={sig}", sig)
    add("slack_token", "xox" + "b-" + "1234567890-" + "9876543210-" + _chars(24))
    add("slack_token", "xox" + "p-" + "1234567890-" + "1234567890-" + _chars(24))
    add("aws_access_key", "AKIA" + _chars(16, string.ascii_uppercase + string.digits))
    add("aws_access_key", "ASIA" + _chars(16, string.ascii_uppercase + string.digits))
    secret = _chars(40, string.ascii_letters + string.digits + "/+")
    add("aws_secret", "aws_secret_access_key = " + secret, secret)
    add("github_token", "gh" + "p_" + _chars(36))
    add("github_token", "gh" + "s_" + _chars(36))
    add("github_token", "gh" + "o_" + _chars(36))
    add("github_token", "github_" + "pat_" + _chars(22) + "_" + _chars(59))
    add("openai_key", "sk-" + "proj-" + _chars(48) + "1")
    add("openai_key", "sk-" + _chars(20) + "T3Blbk" + "FJ" + _chars(20))
    add("anthropic_key", "sk-" + "ant-" + "api03-" + _chars(80, string.ascii_letters + "0123_-"))
    for scheme in ("postgres", "mysql", "mongodb+srv", "redis", "amqp"):
        pw = _chars(14) + "!9"
        add("url_password", f"{scheme}://app_user:{pw}@db.internal.example:5432/main", pw)
    pw = "p@ss" + _chars(10)
    add("url_password", f"postgresql://admin:{pw}@10.1.2.3/prod", pw)
    for key in ("password", "DB_PASSWORD", "passwd"):
        pw = _chars(12) + "7%"
        add("password", f"{key}={pw}", pw)
    pw = _chars(10) + " " + _chars(6) + "3"
    add("password", f'"password": "{pw}"', pw)
    for key in ("client_secret", "api_key"):
        val = _chars(32)
        add("secret", f"{key}: {val}", val)
    tok = _chars(40, string.ascii_letters + string.digits + "-._")
    add("bearer_token", f"Authorization: Bearer {tok}", tok)
    tok = _chars(32) + "9"
    add("bearer_token", f"bearer {tok}", tok)
    val = _chars(30) + "1"
    add("url_secret", f"https://api.example.com/v1/items?access_token={val}&page=2", val)
    header = "eyJ" + "hbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9"
    for _ in range(2):
        add("jwt", f"{header}.eyJ{_chars(40)}.{_chars(43, string.ascii_letters + '_-')}")
    for kind, sep in (("RSA ", "\n"), ("", "<br>"), ("EC ", "<br/>"), ("OPENSSH ", "&#10;")):
        pem = _pem(kind, sep)
        add("private_key", pem, pem.split(sep)[2])
    pem = _pem("RSA ", "<br>")
    add("private_key", html.escape(pem), pem.split("<br>")[3])
    add("gitlab_token", "glpat-" + _chars(20))
    add("gitlab_token", "glpat-" + _chars(26, string.ascii_letters + string.digits + "_"))
    add("sendgrid_key", "SG." + _chars(22) + "." + _chars(43))
    add("twilio_key", "SK" + _chars(32, string.ascii_lowercase + string.digits))
    add("twilio_key", "AC" + _chars(32, string.ascii_lowercase + string.digits))
    add("mailchimp_key", _chars(32, string.ascii_lowercase + string.digits) + "-us14")
    add("discord_token", "M" + _chars(23) + "." + _chars(6) + "." + _chars(27))
    add("telegram_token", "123456789:" + _chars(35))
    add("pypi_token", "pypi-AgEIcHlwaS5vcmc" + _chars(80))
    tok = "npm_" + _chars(36)
    add("npm_token", "//registry.npmjs.org/:_authToken=" + tok, tok)
    key = _chars(86) + "=="
    add("azure_storage_key", "AccountKey=" + key, key)
    add("square_secret", "sq0csp-" + _chars(43))
    return out


PLANTED: list[tuple[str, str, str]] = _build()
KINDS: frozenset[str] = frozenset(kind for kind, _, _ in PLANTED)


def needles(value: str, needle: str) -> list[str]:
    """What must not be on disk: the needle, and its HTML-decoded form when it differs."""
    decoded = html.unescape(needle)
    return [needle] if decoded == needle else [needle, decoded]
