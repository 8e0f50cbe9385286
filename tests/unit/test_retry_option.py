"""The job option ``retry`` (decision 0066): checked at create naming the field, and which outcomes it retries."""

from __future__ import annotations

import pytest

from batch_gateway.contract.errors import InvalidRequestError
from batch_gateway.models.jobs import Retry
from batch_gateway.models.requests import CreateJobInput
from batch_gateway.models.retry import job_retry, outcome_of, parse_retry, retryable

BODY = {"provider": "anthropic", "model": "claude-sonnet-4-20250514", "requests": {"a": "hi"}}


def test_a_retry_option_is_normalised_with_defaults():
    assert CreateJobInput.parse({**BODY, "retry": {}}).retry == {
        "max_attempts": 2, "on": ["expired", "rate_limited", "overloaded", "server_error"],
    }  # fmt: skip
    assert parse_retry({"max_attempts": 3, "on": ["overloaded", "expired"]}) == {
        "max_attempts": 3, "on": ["expired", "overloaded"],
    }  # fmt: skip
    assert CreateJobInput.parse(BODY).retry is None


@pytest.mark.parametrize(
    ("retry", "field"),
    [
        ({"max_attempts": 0}, "retry.max_attempts"),
        ({"max_attempts": 6}, "retry.max_attempts"),
        ({"max_attempts": "2"}, "retry.max_attempts"),
        ({"max_attempts": True}, "retry.max_attempts"),
        ({"on": ["invalid_request"]}, "retry.on"),
        ({"on": "expired"}, "retry.on"),
        ({"attempts": 2}, "retry.attempts"),
        ([2], "retry"),
        (True, "retry"),
    ],
)
def test_a_bad_retry_option_is_a_400_naming_the_field(retry, field):
    with pytest.raises(InvalidRequestError) as caught:
        CreateJobInput.parse({**BODY, "retry": retry})
    assert caught.value.http_status == 400
    assert [d["field"] for d in caught.value.details] == [field]


@pytest.mark.parametrize(
    ("status", "code", "outcome"),
    [
        ("expired", None, "expired"),
        ("errored", "overloaded_error", "overloaded"),  # Anthropic 529
        ("errored", "rate_limit_error", "rate_limited"),
        ("errored", "api_error", "server_error"),
        ("errored", "overloaded", "overloaded"),  # OpenAI's code
        ("errored", "rate_limit_exceeded", "rate_limited"),
        ("errored", "http_529", "overloaded"),
        ("errored", "http_503", "server_error"),
        ("errored", "bedrock_500", "server_error"),
        ("errored", "bedrock_429", "rate_limited"),
        ("errored", "invalid_request_error", None),  # never retried
        ("errored", "simulated_error", None),
        ("errored", "http_400", None),
        ("errored", "batch_failed", None),
        ("errored", "job_failed", None),
        ("errored", "missing_result", None),
        ("canceled", None, None),
        ("succeeded", None, None),
    ],
)
def test_outcomes_from_the_adapters_codes(status, code, outcome):
    assert outcome_of(status, code) == outcome


def test_attempts_left_and_the_outcomes_named_decide():
    policy = Retry(max_attempts=3, on=["expired"])
    assert retryable(policy, 1, "expired", None) and retryable(policy, 2, "expired", None)
    assert not retryable(policy, 3, "expired", None)  # attempts used up
    assert not retryable(policy, 1, "errored", "overloaded_error")  # not named in `on`
    assert not retryable(None, 1, "expired", None)


def test_the_deployment_default_applies_to_jobs_that_give_none_but_not_to_door_jobs():
    default = {"max_attempts": 2}
    assert job_retry(None, default) == Retry(**parse_retry(default))
    assert job_retry(None, default, door="openai") is None
    assert job_retry(parse_retry({"max_attempts": 1}), default) is None  # the job turned it off
    assert job_retry(None, None) is None


def test_max_attempts_written_with_a_zero_fraction_is_the_whole_number_as_the_document_allows():
    """JSON Schema's integer takes 3.0 (the contract test sent 1.0 and got a 400); 2.5 stays a 400."""
    assert parse_retry({"max_attempts": 3.0})["max_attempts"] == 3
    assert isinstance(parse_retry({"max_attempts": 3.0})["max_attempts"], int)
    with pytest.raises(InvalidRequestError):
        parse_retry({"max_attempts": 2.5})
