"""Create writes each normalised request as one JSON line with orjson where orjson can (decision 0085); Plan reads
back exactly the request the standard library would have written, and a lone surrogate is still refused."""

from __future__ import annotations

import json

import pytest

from batch_gateway.service.intake.requests import request_line

ITEMS = [
    {"id": "a", "messages": [{"role": "user", "content": "Hi"}], "params": {"max_tokens": 64}},
    {"id": "b", "extra": 123456789012345678901234567890},  # beyond 64 bits: orjson refuses it
    {"id": "c", "extra": [0.1, -0.0, 5e-324, 1.7976931348623157e308, -(2**63), 2**64 - 1]},
    {"id": "d", "text": 'caf\u00e9 \u2028 \U0001f600 tab\t quote" back\\ nul\x00'},
]


@pytest.mark.parametrize("item", ITEMS, ids=lambda item: item["id"])
def test_a_request_line_reads_back_as_the_request(item):
    line = request_line(item)
    assert b"\n" not in line
    assert repr(json.loads(line)) == repr(item)


def test_a_lone_surrogate_is_still_refused():
    with pytest.raises(UnicodeEncodeError):
        request_line({"id": "e", "text": "bad \ud800 escape"})
