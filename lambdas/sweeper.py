"""Scheduled sweeper: restart jobs whose workflow stopped, cancel orphaned provider batches."""

from dataclasses import asdict

from batch_gateway import wiring
from batch_gateway.edge.entry import workflow_handler
from batch_gateway.service.sweep import sweep

handler = workflow_handler(lambda event: asdict(sweep(wiring.services())))
