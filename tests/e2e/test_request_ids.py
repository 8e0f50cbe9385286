"""Every answer carries ``x-amzn-RequestId`` like API Gateway's, so an error the SDK raises names the request an
operator can look up (the same id is the API function's ``requestContext.requestId``)."""

from __future__ import annotations

from typing import Any

import boto3
import pytest

from batch_gateway.client import BatchGatewayClient, NotFoundError

pytestmark = pytest.mark.e2e


def _recording_sdk(stack, user: str) -> tuple[BatchGatewayClient, list[Any]]:
    credentials = stack.caller(user)
    session = boto3.Session(
        aws_access_key_id=credentials.access_key, aws_secret_access_key=credentials.secret_key, region_name="us-east-1"
    )
    client = BatchGatewayClient(stack.info()["api_url"], session=session, max_attempts=1)
    answers: list[Any] = []
    send = client._transport._send

    def recording(*args: Any) -> Any:
        answers.append(send(*args))
        return answers[-1]

    client._transport._send = recording  # type: ignore[method-assign]
    return client, answers


def test_an_sdk_error_carries_the_request_id_of_the_answer(stack, sim):
    client, answers = _recording_sdk(stack, "request-ids")
    with pytest.raises(NotFoundError) as info:
        client.get_job("job_" + "0" * 26)
    (answer,) = answers
    assert info.value.request_id
    assert info.value.request_id == answer.headers["x-amzn-RequestId"]
    with pytest.raises(NotFoundError) as again:
        client.get_job("job_" + "1" * 26)
    assert again.value.request_id not in (None, info.value.request_id)  # one id per request


def test_the_fronts_own_refusals_carry_a_request_id_too(alice):
    unsigned = alice.request("GET", "/batches", sign=False)
    assert unsigned.status_code == 403 and unsigned.headers.get("x-amzn-RequestId")
    answered = alice.request("GET", "/batches")
    assert answered.status_code == 200 and answered.headers.get("x-amzn-RequestId")
