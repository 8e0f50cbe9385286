"""Bedrock's ``Batch Inference Job State Change`` events, from the stack's EventBridge rule on the default bus
(decision 0135): a job that ended wakes the gateway job whose chunk holds it. Only the rule invokes this function."""

from typing import Any

from batch_gateway import wiring
from batch_gateway.edge.entry import workflow_handler
from batch_gateway.service.inbound.provider_push import receive_bedrock_event


def _receive(event: dict[str, Any]) -> dict[str, Any]:
    return receive_bedrock_event(wiring.services(), event)


handler = workflow_handler(_receive)
