"""The per-call bounds of decision 0115: what a provider call may wait, with and without an invocation's deadline."""

import email.utils
from datetime import UTC, datetime, timedelta

import httpx2
import pytest

from batch_gateway import deadline
from batch_gateway.contract.errors import ProviderUnavailableError
from batch_gateway.providers.call_timeouts import (
    CALL_TIMEOUT_SECONDS,
    MARGIN_SECONDS,
    BotoTimeouts,
    NoTimeLeftError,
    boto_timeouts,
    bound_request,
    bound_response,
)


def _bounded(timeout=None):
    request = httpx2.Request("GET", "http://127.0.0.1/x", extensions={"timeout": httpx2.Timeout(timeout).as_dict()})
    bound_request(request)
    return request.extensions["timeout"]


def test_without_a_deadline_a_call_waits_at_most_the_cap_and_keeps_a_shorter_timeout_of_its_own():
    assert set(_bounded(None).values()) == {CALL_TIMEOUT_SECONDS}
    assert set(_bounded(120.0).values()) == {120.0}  # a create's own timeout stands
    assert boto_timeouts() == BotoTimeouts(3, 5.0, CALL_TIMEOUT_SECONDS)


def test_near_the_deadline_every_phase_ends_before_it_less_the_margin():
    with deadline.until(lambda: 20_000):
        phases = _bounded(120.0)
        assert all(seconds <= 20 - MARGIN_SECONDS for seconds in phases.values())
        timeouts = boto_timeouts()
        assert timeouts.attempts * (timeouts.connect + timeouts.read) <= 20 - MARGIN_SECONDS


def test_with_no_time_left_no_call_is_made():
    with deadline.until(lambda: int(MARGIN_SECONDS * 1000)):
        with pytest.raises(NoTimeLeftError):  # mapped to a connection never made, retried by no SDK
            _bounded(None)
        with pytest.raises(ProviderUnavailableError):
            boto_timeouts()
    assert deadline.seconds_left() is None  # the deadline ends with the invocation


def _retried(headers: dict[str, str]) -> bool:
    """Whether the Anthropic and OpenAI SDKs may still wait and retry after this answer (its hook has run)."""
    response = httpx2.Response(429, headers=headers)
    bound_response(response)
    return response.headers.get("x-should-retry") != "false"


def test_a_retry_after_that_does_not_fit_the_time_left_is_not_waited_for_and_one_that_fits_is_left_to_the_sdk():
    later = email.utils.format_datetime(datetime.now(UTC) + timedelta(seconds=60), usegmt=True)
    with deadline.until(lambda: 20_000):  # 15 s for calls
        assert _retried({}) and _retried({"retry-after": "2"}) and _retried({"retry-after-ms": "2500"})
        assert not _retried({"retry-after": "30"}) and not _retried({"retry-after-ms": "14500"})
        assert not _retried({"retry-after": later})  # an HTTP date
        assert _retried({"retry-after": "soon"})  # unreadable: the SDK's own rule
    assert _retried({"retry-after": "30"}) and not _retried({"retry-after": "100"})  # no deadline: the 60 s cap
