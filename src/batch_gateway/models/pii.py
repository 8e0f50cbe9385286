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

_HEX = r"[0-9A-Fa-f]{1,4}"
# One pattern per family of entity, each with a gate: a cheap test a string must pass for the family to be able to
# match in it at all. Most request text is words: it passes no gate, or only the digits' (a year, a count). A family's
# pattern begins with a character class (its boundary is checked after the first character, by a lookbehind), so the
# regex engine skips in C to the next character that could begin one instead of trying every alternative at every
# position (measured: 4 MB/s for one alternation led by lookbehinds, bench step `guardrails`). In each pattern an empty
# group at the end of a branch names the type (``match.lastgroup``); the span is the whole match.
_BOUNDARY = r"(?<![\w.+-].)"  # after the first character: the one before it is no part of a word, number or address
_FAMILIES: tuple[tuple[str, str], ...] = (
    (
        "@",
        r"[A-Za-z0-9._%+-](?<![\w.%+-].)[A-Za-z0-9._%+-]{0,63}@[A-Za-z0-9-]{1,63}(?:\.[A-Za-z0-9-]{1,63})*"
        r"\.[A-Za-z]{2,24}(?!\w)(?P<email>)",
    ),
    ("AKIA|ASIA|AIDA|AROA", r"A(?<![A-Z0-9].)(?:KIA|SIA|IDA|ROA)[A-Z0-9]{16}(?![A-Z0-9])(?P<aws_access_key>)"),
    (
        r"\d\d(?: ?[A-Z0-9]{4}){2}",  # the check digits and two groups: a year or a count is no IBAN
        r"[A-Z](?<![A-Za-z0-9].)[A-Z]\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?(?![A-Za-z0-9])(?P<iban>)",
    ),
    (
        r"\d",
        r"[\d+(]" + _BOUNDARY + r"(?:"
        r"(?<=\d)(?:[ -]?\d){12,18}(?![\d-])(?P<card_number>)"
        r"|(?<=\d)\d{0,2}(?:\.\d{1,3}){3}(?![\w.])(?P<ipv4>)"
        r"|(?<=\+)\d{1,3}[ .-]?(?:\(\d{1,4}\)[ .-]?)?\d{2,4}(?:[ .-]?\d{2,4}){1,4}(?![\w-])(?P<phone>)"
        r"|(?<=\()\d{3}\)[ .-]?\d{3}[ .-]\d{4}(?![\w-])(?P<phone_>)"
        r"|(?<=\d)\d{2}[.-]\d{3}[.-]\d{4}(?![\w-])(?P<phone__>)"
        r")",
    ),
    (
        r":[0-9A-Fa-f:]",
        rf"[0-9A-Fa-f](?<![\w:].)(?:"
        rf"[0-9A-Fa-f]{{0,3}}:(?:{_HEX}:){{6}}{_HEX}(?![\w:])(?P<ipv6>)"
        rf"|[0-9A-Fa-f]{{1,3}}:(?:{_HEX}:){{0,5}}:(?:{_HEX}(?::{_HEX}){{0,5}})?(?![\w:])(?P<ipv6_>)"
        r")",
    ),
)


@cache
def _compiled() -> tuple[tuple[re.Pattern[str], re.Pattern[str]], ...]:
    """(gate, pattern) of each family, compiled on first use (about 3 ms: a create that screens nothing never pays)."""
    return tuple((re.compile(gate), re.compile(pattern)) for gate, pattern in _FAMILIES)


_DIGIT = re.compile(r"\d")
_LOCAL_MAX, _DOMAIN_MAX = 65, 260  # characters before and after an @ an email can take
_DOMAIN_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._")
_ANY = re.compile(r"[@\d:]|AKIA|ASIA|AIDA|AROA")  # what every family's gate needs one of
# group name -> entity type (a type with several branches names each group apart: a name is used once a pattern)
_KIND = {
    "email": EMAIL,
    "aws_access_key": AWS_ACCESS_KEY,
    "iban": IBAN,
    "card_number": CARD_NUMBER,
    "ipv4": IP_ADDRESS,
    "phone": PHONE,
    "phone_": PHONE,
    "phone__": PHONE,
    "ipv6": IP_ADDRESS,
    "ipv6_": IP_ADDRESS,
}


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


def _ip_address(value: str) -> bool:
    """An IPv4 address's octets are 0-255 (an IPv6 address, holding colons, has no such check here)."""
    return ":" in value or all(int(octet) <= 255 for octet in value.split("."))


_CHECKS: dict[str, Callable[[str], bool]] = {
    CARD_NUMBER: _card,
    IBAN: _iban,
    IP_ADDRESS: _ip_address,
}  # what a found value must pass


def find(text: str) -> list[tuple[str, int, int]]:
    """Every entity in ``text``: (type, start, end), in order, not overlapping (where two families claim one place,
    the earlier start wins, then the family listed first). A 13-19 digit run whose Luhn check fails is no card (an
    order number, a timestamp); an IBAN must pass its mod-97 check, an IPv4 address have octets up to 255."""
    if _ANY.search(text) is None:  # the common case: one search in C, no family can match
        return []
    email, aws_key, iban, digits, ipv6 = _compiled()
    found: list[tuple[int, int, str]] = []
    at, done = text.find("@"), 0
    while at >= 0:  # an email holds its @: read only a window around each (a whole-text scan tries every word)
        match = email[1].search(text, max(done, at - _LOCAL_MAX), at + _DOMAIN_MAX)
        if match is not None and match.end() < len(text) and text[match.end()] in _DOMAIN_CHARS:
            match = email[1].search(text, match.start(), len(text))  # the window cut a longer domain: read it all
        if match is not None and match.start() <= at < match.end():
            found.append((match.start(), -match.end(), EMAIL))
            done = match.end()
            at = text.find("@", done)
        else:
            at = text.find("@", at + 1)
    families = []
    if "A" in text and aws_key[0].search(text):
        families.append(aws_key[1])
    if _DIGIT.search(text):
        if iban[0].search(text):
            families.append(iban[1])
        families.append(digits[1])
    if ":" in text and ipv6[0].search(text):
        families.append(ipv6[1])
    for pattern in families:
        for match in pattern.finditer(text):
            kind = _KIND[match.lastgroup or ""]
            check = _CHECKS.get(kind)
            if check is not None and not check(match.group()):
                continue
            found.append((match.start(), -match.end(), kind))
    if not found:
        return []
    found.sort()
    kept: list[tuple[str, int, int]] = []
    for start, negative_end, kind in found:
        if not kept or start >= kept[-1][2]:
            kept.append((kind, start, -negative_end))
    return kept


def placeholder(kind: str) -> str:
    """What a redaction writes in a value's place: its type, never any of it."""
    return f"[{kind.upper()}]"


class BuiltinDetector:
    """The ``PiiDetector`` port on the patterns above: no client, nothing leaves the function."""

    find = staticmethod(find)  # the function itself: no call in between, once a request text


BUILTIN = BuiltinDetector()
