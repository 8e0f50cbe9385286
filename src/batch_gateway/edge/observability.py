"""Powertools logger, metrics and tracer, one of each per process. Log lines carry keys, never payload text.

The tracer is built on first use: creating it loads the X-Ray SDK, which builds botocore clients at import (about
0.13 s). The API functions skip it (Lambda's active tracing still records their invocations); the workflow
functions, where calls to providers are worth a trace, use it.
"""

from __future__ import annotations

from functools import cache

from aws_lambda_powertools import Logger, Metrics, Tracer

from batch_gateway.constants import METRICS_NAMESPACE, SERVICE_NAME

logger = Logger(service=SERVICE_NAME)
metrics = Metrics(namespace=METRICS_NAMESPACE, service=SERVICE_NAME)


@cache
def tracer() -> Tracer:
    return Tracer(service=SERVICE_NAME)
