"""The JSONL reader reads each line with orjson where orjson reads it exactly as ``json.loads`` (decision 0085): the
requests a file gives, and the problems it reports, are the standard library's."""

from __future__ import annotations

import json
import math
import random

import orjson  # noqa: F401 - loaded as in every server function: the reader's fast path runs only then
import pytest

from batch_gateway.contract.errors import InvalidRequestError
from batch_gateway.contract.jsonl import RequestFile, parse_jsonl

TRICKY_VALUES = [
    "123456789012345678901234567890",  # beyond 64 bits: orjson would make it a float
    "-98765432109876543210",
    "18446744073709551616",  # 2**64
    "9223372036854775808",  # 2**63
    "1e400",  # orjson refuses; the standard library reads inf
    "-1e400",
    "0.1",
    "1E5",
    "-0",
    "-0.0",
    "5e-324",
    "1.7976931348623157e308",
    '"\\ud800 lone surrogate"',
    '"caf\\u00e9 \\u2028 \\ud83d\\ude00"',
    '"tab\\there"',
    '{"a": 1, "a": 2}',
    "[1, 2.5, true, false, null]",
]


def _read(lines: list[str]) -> dict:
    return parse_jsonl([line.encode() for line in lines]).requests


@pytest.mark.parametrize("value", TRICKY_VALUES)
def test_a_request_reads_as_json_loads_reads_it(value):
    line = f'{{"id": "r1", "request": {{"messages": [{{"role": "user", "content": "Hi"}}], "extra": {value}}}}}'
    expected = json.loads(line)["request"]
    got = _read([line])["r1"]
    assert repr(got) == repr(expected)  # repr: int stays int, -0.0 stays -0.0, inf stays inf
    streamed = list(RequestFile(iter([line.encode()]), []).requests())
    assert repr(streamed[0][1]) == repr(expected)


@pytest.mark.parametrize(
    "line", ["NaN", '{"id": "r1", "request": Infinity}', '{"id": "r1", "request": "x"', '\ufeff{"id": "r1"}', "[1, 2"]
)
def test_what_json_refuses_is_reported_with_the_standard_librarys_message(line):
    good = '{"id": "r0", "request": "Hi"}'  # line 1 (a byte order mark is only forgiven there)
    try:
        json.loads(line, parse_constant=_reject)
    except ValueError as exc:
        expected = [{"line": 2, "message": f"invalid JSON: {exc}"}]
    with pytest.raises(InvalidRequestError) as refused:
        parse_jsonl([good, line])
    assert refused.value.details == expected
    problems: list = []
    list(RequestFile(iter([good.encode(), line.encode()]), problems).requests())
    assert problems == expected


def _reject(name):
    raise ValueError(f"{name} is not valid JSON")


def test_random_requests_read_as_json_loads_reads_them():
    rng = random.Random(85)
    atoms = [
        lambda: rng.randint(-(10**30), 10**30),
        lambda: rng.randint(-1000, 1000),
        lambda: float(f"{rng.random()}e{rng.randint(-320, 320)}"),
        lambda: "".join(
            chr(rng.choice([rng.randint(32, 126), rng.randint(0x80, 0xD7FF)])) for _ in range(rng.randint(0, 12))
        ),
        lambda: None,
        lambda: True,
    ]

    def value(depth: int):
        kind = rng.random()
        if depth > 3 or kind < 0.5:
            return rng.choice(atoms)()
        if kind < 0.75:
            return [value(depth + 1) for _ in range(rng.randint(0, 4))]
        return {f"k{i}": value(depth + 1) for i in range(rng.randint(0, 4))}

    lines = []
    for i in range(2000):
        request = {"messages": [{"role": "user", "content": "Hi"}], "extra": value(0)}
        text = json.dumps({"id": f"r{i}", "request": request}, ensure_ascii=rng.random() < 0.5)
        if any(math.isinf(x) for x in _floats(request)):
            continue  # json.dumps writes Infinity, which the reader refuses (as json.loads with parse_constant)
        lines.append(text)
    got = _read(lines)
    for text in lines:
        expected = json.loads(text)
        assert repr(got[expected["id"]]) == repr(expected["request"]), text


def _floats(value):
    if isinstance(value, float):
        yield value
    elif isinstance(value, list):
        for item in value:
            yield from _floats(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _floats(item)
