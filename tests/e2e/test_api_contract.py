"""Property-based contract test: docs/openapi.json's native routes against the local stack, with SigV4-signed requests.

Schemathesis generates requests from the document, schema-valid ones (positive) and schema-violating ones
(negative), a fixed number per operation from a fixed seed. For each answer: no 5xx; a documented status with a body
of the documented shape; a valid request accepted (2xx, or 404/409 for an id that is not the caller's or a job not
ended); an invalid one refused with a 4xx. A job a valid create starts is canceled at once, so no workflows pile up.
"""

from __future__ import annotations

from typing import Any

import pytest
import requests
import schemathesis
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from batch_gateway.edge.openapi import document
from tests.support.contract_checks import CHECKS, WITHOUT_ACCEPTANCE

pytestmark = pytest.mark.e2e

EXAMPLES_PER_OPERATION = 30
ALWAYS_FITS = 3_000_000  # docs/api.md: any body up to 3 MB fits whatever it holds
GATEWAY_LIMIT = 10 * 1024 * 1024  # API Gateway's payload limit
_SIGNED = ("content-type", "idempotency-key")

CONFIG = schemathesis.Config.from_dict(
    {
        "seed": 20260101,
        "generation": {
            "max-examples": EXAMPLES_PER_OPERATION,
            "deterministic": True,
            "mode": "all",
            "with-security-parameters": False,  # the Authorization header is SigV4's, not a generated value
            "database": "none",
        },
        # fuzzing only: the coverage phase's boundary cases of the create body take minutes to build
        "phases": {"coverage": {"enabled": False}, "stateful": {"enabled": False}},
        "checks": {
            "positive_data_acceptance": {"expected-statuses": ["2xx", "404", "409"]},
            "negative_data_rejection": {"expected-statuses": ["4xx"]},
        },
    }
)
# The native routes a tenant calls with SigV4. Not the compatible doors (a gateway key, not a signature, and bodies in
# the OpenAI / Anthropic APIs' own shapes, which tests/e2e/test_openai_door.py and test_anthropic_door.py check with
# the official SDKs), nor the key, budget and limit admin routes (an admin principal's; tests/e2e/test_api_keys.py,
# tests/e2e/test_budgets.py, tests/e2e/test_owner_limits.py).
schema = schemathesis.openapi.from_dict(document(), config=CONFIG).exclude(
    path_regex=r"^/(openai|anthropic|keys|budgets|limits)\b"
)


class SigV4(requests.auth.AuthBase):
    """Signs the request as it will be sent (URL, body, content type, idempotency key) for ``execute-api``."""

    def __init__(self, credentials: Credentials) -> None:
        self.credentials = credentials

    def __call__(self, request: requests.PreparedRequest) -> requests.PreparedRequest:
        body = request.body or b""
        headers = {k: v for k, v in request.headers.items() if k.lower() in _SIGNED}
        signed = AWSRequest(
            method=request.method,
            url=request.url,
            data=body.encode() if isinstance(body, str) else body,
            headers=headers,
        )
        SigV4Auth(self.credentials, "execute-api", "us-east-1").add_auth(signed)
        request.headers["Authorization"] = signed.headers["Authorization"]
        request.headers["X-Amz-Date"] = signed.headers["X-Amz-Date"]
        return request


@pytest.fixture(scope="module")
def contract_caller(stack) -> dict[str, Any]:
    stack.simulator.reset()  # no held create or slow setting left by an earlier test
    stack.simulator.configure(processing_seconds=0.5)
    credentials = stack.caller("contract")
    return {
        "base_url": stack.info()["api_url"],
        "auth": SigV4(Credentials(credentials.access_key, credentials.secret_key)),
        "session": requests.Session(),
        "bodies_by_key": {},
    }


@schema.parametrize()
def test_the_service_keeps_the_documented_contract(case, contract_caller):
    caller = contract_caller
    response = case.call(base_url=caller["base_url"], session=caller["session"], auth=caller["auth"], timeout=60)
    key = (case.headers or {}).get("Idempotency-Key")
    if case.operation.label == "POST /batches" and key is not None and response.status_code == 422:
        # the same key with another body (the generator reuses small keys): documented, and what the key is for
        assert caller["bodies_by_key"].get(key.strip()) not in (None, case.body), response.text
        return
    checks = CHECKS
    sent = len(response.request.body or b"")
    if response.status_code in (413, 502) and "error" not in _json_or_none(response):
        # API Gateway's own answers to a body over its 10 MB or Lambda's 6 MB event limit (documented as such): a
        # body that always fits (docs/api.md: 3 MB) must never get them. The service's own 413 (an upload's declared
        # size over its limit) is an error body and is checked like any other answer.
        assert sent > (GATEWAY_LIMIT if response.status_code == 413 else ALWAYS_FITS), (sent, response.text)
        checks = [status_code_conformance, content_type_conformance, response_schema_conformance]
    elif "next_token" in (case.query or {}) and _refused_field(response) == "next_token":
        # an opaque token the generator made up: the document says only a token the service gave out is taken
        checks = WITHOUT_ACCEPTANCE
    elif isinstance(case.body, dict) and "dataset" in case.body and _refused_field(response):
        # a dataset job (decision 0136): the document cannot say that the template's placeholders and the id column
        # name the table's columns (tests/integration/test_api_contract_in_process.py excuses the same)
        checks = WITHOUT_ACCEPTANCE
    elif _refused_field(response) in ("deadline", "deadline_seconds"):
        # a deadline must be in the future and within the provider's batch window plus a day (decision 0142): bounds
        # that move with the clock, which no schema of the body can say
        checks = WITHOUT_ACCEPTANCE
    elif (_refused_field(response) or "").startswith("provider_headers."):
        # a header or beta the generator made up: the document says only what the deployment's allow-list names is
        # taken (decision 0129), which no schema of the body can say
        checks = WITHOUT_ACCEPTANCE
    case.validate_response(response, checks=checks, transport_kwargs={"base_url": caller["base_url"]})
    if case.operation.label == "POST /batches" and response.status_code == 202:
        if key is not None:
            caller["bodies_by_key"].setdefault(key.strip(), case.body)
        job_id = response.json()["id"]
        cancel = caller["session"].post(f"{caller['base_url']}/batches/{job_id}/cancel", auth=caller["auth"])
        assert cancel.status_code in (202, 409), cancel.text  # 409: it ended already


def _json_or_none(response: requests.Response) -> dict:
    """The answer's JSON object (the service's errors hold ``error``; API Gateway's own answers only ``message``)."""
    try:
        body = response.json()
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}


def _refused_field(response: requests.Response) -> str | None:
    if response.status_code != 400:
        return None
    details = response.json()["error"]["details"]
    return details[0]["field"] if len(details) == 1 else None
