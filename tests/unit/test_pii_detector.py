"""The built-in personal-data detector (decision 0124): what it finds, what it must not, and the checksums that tell a
card number and an IBAN from any other run of digits."""

import pytest

from batch_gateway.models.pii import find, luhn_valid, placeholder


def kinds(text):
    return [(kind, text[start:end]) for kind, start, end in find(text)]


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("write to ana.b+x@example.co.uk today", [("email", "ana.b+x@example.co.uk")]),
        ("cc a@x.io, b@y.org and @@ a@@b", [("email", "a@x.io"), ("email", "b@y.org")]),
        (
            f"to {'x' * 40}@{('d' * 60 + '.') * 4}example.com",
            [("email", f"{'x' * 40}@{('d' * 60 + '.') * 4}example.com")],
        ),
        ("call +44 20 7946 0958 please", [("phone", "+44 20 7946 0958")]),
        ("or (555) 123-4567, or 555-123-4567", [("phone", "(555) 123-4567"), ("phone", "555-123-4567")]),
        ("card 4111 1111 1111 1111 exp 12/29", [("card_number", "4111 1111 1111 1111")]),
        ("amex 3782-822463-10005", [("card_number", "3782-822463-10005")]),
        ("pay GB82 WEST 1234 5698 7654 32 now", [("iban", "GB82 WEST 1234 5698 7654 32")]),
        ("DE89370400440532013000", [("iban", "DE89370400440532013000")]),
        ("host 192.168.10.254 up", [("ip_address", "192.168.10.254")]),
        ("v6 2001:db8::8a2e:370:7334 up", [("ip_address", "2001:db8::8a2e:370:7334")]),
        ("key AKIAIOSFODNN7EXAMPLE leaked", [("aws_access_key", "AKIAIOSFODNN7EXAMPLE")]),
    ],
)
def test_each_entity_type_is_found_with_its_exact_span(text, found):
    assert kinds(text) == found


@pytest.mark.parametrize(
    "text",
    [
        "Summarise the history of Rome in 300 words, 2 paragraphs.",
        "order 123456789 shipped on 2024-01-02 at 12:30:45, version 1.2.3",
        "std::vector<int> and a::b are C++",
        "the ratio was 3.14159 and 999.1.1.1 is no address",
        "GB82 WEST 1234 5698 7654 33",  # an IBAN whose mod-97 check fails
    ],
)
def test_ordinary_text_and_numbers_are_not_personal_data(text):
    assert find(text) == []


def test_a_sixteen_digit_number_is_a_card_only_when_its_luhn_check_passes():
    assert kinds("ref 4111111111111111") == [("card_number", "4111111111111111")]
    assert kinds("ref 4111111111111112") == []  # one digit off: an order number, not a card
    assert kinds("ref 4111 1111 1111 1112") == []


def test_luhn_checksum_on_known_numbers():
    assert luhn_valid("79927398713")
    assert not luhn_valid("79927398710")
    assert luhn_valid("5555555555554444")
    assert not luhn_valid("5555555555554445")


def test_several_entities_in_one_string_come_back_in_order():
    text = "ana@example.com paid with 5555 5555 5555 4444 from 10.0.0.1"
    assert [kind for kind, _ in kinds(text)] == ["email", "card_number", "ip_address"]


def test_a_redaction_writes_the_type_and_nothing_of_the_value():
    assert placeholder("card_number") == "[CARD_NUMBER]"


def test_the_modes_the_sdk_knows_are_the_servers():
    from batch_gateway import constants
    from batch_gateway.contract import jobs

    assert constants.PII_MODES == jobs.PII_MODES


def test_a_screen_redacts_system_string_content_and_text_parts_and_counts_by_type():
    from batch_gateway.models.pii import BUILTIN
    from batch_gateway.service.intake.guardrails import Screen

    screen = Screen("redact", BUILTIN)
    item = {
        "id": "a",
        "system": "Operator: ops@example.com",
        "messages": [
            {
                "role": "user",
                "content": [{"type": "text", "text": "card 5555 5555 5555 4444"}, {"type": "text", "text": "hi"}],
            },
            {"role": "assistant", "content": "ok"},
            {"role": "user", "content": "host 10.1.2.3"},
        ],
        "params": {"max_tokens": 5},
    }
    out = screen.item(item)
    assert out["system"] == "Operator: [EMAIL]"
    assert out["messages"][0]["content"] == [
        {"type": "text", "text": "card [CARD_NUMBER]"},
        {"type": "text", "text": "hi"},
    ]
    assert out["messages"][2]["content"] == "host [IP_ADDRESS]" and out["params"] == {"max_tokens": 5}
    assert item["system"] == "Operator: ops@example.com"  # the caller's object is not changed in place
    assert screen.result().redacted == {"card_number": 1, "email": 1, "ip_address": 1}
