"""The client's HTTP edge: SigV4 signing, retries, idempotent creates, typed errors."""

from __future__ import annotations

import re

import boto3
import pytest

from batch_gateway.client import BatchGatewayClient
from batch_gateway.client.testing import FAKE_AWS_ENV, FakeBatchGateway
from batch_gateway.client.transport import encode_query, region_from_endpoint
from batch_gateway.models.errors import (
    ConflictError,
    IdempotencyMismatchError,
    InvalidRequestError,
    NotFoundError,
    TransientError,
    UnauthorizedError,
)


@pytest.fixture(autouse=True)
def aws_env(monkeypatch):
    for name, value in FAKE_AWS_ENV.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)


@pytest.fixture
def fake():
    with FakeBatchGateway(polls_to_finish=1) as server:
        yield server


def make_client(fake: FakeBatchGateway, **kwargs) -> BatchGatewayClient:
    kwargs.setdefault("backoff_base", 0.001)
    return BatchGatewayClient(fake.url, **kwargs)


def create(client: BatchGatewayClient, **kwargs):
    return client.create_job({"a": "hello"}, provider="anthropic", model="claude-test", **kwargs)


def test_every_request_is_sigv4_signed_for_execute_api_and_the_fake_verifies_the_signature(fake):
    client = make_client(fake, region="eu-west-1")
    job = create(client)
    client.get_job(job.id)

    for received in fake.received:
        auth = received.headers["authorization"]
        assert re.match(r"AWS4-HMAC-SHA256 Credential=testing/\d{8}/eu-west-1/execute-api/aws4_request, ", auth)
        assert "x-amz-date" in received.headers
    assert [r.service for r in fake.received] == ["execute-api", "execute-api"]


def test_query_values_with_plus_slash_and_equals_are_signed_as_sent():
    # API Gateway recomputes the signature over the decoded-then-canonically-encoded query.
    assert encode_query({"next_token": "pg+/ab==", "limit": 2}) == "limit=2&next_token=pg%2B%2Fab%3D%3D"
    assert encode_query({"status": None}) == ""


def test_region_comes_from_an_execute_api_url_before_the_session():
    assert region_from_endpoint("https://abc123.execute-api.ap-south-1.amazonaws.com/prod") == "ap-south-1"
    assert region_from_endpoint("http://127.0.0.1:8000/prod") is None


def test_region_defaults_to_the_session_region(fake, monkeypatch):
    monkeypatch.setenv("AWS_DEFAULT_REGION", "sa-east-1")
    create(make_client(fake))
    assert fake.received[-1].region == "sa-east-1"


def test_a_boto3_session_supplies_credentials_and_region(fake):
    session = boto3.Session(aws_access_key_id="other", aws_secret_access_key="secret", region_name="us-west-2")
    fake.credentials["other"] = "secret"
    create(make_client(fake, session=session))
    assert (fake.received[-1].owner, fake.received[-1].region) == ("other", "us-west-2")


def test_a_wrong_secret_is_refused_as_forbidden(fake, monkeypatch):
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret")
    with pytest.raises(UnauthorizedError) as info:
        create(make_client(fake))
    assert info.value.status_code == 403
    assert "signature" in info.value.message


def test_no_credentials_anywhere_is_a_clear_forbidden_error(fake, monkeypatch):
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    with pytest.raises(UnauthorizedError, match="no AWS credentials"):
        create(make_client(fake))
    assert fake.received == []


def test_retries_429_and_503_then_succeeds(fake):
    fake.fail_next(1, 429)
    fake.fail_next(2, 503)
    job = create(make_client(fake))
    assert job.status == "queued"
    assert len(fake.requests_to("POST", "/batches")) == 4


def test_gives_up_after_max_attempts_with_a_typed_error(fake):
    fake.fail_next(10, 503)
    client = make_client(fake, max_attempts=3)
    with pytest.raises(TransientError) as info:
        client.get_job("batch_00001")
    assert info.value.status_code == 503
    assert len(fake.received) == 3


def test_throttling_429_from_api_gateway_is_a_transient_error_after_retries(fake):
    fake.fail_next(2, 429)
    with pytest.raises(TransientError, match="Too Many Requests"):
        make_client(fake, max_attempts=2).get_job("x")


def test_retry_after_is_honoured_and_backoff_is_jittered_and_growing(fake):
    client = make_client(fake, backoff_base=1.0, backoff_cap=100.0)
    delays: list[float] = []
    client._transport._sleep = delays.append
    client._transport._random = lambda: 1.0  # the top of the jitter range
    fake.fail_next(1, 429, retry_after="7")
    fake.fail_next(2, 503)
    create(client)
    assert delays == [7.0, 2.0, 4.0]


def test_connection_errors_are_retried_then_reported_as_transient():
    client = BatchGatewayClient("http://127.0.0.1:9/prod", max_attempts=2, backoff_base=0.001, timeout=2)
    with pytest.raises(TransientError, match="could not reach"):
        client.get_job("x")


def test_one_idempotency_key_is_sent_on_every_retry_of_a_create(fake):
    fake.fail_next(2, 503, route=("POST", "/batches"))
    create(make_client(fake))
    keys = {r.headers["idempotency-key"] for r in fake.requests_to("POST", "/batches")}
    assert len(fake.requests_to("POST", "/batches")) == 3
    assert len(keys) == 1


def test_a_create_whose_answer_was_lost_is_retried_into_the_same_job(fake):
    fake.fail_next(1, 503, after_handling=True, route=("POST", "/batches"))
    job = create(make_client(fake))
    assert list(fake.jobs) == [job.id]


def test_each_create_call_gets_its_own_key_unless_given_one(fake):
    client = make_client(fake)
    first, second = create(client), create(client)
    assert first.id != second.id
    again = create(client, idempotency_key="k-1")
    assert create(client, idempotency_key="k-1").id == again.id
    assert fake.requests_to("POST", "/batches")[-1].headers["idempotency-key"] == "k-1"


def test_same_idempotency_key_with_another_body_is_a_mismatch_error(fake):
    client = make_client(fake)
    create(client, idempotency_key="k-2")
    with pytest.raises(IdempotencyMismatchError) as info:
        client.create_job({"b": "other"}, provider="anthropic", model="claude-test", idempotency_key="k-2")
    assert info.value.status_code == 422


def test_unknown_job_is_not_found_error(fake):
    with pytest.raises(NotFoundError) as info:
        make_client(fake).get_job("batch_missing")
    assert info.value.status_code == 404
    assert len(fake.received) == 1  # 4xx is not retried


def test_another_callers_job_is_not_found(fake, monkeypatch):
    job = create(make_client(fake))
    fake.credentials["intruder"] = "secret"
    session = boto3.Session(aws_access_key_id="intruder", aws_secret_access_key="secret", region_name="us-east-1")
    with pytest.raises(NotFoundError):
        make_client(fake, session=session).get_job(job.id)


def test_bad_request_is_invalid_request_error_with_the_servers_details(fake):
    with pytest.raises(InvalidRequestError) as info:
        make_client(fake).create_job({"a": "hi"}, provider="bedrock", model="")
    assert info.value.status_code == 400
    assert {d["field"] for d in info.value.details} == {"provider", "model"}


def test_results_of_a_running_job_are_a_conflict(fake):
    client = make_client(fake)
    job = create(client)
    with pytest.raises(ConflictError):
        client.results_page(job.id)


def test_job_ids_are_quoted_into_the_path(fake):
    with pytest.raises(NotFoundError, match="no batch a/b c"):
        make_client(fake).get_job("a/b c")
    assert fake.received[-1].path == "/batches/a%2Fb%20c"


def test_endpoint_must_be_an_http_url():
    with pytest.raises(ValueError, match="http"):
        BatchGatewayClient("abc123.execute-api.us-east-1.amazonaws.com")


def test_an_unknown_profile_is_a_clear_forbidden_error(fake):
    with pytest.raises(UnauthorizedError, match="cannot load AWS credentials: .*nope"):
        create(make_client(fake, profile="nope"))


def test_a_create_still_in_flight_409_is_retried_into_the_first_answer(fake):
    fake.fail_next(1, 409, route=("POST", "/batches"))
    job = create(make_client(fake))
    assert len(fake.requests_to("POST", "/batches")) == 2
    assert list(fake.jobs) == [job.id]


def test_a_409_on_other_routes_is_not_retried(fake):
    client = make_client(fake)
    job = create(client)
    with pytest.raises(ConflictError):
        client.results_page(job.id)
    assert len(fake.requests_to("GET", f"/batches/{job.id}/results")) == 1
