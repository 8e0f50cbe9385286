"""Custom CloudWatch metrics (Powertools, namespace ``BatchGateway``) that the dashboard and the alarms read
(decision 0069).

Each one is written at once as its own Embedded Metric Format line (``single_metric``): it carries its own
dimensions (a job's status, a provider's name) without mixing them into the invocation's other metrics, and it is
not lost when the invocation fails afterwards - so there is nothing to flush at the end of an invocation. (The
handlers' ``metrics.log_metrics`` still flushes the dimension-free ones added to the shared ``Metrics``.) Every
metric carries ``service=batch-gateway``; the dimensions are names from a closed set, never text from a request.

A metric must never fail the step that records it: a failure to write one is logged and dropped.
"""

from __future__ import annotations

from aws_lambda_powertools import Logger
from aws_lambda_powertools.metrics import MetricUnit, single_metric

from batch_gateway.constants import METRICS_NAMESPACE, SERVICE_NAME

logger = Logger(child=True)

COUNT = MetricUnit.Count
SECONDS = MetricUnit.Seconds
NONE = MetricUnit.NoUnit


def record(name: str, value: float = 1, unit: MetricUnit = COUNT, **dimensions: str) -> None:
    """Write one data point of ``name`` now, with ``service`` and the given dimensions."""
    try:
        with single_metric(
            name=name,
            unit=unit,
            value=value,
            namespace=METRICS_NAMESPACE,
            default_dimensions={"service": SERVICE_NAME, **dimensions},
        ):
            pass
    except Exception as error:  # a metric never fails a step
        logger.warning("metric not written", extra={"metric": name, "error_type": type(error).__name__})
