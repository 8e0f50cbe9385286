"""The SDK stands alone: it loads no server code and no server dependency, its errors have one root with typed
attributes, and what it shares with the server (statuses, error types, the JSONL format) is named once."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
import typing
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SERVER_MODULES = {
    f"batch_gateway.{name}"
    for name in ("models", "service", "store", "edge", "providers", "wiring", "settings", "local", "simulators")
}
SERVER_DEPENDENCIES = {"boto3", "aws_lambda_powertools", "orjson", "anthropic", "openai", "moto"}


def test_the_sdk_and_the_cli_load_no_server_module_and_no_server_dependency():
    code = "import sys, json, batch_gateway.client, batch_gateway.cli; print(json.dumps(sorted(sys.modules)))"
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60, check=True
    )
    loaded = set(json.loads(done.stdout))
    server = {name for name in loaded if name.split(".")[:2] and ".".join(name.split(".")[:2]) in SERVER_MODULES}
    assert server == set()
    assert {name.split(".")[0] for name in loaded} & SERVER_DEPENDENCIES == set()


def test_client_errors_have_one_root_with_typed_status_code_and_request_id():
    from batch_gateway.client import BatchGatewayError, NotFoundError
    from batch_gateway.client.errors import error_from_response

    hints = typing.get_type_hints(BatchGatewayError)
    assert {"status_code", "request_id", "batch_id"} <= set(hints)
    bare = BatchGatewayError("something")
    assert (bare.status_code, bare.request_id, bare.batch_id) == (None, None, None)

    error = error_from_response(404, b'{"error": {"type": "not_found", "message": "no batch x"}}', request_id="r-1")
    assert isinstance(error, NotFoundError)
    assert (error.status_code, error.request_id, error.message) == (404, "r-1", "no batch x")


def test_batch_wait_timeout_sits_under_the_client_error_root_and_is_still_a_timeout():
    from batch_gateway.client import BatchGatewayError, BatchWaitTimeoutError, Job

    job = Job(id="job_1", status="in_progress", provider="anthropic", model="claude-x")
    error = BatchWaitTimeoutError("job_1", job, 3)
    assert isinstance(error, BatchGatewayError) and isinstance(error, TimeoutError)
    assert (error.batch_id, error.job, str(error)) == (
        "job_1",
        job,
        "batch job_1 is still in_progress after 3 status checks",
    )


def test_job_statuses_and_the_terminal_set_are_one_definition_shared_with_the_server():
    from batch_gateway import client
    from batch_gateway.client import models as client_models
    from batch_gateway.models import jobs

    assert client.JobStatus is jobs.JobStatus
    assert client_models.TERMINAL_JOB_STATUSES is jobs.TERMINAL_JOB_STATUSES


def test_the_wire_error_types_are_the_servers_error_types():
    from batch_gateway import client
    from batch_gateway.contract import errors

    assert client.InvalidRequestError is errors.InvalidRequestError
    assert client.BatchGatewayError is errors.BatchGatewayError


@pytest.mark.parametrize("name", ["timeout", "max_attempts", "backoff_base", "backoff_cap"])
def test_client_defaults_are_named_once(name):
    from batch_gateway.client import AsyncBatchGatewayClient, BatchGatewayClient, _constants
    from batch_gateway.client.transport import SignedTransport

    expected = getattr(_constants, f"DEFAULT_{name.upper()}")
    for cls in (BatchGatewayClient, AsyncBatchGatewayClient, SignedTransport):
        assert inspect.signature(cls).parameters[name].default == expected, cls
