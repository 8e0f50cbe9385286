"""The built-in personal-data detector of the input guardrails (decision 0124): emails, phone numbers, card numbers
(Luhn-checked), IBANs (mod-97-checked), IP addresses and AWS access key ids in request text.

One precompiled alternation, one ``finditer`` pass per string; the checksums run only on what the pattern found.
Plain ``re``: every create function loads this, and a job can hold 100,000 requests. A finding is a type and a span,
never a value kept anywhere: the caller counts types and, under ``redact``, writes the type in the value's place.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache

# Entity types, as the job view counts them and as a redaction writes them ("[EMAIL]").
EMAIL = "email"
PHONE = "phone"
CARD_NUMBER = "card_number"
IBAN = "iban"
IP_ADDRESS = "ip_address"
AWS_ACCESS_KEY = "aws_access_key"
TYPES = (EMAIL, PHONE, CARD_NUMBER, IBAN, IP_ADDRESS, AWS_ACCESS_KEY)

_OCTET = r"(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)"
_HEX = r"[0-9A-Fa-f]{1,4}"
# Order matters where two could match at one place: an AWS key and an IBAN before a card, a card before a phone.
# Each alternative with what a string must hold for it to match anywhere: a string without that skips it (an
# alternation is tried at every position, and most request text is words, where only the email's can start).
_ALTERNATIVES: tuple[tuple[str, str], ...] = (
    (
        "@",
        r"(?P<email>(?<![\w.%+-])[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9-]{1,63}(?:\.[A-Za-z0-9-]{1,63})*\.[A-Za-z]{2,24}(?!\w))",
    ),
    ("A", r"(?P<aws_access_key>(?<![A-Z0-9])(?:AKIA|ASIA|AIDA|AROA)[A-Z0-9]{16}(?![A-Z0-9]))"),
    ("0", r"(?P<iban>(?<![A-Za-z0-9])[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?(?![A-Za-z0-9]))"),
    ("0", r"(?P<card_number>(?<![\d.-])\d(?:[ -]?\d){12,18}(?![\d-]))"),
    (
        "0",
        rf"(?P<ip_address>(?<![\w.]){_OCTET}(?:\.{_OCTET}){{3}}(?![\w.])"
        rf"|(?<![\w:])(?:{_HEX}:){{7}}{_HEX}(?![\w:])"
        rf"|(?<![\w:])[0-9A-Fa-f]{{2,4}}:(?:{_HEX}:){{0,5}}:(?:{_HEX}(?::{_HEX}){{0,5}})?(?![\w:]))",
    ),
    (
        "0",
        r"(?P<phone>(?<![\w+])(?:\+\d{1,3}[ .-]?(?:\(\d{1,4}\)[ .-]?)?\d{2,4}(?:[ .-]?\d{2,4}){1,4}"
        r"|\(\d{3}\)[ .-]?\d{3}[ .-]\d{4}|\d{3}[.-]\d{3}[.-]\d{4})(?![\w-]))",
    ),
)
_DIGIT = re.compile(r"\d")
_AWS_PREFIX = re.compile("AKIA|ASIA|AIDA|AROA")


@cache
def _pattern(has_at: bool, has_key: bool, has_digit: bool) -> re.Pattern[str] | None:
    """The alternation of the alternatives a string can match, compiled once per combination (at most 8)."""
    wanted = {"@": has_at, "A": has_key, "0": has_digit}
    parts = [pattern for needs, pattern in _ALTERNATIVES if wanted[needs]]
    return re.compile("|".join(parts)) if parts else None


def luhn_valid(digits: str) -> bool:
    """The Luhn checksum of a card number's digits (every card scheme's last digit)."""
    total = 0
    for i, char in enumerate(reversed(digits)):
        value = ord(char) - 48
        if i % 2:
            value *= 2
            if value > 9:
                value -= 9
        total += value
    return total % 10 == 0


def _card(value: str) -> bool:
    digits = value.replace(" ", "").replace("-", "")
    return 13 <= len(digits) <= 19 and luhn_valid(digits)


def _iban(value: str) -> bool:
    """ISO 13616's mod-97 check: the country and check digits moved to the end, letters as 10..35."""
    compact = value.replace(" ", "")
    if not 15 <= len(compact) <= 34:
        return False
    moved = compact[4:] + compact[:4]
    return int("".join(str(int(ch, 36)) for ch in moved)) % 97 == 1


_CHECKS: dict[str, Callable[[str], bool]] = {CARD_NUMBER: _card, IBAN: _iban}  # what a found value must pass


def find(text: str) -> list[tuple[str, int, int]]:
    """Every entity in ``text``: (type, start, end), in order, not overlapping. A 13-19 digit run whose Luhn check
    fails is no card (an order number, a timestamp)."""
    found: list[tuple[str, int, int]] = []
    pattern = _pattern(
        "@" in text, "A" in text and _AWS_PREFIX.search(text) is not None, _DIGIT.search(text) is not None
    )
    if pattern is None:
        return found
    for match in pattern.finditer(text):
        kind = match.lastgroup
        if kind is None:  # pragma: no cover - every alternative is a named group
            continue
        check = _CHECKS.get(kind)
        if check is not None and not check(match.group()):
            continue
        found.append((kind, match.start(), match.end()))
    return found


def placeholder(kind: str) -> str:
    """What a redaction writes in a value's place: its type, never any of it."""
    return f"[{kind.upper()}]"


class BuiltinDetector:
    """The ``PiiDetector`` port on the patterns above: no client, nothing leaves the function."""

    def find(self, text: str) -> list[tuple[str, int, int]]:
        return find(text)


BUILTIN = BuiltinDetector()
