"""The built-in personal-data detector of the input guardrails (decision 0124): emails, phone numbers, card numbers
(Luhn-checked), IBANs (mod-97-checked), IP addresses and AWS access key ids in request text.

One search in C decides that a text can hold nothing (most can't); a text that can is read by the families it can
hold, each a precompiled pattern (emails from each @); the checksums run only on what a pattern found. Plain
``re``: every create function loads this, and a job can hold 100,000 requests. A finding is a type and a span, never
a value kept anywhere: the caller counts types and, under ``redact``, writes the type in the value's place.
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
# One pattern per family of entity but emails (read around each @, below), each run only on a text that can hold it.
# Most request text is words: it fails the one search that decides a text can hold nothing (``_ANY_ASCII``), or
# holds only digits (a year, a count). A family's pattern begins with a character class or a letter (its boundary is
# checked after the first character, by a lookbehind), so the regex engine skips in C to the next character that
# could begin one instead of trying every alternative at every position (measured: 4 MB/s for one alternation led by
# lookbehinds, bench step `guardrails`). In each pattern an empty group at the end of a branch names the type
# (``match.lastgroup``); the span is the whole match.
_BOUNDARY = r"(?<![\w.+-].)"  # after the first character: the one before it is no part of a word, number or address
_AWS_KEY = r"A(?<![A-Z0-9].)(?:KIA|SIA|IDA|ROA)[A-Z0-9]{16}(?![A-Z0-9])(?P<aws_access_key>)"
_IBAN = r"[A-Z](?<![A-Za-z0-9].)[A-Z]\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?(?![A-Za-z0-9])(?P<iban>)"
_NUMBERS = (
    r"[\d+(]" + _BOUNDARY + r"(?:"
    r"(?<=\d)(?:[ -]?\d){12,18}(?![\d-])(?P<card_number>)"
    r"|(?<=\d)\d{0,2}(?:\.\d{1,3}){3}(?![\w.])(?P<ipv4>)"
    r"|(?<=\+)\d{1,3}[ .-]?(?:\(\d{1,4}\)[ .-]?)?\d{2,4}(?:[ .-]?\d{2,4}){1,4}(?![\w-])(?P<phone>)"
    r"|(?<=\()\d{3}\)[ .-]?\d{3}[ .-]\d{4}(?![\w-])(?P<phone_>)"
    r"|(?<=\d)\d{2}[.-]\d{3}[.-]\d{4}(?![\w-])(?P<phone__>)"
    r")"
)
_IPV6_GATE = r":[0-9A-Fa-f:]"
_IPV6 = (
    rf"[0-9A-Fa-f](?<![\w:].)(?:"
    rf"[0-9A-Fa-f]{{0,3}}:(?:{_HEX}:){{6}}{_HEX}(?![\w:])(?P<ipv6>)"
    rf"|[0-9A-Fa-f]{{1,3}}:(?:{_HEX}:){{0,5}}:(?:{_HEX}(?::{_HEX}){{0,5}})?(?![\w:])(?P<ipv6_>)"
    r")"
)


@cache
def _compiled(ascii_only: bool) -> tuple[re.Pattern[str], tuple[re.Pattern[str], ...]]:
    """The digit search and the families' patterns (AWS keys, IBANs, numbers, IPv6's gate, IPv6), compiled on first
    use (a few ms: a create that screens nothing never pays). ``ascii_only``: compiled with ``re.ASCII``, for a text
    that is all ASCII, where \\d and \\w mean what they mean without it, and a class is a bitmap instead of a test of
    each character's Unicode category (a fifth less time in the numbers' pattern)."""
    flags = re.ASCII if ascii_only else 0
    patterns = (_AWS_KEY, _IBAN, _NUMBERS, _IPV6_GATE, _IPV6)
    return re.compile(r"\d", flags), tuple(re.compile(pattern, flags) for pattern in patterns)


# What every family needs one of (an @, a digit, a colon, an access key's prefix), as one search in C that a clean
# text fails. Led by a character class, so the engine skips in C to the next candidate character rather than trying
# an alternation at every position (the alternation ``_ANY``: 13,000 instructions on a 46-character prompt; this:
# 3,800). ASCII digits in the class (a class holding \d tests each character's Unicode category): a text that is not
# all ASCII also runs ``_ANY``, so a digit of any script still opens the families whose patterns read \d.
_ANY_ASCII = re.compile(r"[@0-9:A](?:(?<=A)(?:KIA|SIA|IDA|ROA)|(?<!A))").search
_ANY = re.compile(r"[@\d:]|AKIA|ASIA|AIDA|AROA").search
# An email: a local part of 1-64 of these characters, not preceded by a word character, ".", "%", "+" or "-", then
# the @, then a domain of labels ending in a 2-24 letter top-level label and no word character after it.
_LOCAL_CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._%+-"
_LOCAL_MAX = 64
_DOMAIN = re.compile(r"(?:[A-Za-z0-9-]{1,63}\.)+[A-Za-z]{2,24}(?!\w)").match  # label. ... label. tld
# group name -> entity type (a type with several branches names each group apart: a name is used once a pattern)
_KIND = {
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
_DOUBLED = bytes.maketrans(b"0123456789", b"0246813579")  # a digit doubled, its two digits added (7 -> 14 -> 5)


def luhn_valid(digits: str) -> bool:
    """The Luhn checksum of a card number's digits (every card scheme's last digit)."""
    if digits.isascii():  # in C: every other digit from the right doubled by a table, the bytes summed
        raw = digits.encode()
        return (sum(raw[-1::-2]) + sum(raw[-2::-2].translate(_DOUBLED)) - 48 * len(raw)) % 10 == 0
    total = 0  # a digit of another script (the patterns read \d): its code point, as before
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
    ascii_only = text.isascii()  # in C, one flag of the string: no pass over it
    first = (_ANY_ASCII if ascii_only else _ANY)(text)
    if first is None:  # the common case: no family can match
        return []
    begin = first.start()  # no @, digit or colon before it: the searches for them start there
    found: list[tuple[int, int, str]] = []
    # Emails, each read from its @: the run of local-part characters before it (rstrip, in C) and the domain matched
    # after it, so no word of the text is tried as a local part.
    at, done = text.find("@", begin), 0
    while at >= 0:
        before = text[max(0, at - _LOCAL_MAX - 1) : at]
        length = len(before) - len(before.rstrip(_LOCAL_CHARS))
        start = at - length
        if (
            0 < length <= _LOCAL_MAX
            and start >= done
            and not (start and (text[start - 1].isalnum() or text[start - 1] == "_"))  # a word goes on before it
            and (domain := _DOMAIN(text, at + 1)) is not None
        ):
            done = domain.end()
            found.append((start, -done, EMAIL))
            at = text.find("@", done)
        else:
            at = text.find("@", at + 1)
    digit, (aws_key, iban, numbers, ipv6_gate, ipv6) = _compiled(ascii_only)
    families: list[tuple[re.Pattern[str], int]] = []  # (pattern, where in the text it is read from)
    if "A" in text:
        families.append((aws_key, 0))
    if (number := digit.search(text, begin)) is not None:
        # Both begin at most two characters before a digit ("GB82", "+44", "(555"): read from there, since a pattern
        # searched from a position still sees the text before it (its lookbehinds), and nothing can begin earlier.
        at = number.start()
        families += ((iban, max(0, at - 2)), (numbers, max(0, at - 1)))
    if ":" in text and ipv6_gate.search(text, begin):
        families.append((ipv6, 0))
    for pattern, origin in families:
        for match in pattern.finditer(text, origin):
            kind = _KIND[match.lastgroup or ""]
            check = _CHECKS.get(kind)
            if check is None or check(match.group()):
                start, end = match.span()
                found.append((start, -end, kind))
    if len(found) < 2:
        return [(found[0][2], found[0][0], -found[0][1])] if found else []
    found.sort()
    kept: list[tuple[str, int, int]] = []
    last = -1
    for start, negative_end, kind in found:
        if start >= last:
            last = -negative_end
            kept.append((kind, start, last))
    return kept


def placeholder(kind: str) -> str:
    """What a redaction writes in a value's place: its type, never any of it."""
    return f"[{kind.upper()}]"


PLACEHOLDERS = {kind: placeholder(kind) for kind in TYPES}  # the built-in types' (any other detector's: placeholder)


class BuiltinDetector:
    """The ``PiiDetector`` port on the patterns above: no client, nothing leaves the function."""

    find = staticmethod(find)  # the function itself: no call in between, once a request text


BUILTIN = BuiltinDetector()
