"""Wrap a resolver or a workflow step into a Lambda handler with logging, tracing and metrics, once."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext
from botocore.exceptions import BotoCoreError, ClientError, HTTPClientError
from botocore.exceptions import ConnectionError as AwsConnectionError

from batch_gateway import constants, deadline, wiring
from batch_gateway.contract.errors import ProviderKeyRejectedError, TransientError
from batch_gateway.edge.observability import logger, metrics, tracer
from batch_gateway.service.step_budget import StepBudget

if TYPE_CHECKING:
    from batch_gateway.edge.routing import RestResolver


def api_handler(app: RestResolver) -> Callable[[dict[str, Any], LambdaContext], dict[str, Any]]:
    """A native API function's handler. A request through the key mount (decision 0134: ``/k/batches``, resource
    ``/k/batches``) is routed as its native route (``/batches``), and its answer carries the console origin's CORS
    headers when the deployment names one."""

    @logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_REST, log_event=False)
    @metrics.log_metrics
    def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
        if not key_mounted(event):
            return app.resolve(event, context)
        path = str(event.get("path") or "")
        native = {**event, "path": path[len(constants.KEY_MOUNT_PREFIX) :] or "/"}
        return with_cors(app.resolve(native, context), wiring.settings().console_origin)

    return handler


def key_mounted(event: dict[str, Any]) -> bool:
    """Whether API Gateway matched the request on the key mount (its resource, not the client's path, says so)."""
    resource = str(event.get("resource") or "")
    return resource.startswith(constants.KEY_MOUNT_PREFIX + "/")


def with_cors(answer: dict[str, Any], origin: str) -> dict[str, Any]:
    """The key mount's answer with CORS headers for ``origin`` (the console's), or as it is when there is none."""
    if not origin:
        return answer
    headers = dict(answer.get("multiValueHeaders") or {})
    headers.update(
        {
            "Access-Control-Allow-Origin": [origin],
            "Access-Control-Expose-Headers": [", ".join(constants.CORS_EXPOSE_HEADERS)],
            "Vary": ["Origin"],
        }
    )
    return {**answer, "multiValueHeaders": headers}


def workflow_handler(
    step: Callable[..., dict[str, Any]],
    *,
    budgeted: bool = False,
) -> Callable[[dict[str, Any], Any], Any]:
    """A state machine task: the event is the state, the return value the next state. Errors propagate so that
    Step Functions retries or catches them by class name. A ``budgeted`` step is also handed a ``StepBudget`` on
    the Lambda context's remaining time, so that it stops before the function's timeout. Every step's provider calls
    end before that timeout too: the context's time left, read once, sets the invocation's deadline (decision 0115)."""

    @logger.inject_lambda_context(log_event=False)
    @tracer().capture_lambda_handler(capture_response=False)
    @metrics.log_metrics
    def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
        if isinstance(event, dict) and "job_id" in event:
            logger.append_keys(job_id=event["job_id"])
        try:
            with deadline.until(context.get_remaining_time_in_millis):
                if budgeted:
                    return step(event, StepBudget(context.get_remaining_time_in_millis))
                return step(event)
        except ProviderKeyRejectedError:
            wiring.forget_provider_keys()  # the retry reads the (perhaps rotated) key again
            raise
        except (BotoCoreError, ClientError) as exc:
            if _transient_aws_error(exc):
                raise TransientError(f"an AWS call was throttled or failed in transit ({type(exc).__name__})") from exc
            raise

    return handler  # type: ignore[no-any-return]  # Powertools types capture_lambda_handler's result as Any


_THROTTLING = {
    "Throttling",
    "ThrottlingException",
    "ThrottledException",
    "RequestLimitExceeded",
    "TooManyRequestsException",
    "ProvisionedThroughputExceededException",
    "RequestThrottled",
    "SlowDown",
    "TransactionInProgressException",
    "InternalServerError",
    "ServiceUnavailable",
    "InternalFailure",
    "InternalError",
}


def _transient_aws_error(exc: Exception) -> bool:
    """Throttled or failed in transit after botocore's own retries: worth another attempt of the whole step."""
    if isinstance(exc, ClientError):
        error = exc.response.get("Error", {})
        status = int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0)
        return error.get("Code") in _THROTTLING or status >= 500
    return isinstance(exc, AwsConnectionError | HTTPClientError)
