"""Checksums and validity rules that tell a real number from a look-alike (for ``redact``).

Each takes the candidate's characters as written (separators included) and says whether it is
a plausible value of its kind. Facts used: the Luhn check and the issuer prefixes of payment
cards, the ISO 13616 IBAN mod-97 check and per-country lengths, the US SSN number ranges the
Social Security Administration never issues, and the UK National Insurance prefixes never used.
"""

from __future__ import annotations

import re

_NON_DIGIT = re.compile(r"\D")


def digits_of(text: str) -> str:
    return _NON_DIGIT.sub("", text)


def luhn_ok(digits: str) -> bool:
    """The Luhn (mod 10) check of a digit string."""
    total = 0
    for i, ch in enumerate(reversed(digits)):
        n = ord(ch) - 48
        if i % 2 == 1:
            n *= 2
            if n > 9:
                n -= 9
        total += n
    return total % 10 == 0


def _card_lengths(d: str) -> tuple[int, ...]:
    """Lengths a card number of this issuer prefix may have (empty: no known issuer)."""
    two, three, four = int(d[:2]), int(d[:3]), int(d[:4])
    if d[0] == "4":
        return (13, 16, 19)  # Visa
    if 51 <= two <= 55 or 2221 <= four <= 2720:
        return (16,)  # Mastercard
    if two in (34, 37):
        return (15,)  # American Express
    if four == 6011 or two == 65 or 644 <= three <= 649:
        return (16, 17, 18, 19)  # Discover
    if 300 <= three <= 305 or two in (36, 38, 39):
        return (14, 15, 16, 17, 18, 19)  # Diners Club
    if 3528 <= four <= 3589:
        return (16, 17, 18, 19)  # JCB
    if two == 62:
        return (16, 17, 18, 19)  # UnionPay
    if four in (5018, 5020, 5038, 5893, 6304, 6759, 6761, 6762, 6763):
        return (12, 13, 14, 15, 16, 17, 18, 19)  # Maestro
    return ()


def card_ok(text: str) -> bool:
    """A payment card number: a known issuer prefix, that issuer's length, and Luhn."""
    d = digits_of(text)
    if len(d) < 12 or len(d) > 19 or len(set(d)) < 2:
        return False
    return len(d) in _card_lengths(d) and luhn_ok(d)


# ISO 13616 registry lengths (country code → total IBAN length).
_IBAN_LENGTHS = {
    "AD": 24, "AE": 23, "AL": 28, "AT": 20, "AZ": 28, "BA": 20, "BE": 16, "BG": 22, "BH": 22,
    "BR": 29, "BY": 28, "CH": 21, "CR": 22, "CY": 28, "CZ": 24, "DE": 22, "DK": 18, "DO": 28,
    "EE": 20, "EG": 29, "ES": 24, "FI": 18, "FO": 18, "FR": 27, "GB": 22, "GE": 22, "GI": 23,
    "GL": 18, "GR": 27, "GT": 28, "HR": 21, "HU": 28, "IE": 22, "IL": 23, "IQ": 23, "IS": 26,
    "IT": 27, "JO": 30, "KW": 30, "KZ": 20, "LB": 28, "LC": 32, "LI": 21, "LT": 20, "LU": 20,
    "LV": 21, "MC": 27, "MD": 24, "ME": 22, "MK": 19, "MR": 27, "MT": 31, "MU": 30, "NL": 18,
    "NO": 15, "PK": 24, "PL": 28, "PS": 29, "PT": 25, "QA": 29, "RO": 24, "RS": 22, "SA": 24,
    "SC": 31, "SE": 24, "SI": 19, "SK": 24, "SM": 27, "ST": 25, "SV": 28, "TL": 23, "TN": 24,
    "TR": 26, "UA": 29, "VA": 22, "VG": 24, "XK": 20,
}  # fmt: skip


def iban_ok(text: str) -> bool:
    """An IBAN: the country's registered length and the mod-97 check (remainder 1)."""
    s = text.replace(" ", "").upper()
    if _IBAN_LENGTHS.get(s[:2]) != len(s) or not s[2:4].isdigit():
        return False
    moved = s[4:] + s[:4]
    number = "".join(str(int(ch, 36)) for ch in moved)
    return int(number) % 97 == 1


def ssn_ok(text: str) -> bool:
    """A US SSN as issued: area not 000, 666 or 900–999; group not 00; serial not 0000."""
    d = digits_of(text)
    if len(d) != 9:
        return False
    area, group, serial = int(d[:3]), int(d[3:5]), int(d[5:])
    return area not in (0, 666) and area < 900 and group != 0 and serial != 0


_NINO_BAD_PREFIX = frozenset({"BG", "GB", "KN", "NK", "NT", "TN", "ZZ"})


def nino_ok(text: str) -> bool:
    """A UK National Insurance number: a prefix in use (the pattern enforces the letters)."""
    return text.replace(" ", "")[:2].upper() not in _NINO_BAD_PREFIX


def phone_digits_ok(text: str, low: int, high: int) -> bool:
    n = sum(ch.isdigit() for ch in text)
    return low <= n <= high
