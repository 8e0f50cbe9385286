"""The workflow's state carries its schema version (the upgrade contract, decision 0121): every state a step returns
and every execution the service starts says ``SCHEMA_VERSION``; a step reads the previous release's state (0.1.0
wrote none: version 1) and the next release's (a rollback window, its new fields ignored), and refuses any other
before it acts, naming the versions. A reader never refuses the previous release's version: the bounds hold that."""

from __future__ import annotations

import pytest

from batch_gateway import wiring
from batch_gateway.contract.errors import UnreadableSchemaError
from batch_gateway.models.schema import (
    NEWEST_READABLE,
    OLDEST_READABLE,
    SCHEMA_FIELD,
    SCHEMA_VERSION,
    UNVERSIONED,
    readable,
    version_of,
)
from batch_gateway.service.workflow.state import FailureState, WorkflowState

JOB_ID = "job_" + "d" * 24
# What 0.1.0's steps returned and its Catch handed MarkFailed (its service/state.py): no version.
PREVIOUS_STATE = {"job_id": JOB_ID, "wait_seconds": 5, "polls": 2, "done": False}
PREVIOUS_FAILURE = {**PREVIOUS_STATE, "error": {"Error": "ProviderRequestError", "Cause": "{}"}}


def test_a_step_reads_the_previous_releases_state_and_returns_this_releases():
    state = WorkflowState.model_validate(PREVIOUS_STATE)
    assert (state.job_id, state.wait_seconds, state.polls, state.done) == (JOB_ID, 5, 2, False)
    assert state.out() == {**PREVIOUS_STATE, SCHEMA_FIELD: SCHEMA_VERSION}
    assert WorkflowState(job_id=JOB_ID).out()[SCHEMA_FIELD] == SCHEMA_VERSION
    assert FailureState.model_validate(PREVIOUS_FAILURE).error["Error"] == "ProviderRequestError"


def test_a_step_reads_the_next_releases_state_with_its_new_fields_ignored():
    newer = {**PREVIOUS_STATE, SCHEMA_FIELD: SCHEMA_VERSION + 1, "priority": "high"}
    assert WorkflowState.model_validate(newer).out() == {**PREVIOUS_STATE, SCHEMA_FIELD: SCHEMA_VERSION}
    assert FailureState.model_validate({**newer, "error": {}}).job_id == JOB_ID


@pytest.mark.parametrize("version", [0, SCHEMA_VERSION + 2, "2", True, None])
def test_a_state_of_any_other_version_is_refused_by_name(version):
    other = {**PREVIOUS_STATE, SCHEMA_FIELD: version}
    with pytest.raises(UnreadableSchemaError, match="workflow state has schema version"):
        WorkflowState.model_validate(other)
    with pytest.raises(UnreadableSchemaError, match="workflow state has schema version"):
        FailureState.model_validate({**other, "error": {}})


def test_readable_names_the_versions_but_never_the_data():
    secret = {"job_id": JOB_ID, "prompt": "the caller's words", SCHEMA_FIELD: 99}
    with pytest.raises(UnreadableSchemaError) as refused:
        readable(secret, "job record")
    assert str(refused.value) == (
        f"job record has schema version 99; this release reads versions 1 to {SCHEMA_VERSION + 1}"
    )
    assert version_of({}) == 1 and readable({"a": 1}, "x") == {"a": 1}


def test_every_execution_the_service_starts_says_its_schema_version(monkeypatch):
    started = []
    monkeypatch.setenv("STATE_MACHINE_ARN", "arn:aws:states:us-east-1:123456789012:stateMachine:workflow")
    monkeypatch.setattr(wiring.aws, "start_execution", lambda arn, name, payload: started.append(payload) or "arn")
    wiring.reset()
    try:
        wiring.services().start_workflow(JOB_ID, {"job_id": JOB_ID})
    finally:
        wiring.reset()
    assert started == [{"job_id": JOB_ID, SCHEMA_FIELD: SCHEMA_VERSION}]


def test_the_readable_versions_take_in_the_previous_release_and_the_next():
    """Raising OLDEST_READABLE past the previous release's version strands every job a deploy meets in flight (and
    past 1, every ended job 0.1.0 stored, unless a migration rewrote them first): decision 0121."""
    assert OLDEST_READABLE <= SCHEMA_VERSION - 1 and NEWEST_READABLE == SCHEMA_VERSION + 1
    assert OLDEST_READABLE == UNVERSIONED  # no migration has rewritten 0.1.0's records
