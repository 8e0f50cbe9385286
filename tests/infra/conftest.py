"""Infra tests: the CDK app is synthesized once per session (bundling skipped, cdk-nag on, as `cdk synth` runs it)."""

from __future__ import annotations

import json

import pytest
from aws_cdk.assertions import Template

from batch_gateway import constants
from stacks.app_factory import SKIP_BUNDLING, build_app
from tests.support.synthesized import Synthesized


@pytest.fixture(scope="session")
def synthesized(tmp_path_factory: pytest.TempPathFactory) -> Synthesized:
    outdir = tmp_path_factory.mktemp("cdk.out")
    app = build_app(dict(SKIP_BUNDLING), outdir=str(outdir))
    nag_error: Exception | None = None
    try:
        assembly = app.synth()
    except Exception as error:  # cdk-nag findings: let the nag tests report them, the others still run
        nag_error = error
        app = build_app({**SKIP_BUNDLING, "nag": False}, outdir=str(tmp_path_factory.mktemp("cdk.out.nag-off")))
        assembly = app.synth()
    template_json = json.loads(json.dumps(assembly.get_stack_by_name(constants.STACK_NAME).template))
    return Synthesized(
        app=app,
        stack=app.node.find_child(constants.STACK_NAME),
        template=Template.from_json(template_json),
        json=template_json,
        nag_error=nag_error,
    )
