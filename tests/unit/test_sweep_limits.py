"""Limits the sweeper's chain must respect on AWS (review R1 of decision 0083): a hand-off is an asynchronous Lambda
invoke, whose event is at most 256 KB, and a BatchGetItem that leaves keys unprocessed (throttling) is asked again
with a backoff, a bounded number of times."""

from __future__ import annotations

import json
from typing import Any

import pytest

from batch_gateway.contract.errors import TransientError
from batch_gateway.service.workflow import sweep as sweep_module
from batch_gateway.store import jobs as jobs_store
from batch_gateway.store.jobs import DynamoDBJobStore

ASYNC_EVENT_LIMIT = 262_144  # bytes: Lambda's limit for an InvocationType=Event payload


def test_a_hand_off_always_fits_an_asynchronous_invoke_even_with_long_owner_arns():
    """2,000 owner-months of IAM users with long paths: the sums it carries would take it over 256 KB."""
    held = {
        (
            f"arn:aws-us-gov:iam::123456789012:user/org/research/ml-platform/batch-inference/team-{n:04d}/svc-batch-{n:04d}",
            "2026-12",
        ): 1_500_000_000
        for n in range(2_000)
    }
    sent: list[dict[str, Any]] = []

    def invoke(event: dict[str, Any]) -> None:
        if len(json.dumps(event).encode()) > ASYNC_EVENT_LIMIT:
            raise RuntimeError("RequestEntityTooLargeException")
        sent.append(event)

    assert sweep_module._hand_off(invoke, "token", held) == "token"
    assert sent and sent[0]["next_token"] == "token"


class Throttled:
    """A DynamoDB client whose BatchGetItem leaves every key unprocessed, as under throttling."""

    def __init__(self) -> None:
        self.calls = 0

    def batch_get_item(self, RequestItems: dict[str, Any]) -> dict[str, Any]:
        self.calls += 1
        return {"Responses": {}, "UnprocessedKeys": RequestItems}


def test_keys_left_unprocessed_are_asked_again_with_a_backoff_and_then_a_transient_error(monkeypatch):
    slept: list[float] = []
    monkeypatch.setattr(jobs_store, "_sleep", slept.append)
    client = Throttled()

    with pytest.raises(TransientError, match="unprocessed"):
        DynamoDBJobStore(client, "jobs").get_jobs(["job_a", "job_b"])

    assert 2 <= client.calls <= 8  # not a tight loop until the Lambda times out
    assert slept == sorted(slept) and slept[0] > 0  # growing waits between the asks
