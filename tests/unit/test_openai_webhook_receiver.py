"""The OpenAI webhook receiver (inbound/provider_push.py, decision 0073): a verified batch-end event wakes the job
whose chunk holds the batch; a forged or stale signature is refused (400) and wakes nothing; an unknown batch, an
ended job and other event types are acknowledged and ignored. Events are made by the OpenAI simulator's own signer
(the one the SDK's ``webhooks.unwrap`` accepts: tests/unit/test_simulator_openai_webhooks.py)."""

from __future__ import annotations

import base64
import json
import time

import pytest

from batch_gateway.contract.errors import InvalidRequestError, PayloadTooLargeError
from batch_gateway.models.ids import new_job_id
from batch_gateway.models.jobs import Job, JobStatus, utcnow
from batch_gateway.service.inbound.provider_push import receive_openai_event
from batch_gateway.service.workflow.wake import park_job
from batch_gateway_dev.fakes.memory import MemoryProviderBatchIndex
from batch_gateway_dev.simulators.openai_push import sign
from tests.support.parked_tasks import Tasks
from tests.support.services import memory_services

SECRET = "whsec_" + base64.b64encode(b"the project's webhook secret....").decode()
BATCH = "batch_0123456789abcdef"


def _event(event_type: str = "batch.completed", batch_id: str = BATCH) -> bytes:
    event = {
        "id": "evt_1",
        "object": "event",
        "created_at": int(time.time()),
        "type": event_type,
        "data": {"id": batch_id},
    }
    return json.dumps(event, separators=(",", ":")).encode()


def _signed(body: bytes, secret: str = SECRET, at: float | None = None) -> dict[str, str]:
    # as API Gateway hands them over: whatever case the sender used
    return {k.title(): v for k, v in sign(secret, "wh_1", body.decode(), at).items()}


def _parked(provider: str = "openai", status: JobStatus = JobStatus.IN_PROGRESS, *, found: bool = True):
    """A parked job; the index knows that it holds ``BATCH`` (unless not ``found``), and OpenAI signs with SECRET."""
    tasks = Tasks()
    job = Job(id=new_job_id(), owner="alice", provider=provider, model="gpt-4o-mini", status=status)
    services = memory_services(
        resume_workflow=tasks.resume,
        provider_batches=MemoryProviderBatchIndex({BATCH: job.id} if found else {}),
        openai_webhook_secret=lambda: SECRET,
    )
    services.jobs.put_new_job(job)
    tasks.waiting.add("t1")
    park_job(services, job.id, "t1", utcnow())
    return services, tasks, job.id


def test_a_verified_batch_end_wakes_the_parked_job_that_holds_the_batch():
    services, tasks, job_id = _parked()
    body = _event()

    answer = receive_openai_event(services, body, _signed(body))

    assert answer == {"received": True}
    assert tasks.resumed == ["t1"]


@pytest.mark.parametrize("event_type", ["batch.failed", "batch.expired", "batch.cancelled"])
def test_every_batch_end_type_wakes(event_type):
    services, tasks, job_id = _parked()
    body = _event(event_type)
    receive_openai_event(services, body, _signed(body))
    assert tasks.resumed == ["t1"]


@pytest.mark.parametrize(
    "forge",
    [
        lambda body: _signed(body, secret="whsec_" + base64.b64encode(b"someone else's secret...........").decode()),
        lambda body: {**_signed(body), "Webhook-Id": "wh_2"},  # the signature covers the id
        lambda body: _signed(body, at=time.time() - 600),  # a replay from 10 minutes ago
        lambda body: {k: v for k, v in _signed(body).items() if k != "Webhook-Signature"},
    ],
    ids=["wrong-secret", "other-id", "too-old", "unsigned"],
)
def test_a_forged_or_stale_signature_is_refused_and_wakes_nothing(forge):
    services, tasks, job_id = _parked()
    body = _event()

    with pytest.raises(InvalidRequestError) as refused:
        receive_openai_event(services, body, forge(body))

    assert refused.value.http_status == 400
    assert tasks.resumed == [] and not services.jobs.require_job(job_id).wake_requested


def test_a_body_changed_after_signing_is_refused():
    services, tasks, job_id = _parked()
    services.provider_batches = MemoryProviderBatchIndex({"batch_other": job_id})
    headers = _signed(_event())
    with pytest.raises(InvalidRequestError):
        receive_openai_event(services, _event(batch_id="batch_other"), headers)
    assert tasks.resumed == []


def test_a_body_over_the_bound_is_refused_before_it_is_verified():
    services, tasks, job_id = _parked()
    body = b" " * (64 * 1024 + 1)
    with pytest.raises(PayloadTooLargeError):
        receive_openai_event(services, body, _signed(body))


@pytest.mark.parametrize(
    ("event_type", "found", "provider", "status"),
    [
        ("batch.completed", False, "openai", JobStatus.IN_PROGRESS),  # another deployment's batch
        ("response.completed", True, "openai", JobStatus.IN_PROGRESS),  # not a batch end
        ("batch.completed", True, "anthropic", JobStatus.IN_PROGRESS),  # not an OpenAI job
        ("batch.completed", True, "openai", JobStatus.FINISHED),  # already ended
    ],
    ids=["unknown-batch", "other-event", "other-provider", "ended-job"],
)
def test_what_is_not_a_running_openai_jobs_batch_end_is_acknowledged_and_ignored(event_type, found, provider, status):
    services, tasks, job_id = _parked(provider, status, found=found)
    body = _event(event_type)

    answer = receive_openai_event(services, body, _signed(body))

    assert answer == {"received": True}
    assert tasks.resumed == [] and not services.jobs.require_job(job_id).wake_requested


def test_a_secret_without_the_whsec_prefix_is_its_own_bytes_as_in_the_openai_sdk():
    services, tasks, job_id = _parked()
    body = _event()
    raw = "plain-secret"  # the SDK keys HMAC with raw.encode(); standardwebhooks would base64-decode it
    headers = _signed(body, secret="whsec_" + base64.b64encode(raw.encode()).decode())
    services.openai_webhook_secret = lambda: raw
    receive_openai_event(services, body, headers)
    assert tasks.resumed == ["t1"]
