"""Powertools logger, tracer and metrics, one of each per process. Log lines carry keys, never payload text."""

from aws_lambda_powertools import Logger, Metrics, Tracer

from batch_gateway.constants import METRICS_NAMESPACE, SERVICE_NAME

logger = Logger(service=SERVICE_NAME)
tracer = Tracer(service=SERVICE_NAME)
metrics = Metrics(namespace=METRICS_NAMESPACE, service=SERVICE_NAME)
