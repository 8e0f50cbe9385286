"""Every whole-string regex check in src/ refuses a trailing newline (`$` matches before a final newline, `\\Z` not)."""

import pytest

from batch_gateway.client import transport
from batch_gateway.models import principals
from batch_gateway.models.ids import CUSTOM_ID_RE
from batch_gateway.models.requests import MODEL_RE
from batch_gateway_dev import sigv4
from batch_gateway_dev.local.template import Route
from batch_gateway_dev.simulators import wire

SIGNATURE = (
    "AWS4-HMAC-SHA256 Credential=AKID/20261129/eu-west-1/execute-api/aws4_request, "
    "SignedHeaders=host;x-amz-date, Signature=" + "0" * 64
)

CASES = [
    ("custom_id", CUSTOM_ID_RE, "request_A"),
    ("model", MODEL_RE, "claude-sonnet-4-20250514"),
    ("assumed role", principals._ASSUMED_ROLE, "arn:aws:sts::123456789012:assumed-role/svc/session"),
    ("execute-api host", transport._EXECUTE_API_HOST, "abc123.execute-api.eu-west-1.amazonaws.com"),
    ("sigv4 authorization header", sigv4._AUTHORIZATION, SIGNATURE),
    ("simulator route", wire._compiled("/v1/batches"), "/v1/batches"),
]


@pytest.mark.parametrize(("name", "pattern", "good"), CASES, ids=[c[0] for c in CASES])
def test_a_whole_string_pattern_refuses_a_trailing_newline(name, pattern, good):
    assert pattern.match(good)
    assert not pattern.match(good + "\n")


def test_a_local_front_route_refuses_a_trailing_newline():
    route = Route("GET", "/batches/{id}", "Status")
    assert route.match("GET", "/batches/job_1") == {"id": "job_1"}
    assert Route("GET", "/batches", "List").match("GET", "/batches\n") is None
