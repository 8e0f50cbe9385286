"""Wrap a resolver or a workflow step into a Lambda handler with logging, tracing and metrics, once."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext

from batch_gateway.edge.observability import logger, metrics, tracer


def api_handler(app: Any) -> Callable[[dict[str, Any], LambdaContext], dict[str, Any]]:
    @logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_REST, log_event=False)
    @metrics.log_metrics
    def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
        return app.resolve(event, context)

    return handler


def workflow_handler(step: Callable[[dict[str, Any]], dict[str, Any]]) -> Callable[[dict[str, Any], Any], Any]:
    """A state machine task: the event is the state, the return value the next state. Errors propagate so that
    Step Functions retries or catches them by class name."""

    @logger.inject_lambda_context(log_event=False)
    @tracer().capture_lambda_handler(capture_response=False)
    @metrics.log_metrics
    def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
        if isinstance(event, dict) and "job_id" in event:
            logger.append_keys(job_id=event["job_id"])
        return step(event)

    return handler
