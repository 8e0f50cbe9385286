"""A workflow step turns throttled AWS calls and a refused provider key into errors the state machine retries."""

import pytest
from botocore.exceptions import ClientError, EndpointConnectionError

from batch_gateway.contract.errors import ProviderKeyRejectedError, TransientError
from batch_gateway.edge.entry import workflow_handler
from stacks.workflow import RETRY_ERRORS
from tests.support.lambda_context import FakeLambdaContext


def _client_error(code: str, status: int) -> ClientError:
    return ClientError(
        {"Error": {"Code": code, "Message": "x"}, "ResponseMetadata": {"HTTPStatusCode": status}}, "UpdateItem"
    )


def _run(exc: Exception) -> None:
    def step(_event):
        raise exc

    workflow_handler(step)({"job_id": "job_1"}, FakeLambdaContext())


@pytest.mark.parametrize(
    "exc",
    [
        _client_error("ProvisionedThroughputExceededException", 400),
        _client_error("ThrottlingException", 400),
        _client_error("InternalServerError", 500),
        EndpointConnectionError(endpoint_url="https://dynamodb.us-east-1.amazonaws.com"),
    ],
)
def test_a_throttled_or_failed_aws_call_becomes_a_retried_transient_error(exc):
    with pytest.raises(TransientError) as raised:
        _run(exc)
    assert type(raised.value).__name__ in RETRY_ERRORS


def test_a_refused_aws_call_stays_what_it_is_and_is_not_retried():
    with pytest.raises(ClientError) as raised:
        _run(_client_error("AccessDeniedException", 400))
    assert type(raised.value).__name__ not in RETRY_ERRORS


def test_a_refused_provider_key_is_retried_with_the_key_read_again(monkeypatch):
    from batch_gateway import wiring

    forgotten = []
    monkeypatch.setattr(wiring, "forget_provider_keys", lambda: forgotten.append(True))
    with pytest.raises(ProviderKeyRejectedError):
        _run(ProviderKeyRejectedError("Anthropic refused the API key"))
    assert forgotten == [True] and "ProviderKeyRejectedError" in RETRY_ERRORS


@pytest.mark.parametrize("name", ["Sandbox.Timedout", "Lambda.Unknown", "Runtime.ExitError", "Runtime.OutOfMemory"])
def test_a_function_that_timed_out_or_died_is_retried_by_the_state_machine(name):
    assert name in RETRY_ERRORS
