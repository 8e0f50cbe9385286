"""The push receivers' Lambda handlers against the emulated account (decisions 0073, 0135): Gemini's signed webhook,
through ``lambdas/provider_webhook.py`` with its secret in Secrets Manager, and Bedrock's EventBridge event, through
``lambdas/bedrock_job_event.py``, find the job by the chunk's recorded batch (the table's by-provider-batch index)
and wake it: the job's wake flag is set, so its parked workflow (or the next Park) polls now. A forged signature, a
stale one and a batch of another deployment wake nothing."""

from __future__ import annotations

import base64
import copy
import json
import time
from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from batch_gateway import constants, wiring
from batch_gateway.models.ids import new_job_id
from batch_gateway.models.jobs import Chunk, Job, JobStatus
from batch_gateway.store.jobs import DynamoDBJobStore
from batch_gateway_dev.simulators.webhook_push import GEMINI_EVENTS, sign
from lambdas import bedrock_job_event, provider_webhook
from tests.support.events import load_event
from tests.support.fixtures import REGION, TABLE
from tests.support.lambda_context import FakeLambdaContext

SECRET = "whsec_" + base64.b64encode(b"the gemini project's webhook key").decode()


@pytest.fixture
def gemini_secret(moto_account, monkeypatch) -> Iterator[None]:
    """The receiver's environment: its one secret, holding what Gemini signs with."""
    secrets = boto3.client("secretsmanager", region_name=REGION)
    name = f"{constants.GEMINI_WEBHOOK_SECRET_NAME}-{time.time_ns()}"
    arn = secrets.create_secret(Name=name, SecretString=SECRET)["ARN"]
    monkeypatch.setenv(constants.ENV_GEMINI_WEBHOOK_SECRET_ARN, arn)
    wiring.reset()
    yield
    wiring.reset()


def _job_holding(moto_account, provider: str, batch_id: str) -> tuple[DynamoDBJobStore, str]:
    """A running job whose chunk 0 Submit recorded as ``batch_id``, not parked: a wake stays pending on it."""
    jobs = DynamoDBJobStore(moto_account["dynamodb"], TABLE)
    job = Job(id=new_job_id(), owner="alice", provider=provider, model="m", status=JobStatus.IN_PROGRESS)
    jobs.put_new_job(job)
    jobs.put_chunks([Chunk(job_id=job.id, index=0, request_count=3, provider_batch_id=batch_id)])
    return jobs, job.id


def _webhook(body: bytes, headers: dict[str, str]) -> dict[str, Any]:
    event = copy.deepcopy(load_event("api_provider_webhook.json"))
    event["headers"] = {**headers, "Content-Type": "application/json"}
    event["body"] = body.decode()
    return event


def _gemini_end(batch_id: str, secret: str = SECRET, at: float | None = None) -> dict[str, Any]:
    body = json.dumps(GEMINI_EVENTS.event("msg_1", "batch.succeeded", batch_id, time.time())).encode()
    return _webhook(body, sign(secret, "msg_1", body.decode(), at))


def test_a_signed_gemini_batch_end_wakes_the_job_that_holds_the_batch(moto_account, gemini_secret):
    batch = f"batches/{new_job_id()}"
    jobs, job_id = _job_holding(moto_account, "google", batch)

    answer = provider_webhook.handler(_gemini_end(batch), FakeLambdaContext())

    assert answer["statusCode"] == 200, answer
    assert jobs.require_job(job_id).wake_requested


@pytest.mark.parametrize(
    "forged",
    [
        {"secret": "whsec_" + base64.b64encode(b"not the project's webhook key...").decode()},
        {"at": time.time() - 600},
    ],
    ids=["bad-signature", "stale-timestamp"],
)
def test_a_forged_or_stale_gemini_webhook_is_400_and_wakes_nothing(moto_account, gemini_secret, forged):
    batch = f"batches/{new_job_id()}"
    jobs, job_id = _job_holding(moto_account, "google", batch)

    answer = provider_webhook.handler(_gemini_end(batch, **forged), FakeLambdaContext())

    assert answer["statusCode"] == 400, answer
    assert not jobs.require_job(job_id).wake_requested


def test_a_gemini_batch_no_job_here_holds_is_acknowledged_and_wakes_nothing(moto_account, gemini_secret):
    jobs, job_id = _job_holding(moto_account, "google", f"batches/{new_job_id()}")

    answer = provider_webhook.handler(_gemini_end("batches/another-deployments"), FakeLambdaContext())

    assert answer["statusCode"] == 200, answer
    assert not jobs.require_job(job_id).wake_requested


def test_the_gemini_receiver_cannot_read_openais_secret(moto_account, gemini_secret, monkeypatch):
    """Its environment names only its own secret: an OpenAI path reaching it is a 500, not a verified wake."""
    monkeypatch.delenv(constants.ENV_OPENAI_WEBHOOK_SECRET_ARN, raising=False)
    event = _gemini_end("batch_x")
    event["path"] = constants.OPENAI_WEBHOOK_PATH
    answer = provider_webhook.handler(event, FakeLambdaContext())
    assert answer["statusCode"] == 500


def _bedrock_event(arn: str, status: str = "Completed", source: str = "aws.bedrock") -> dict[str, Any]:
    event = load_event("eventbridge_bedrock_job_state_change.json")
    event["source"] = source
    event["detail"] = {**event["detail"], "batchJobArn": arn, "status": status}
    return event


@pytest.mark.parametrize("status", constants.BEDROCK_JOB_ENDED_STATUSES)
def test_a_bedrock_job_that_ended_wakes_the_job_that_holds_it(moto_account, status):
    arn = f"arn:aws:bedrock:{REGION}:123456789012:model-invocation-job/{new_job_id()[4:16]}"
    jobs, job_id = _job_holding(moto_account, "bedrock", arn)

    bedrock_job_event.handler(_bedrock_event(arn, status), FakeLambdaContext())

    assert jobs.require_job(job_id).wake_requested


@pytest.mark.parametrize(
    ("status", "source", "holder"),
    [
        ("InProgress", "aws.bedrock", "bedrock"),  # not an end
        ("Completed", "custom.bedrock", "bedrock"),  # not Bedrock's
        ("Completed", "aws.bedrock", "openai"),  # the batch names another provider's job
    ],
    ids=["in-progress", "other-source", "other-provider"],
)
def test_a_bedrock_event_that_is_not_a_bedrock_jobs_end_wakes_nothing(moto_account, status, source, holder):
    arn = f"arn:aws:bedrock:{REGION}:123456789012:model-invocation-job/{new_job_id()[4:16]}"
    jobs, job_id = _job_holding(moto_account, holder, arn)

    bedrock_job_event.handler(_bedrock_event(arn, status, source), FakeLambdaContext())

    assert not jobs.require_job(job_id).wake_requested
