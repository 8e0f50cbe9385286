"""The hot-path JSON helpers: orjson's speed, the standard library's tolerance."""

from batch_gateway.jsonlines import dumps, loads


def test_compact_utf8_lines_round_trip():
    item = {"id": "ü-1", "text": "Alligator.", "n": 3, "x": None}
    line = dumps(item)
    assert line == '{"id":"ü-1","text":"Alligator.","n":3,"x":null}'.encode()
    assert loads(line) == item and loads(line.decode()) == item


def test_a_lone_surrogate_from_a_provider_is_read_and_written_not_fatal():
    parsed = loads('{"text": "bad \\ud800 half"}')
    assert parsed["text"] == "bad \ud800 half"
    assert loads(dumps(parsed)) == parsed  # escaped on the way out instead of failing the whole chunk
