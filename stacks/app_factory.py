"""Build the CDK app (``app.py``, tests, the lint target and the local stack all go through here)."""

from __future__ import annotations

import copy
import json
import tempfile
from pathlib import Path
from typing import Any

from aws_cdk import App

from batch_gateway import constants
from stacks.batch_gateway_stack import BatchGatewayStack
from stacks.config import GatewayConfig
from stacks.nag import enable_nag

SKIP_BUNDLING: dict[str, Any] = {"aws:cdk:bundling-stacks": []}
# Every resource carries Metadata "aws:cdk:path" (e.g. BatchGatewayStack/Workflow/Plan/Resource), also outside the CLI.
_PATH_METADATA: dict[str, Any] = {"aws:cdk:enable-path-metadata": True}


CDK_JSON = Path(__file__).resolve().parent.parent / "cdk.json"


def cdk_json_context() -> dict[str, Any]:
    """cdk.json's context (feature flags and our defaults), so a synth outside the CLI builds the same template."""
    return json.loads(CDK_JSON.read_text())["context"]


def build_app(context: dict[str, Any] | None = None, outdir: str | None = None) -> App:
    """The app with ``BatchGatewayStack``; context keys are documented in ``stacks.config``.

    Context precedence: the CLI's (``-c``, cdk.context.json) over ``context`` over cdk.json's.
    cdk-nag's AwsSolutions checks run on synth unless the context says ``nag`` = false.
    """
    app = App(context={**cdk_json_context(), **_PATH_METADATA, **(context or {})}, outdir=outdir)
    config = GatewayConfig.from_context(app.node.try_get_context)
    BatchGatewayStack(
        app,
        constants.STACK_NAME,
        config=config,
        description="Batch Gateway: self-hosted LLM batch invocation service (API, workflow, storage).",
    )
    if config.nag:
        enable_nag(app)
    return app


def synth_template(context: dict[str, Any] | None = None) -> dict[str, Any]:
    """Synthesize with bundling skipped and return the stack's CloudFormation template."""
    with tempfile.TemporaryDirectory(prefix="batch-gateway-synth-") as outdir:
        app = build_app({**SKIP_BUNDLING, **(context or {})}, outdir=outdir)
        assembly = app.synth()
        return copy.deepcopy(assembly.get_stack_by_name(constants.STACK_NAME).template)
