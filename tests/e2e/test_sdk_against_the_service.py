"""What only the service decides, seen through the SDK: its refusals with their details, the replay of an
Idempotency-Key, and another caller's job. (The SDK's own behaviour is unit-tested against canned answers.)"""

import boto3
import pytest

from batch_gateway.client import (
    BatchGatewayClient,
    IdempotencyMismatchError,
    InvalidRequestError,
    NotFoundError,
)

pytestmark = pytest.mark.e2e
MODEL = "claude-sonnet-4-20250514"


def sdk(stack, user: str) -> BatchGatewayClient:
    credentials = stack.caller(user)
    session = boto3.Session(
        aws_access_key_id=credentials.access_key, aws_secret_access_key=credentials.secret_key, region_name="us-east-1"
    )
    return BatchGatewayClient(stack.info()["api_url"], session=session, max_attempts=2, backoff_base=0.01)


def test_a_body_the_service_refuses_is_an_invalid_request_error_with_its_details(stack, sim):
    client = sdk(stack, "sdk-refused")
    with pytest.raises(InvalidRequestError) as info:
        client.create_job({"a": "hi"}, provider="anthropic", model="m")  # not an Anthropic model name
    assert info.value.status_code == 400
    assert [d.get("field") for d in info.value.details] == ["model"]
    assert client.jobs_page().batches == []  # nothing was stored


def test_the_same_idempotency_key_returns_the_first_job_and_another_body_is_refused(stack, sim):
    client = sdk(stack, "sdk-idempotent")
    first = client.create_job({"a": "hi"}, provider="anthropic", model=MODEL, idempotency_key="key-1")
    again = client.create_job({"a": "hi"}, provider="anthropic", model=MODEL, idempotency_key="key-1")
    assert again.id == first.id
    with pytest.raises(IdempotencyMismatchError) as info:
        client.create_job({"a": "other"}, provider="anthropic", model=MODEL, idempotency_key="key-1")
    assert info.value.status_code == 422
    assert [job.id for job in client.iter_jobs()] == [first.id]


def test_another_callers_job_is_not_found_through_the_sdk(stack, sim):
    owner, other = sdk(stack, "sdk-owner"), sdk(stack, "sdk-other")
    job = owner.create_job({"a": "hi"}, provider="anthropic", model=MODEL)
    for call in (other.get_job, other.cancel_job, other.results_page):
        with pytest.raises(NotFoundError) as info:
            call(job.id)
        assert info.value.status_code == 404
    assert owner.get_job(job.id).id == job.id
