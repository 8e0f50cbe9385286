"""Every provider call's timeout (decision 0115): at most a per-call cap, and never past the invocation's deadline.

A call may wait for the provider at most ``CALL_TIMEOUT_SECONDS`` for each phase (connect, each read of the answer,
each write of the body: a results download is bounded by its idle time, not its length), and never longer than the
invocation has left but ``MARGIN_SECONDS``, the time the step keeps to record what happened. With no time left the
call is not made: it fails at once as a connection never made (``ProviderUnavailableError``, even for a create).

The SDKs on httpx2 (Anthropic, OpenAI, google-genai) take a request hook (``bound_request``) that lowers each
request's own timeouts, retries included; botocore has no per-request timeout, so the Bedrock adapter builds its
clients with the timeouts and tries ``boto_timeouts`` gives.
"""

from __future__ import annotations

import math
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


def bound_request(request: Any) -> None:
    """httpx2 request hook: no phase of the request waits past the call limit; none is sent without time for it.
    Each try of an SDK's retries passes here, so each is bounded by the time left when it starts."""
    limit = call_limit()
    if limit is not None and limit < MIN_CALL_SECONDS:
        import httpx2  # noqa: PLC0415 (loaded by the SDK already)

        raise httpx2.ConnectTimeout("no time left in this invocation for another provider call", request=request)
    phases = {"connect": None, "read": None, "write": None, "pool": None, **(request.extensions.get("timeout") or {})}
    bounded = {}
    for phase, seconds in phases.items():  # none waits forever (google-genai sets none): the cap, unless set
        bounded[phase] = CALL_TIMEOUT_SECONDS if seconds is None else float(seconds)
        if limit is not None:
            bounded[phase] = min(bounded[phase], limit)
    request.extensions = {**request.extensions, "timeout": bounded}


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
