"""A provider's push that a batch ended wakes its job (decisions 0073, 0135): OpenAI's and Gemini's signed webhooks,
Bedrock's job state changes on EventBridge.

OpenAI and Gemini sign each event with the webhook's secret under the Standard Webhooks scheme (``webhook-id``,
``webhook-timestamp`` within 5 minutes, ``webhook-signature``); ``provider_specs.WEBHOOK_PUSH`` says, per provider,
which secret and which event types end a batch. The signature is the only authentication of the route, so nothing
is read from an event that does not verify: it is refused (400) and wakes nothing. A verified batch end names the
provider batch (``data.id``); the job whose chunk holds it is woken (``workflow/wake.py``), so its next poll runs now
instead of at the end of its wait. A batch no job of this deployment holds (another deployment's, or one whose id is
not recorded yet), a job of another provider or one that has ended are answered 200 and ignored: the job's own poll
still finds the end. Other event types are acknowledged and ignored.

Bedrock's ``Batch Inference Job State Change`` reaches the function only through the stack's EventBridge rule on
the default bus (source ``aws.bedrock``, which only AWS can put); the job ARN is the provider batch.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aws_lambda_powertools import Logger
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from batch_gateway import constants
from batch_gateway.constants import WEBHOOK_MAX_BYTES
from batch_gateway.contract.errors import InvalidRequestError, NotFoundError, PayloadTooLargeError
from batch_gateway.provider_specs import BEDROCK, WEBHOOK_PUSH, WebhookPush
from batch_gateway.service.context import Services
from batch_gateway.service.workflow.wake import wake_job

logger = Logger(child=True)

BEDROCK_ENDED = frozenset(constants.BEDROCK_JOB_ENDED_STATUSES)


def verifier(secret: str) -> Webhook:
    """The secret as OpenAI's SDK reads it (Gemini's is ``whsec_<base64>`` too): ``whsec_<base64>`` is the
    base64-decoded key, anything else its UTF-8 bytes."""
    if not secret:
        raise RuntimeError("the webhook secret is empty; set it in Secrets Manager")
    return Webhook(secret if secret.startswith("whsec_") else secret.encode())


def receive_webhook(services: Services, provider: str, body: bytes, headers: Mapping[str, str]) -> dict[str, Any]:
    """Verify one webhook delivery of ``provider`` (with ``Services.webhook_secret(provider)``) and wake the job of the
    batch it says ended (found by ``Services.provider_batches``). Raises ``NotFoundError`` for a provider that does not
    push, ``InvalidRequestError`` (400) when the signature does not verify, ``PayloadTooLargeError`` over the bound."""
    push = WEBHOOK_PUSH.get(provider)
    if push is None:
        raise NotFoundError("no such webhook")
    if len(body) > WEBHOOK_MAX_BYTES:
        raise PayloadTooLargeError(f"a webhook body is at most {WEBHOOK_MAX_BYTES} bytes")
    secret = services.webhook_secret(provider)
    try:
        event = verifier(secret).verify(body, dict(headers))
    except (WebhookVerificationError, ValueError, UnicodeDecodeError):
        logger.warning("webhook refused: the signature does not verify", extra={"provider": provider})
        raise InvalidRequestError("the webhook signature does not verify") from None
    event_type = event.get("type") if isinstance(event, dict) else None
    data = event.get("data") if isinstance(event, dict) else None
    batch_id = data.get("id") if isinstance(data, dict) else None
    if event_type not in push.ended_events or not isinstance(batch_id, str) or not batch_id:
        logger.info(
            "webhook ignored: not a batch end", extra={"provider": provider, "event_type": str(event_type)[:64]}
        )
        return {"received": True}
    _wake_holder(services, push.provider, _batch_name(push, batch_id), str(event_type))
    return {"received": True}


def receive_bedrock_event(services: Services, event: Mapping[str, Any]) -> dict[str, Any]:
    """One EventBridge event from the stack's rule: a Bedrock job that ended wakes the job whose chunk holds it.
    Anything else (another source or detail type, a status that does not end a job, no ARN) is ignored."""
    detail = event.get("detail")
    arn = detail.get("batchJobArn") if isinstance(detail, dict) else None
    status = detail.get("status") if isinstance(detail, dict) else None
    if (
        event.get("source") != constants.BEDROCK_JOB_EVENT_SOURCE
        or event.get("detail-type") != constants.BEDROCK_JOB_EVENT_DETAIL_TYPE
        or status not in BEDROCK_ENDED
        or not isinstance(arn, str)
        or not arn
    ):
        logger.info("Bedrock event ignored: not a job's end", extra={"status": str(status)[:32]})
        return {"woken": False}
    return {"woken": _wake_holder(services, BEDROCK.name, arn, str(status))}


def _batch_name(push: WebhookPush, batch_id: str) -> str:
    """The batch as Submit recorded it: Gemini's ``batches/<id>`` even when the event names the bare id."""
    if push.batch_prefix and not batch_id.startswith(push.batch_prefix):
        return push.batch_prefix + batch_id
    return batch_id


def _wake_holder(services: Services, provider: str, batch_id: str, event_type: str) -> bool:
    """Wake the running job of ``provider`` whose chunk holds ``batch_id``; True if a parked workflow resumed."""
    job_id = services.provider_batches.job_for(batch_id)
    job = services.jobs.get_job(job_id) if job_id else None
    keys = {"provider": provider, "provider_batch_id": batch_id}
    if job is None or job.provider != provider:
        logger.info("push for a batch no job here holds", extra=keys)
        return False
    if job.status.terminal:
        logger.info("push for an ended job", extra={**keys, "job_id": job.id})
        return False
    resumed = wake_job(services, job.id)
    logger.info("push woke the job", extra={**keys, "job_id": job.id, "event_type": event_type, "resumed": resumed})
    return resumed
