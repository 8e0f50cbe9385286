"""The committed API contract matches the code, and real responses match the contract."""

from pathlib import Path

from batch_gateway.edge.openapi import render
from batch_gateway.models.api import JobView, ResultItem
from batch_gateway.models.jobs import Chunk, ItemStatus, Job
from batch_gateway.models.results import result_item
from batch_gateway.service.api.query import job_view
from tests.support.services import memory_services

OPENAPI = Path(__file__).resolve().parents[2] / "docs" / "openapi.json"


def test_docs_openapi_json_is_what_the_code_generates():
    assert OPENAPI.read_text() == render(), "run: uv run python -m batch_gateway.edge.openapi > docs/openapi.json"


def test_the_job_view_the_api_returns_matches_the_contract():
    services = memory_services()
    for model in ("claude-x", "claude-sonnet-4-20250514"):  # no price (total null, reason); priced (zero so far)
        job = Job(id="job_1", owner="o", provider="anthropic", model=model, metadata={"a": "b"})
        view = job_view(services, job, [Chunk(job_id="job_1", index=0, request_count=2)])
        assert JobView.model_validate(view).model_dump(exclude_unset=True) == view


def test_result_items_match_the_contract():
    for item in (
        result_item("a", ItemStatus.SUCCEEDED, outputs=[{"type": "text", "text": "x"}]),
        result_item("b", ItemStatus.EXPIRED),
    ):
        assert ResultItem.model_validate(item).model_dump(exclude_unset=True) == item
    retried = {  # a retrying job's item (decision 0066): its earlier attempts
        **result_item("c", ItemStatus.SUCCEEDED),
        "attempt_count": 2,
        "attempts": [{"attempt": 1, "status": "expired", **{k: result_item("c", ItemStatus.EXPIRED)[k] for k in (
            "finish_details", "token_usage")}}],
    }  # fmt: skip
    assert ResultItem.model_validate(retried).model_dump(exclude_unset=True) == retried


def test_the_documented_create_body_and_the_runtime_check_know_the_same_fields():
    from batch_gateway.edge.openapi_create import schemas, variants
    from batch_gateway.models.requests import FIELDS, REQUIRED

    for name, _, endpoint in variants():
        schema = schemas()[name]
        assert set(schema["properties"]) == {*FIELDS, "dry_run"}  # dry_run is read before the body's check
        assert set(schema["required"]) == set(REQUIRED) | ({"endpoint"} if endpoint else set())
