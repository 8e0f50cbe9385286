"""The one JSONL input format (CLI and drop folder): good files parse, every bad line is named by number."""

from __future__ import annotations

import io
import tracemalloc

import pytest

from batch_gateway.contract.errors import InvalidRequestError
from batch_gateway.models.jsonl import MAX_DETAILS, dump_jsonl, iter_jsonl_lines, parse_jsonl

HEADER = '{"batch_gateway": {"provider": "anthropic", "model": "claude-test", "hyperparameters": {"max_tokens": 64}}}'


def problems(lines) -> list[tuple[int, str]]:
    with pytest.raises(InvalidRequestError) as info:
        parse_jsonl(lines)
    return [(d["line"], d["message"]) for d in info.value.details]


def test_a_good_file_with_header_parses_to_header_and_requests_in_order():
    parsed = parse_jsonl(
        [
            HEADER,
            '{"id": "request_A", "request": "Name an animal"}',
            "",
            '{"id": "r2", "request": {"messages": [{"role": "user", "content": "Hi"}], "system": "Be brief"}}',
            '{"id": "r3", "request": [{"role": "user", "content": "Hello"}]}',
        ]
    )
    assert parsed.header == {"provider": "anthropic", "model": "claude-test", "hyperparameters": {"max_tokens": 64}}
    assert list(parsed.requests) == ["request_A", "r2", "r3"]
    assert parsed.requests["r2"]["system"] == "Be brief"


def test_a_file_without_header_has_header_none():
    parsed = parse_jsonl([b'{"id": "a", "request": "x"}\n', b'{"id": "b", "request": "y"}\n'])
    assert parsed.header is None
    assert parsed.requests == {"a": "x", "b": "y"}


def test_blank_lines_crlf_and_a_byte_order_mark_are_tolerated():
    data = b'\xef\xbb\xbf{"id": "a", "request": "x"}\r\n\r\n   \r\n{"id": "b", "request": "y"}'
    assert list(parse_jsonl(iter_jsonl_lines(io.BytesIO(data))).requests) == ["a", "b"]


def test_invalid_utf8_is_reported_with_its_line():
    assert problems([b'{"id": "a", "request": "x"}', b'{"id": "b", "request": "\xff"}']) == [
        (2, "invalid UTF-8 at byte 25")
    ]


def test_invalid_json_is_reported_with_its_line():
    [(line, message)] = problems(['{"id": "a", "request": "x"}', '{"id": "b", "request": '])
    assert line == 2 and message.startswith("invalid JSON")


def test_nan_is_not_json():
    [(line, message)] = problems(['{"id": "a", "request": "x", "n": NaN}'])
    assert line == 1 and "NaN" in message


def test_a_line_that_is_not_an_object_is_reported():
    assert problems(['{"id": "a", "request": "x"}', '["id", "b"]', "42"]) == [
        (2, "expected a JSON object, got list"),
        (3, "expected a JSON object, got int"),
    ]


def test_missing_empty_and_non_string_ids_are_reported():
    assert problems(
        [
            '{"request": "x"}',
            '{"id": "", "request": "x"}',
            '{"id": 7, "request": "x"}',
            '{"id": "  ", "request": "x"}',
        ]
    ) == [
        (1, 'missing "id"'),
        (2, '"id" must not be empty'),
        (3, '"id" must be a string'),
        (4, '"id" must not be empty'),
    ]


def test_a_provider_batch_line_gets_a_hint():
    (line, message), *_ = problems(['{"custom_id": "a", "request": "x"}'])
    assert line == 1 and 'use {"id": ..., "request": ...}' in message


def test_duplicate_ids_name_the_first_line():
    assert problems(['{"id": "a", "request": "x"}', "", '{"id": "a", "request": "y"}']) == [
        (3, 'duplicate id "a" (first on line 1)')
    ]


def test_missing_or_malformed_request_is_reported():
    assert problems(['{"id": "a"}', '{"id": "b", "request": null}', '{"id": "c", "request": 5}']) == [
        (1, 'missing "request"'),
        (2, 'missing "request"'),
        (3, '"request" must be a prompt string, a list of messages or an object'),
    ]


def test_unknown_fields_on_a_request_line_are_reported():
    assert problems(['{"id": "a", "request": "x", "hyperparameters": {}}']) == [
        (1, 'unknown field "hyperparameters" (a request line has only "id" and "request")')
    ]


def test_a_header_after_line_1_is_reported():
    assert problems(['{"id": "a", "request": "x"}', HEADER]) == [
        (2, 'the "batch_gateway" header must be on the first line')
    ]


def test_a_header_after_leading_blank_lines_still_counts_as_first():
    assert parse_jsonl(["", HEADER, '{"id": "a", "request": "x"}']).header["model"] == "claude-test"


def test_header_fields_are_checked():
    assert problems(['{"batch_gateway": {"provider": 1, "modle": "x"}}', '{"id": "a", "request": "x"}']) == [
        (1, 'header field "provider" must be a string'),
        (
            1,
            'unknown header field "modle" (allowed: provider, model, hyperparameters, endpoint, metadata, '
            "provider_options, prompt_cache, guardrails, provider_headers, reuse, deadline, deadline_seconds, lanes, "
            "max_cost_usd)",
        ),
    ]


def test_an_empty_file_and_a_header_only_file_have_no_requests():
    assert problems([]) == [(1, "the file has no requests")]
    assert problems(["", "  "]) == [(1, "the file has no requests")]
    assert problems([HEADER]) == [(1, "the file has no requests")]


def test_all_problems_are_collected_in_one_error_with_a_summary():
    with pytest.raises(InvalidRequestError) as info:
        parse_jsonl(["not json", '{"id": "a"}', '{"id": "a", "request": "x"}', '{"id": "a", "request": "y"}'])
    assert [d["line"] for d in info.value.details] == [1, 2, 4]
    assert info.value.message.startswith("invalid JSONL input: 3 problems; line 1: invalid JSON")


def test_details_are_capped_and_the_message_says_so():
    with pytest.raises(InvalidRequestError) as info:
        parse_jsonl(["nope"] * (MAX_DETAILS + 50))
    assert len(info.value.details) == MAX_DETAILS
    assert f"{MAX_DETAILS + 50} problems (first {MAX_DETAILS} listed)" in info.value.message


def test_iter_jsonl_lines_splits_chunked_streams_on_newlines_only():
    chunks = [b'{"id": "a", "req', b'uest": "x\xe2\x80\xa8y"}\n{"id"', b': "b", "request": "z"}\n']
    assert list(iter_jsonl_lines(chunks)) == [
        b'{"id": "a", "request": "x\xe2\x80\xa8y"}',
        b'{"id": "b", "request": "z"}',
    ]


def test_dump_jsonl_round_trips_through_parse_jsonl():
    requests = {"a": "x", "é": [{"role": "user", "content": "ü"}]}
    header = {"provider": "openai", "model": "gpt", "endpoint": "chat"}
    parsed = parse_jsonl(list(dump_jsonl(requests, header)))
    assert (parsed.header, parsed.requests) == (header, requests)


class _OneLongLine:
    """A stream of one ``size``-byte line with no newline; at each read it notes how many bytes the reader
    allocated since the previous read (tracemalloc's peak over what was live then)."""

    def __init__(self, size: int) -> None:
        self.left = size
        self.allocated = 0
        self._live = 0

    def read(self, n: int) -> bytes:
        current, peak = tracemalloc.get_traced_memory()
        self.allocated += max(0, peak - self._live)
        tracemalloc.reset_peak()
        chunk = b"x" * min(n, self.left)
        self.left -= len(chunk)
        self._live = tracemalloc.get_traced_memory()[0]
        return chunk


def _bytes_allocated_for_a_line_of(size: int) -> int:
    stream = _OneLongLine(size)
    tracemalloc.start()
    try:
        lines = iter_jsonl_lines(stream, chunk_size=64 * 1024)
        (line,) = list(lines)
        stream.read(0)  # count what the last step allocated
    finally:
        tracemalloc.stop()
    assert len(line) == size
    return stream.allocated


def test_a_long_line_without_newlines_is_read_in_linear_work():
    """A 32 MiB line took 17 s when every read copied and rescanned the whole line so far: work must grow with the
    line, not with its square (4x the line, at most ~5x the bytes handled; quadratic work would be 16x)."""
    small = _bytes_allocated_for_a_line_of(2 * 1024 * 1024)
    large = _bytes_allocated_for_a_line_of(8 * 1024 * 1024)
    assert large <= 5 * small, f"4x longer line allocated {large / small:.1f}x the bytes"
