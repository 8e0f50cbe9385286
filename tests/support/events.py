"""API Gateway and workflow events from ``events/``, and calling a handler in-process with one (integration tests)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import boto3

from lambdas import status

EVENTS = Path(__file__).resolve().parents[2] / "events"
SAMPLE_JOB_ID = "job_0123456789abcdef01234567"
ALICE = "arn:aws:iam::123456789012:user/alice"


def load_event(name: str, job_id: str | None = None, **changes: Any) -> dict[str, Any]:
    """The sample event ``events/<name>``, for ``job_id`` instead of the sample's, with top-level ``changes``."""
    text = (EVENTS / name).read_text()
    if job_id:
        text = text.replace(SAMPLE_JOB_ID, job_id)
    event = json.loads(text)
    for key, value in changes.items():
        event[key] = value
    return event


def as_caller(event: dict[str, Any], user: str) -> dict[str, Any]:
    """The API event as IAM user ``user`` sent it."""
    event = copy.deepcopy(event)
    event["requestContext"]["identity"]["userArn"] = f"arn:aws:iam::123456789012:user/{user}"
    return event


def call(handler: Any, event: dict[str, Any], ctx: Any) -> tuple[int, Any]:
    """An API handler's status code and decoded JSON body (None when it sent no body)."""
    response = handler(event, ctx)
    return response["statusCode"], json.loads(response["body"]) if response.get("body") else None


def job_view(ctx: Any, job_id: str) -> dict[str, Any]:
    """GET /batches/{job_id} through the Status function, as its owner in the sample event sees it."""

    code, view = call(status.handler, load_event("api_status.json", job_id), ctx)
    assert code == 200, view
    return view


def executions(services: Any) -> list[str]:
    """The names of the workflow executions started so far."""
    sfn = boto3.client("stepfunctions")
    return [e["name"] for e in sfn.list_executions(stateMachineArn=services.settings.state_machine_arn)["executions"]]
