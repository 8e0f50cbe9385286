"""The client's HTTP edge: SigV4 signing, retries, idempotent creates, typed errors (against canned answers)."""

from __future__ import annotations

import re

import boto3
import pytest

from batch_gateway.client import (
    BatchGatewayClient,
    BatchGatewayError,
    ConflictError,
    IdempotencyMismatchError,
    InvalidRequestError,
    LimitExceededError,
    NotFoundError,
    TransientError,
    UnauthorizedError,
)
from batch_gateway.client.errors import PayloadTooLargeError
from batch_gateway.client.transport import encode_query, region_from_endpoint
from tests.support.replay_gateway import (
    FAKE_AWS_ENV,
    Answer,
    ReplayGateway,
    answer,
    error,
    job,
    throttled,
    unavailable,
)


@pytest.fixture(autouse=True)
def aws_env(monkeypatch):
    for name, value in FAKE_AWS_ENV.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)


@pytest.fixture
def gateway():
    with ReplayGateway() as server:
        server.script("POST", "/batches", job("job_1"))
        yield server


def make_client(gateway: ReplayGateway, **kwargs) -> BatchGatewayClient:
    kwargs.setdefault("backoff_base", 0.001)
    return BatchGatewayClient(gateway.url, **kwargs)


def create(client: BatchGatewayClient, **kwargs):
    return client.create_job({"a": "hello"}, provider="anthropic", model="claude-test", **kwargs)


def test_every_request_is_sigv4_signed_for_execute_api_and_the_signature_verifies(gateway):
    gateway.script("GET", "/batches/job_1", job("job_1"))
    gateway.script("GET", "/batches", {"batches": [], "next_token": None})
    client = make_client(gateway, region="eu-west-1")
    create(client)
    client.get_job("job_1")
    client.jobs_page(status="queued", next_token="pg+/ab==")  # query values that need encoding, signed as sent

    assert [r.access_key for r in gateway.received] == ["testing"] * 3  # verified, else the answer was a 403
    for received in gateway.received:
        auth = received.headers["authorization"]
        assert re.match(r"AWS4-HMAC-SHA256 Credential=testing/\d{8}/eu-west-1/execute-api/aws4_request, ", auth)
        assert "x-amz-date" in received.headers
    assert gateway.received[-1].query == {"next_token": "pg+/ab==", "status": "queued"}


def test_query_values_with_plus_slash_and_equals_are_signed_as_sent():
    # API Gateway recomputes the signature over the decoded-then-canonically-encoded query.
    assert encode_query({"next_token": "pg+/ab==", "limit": 2}) == "limit=2&next_token=pg%2B%2Fab%3D%3D"
    assert encode_query({"status": None}) == ""


def test_region_comes_from_an_execute_api_url_before_the_session():
    assert region_from_endpoint("https://abc123.execute-api.ap-south-1.amazonaws.com/prod") == "ap-south-1"
    assert region_from_endpoint("http://127.0.0.1:8000/prod") is None


def test_region_defaults_to_the_session_region(gateway, monkeypatch):
    monkeypatch.setenv("AWS_DEFAULT_REGION", "sa-east-1")
    create(make_client(gateway))
    assert gateway.received[-1].region == "sa-east-1"


def test_a_boto3_session_supplies_credentials_and_region(gateway):
    session = boto3.Session(aws_access_key_id="other", aws_secret_access_key="secret", region_name="us-west-2")
    gateway.credentials["other"] = "secret"
    create(make_client(gateway, session=session))
    assert (gateway.received[-1].access_key, gateway.received[-1].region) == ("other", "us-west-2")


def test_a_wrong_secret_is_refused_as_forbidden_with_the_answers_status_and_request_id(gateway, monkeypatch):
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret")
    with pytest.raises(UnauthorizedError) as info:
        create(make_client(gateway))
    assert info.value.status_code == 403
    assert info.value.request_id == "req-1"
    assert "signature" in info.value.message


def test_no_credentials_anywhere_is_a_clear_forbidden_error(gateway, monkeypatch):
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    with pytest.raises(UnauthorizedError, match="no AWS credentials"):
        create(make_client(gateway))
    assert gateway.received == []


def test_retries_429_and_503_then_succeeds():
    with ReplayGateway() as gateway:
        gateway.script("POST", "/batches", throttled(), unavailable(), unavailable(), job("job_1"))
        created = create(make_client(gateway))
    assert created.status == "queued"
    assert len(gateway.requests_to("POST", "/batches")) == 4


def test_gives_up_after_max_attempts_with_a_typed_error(gateway):
    gateway.script("GET", "/batches/job_1", unavailable())
    client = make_client(gateway, max_attempts=3)
    with pytest.raises(TransientError) as info:
        client.get_job("job_1")
    assert info.value.status_code == 503
    assert len(gateway.received) == 3


def test_throttling_429_from_api_gateway_is_a_transient_error_after_retries(gateway):
    gateway.script("GET", "/batches/x", throttled())
    with pytest.raises(TransientError, match="Too Many Requests"):
        make_client(gateway, max_attempts=2).get_job("x")


def test_retry_after_is_honoured_and_backoff_is_jittered_and_growing():
    with ReplayGateway() as gateway:
        gateway.script("POST", "/batches", throttled(retry_after="7"), unavailable(), unavailable(), job("job_1"))
        client = make_client(gateway, backoff_base=1.0, backoff_cap=100.0)
        delays: list[float] = []
        client._transport._sleep = delays.append
        client._transport._random = lambda: 1.0  # the top of the jitter range
        create(client)
    assert delays == [7.0, 2.0, 4.0]


def test_connection_errors_are_retried_then_reported_as_transient():
    client = BatchGatewayClient("http://127.0.0.1:9/prod", max_attempts=2, backoff_base=0.001, timeout=2)
    with pytest.raises(TransientError, match="could not reach"):
        client.get_job("x")


def test_one_idempotency_key_is_sent_on_every_retry_of_a_create():
    with ReplayGateway() as gateway:
        gateway.script("POST", "/batches", unavailable(), unavailable(), job("job_1"))
        create(make_client(gateway))
    keys = {r.headers["idempotency-key"] for r in gateway.requests_to("POST", "/batches")}
    assert len(gateway.requests_to("POST", "/batches")) == 3
    assert len(keys) == 1


def test_each_create_call_gets_its_own_key_unless_given_one(gateway):
    client = make_client(gateway)
    create(client)
    create(client)
    create(client, idempotency_key="k-1")
    keys = [r.headers["idempotency-key"] for r in gateway.requests_to("POST", "/batches")]
    assert keys[0] != keys[1] and keys[2] == "k-1"
    assert all(re.fullmatch(r"[0-9a-f-]{36}", key) for key in keys[:2])


def test_same_idempotency_key_with_another_body_is_a_mismatch_error():
    with ReplayGateway() as gateway:
        mismatch = error(422, "idempotency_key_mismatch", "this key was used with another body")
        gateway.script("POST", "/batches", mismatch)
        with pytest.raises(IdempotencyMismatchError) as info:
            create(make_client(gateway), idempotency_key="k-2")
    assert info.value.status_code == 422
    assert len(gateway.received) == 1


def test_unknown_job_is_not_found_error_and_4xx_is_not_retried(gateway):
    gateway.script("GET", "/batches/job_missing", error(404, "not_found", "no batch job_missing"))
    with pytest.raises(NotFoundError) as info:
        make_client(gateway).get_job("job_missing")
    assert info.value.status_code == 404
    assert len(gateway.received) == 1


def test_bad_request_is_invalid_request_error_with_the_servers_details():
    details = [{"field": "provider", "message": "must be anthropic or openai"}, {"field": "model", "message": "bad"}]
    with ReplayGateway() as gateway:
        gateway.script("POST", "/batches", error(400, "invalid_request", "2 problems", details))
        with pytest.raises(InvalidRequestError) as info:
            make_client(gateway).create_job({"a": "hi"}, provider="bedrock", model="")
    assert info.value.status_code == 400
    assert info.value.details == details


def test_an_answer_not_in_our_error_shape_is_typed_by_its_status(gateway):
    gateway.script("GET", "/batches/x", answer(413, b"<html>Request Entity Too Large</html>"))
    with pytest.raises(PayloadTooLargeError) as info:
        make_client(gateway).get_job("x")
    assert (info.value.status_code, info.value.message) == (413, "<html>Request Entity Too Large</html>")


def test_results_of_a_running_job_are_a_conflict_and_a_409_off_create_is_not_retried(gateway):
    gateway.script("GET", "/batches/job_1/results", error(409, "conflict", "batch job_1 is in_progress"))
    with pytest.raises(ConflictError):
        make_client(gateway).results_page("job_1")
    assert len(gateway.requests_to("GET", "/batches/job_1/results")) == 1


def test_job_ids_are_quoted_into_the_path(gateway):
    gateway.script("GET", "/batches/a%2Fb%20c", error(404, "not_found", "no batch a/b c"))
    with pytest.raises(NotFoundError, match="no batch a/b c"):
        make_client(gateway).get_job("a/b c")
    assert gateway.received[-1].path == "/batches/a%2Fb%20c"


def test_endpoint_must_be_an_http_url():
    with pytest.raises(ValueError, match="http"):
        BatchGatewayClient("abc123.execute-api.us-east-1.amazonaws.com")


def test_an_unknown_profile_is_a_clear_forbidden_error(gateway):
    with pytest.raises(UnauthorizedError, match="cannot load AWS credentials: .*nope"):
        create(make_client(gateway, profile="nope"))


def test_a_create_still_in_flight_409_is_retried_into_the_first_answer():
    with ReplayGateway() as gateway:
        gateway.script("POST", "/batches", error(409, "conflict", "still in flight"), job("job_1"))
        created = create(make_client(gateway))
    assert created.id == "job_1"
    assert len(gateway.requests_to("POST", "/batches")) == 2


def test_a_2xx_answer_that_is_not_json_is_a_typed_error(gateway):
    gateway.script("GET", "/batches/job_1", answer(200, b"<html>proxy login</html>"))
    with pytest.raises(BatchGatewayError, match="not JSON") as info:
        make_client(gateway).get_job("job_1")
    assert info.value.status_code == 200


def test_a_create_over_the_owners_limits_waits_its_retry_after_and_then_raises_limit_exceeded_with_it():
    """Decision 0119: a 429 the service answers names the limit and says when; the client waits that long between
    its attempts, and the last one's error carries ``retry_after`` and the details."""
    limited = Answer(
        429,
        {
            "error": {
                "type": "limit_exceeded",
                "message": "over your limit of 5 creates a minute",
                "details": [{"field": "creates_per_minute", "limit": 5, "used": 5, "retry_after_seconds": 42}],
            }
        },
        {"Retry-After": "42"},
    )
    with ReplayGateway() as gateway:
        gateway.script("POST", "/batches", limited)
        client = make_client(gateway, max_attempts=2)
        delays: list[float] = []
        client._transport._sleep = delays.append
        with pytest.raises(LimitExceededError) as raised:
            create(client)
    assert delays == [42.0]
    assert (raised.value.retry_after, raised.value.status_code) == (42, 429)
    assert raised.value.details[0]["field"] == "creates_per_minute"
    assert isinstance(raised.value, BatchGatewayError)


def test_the_limit_admin_calls_send_only_the_limits_named():
    with ReplayGateway() as gateway:
        view = {"owner": "arn:aws:iam::1:user/a", "limits": {}, "override": {}, "usage": {}, "updated_at": None}
        gateway.script("POST", "/limits", answer(200, view))
        gateway.script("GET", "/limits", {"defaults": {}, "limits": []})
        gateway.script("DELETE", "/limits", {"owner": "arn:aws:iam::1:user/a", "deleted": True})
        gateway.script("GET", "/limit", view)
        client = make_client(gateway)
        client.set_limits("arn:aws:iam::1:user/a", open_jobs=None)
        client.list_limits()
        client.remove_limits("arn:aws:iam::1:user/a")
        assert client.get_limits() == view
    sent = gateway.requests_to("POST", "/limits")[0]
    assert sent.body == {"owner": "arn:aws:iam::1:user/a", "open_jobs": None}
    assert gateway.requests_to("DELETE", "/limits")[0].query == {"owner": "arn:aws:iam::1:user/a"}
