"""``Services`` has no silent defaults: a wiring that forgets a collaborator fails when it is built, instead of a
sweeper that believes every workflow is running or a cancel that never stops one."""

from __future__ import annotations

import dataclasses

import pytest

from batch_gateway.service.context import Services
from batch_gateway.settings import Settings
from batch_gateway_dev.fakes.memory import MemoryJobStore, MemoryPayloadStore


def test_every_collaborator_is_required():
    assert [f.name for f in dataclasses.fields(Services) if f.default is not dataclasses.MISSING] == []
    assert [f.name for f in dataclasses.fields(Services) if f.default_factory is not dataclasses.MISSING] == []


def test_services_built_without_the_workflow_collaborators_is_refused_by_name():
    with pytest.raises(TypeError, match="emit_event.*describe_workflow.*stop_workflow"):
        Services(
            settings=Settings(table="jobs", bucket="payloads"),
            jobs=MemoryJobStore(),
            payloads=MemoryPayloadStore(),
            start_workflow=lambda name, payload: "arn",
            provider_for=lambda name: None,
            planner_for=lambda name: None,
        )
