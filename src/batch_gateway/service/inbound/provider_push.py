"""A provider's push that a batch ended wakes its job (decision 0073): OpenAI's project webhooks.

OpenAI signs each event with the project webhook's secret under the Standard Webhooks scheme (``webhook-id``,
``webhook-timestamp`` within 5 minutes, ``webhook-signature``). The signature is the only authentication of the
route, so nothing is read from an event that does not verify: it is refused (400) and wakes nothing. A verified
``batch.completed`` / ``batch.failed`` / ``batch.expired`` / ``batch.cancelled`` names the provider batch; the job
whose chunk holds it is woken (``workflow/wake.py``), so its next poll runs now instead of at the end of its wait.
A batch no job of this deployment holds (another deployment's, or one whose id is not recorded yet) is answered
200 and ignored: the job's own poll still finds the end. Other event types are acknowledged and ignored.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aws_lambda_powertools import Logger
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from batch_gateway.constants import OPENAI_WEBHOOK_MAX_BYTES
from batch_gateway.contract.errors import InvalidRequestError, PayloadTooLargeError
from batch_gateway.provider_specs import OPENAI
from batch_gateway.service.context import Services
from batch_gateway.service.workflow.wake import wake_job

logger = Logger(child=True)

BATCH_ENDED_EVENTS = frozenset({"batch.completed", "batch.failed", "batch.expired", "batch.cancelled"})


def verifier(secret: str) -> Webhook:
    """The secret as OpenAI's SDK reads it: ``whsec_<base64>`` is the base64-decoded key, anything else its bytes."""
    if not secret:
        raise RuntimeError("the OpenAI webhook secret is empty; set it in Secrets Manager")
    return Webhook(secret if secret.startswith("whsec_") else secret.encode())


def receive_openai_event(services: Services, body: bytes, headers: Mapping[str, str]) -> dict[str, Any]:
    """Verify one OpenAI webhook delivery (with ``Services.openai_webhook_secret``) and wake the job of the batch it
    says ended (found by ``Services.provider_batches``). Raises ``InvalidRequestError`` (400) when the signature does
    not verify, ``PayloadTooLargeError`` over the bound."""
    if len(body) > OPENAI_WEBHOOK_MAX_BYTES:
        raise PayloadTooLargeError(f"a webhook body is at most {OPENAI_WEBHOOK_MAX_BYTES} bytes")
    secret = services.openai_webhook_secret()
    try:
        event = verifier(secret).verify(body, dict(headers))
    except (WebhookVerificationError, ValueError, UnicodeDecodeError):
        logger.warning("OpenAI webhook refused: the signature does not verify")
        raise InvalidRequestError("the webhook signature does not verify") from None
    event_type = event.get("type") if isinstance(event, dict) else None
    data = event.get("data") if isinstance(event, dict) else None
    batch_id = data.get("id") if isinstance(data, dict) else None
    if event_type not in BATCH_ENDED_EVENTS or not isinstance(batch_id, str) or not batch_id:
        logger.info("OpenAI webhook ignored: not a batch end", extra={"event_type": str(event_type)[:64]})
        return {"received": True}
    job_id = services.provider_batches.job_for(batch_id)
    job = services.jobs.get_job(job_id) if job_id else None
    if job is None or job.provider != OPENAI.name:
        logger.info("OpenAI webhook for a batch no job here holds", extra={"provider_batch_id": batch_id})
        return {"received": True}
    if job.status.terminal:
        logger.info("OpenAI webhook for an ended job", extra={"job_id": job.id, "provider_batch_id": batch_id})
        return {"received": True}
    resumed = wake_job(services, job.id)
    logger.info(
        "OpenAI webhook woke the job",
        extra={"job_id": job.id, "provider_batch_id": batch_id, "event_type": event_type, "resumed": resumed},
    )
    return {"received": True}
