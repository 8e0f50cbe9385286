"""The job view of deadlines and lanes (decision 0142): a job without them shows exactly the view it showed before
them (keys, values, bytes); one with them shows its deadline, lanes, ceiling and the plan, whose items and cost per
lane and per provider come from its chunks (``models.lane_plan.lane_totals``), and whose moves and items billed twice
are the planner's record."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from batch_gateway.models.jobs import (
    Chunk,
    ChunkMove,
    Job,
    JobStatus,
    LaneMoveEntry,
    LanePlan,
    RequestCounts,
    Usage,
)
from batch_gateway.models.lane_plan import lane_totals
from batch_gateway.models.pricing import chunks_cost, file_table
from batch_gateway.service.api.query import get_job, job_view, list_jobs
from tests.support.services import memory_services

T = datetime(2026, 12, 5, 1, 0, tzinfo=UTC)
MODEL = "claude-sonnet-4-20250514"


def _job(**changes) -> Job:
    return Job(
        id="job_" + "b" * 24,
        owner="o",
        provider="anthropic",
        model=MODEL,
        status=JobStatus.IN_PROGRESS,
        created_at=T,
        updated_at=T,
        request_counts=RequestCounts(total=3, processing=1, succeeded=2),
        metadata={"team": "x"},
        **changes,
    )


def _chunk(index: int = 0, **changes) -> Chunk:
    fields = {
        "job_id": "job_" + "b" * 24,
        "index": index,
        "request_count": 3,
        "provider_batch_id": "msgbatch_1",
        "provider_status": "in_progress",
        "request_counts": RequestCounts(total=3, processing=1, succeeded=2),
        "usage": Usage(input_tokens=100, output_tokens=50),
        **changes,
    }
    return Chunk(**fields)


# The view of this job as the release before deadlines built it (generated from that release's code, byte for byte)
BEFORE = (
    '{"id": "job_bbbbbbbbbbbbbbbbbbbbbbbb", "status": "in_progress", "provider": "anthropic", "model": '
    '"claude-sonnet-4-20250514", "endpoint": null, "request_counts": {"total": 3, "processing": 1, "succeeded": 2, '
    '"errored": 0, "canceled": 0, "expired": 0, "sent": 3}, "chunks": [{"index": 0, "provider_batch_id": '
    '"msgbatch_1", "status": "in_progress", "request_counts": {"total": 3, "processing": 1, "succeeded": 2, '
    '"errored": 0, "canceled": 0, "expired": 0}, "error": null, "attempt": 1, "waiting_for_quota": null}], '
    '"waiting_for_quota": null, "usage": {"input_tokens": 0, "output_tokens": 0, "cache_creation_input_tokens": 0, '
    '"cache_read_input_tokens": 0, "reasoning_tokens": 0}, "cost_usd": 0.0, "cost": {"currency": "USD", "input": '
    '0.0, "output": 0.0, "cache_write": 0.0, "cache_read": 0.0, "total": 0.0, "sync_total": 0.0, "saving": 0.0, '
    '"savings": {"batch": 0.0, "cache": 0.0, "reuse": 0.0, "dedup": 0.0}, "price_version": "PRICES"}, "metadata": '
    '{"team": "x"}, "retry": null, "prompt_cache": "off", "guardrails": {"pii": "off", "flagged": {}, "redacted": '
    '{}}, "provider_headers": {}, "reuse": null, "webhook": null, "created_at": "2026-12-05T01:00:00Z", '
    '"updated_at": "2026-12-05T01:00:00Z", "ended_at": null, "error": null, "events": []}'
)


def test_a_job_without_deadline_or_lanes_shows_byte_for_byte_the_view_of_before():
    services = memory_services()
    view = job_view(services, _job(), [_chunk()])
    assert json.dumps(view) == BEFORE.replace("PRICES", file_table().version)
    assert not {"deadline", "lanes", "max_cost_usd", "plan"} & set(view)


def test_a_job_with_a_deadline_shows_it_its_lanes_and_the_plan_from_its_chunks():
    deadline = T + timedelta(hours=6)
    move = LaneMoveEntry(
        at=T + timedelta(hours=5), chunk=0, from_lane="batch", to_lane="sync", provider="anthropic", model=MODEL,
        items=1, reason="deadline",
    )  # fmt: skip
    plan = LanePlan(
        predicted_end=T + timedelta(hours=7),
        moves=[move],
        billed_twice=1,
        billed_twice_usd=0.25,
        billed_twice_ids=["a"],
    )
    job = _job(deadline=deadline, lanes=["batch", "flex", "sync"], max_cost_usd=3.0, plan=plan)
    moved = _chunk(
        0,
        request_counts=RequestCounts(total=3, succeeded=2, canceled=1),
        move=ChunkMove(at=move.at, lane="sync", provider="anthropic", model=MODEL, reason="deadline"),
    )
    lane = _chunk(1, lane="sync", provider_batch_id=None, request_counts=RequestCounts(total=1, succeeded=1))
    view = job_view(memory_services(), job, [moved, lane])
    assert view["deadline"] == "2026-12-05T07:00:00Z"
    assert (view["lanes"], view["max_cost_usd"]) == (["batch", "flex", "sync"], 3.0)
    one = chunks_cost("anthropic", MODEL, [moved])
    assert one is not None and one > 0
    assert view["plan"] == {
        "deadline": "2026-12-05T07:00:00Z",
        "predicted_end": "2026-12-05T08:00:00Z",
        "items_per_lane": {"batch": 2, "sync": 1},  # the moved chunk counts what it answered, the lane the rest
        "cost_per_lane": {"batch": one, "sync": chunks_cost("anthropic", MODEL, [lane])},
        # the sync lane at the synchronous price (models.pricing.ran_on_demand): twice the batch's for the same usage
        "cost_per_provider": {"anthropic": pytest.approx(one + chunks_cost("anthropic", MODEL, [lane]))},
        "billed_twice": {"count": 1, "cost_usd": 0.25, "ids": ["a"]},
        "moves": [
            {
                "at": "2026-12-05T06:00:00Z",
                "chunk": 0,
                "from_lane": "batch",
                "to_lane": "sync",
                "provider": "anthropic",
                "model": MODEL,
                "items": 1,
                "reason": "deadline",
            }
        ],
        "held": None,
    }


def test_a_failover_chunks_cost_counts_for_its_own_provider_and_model():
    job = _job(lanes=["batch", "failover"])
    failover = _chunk(1, lane="batch", provider="openai", model="gpt-4o-mini")
    totals = lane_totals(job, [_chunk(0), failover])
    gpt = chunks_cost("openai", "gpt-4o-mini", [failover])
    claude = chunks_cost("anthropic", MODEL, [_chunk(0)])
    assert gpt is not None and claude is not None and gpt != claude
    assert totals["cost_per_provider"] == {"anthropic": claude, "openai": gpt}
    assert totals["items_per_lane"] == {"batch": 6}
    assert totals["cost_per_lane"] == {"batch": pytest.approx(claude + gpt)}


def test_lanes_alone_or_a_ceiling_alone_show_the_plan_and_the_list_shows_it_without_chunk_totals():
    services = memory_services()
    services.jobs.put_new_job(_job(max_cost_usd=1.0))
    services.jobs.put_chunks([_chunk()])
    view = get_job(services, "job_" + "b" * 24, "o")
    assert view["plan"]["items_per_lane"] == {"batch": 3}
    assert (view["deadline"], view["lanes"], view["max_cost_usd"]) == (None, ["batch"], 1.0)
    assert view["plan"]["moves"] == [] and view["plan"]["billed_twice"] == {"count": 0, "cost_usd": 0.0, "ids": []}
    [listed] = list_jobs(services, "o")["batches"]
    assert listed["plan"]["items_per_lane"] == {} and listed["plan"]["deadline"] is None
