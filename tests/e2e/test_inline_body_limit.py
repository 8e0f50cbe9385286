"""What docs/api.md promises about the size of an inline create body is what API Gateway -> Lambda really takes.

API Gateway takes 10 MB, but it hands the request to Lambda as a JSON event, and a synchronous invocation takes at
most 6 MB (6,291,456 bytes): the body as a JSON string (a ``"`` or ``\\`` counts twice) plus headers and request
context. The local front builds that event and the local Lambda runtime enforces the limit, as in AWS.
"""

import json
import re
from pathlib import Path

import pytest

from tests.support.api_caller import Caller, seed_body

pytestmark = pytest.mark.e2e

API_DOC = Path(__file__).resolve().parents[2] / "docs" / "api.md"
MAX_TEXT_CHARS = 1_000_000  # a request's text limit (docs/api.md)


def documented_body_limit_bytes() -> int:
    """The body size docs/api.md says is always accepted ("the body is at most N MB"), in bytes (MB = 10**6)."""
    found = re.search(r"the body is at most (\d+(?:\.\d+)?) MB", API_DOC.read_text())
    assert found, "docs/api.md states no inline body limit"
    return int(float(found.group(1)) * 1_000_000)


def escape_heavy_body(size: int) -> bytes:
    """A valid create body of exactly ``size`` bytes whose prompts are all ``\\"``: the worst case for escaping."""
    envelope = json.dumps(seed_body(requests={}), separators=(",", ":")).encode()
    budget = size - len(envelope)
    parts, index = [], 0
    while budget > 0:
        key = f'"r{index}":"'.encode()
        overhead = len(key) + 1 + (1 if parts else 0)  # closing quote, comma
        room = min(budget - overhead, 2 * (MAX_TEXT_CHARS - 1))
        if room < 3:
            break
        text = b'\\"' * (room // 2) + (b"x" if room % 2 else b"")
        parts.append(key + text + b'"')
        budget -= overhead + len(text)
        index += 1
    body = envelope[:-3] + b"{" + b",".join(parts) + b"}}"  # envelope ends with {}}: fill the requests object
    body += b" " * (size - len(body))  # whitespace makes up the last few bytes
    assert len(body) == size
    json.loads(body)
    return body


def test_a_body_of_the_documented_size_is_accepted_even_when_every_character_needs_escaping(stack):
    size = documented_body_limit_bytes()
    caller = Caller(stack.info()["api_url"], stack.caller("inline-limit-ok"))
    answer = caller.request("POST", "/batches", raw=escape_heavy_body(size))
    assert answer.status_code == 202, (
        f"a {size:,}-byte body, within the documented limit, got {answer.status_code} {answer.text[:200]}"
    )
    caller.request("POST", f"/batches/{answer.json()['id']}/cancel")


def test_a_body_over_lambdas_6_mb_never_reaches_the_service_and_creates_nothing(stack):
    caller = Caller(stack.info()["api_url"], stack.caller("inline-limit-over"))
    requests = {f"request_{i:06d}": "Name an animal that starts with the letter 'A'" for i in range(100_000)}
    body = json.dumps(seed_body(requests=requests)).encode()
    assert 6_291_456 < len(body) < 10 * 1024 * 1024  # API Gateway would take it; Lambda cannot
    answer = caller.request("POST", "/batches", raw=body)
    assert answer.status_code == 502 and answer.json() == {"message": "Internal server error"}
    assert caller.request("GET", "/batches").json()["batches"] == []


def test_a_body_over_api_gateways_10_mb_is_refused_413_before_anything_reads_it(stack):
    """API Gateway (REST) takes at most 10 MB and answers 413 itself; the local front does the same without reading
    the body (a generated 300 MB body once kept the front and the worker busy for minutes)."""
    caller = Caller(stack.info()["api_url"], stack.caller("inline-limit-gateway"))
    body = b'{"provider": "anthropic", "model": "claude-x", "requests": {"a": "' + b"m" * (10 * 1024 * 1024) + b'"}}'
    answer = caller.request("POST", "/batches", raw=body)
    assert answer.status_code == 413 and answer.json() == {"message": "Request Too Long"}
    assert answer.headers.get("x-amzn-RequestId")
    assert caller.request("GET", "/batches").json()["batches"] == []
