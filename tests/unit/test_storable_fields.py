"""Job fields kept in the DynamoDB job item: what DynamoDB would refuse is refused up front, with the reason."""

import pytest

from batch_gateway.contract.errors import InvalidRequestError
from batch_gateway.models.requests import STORED_FIELDS_MAX_BYTES, STORED_MAX_NESTING, check_storable, stored_size


def _nested(levels):
    value = "leaf"
    for _ in range(levels):
        value = {"x": value}
    return value


def test_sizes_follow_dynamodbs_rules():
    assert stored_size("héllo") == (6, None)  # UTF-8 bytes
    assert stored_size({"ab": None, "c": True}) == (3 + 2 + 3 + 1 + 1, None)  # 3 per map, 1 per element, names
    assert stored_size([1234, 5]) == (3 + 2 + 3 + 2, None)  # 1 byte per two significant digits plus 1
    assert stored_size([]) == (3, None)


@pytest.mark.parametrize("number", [0, -5, 0.1, 1e-130, 9.99e37, -(10**38 - 1), int("9" * 38), 2.5e-7])
def test_numbers_dynamodb_keeps_are_accepted(number):
    assert stored_size({"n": number})[1] is None


@pytest.mark.parametrize("number", [float("nan"), float("inf"), 1e-131, 1e38, -5.8e62, 1e126, 10**40, int("9" * 39)])
def test_numbers_dynamodb_refuses_are_refused(number):
    assert "number a job cannot keep" in stored_size({"n": number})[1]


def test_nesting_stops_where_dynamodb_does():
    assert stored_size(_nested(STORED_MAX_NESTING))[1] is None
    assert "nested more than 31 levels" in stored_size(_nested(STORED_MAX_NESTING + 1))[1]


def test_a_lone_surrogate_in_a_key_or_a_value_is_refused():
    assert "invalid Unicode" in stored_size({"\udfff": "x"})[1]
    assert "invalid Unicode" in stored_size(["ok", "\ud800"])[1]


def test_the_fields_together_must_leave_room_in_the_item():
    check_storable({"metadata": {"a": "b"}, "provider_options": {"tools": ["x" * (STORED_FIELDS_MAX_BYTES - 100)]}})
    with pytest.raises(InvalidRequestError, match="400 KB") as refused:
        check_storable({"metadata": {"a": "x" * 200}, "provider_options": {"tools": ["x" * STORED_FIELDS_MAX_BYTES]}})
    assert refused.value.details[0]["field"] == "provider_options"


def test_a_deep_value_is_walked_without_recursion():
    value = "leaf"
    for _ in range(100_000):
        value = [value]
    assert "nested" in stored_size(value)[1]


@pytest.mark.parametrize("value", [{"": 1}, {"a": [{"b": {"": "x"}}]}, [{"": None}]])
def test_an_empty_object_key_is_refused_at_any_depth(value):
    """DynamoDB names every map entry with at least one character; an empty key is refused up front (and moto,
    under the local stack, answered such an item in a shape no SDK can read)."""
    assert "empty key" in stored_size(value)[1]
    with pytest.raises(InvalidRequestError) as refused:
        check_storable({"provider_options": {"text": value}})
    assert refused.value.details[0]["field"] == "provider_options"
