"""The stack's own EventBridge bus (``BatchGatewayBus``, output ``EventBusName``) and who may put events on it.

Every function that changes a job's status or request counts announces the change on this bus (decision 0068):
``Batch Job Status Changed`` and ``Batch Job Progress``, source ``batch-gateway``. Those functions get the bus's name
in ``EVENT_BUS_NAME`` and ``events:PutEvents`` on this bus only; no function may put events anywhere else.
"""

from __future__ import annotations

from aws_cdk import aws_events as events
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from batch_gateway import constants

# The functions that create a job or change its status or done counts, so emit (events.signals.job_changed): the
# API's create and cancel, the compatible doors (they create and cancel), the drop folder's Ingest, the workflow steps
# that move a job (Submit, Poll, Finalize, MarkFailed) and the sweeper (it fails a job whose workflow keeps
# stopping). Plan and Retry change no status and count no item done: no grant.
EMITTING_API_FUNCTIONS = ("Create", "Cancel", "AnthropicCompat", "OpenAICompat")
EMITTING_WORKFLOW_FUNCTIONS = ("Submit", "Poll", "Finalize", "MarkFailed")


class SignalsConstruct(Construct):
    def __init__(self, scope: Construct, construct_id: str) -> None:
        super().__init__(scope, construct_id)
        self.bus = events.EventBus(self, "BatchGatewayBus")

    def emitters(self, *functions: lambda_.Function) -> None:
        """Give each function the bus's name and ``events:PutEvents`` on this bus (nothing else)."""
        for function in functions:
            function.add_environment(constants.ENV_EVENT_BUS_NAME, self.bus.event_bus_name)
            self.bus.grant_put_events_to(function)
