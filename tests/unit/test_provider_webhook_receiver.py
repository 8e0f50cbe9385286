"""The providers' webhook receiver (inbound/provider_push.py, decisions 0073, 0135): a verified batch-end event of
OpenAI or Gemini wakes the job whose chunk holds the batch; a forged or stale signature is refused (400) and wakes
nothing; an unknown batch, another provider's job, an ended job and other event types are acknowledged and ignored.
Events are made by the simulators' own signer (the one OpenAI's SDK ``webhooks.unwrap`` accepts:
tests/unit/test_simulator_webhooks.py) in each provider's event shape (``simulators/webhook_push.py``)."""

from __future__ import annotations

import base64
import json
import time

import pytest

from batch_gateway.contract.errors import InvalidRequestError, NotFoundError, PayloadTooLargeError
from batch_gateway.models.ids import new_job_id
from batch_gateway.models.jobs import Job, JobStatus, utcnow
from batch_gateway.service.inbound.provider_push import receive_webhook
from batch_gateway.service.workflow.wake import park_job
from batch_gateway_dev.fakes.memory import MemoryProviderBatchIndex
from batch_gateway_dev.simulators.webhook_push import GEMINI_EVENTS, OPENAI_EVENTS, sign
from tests.support.parked_tasks import Tasks
from tests.support.services import memory_services

SECRET = "whsec_" + base64.b64encode(b"the project's webhook secret....").decode()
OTHER_SECRET = "whsec_" + base64.b64encode(b"the other provider's secret.....").decode()
# provider -> (its event shape, the batch as Submit records it, a batch end type)
PUSHING = {
    "openai": (OPENAI_EVENTS, "batch_0123456789abcdef", "batch.completed"),
    "google": (GEMINI_EVENTS, "batches/0123456789abcdef", "batch.succeeded"),
}


def _event(provider: str, event_type: str | None = None, batch_id: str | None = None) -> bytes:
    shape, batch, ended = PUSHING[provider]
    event = shape.event("wh_1", event_type or ended, batch_id or batch, time.time())
    return json.dumps(event, separators=(",", ":")).encode()


def _signed(body: bytes, secret: str = SECRET, at: float | None = None) -> dict[str, str]:
    # as API Gateway hands them over: whatever case the sender used
    return {k.title(): v for k, v in sign(secret, "wh_1", body.decode(), at).items()}


def _parked(pusher: str, provider: str | None = None, status: JobStatus = JobStatus.IN_PROGRESS, *, found=True):
    """A parked job of ``provider`` (the pusher's unless said); the index knows that it holds the pusher's batch
    (unless not ``found``). The pusher signs with SECRET, the other provider with OTHER_SECRET."""
    tasks = Tasks()
    job = Job(id=new_job_id(), owner="alice", provider=provider or pusher, model="m", status=status)
    services = memory_services(
        resume_workflow=tasks.resume,
        provider_batches=MemoryProviderBatchIndex({PUSHING[pusher][1]: job.id} if found else {}),
        webhook_secret=lambda name: SECRET if name == pusher else OTHER_SECRET,
    )
    services.jobs.put_new_job(job)
    tasks.waiting.add("t1")
    park_job(services, job.id, "t1", utcnow())
    return services, tasks, job.id


@pytest.mark.parametrize("provider", PUSHING)
def test_a_verified_batch_end_wakes_the_parked_job_that_holds_the_batch(provider):
    services, tasks, job_id = _parked(provider)
    body = _event(provider)

    answer = receive_webhook(services, provider, body, _signed(body))

    assert answer == {"received": True}
    assert tasks.resumed == ["t1"]


@pytest.mark.parametrize(
    ("provider", "event_type"),
    [
        ("openai", "batch.failed"),
        ("openai", "batch.expired"),
        ("openai", "batch.cancelled"),
        ("google", "batch.failed"),
        ("google", "batch.expired"),
    ],
)
def test_every_batch_end_type_wakes(provider, event_type):
    services, tasks, job_id = _parked(provider)
    body = _event(provider, event_type)
    receive_webhook(services, provider, body, _signed(body))
    assert tasks.resumed == ["t1"]


def test_a_gemini_event_naming_the_bare_batch_id_wakes_the_job_that_recorded_batches_slash_it():
    services, tasks, job_id = _parked("google")
    body = _event("google", batch_id="0123456789abcdef")
    receive_webhook(services, "google", body, _signed(body))
    assert tasks.resumed == ["t1"]


@pytest.mark.parametrize("provider", PUSHING)
@pytest.mark.parametrize(
    "forge",
    [
        lambda body: _signed(body, secret="whsec_" + base64.b64encode(b"someone else's secret...........").decode()),
        lambda body: _signed(body, secret=OTHER_SECRET),  # the other provider's secret
        lambda body: {**_signed(body), "Webhook-Id": "wh_2"},  # the signature covers the id
        lambda body: _signed(body, at=time.time() - 600),  # a replay from 10 minutes ago
        lambda body: _signed(body, at=time.time() + 600),  # stamped 10 minutes ahead
        lambda body: {k: v for k, v in _signed(body).items() if k != "Webhook-Signature"},
    ],
    ids=["wrong-secret", "other-providers-secret", "other-id", "too-old", "future", "unsigned"],
)
def test_a_forged_or_stale_signature_is_refused_and_wakes_nothing(provider, forge):
    services, tasks, job_id = _parked(provider)
    body = _event(provider)

    with pytest.raises(InvalidRequestError) as refused:
        receive_webhook(services, provider, body, forge(body))

    assert refused.value.http_status == 400
    assert tasks.resumed == [] and not services.jobs.require_job(job_id).wake_requested


@pytest.mark.parametrize("provider", PUSHING)
def test_a_body_changed_after_signing_is_refused(provider):
    services, tasks, job_id = _parked(provider)
    services.provider_batches = MemoryProviderBatchIndex({"batches/other": job_id, "batch_other": job_id})
    headers = _signed(_event(provider))
    with pytest.raises(InvalidRequestError):
        receive_webhook(services, provider, _event(provider, batch_id="batches/other"), headers)
    assert tasks.resumed == []


def test_a_body_over_the_bound_is_refused_before_it_is_verified():
    services, tasks, job_id = _parked("google")
    body = b" " * (64 * 1024 + 1)
    with pytest.raises(PayloadTooLargeError):
        receive_webhook(services, "google", body, _signed(body))


def test_a_provider_that_does_not_push_webhooks_is_not_found():
    services, tasks, job_id = _parked("openai")
    body = _event("openai")
    with pytest.raises(NotFoundError):
        receive_webhook(services, "anthropic", body, _signed(body))
    assert tasks.resumed == []


@pytest.mark.parametrize(
    ("pusher", "event_type", "found", "provider", "status"),
    [
        ("openai", None, False, None, JobStatus.IN_PROGRESS),  # another deployment's batch
        ("openai", "response.completed", True, None, JobStatus.IN_PROGRESS),  # not a batch end
        ("openai", None, True, "anthropic", JobStatus.IN_PROGRESS),  # not an OpenAI job
        ("openai", None, True, None, JobStatus.FINISHED),  # already ended
        ("google", None, False, None, JobStatus.IN_PROGRESS),  # another deployment's batch
        ("google", "video.generated", True, None, JobStatus.IN_PROGRESS),  # not a batch end
        ("google", "batch.completed", True, None, JobStatus.IN_PROGRESS),  # OpenAI's word, not Gemini's
        ("google", None, True, "openai", JobStatus.IN_PROGRESS),  # a job of another provider
        ("google", None, True, None, JobStatus.CANCELED),  # already ended
    ],
    ids=[
        "openai-unknown-batch",
        "openai-other-event",
        "openai-other-provider",
        "openai-ended-job",
        "gemini-unknown-batch",
        "gemini-other-event",
        "gemini-openai-event-name",
        "gemini-other-provider",
        "gemini-ended-job",
    ],
)
def test_what_is_not_a_running_jobs_batch_end_is_acknowledged_and_ignored(pusher, event_type, found, provider, status):
    services, tasks, job_id = _parked(pusher, provider, status, found=found)
    body = _event(pusher, event_type)

    answer = receive_webhook(services, pusher, body, _signed(body))

    assert answer == {"received": True}
    assert tasks.resumed == [] and not services.jobs.require_job(job_id).wake_requested


def test_a_secret_without_the_whsec_prefix_is_its_own_bytes_as_in_the_openai_sdk():
    services, tasks, job_id = _parked("openai")
    body = _event("openai")
    raw = "plain-secret"  # the SDK keys HMAC with raw.encode(); standardwebhooks would base64-decode it
    headers = _signed(body, secret="whsec_" + base64.b64encode(raw.encode()).decode())
    services.webhook_secret = lambda name: raw
    receive_webhook(services, "openai", body, headers)
    assert tasks.resumed == ["t1"]
