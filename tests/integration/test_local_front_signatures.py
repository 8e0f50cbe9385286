"""The local API front (``local/front.py``, the local stack's API Gateway) refuses a SigV4 signature scoped to
another Region or another service than ``execute-api``, as API Gateway does: 403 ``InvalidSignatureException`` with
its own message, even when the signature itself is right for that scope, and the function is never invoked.
Decision 0120.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import requests
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from batch_gateway_dev.local.front import ApiFront
from batch_gateway_dev.local.template import Route


@dataclass(frozen=True)
class _Caller:
    name: str = "alice"
    access_key: str = "AKIAALICE00000000000"
    secret_key: str = "alice-secret"
    principal: str = "arn:aws:iam::123456789012:user/alice"


ALICE = _Caller()


@pytest.fixture(scope="module")
def front() -> Iterator[tuple[ApiFront, list[str]]]:
    """A front with one IAM route whose function answers 200; the list holds the functions it invoked."""
    invoked: list[str] = []

    def invoke(function: str, event: dict[str, Any]) -> tuple[dict[str, Any], None]:
        invoked.append(function)
        return {"statusCode": 200, "body": '{"batches": []}'}, None

    api = ApiFront(
        [Route("GET", "/batches", "List")],
        invoke=invoke,
        identify=lambda key: ALICE if key == ALICE.access_key else None,
    ).start()
    try:
        yield api, invoked
    finally:
        api.stop()


def _get(api: ApiFront, region: str = "us-east-1", service: str = "execute-api") -> requests.Response:
    """``GET /batches`` signed by alice, correctly, for ``service`` in ``region``."""
    request = AWSRequest(method="GET", url=f"{api.url}/batches", data=b"")
    SigV4Auth(Credentials(ALICE.access_key, ALICE.secret_key), service, region).add_auth(request)
    return requests.get(request.url, headers=dict(request.headers.items()), timeout=10)


def test_a_call_signed_for_the_apis_region_reaches_the_function(front):
    api, invoked = front
    answer = _get(api)
    assert answer.status_code == 200 and answer.json() == {"batches": []}, answer.text
    assert invoked[-1:] == ["List"]


def test_a_call_signed_for_another_region_is_refused_as_api_gateway_does(front):
    api, invoked = front
    before = len(invoked)
    answer = _get(api, region="eu-west-1")
    assert answer.status_code == 403, answer.text
    assert answer.json() == {"message": "Credential should be scoped to a valid region, not 'eu-west-1'. "}
    assert answer.headers["x-amzn-ErrorType"] == "InvalidSignatureException"
    assert len(invoked) == before


@pytest.mark.parametrize("service", ["s3", "execute-apis", "lambda"])
def test_a_call_signed_for_another_service_is_refused_as_api_gateway_does(front, service):
    api, invoked = front
    before = len(invoked)
    answer = _get(api, service=service)
    assert answer.status_code == 403, answer.text
    assert answer.json() == {"message": "Credential should be scoped to correct service: 'execute-api'. "}
    assert answer.headers["x-amzn-ErrorType"] == "InvalidSignatureException"
    assert len(invoked) == before
