"""Every provider call's timeout (decision 0115): at most a per-call cap, and never past the invocation's deadline.

A call may wait for the provider at most ``CALL_TIMEOUT_SECONDS`` for each phase (connect, each read of the answer,
each write of the body: a results download is bounded by its idle time, not its length), and never longer than the
invocation has left but ``MARGIN_SECONDS``, the time the step keeps to record what happened. With no time left the
call is not made: it fails at once as a connection never made (``ProviderUnavailableError``, even for a create).

The SDKs on httpx2 (Anthropic, OpenAI, google-genai) take a request hook (``request_hook``) that lowers each
request's own timeouts, retries included, and refuses a request without time with ``NoTimeLeftError`` as the SDK's
own error type, which the SDK does not retry; botocore has no per-request timeout, so the Bedrock adapter builds its
clients with the timeouts and tries ``boto_timeouts`` gives. The Anthropic and OpenAI SDKs also sleep before a retry
for as long as the provider's ``retry-after`` asks (Anthropic's for any length, OpenAI's up to 2 minutes): their
response hook (``bound_response``) tells them not to retry when that wait would not leave time for the try.
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from batch_gateway import deadline
from batch_gateway.contract.errors import ProviderUnavailableError

CALL_TIMEOUT_SECONDS = 60.0  # each phase of a call but the create (which has its own, ``_create_timeout``)
CONNECT_TIMEOUT_SECONDS = 5.0
MARGIN_SECONDS = 5.0  # the invocation's time kept for the step's own writes after a call fails
MIN_CALL_SECONDS = 1.0  # less time left than this (after the margin): the call is not made
BOTO_ATTEMPTS = 3  # botocore's tries of a call (retries on), when they fit the time left


def call_limit() -> float | None:
    """Seconds a call may still take (the invocation's time left less the margin); None without a deadline."""
    left = deadline.seconds_left()
    return None if left is None else left - MARGIN_SECONDS


class NoTimeLeftError(Exception):
    """A provider call not made: the invocation has no time left for it (``ProviderUnavailableError`` once mapped,
    even for a create: nothing was sent). Not retried by the SDK, so it fails at once: a refused try that the SDK
    took for a failed connection was retried after a backoff, and refused again, each time, so a call after the
    deadline slept through its SDK's whole retry schedule (google-genai's: 3 s or more), and a step that made several
    (the cleanup's deletes) returned seconds after its invocation's end."""


@functools.cache
def no_time_left_as(sdk_error: type[Exception]) -> type[NoTimeLeftError]:
    """``NoTimeLeftError`` that is also the SDK's own error type: the Anthropic and OpenAI SDKs raise their own
    errors as they are, where they retry any other error a request raises as a connection error."""
    return type(f"NoTimeLeft{sdk_error.__name__}", (NoTimeLeftError, sdk_error), {})


def request_hook(refusal: type[NoTimeLeftError] = NoTimeLeftError) -> Callable[[Any], None]:
    """The httpx2 request hook for an SDK's client: ``bound_request``, refusing with ``refusal`` (the SDK's
    ``no_time_left_as``; google-genai retries only its transport errors and status codes, so the plain one)."""
    return functools.partial(bound_request, refusal=refusal)


def bound_request(request: Any, refusal: type[NoTimeLeftError] = NoTimeLeftError) -> None:
    """httpx2 request hook: no phase of the request waits past the call limit; none is sent without time for it.
    Each try of an SDK's retries passes here, so each is bounded by the time left when it starts."""
    limit = call_limit()
    if limit is not None and limit < MIN_CALL_SECONDS:
        raise refusal("no time left in this invocation for another provider call")
    phases = {"connect": None, "read": None, "write": None, "pool": None, **(request.extensions.get("timeout") or {})}
    bounded = {}
    for phase, seconds in phases.items():  # none waits forever (google-genai sets none): the cap, unless set
        bounded[phase] = CALL_TIMEOUT_SECONDS if seconds is None else float(seconds)
        if limit is not None:
            bounded[phase] = min(bounded[phase], limit)
    request.extensions = {**request.extensions, "timeout": bounded}


def bound_response(response: Any) -> None:
    """httpx2 response hook for the SDKs that wait what the provider's ``retry-after`` asks before a retry: when the
    wait and a try after it do not fit the call limit (or the wait is over the per-call cap), the answer says not to
    retry (``x-should-retry: false``, which both SDKs obey), and the provider's error (a rate limit, say) is raised
    now, for the step to record and the state machine to wait out."""
    wait = retry_after_seconds(response.headers)
    if wait is None:
        return
    limit = call_limit()
    allowed = CALL_TIMEOUT_SECONDS if limit is None else min(CALL_TIMEOUT_SECONDS, limit - MIN_CALL_SECONDS)
    if wait > allowed:
        response.headers["x-should-retry"] = "false"


def retry_after_seconds(headers: Any) -> float | None:
    """The wait an answer asks for, as the SDKs read it: ``retry-after-ms``, else ``retry-after`` in seconds or as
    an HTTP date; None without either (or unreadable)."""
    try:
        if (ms := headers.get("retry-after-ms")) is not None:
            return float(ms) / 1000
        if (value := headers.get("retry-after")) is None:
            return None
        try:
            return float(value)
        except ValueError:
            # an HTTP date, rarely sent: email.utils costs 20 ms of import (-X importtime) on every adapter's import
            from email.utils import parsedate_to_datetime  # noqa: PLC0415

            return parsedate_to_datetime(value).timestamp() - time.time()
    except (TypeError, ValueError, OverflowError):
        return None


@dataclass(frozen=True)
class BotoTimeouts:
    attempts: int
    connect: float
    read: float


def boto_timeouts(cap: float = CALL_TIMEOUT_SECONDS, attempts: int = BOTO_ATTEMPTS) -> BotoTimeouts:
    """A botocore client's tries and timeouts for a call starting now: ``attempts`` tries of at most ``cap`` each
    while they fit the call limit, each shortened to fit it, else one try in what is left. Whole seconds, so that
    the clients built for them are few (``BedrockBatchProvider._bounded``)."""
    limit = call_limit()
    if limit is None:
        return BotoTimeouts(attempts, CONNECT_TIMEOUT_SECONDS, cap)
    if limit < MIN_CALL_SECONDS:
        raise ProviderUnavailableError("no time left in this invocation for another provider call")
    each = limit / attempts - CONNECT_TIMEOUT_SECONDS
    if each >= CONNECT_TIMEOUT_SECONDS:  # a try still worth making
        return BotoTimeouts(attempts, CONNECT_TIMEOUT_SECONDS, float(min(cap, math.floor(each))))
    connect = min(CONNECT_TIMEOUT_SECONDS, math.floor(limit / 2) or 1.0)
    return BotoTimeouts(1, float(connect), float(max(1, min(cap, math.floor(limit - connect)))))
