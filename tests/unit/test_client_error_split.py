"""The SDK's errors split by HTTP status as the official ``openai`` SDK splits them (decision 0131), each carrying the
answer's ``request_id``, while the service's own classes (``TransientError``, ``LimitExceededError``, ...) still catch
what they caught."""

from __future__ import annotations

import pickle
import socket
import threading

import openai
import pytest

from batch_gateway.client import (
    APIConnectionError,
    APITimeoutError,
    AuthenticationError,
    BatchGatewayClient,
    BatchGatewayError,
    ConflictError,
    InternalServerError,
    LimitExceededError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitError,
    TransientError,
    UnauthorizedError,
)
from batch_gateway.contract.errors import ProviderError, RateLimitedError
from batch_gateway_dev.http_server import LoopbackServer, QuietHandler
from tests.support.replay_gateway import FAKE_AWS_ENV, ReplayGateway, answer, error, throttled, unavailable


@pytest.fixture(autouse=True)
def aws_env(monkeypatch):
    for name, value in FAKE_AWS_ENV.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)


@pytest.fixture
def gateway():
    with ReplayGateway() as server:
        yield server


def client_of(url: str, **kwargs) -> BatchGatewayClient:
    client = BatchGatewayClient(url, max_attempts=kwargs.pop("max_attempts", 2), **kwargs)
    client._transport._sleep = lambda _seconds: None  # backoff without waiting
    return client


@pytest.mark.parametrize(
    ("scripted", "split", "wire", "status"),
    [
        (answer(401, {"message": "Unauthorized"}), AuthenticationError, UnauthorizedError, 401),
        (error(403, "forbidden", "not allowed on this route"), PermissionDeniedError, UnauthorizedError, 403),
        (error(404, "not_found", "batch x not found"), NotFoundError, NotFoundError, 404),
        (error(409, "conflict", "the job has not ended"), ConflictError, ConflictError, 409),
        (throttled(), RateLimitError, TransientError, 429),  # API Gateway's own, not in our shape
        (error(429, "rate_limited", "slow down"), RateLimitError, RateLimitedError, 429),
        (error(429, "limit_exceeded", "over your limits"), RateLimitError, LimitExceededError, 429),
        (unavailable(), InternalServerError, TransientError, 503),
        (error(502, "provider_error", "the provider refused"), InternalServerError, ProviderError, 502),
        (answer(500, b"<html>boom</html>"), InternalServerError, BatchGatewayError, 500),
    ],
)
def test_each_status_raises_its_official_sdk_class_and_its_wire_class_with_the_request_id(
    gateway, scripted, split, wire, status
):
    gateway.script("GET", "/batches/x", scripted)

    with pytest.raises(split) as caught:
        client_of(gateway.url).get_job("x")

    assert isinstance(caught.value, wire)  # what callers caught before still catches it
    assert caught.value.status_code == status
    assert caught.value.request_id == f"req-{len(gateway.received)}"  # the last attempt's answer
    retried = (status == 429 or status >= 500) and wire is not ProviderError  # a provider's refusal is permanent
    attempts = 2 if retried else 1
    assert len(gateway.requests_to("GET", "/batches/x")) == attempts


def test_an_error_of_a_wire_class_and_a_status_class_survives_pickling_with_both(gateway):
    gateway.script("GET", "/batches/x", error(429, "limit_exceeded", "over your limits"))
    with pytest.raises(RateLimitError) as caught:
        client_of(gateway.url, max_attempts=1).get_job("x")
    copy = pickle.loads(pickle.dumps(caught.value))  # e.g. across a process pool
    assert isinstance(copy, LimitExceededError) and isinstance(copy, RateLimitError)
    assert (copy.message, copy.status_code, copy.request_id) == ("over your limits", 429, "req-1")


def test_the_split_classes_have_the_official_sdks_names():
    from batch_gateway import client

    official = {
        "APIConnectionError",
        "APITimeoutError",
        "AuthenticationError",
        "PermissionDeniedError",
        "NotFoundError",
        "ConflictError",
        "RateLimitError",
        "InternalServerError",
    }
    assert official <= set(dir(openai))  # the names are the official SDK's own
    for name in official:
        assert issubclass(getattr(client, name), BatchGatewayError), name
    assert issubclass(APITimeoutError, APIConnectionError)
    assert issubclass(APIConnectionError, TransientError)


def test_a_timeout_on_every_attempt_is_an_api_timeout_error_without_a_request_id():
    release = threading.Event()

    class Silent(QuietHandler):
        def serve(self) -> None:
            release.wait(10)  # never answers within the client's timeout

    server = LoopbackServer(Silent).start(name="silent")
    try:
        client = client_of(server.origin + "/prod", timeout=0.2)
        with pytest.raises(APITimeoutError) as caught:
            client.get_job("x")
    finally:
        release.set()
        server.stop()
    assert caught.value.request_id is None
    assert caught.value.status_code is None
    assert "timed out" in caught.value.message


def test_a_refused_connection_is_an_api_connection_error_and_not_a_timeout():
    with socket.socket() as bound:  # bound and not listening: connecting is refused
        bound.bind(("127.0.0.1", 0))
        port = bound.getsockname()[1]
        with pytest.raises(APIConnectionError) as caught:
            client_of(f"http://127.0.0.1:{port}/prod").get_job("x")
    assert not isinstance(caught.value, APITimeoutError)
    assert isinstance(caught.value, TransientError)
    assert caught.value.request_id is None


def test_a_retried_503_that_then_succeeds_raises_nothing(gateway):
    gateway.script("GET", "/batches/x", unavailable(), {"id": "x", "status": "queued", "provider": "p", "model": "m"})
    assert client_of(gateway.url).get_job("x").status == "queued"
