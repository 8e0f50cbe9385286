"""Cache-aware planning's primers through the handlers, against moto and the simulators (decision 0128): Plan
groups the requests that share a prefix and marks their lines, Submit sends one primer per group before any chunk,
once, whatever is retried, and the primer's cost is the job's."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from batch_gateway.contract.errors import TransientError
from batch_gateway.jsonlines import loads
from batch_gateway.service.layout import chunk_input_key
from lambdas import create, finalize, plan, poll, submit
from tests.support.events import call, load_event
from tests.support.work_clock import WorkClock

SYSTEM = "You answer questions about rivers, briefly and accurately, in one line. " * 90  # about 1,600 tokens
MODELS = {"anthropic": "claude-sonnet-4-20250514", "openai": "gpt-4.1-mini"}


def _create(ctx, provider="anthropic", requests=20, **options):
    event = load_event("api_create.json")
    body = {
        **json.loads(event["body"]),
        "provider": provider,
        "model": MODELS[provider],
        "requests": {
            f"r{i}": {"system": SYSTEM, "messages": [{"role": "user", "content": f"Name river number {i}."}]}
            for i in range(requests)
        },
        **options,
    }
    event["body"] = json.dumps(body)
    status, job = call(create.handler, event, ctx)
    assert status == 202, job
    return job["id"]


def _lines(services, job_id, index=0):
    return [loads(line) for line in services.payloads.iter_lines(chunk_input_key(job_id, index))]


def _sync_calls(simulator, provider):
    """The synchronous model calls the simulator answered (Anthropic's Messages, OpenAI's chat and responses)."""
    stats = simulator.stats()[provider]
    return stats["messages"] if "messages" in stats else stats["answered"]


def _finish(state, ctx):
    for _ in range(200):
        state = poll.handler(state, ctx)
        if state["done"]:
            return finalize.handler(state, ctx)
    raise AssertionError("job did not finish")


def test_plan_marks_every_request_of_a_shared_system_prompt_with_a_one_hour_breakpoint(aws, ctx):
    job_id = _create(ctx)
    plan.handler({"job_id": job_id}, ctx)
    job = aws.jobs.require_job(job_id)
    assert job.prompt_cache == "auto"
    [group] = job.cache_plan.groups
    assert group.requests == 20 and group.tokens >= 1024 and not group.primed
    for line in _lines(aws, job_id):
        [system] = line["params"]["system"]
        assert system["text"] == SYSTEM and system["cache_control"] == {"type": "ephemeral", "ttl": "1h"}


def test_prompt_cache_off_sends_the_requests_as_they_are(aws, ctx, simulator):
    job_id = _create(ctx, prompt_cache="off")
    state = submit.handler(plan.handler({"job_id": job_id}, ctx), ctx)
    assert aws.jobs.require_job(job_id).cache_plan is None
    assert all(line["params"]["system"] == SYSTEM for line in _lines(aws, job_id))
    _finish(state, ctx)
    assert _sync_calls(simulator, "anthropic") == 0


def test_submit_sends_the_primer_once_before_the_batch_and_a_retried_submit_sends_nothing_again(aws, ctx, simulator):
    job_id = _create(ctx)
    state = plan.handler({"job_id": job_id}, ctx)
    state = submit.handler(state, ctx)
    assert _sync_calls(simulator, "anthropic") == 1
    job = aws.jobs.require_job(job_id)
    [group] = job.cache_plan.groups
    assert group.primed and group.usage.cache_creation_input_tokens >= 1024 and job.cache_step == 2
    submit.handler(state, ctx)  # the state machine's retry of a Submit whose answer was lost
    poll.handler(state, ctx)
    assert _sync_calls(simulator, "anthropic") == 1

    ended = _finish(state, ctx)
    assert ended["status"] == "finished"
    done = aws.jobs.require_job(job_id)
    items = sum(c.usage.cache_read_input_tokens for c in aws.jobs.get_chunks(job_id))
    assert items >= 20 * 1024  # every item read what the primer wrote
    assert done.cost["cache_write"] > 0  # the primer's write, the job's cost; no item wrote
    assert all(c.usage.cache_creation_input_tokens == 0 for c in aws.jobs.get_chunks(job_id))


def test_a_primer_claimed_by_an_invocation_that_died_is_not_sent_again_and_is_priced_as_its_write(aws, ctx, simulator):
    job_id = _create(ctx)
    state = plan.handler({"job_id": job_id}, ctx)
    aws.jobs.update_job(job_id, cache_step=1)  # claimed, then the invocation died before its answer was recorded
    submit.handler(state, ctx)
    assert _sync_calls(simulator, "anthropic") == 0
    job = aws.jobs.require_job(job_id)
    [group] = job.cache_plan.groups
    assert group.unsure and not group.primed and job.cache_step == 2
    assert group.usage.cache_creation_input_tokens == group.tokens
    assert _finish(state, ctx)["status"] == "finished"
    assert aws.jobs.require_job(job_id).cost["cache_write"] > 0


def test_a_primer_another_invocation_is_sending_holds_every_chunk_back_until_its_lease_is_over(aws, ctx, simulator):
    job_id = _create(ctx)
    state = plan.handler({"job_id": job_id}, ctx)
    aws.jobs.update_job(job_id, cache_step=1, cache_lease_until=datetime.now(UTC) + timedelta(minutes=5))
    submit.handler(state, ctx)
    poll.handler({**state, "polls": 0}, ctx)
    assert _sync_calls(simulator, "anthropic") == 0  # not sent twice
    assert simulator.stats()["anthropic"]["batches_created"] == 0  # nor any chunk before it
    aws.jobs.update_job(job_id, cache_lease_until=datetime.now(UTC) - timedelta(seconds=1))  # that invocation died
    assert _finish(state, ctx)["status"] == "finished"
    assert _sync_calls(simulator, "anthropic") == 0 and aws.jobs.require_job(job_id).cache_plan.groups[0].unsure


@pytest.mark.parametrize(("provider", "endpoint"), [("anthropic", None), ("openai", "chat"), ("openai", "responses")])
def test_no_chunk_is_sent_before_the_primers_and_poll_sends_them_first(aws, ctx, simulator, provider, endpoint):
    job_id = _create(ctx, provider, **({"endpoint": endpoint} if endpoint else {}))
    state = plan.handler({"job_id": job_id}, ctx)
    aws.jobs.update_job(job_id, status="in_progress")  # Submit ran out of time before its first primer
    assert simulator.stats()[provider]["batches_created"] == 0
    state = poll.handler({**state, "polls": 0}, ctx)
    job = aws.jobs.require_job(job_id)
    assert job.primed and job.cache_plan.groups[0].primed
    assert simulator.stats()[provider]["batches_created"] == 1
    assert _finish(state, ctx)["status"] == "finished"
    assert all(c.usage.cache_read_input_tokens >= 20 * 1024 for c in aws.jobs.get_chunks(job_id))  # the primer's


def test_a_job_of_short_requests_is_planned_with_no_group_and_sends_no_primer(aws, ctx, simulator):
    event = load_event("api_create.json")  # five one-line prompts: no prefix near the 1,024-token minimum
    status, job = call(create.handler, event, ctx)
    assert status == 202 and job["prompt_cache"] == "auto"
    state = submit.handler(plan.handler({"job_id": job["id"]}, ctx), ctx)
    planned = aws.jobs.require_job(job["id"])
    assert planned.cache_plan is not None and planned.cache_plan.groups == [] and planned.primed
    assert _finish(state, ctx)["status"] == "finished"
    assert _sync_calls(simulator, "anthropic") == 0


def test_a_plan_that_needs_several_invocations_marks_its_chunks_as_one_run_does(aws, ctx, monkeypatch):
    """Decision 0118 holds with a cache plan: recorded before the first chunk, it marks every chunk the same whichever
    invocation writes it."""
    monkeypatch.setattr(aws.settings, "max_chunk_requests", 3)  # 20 requests: 7 chunks
    once = _create(ctx)
    plan.handler({"job_id": once}, ctx)
    job_id = _create(ctx)
    clock = WorkClock(monkeypatch, line_ms=30_000)  # 20 lines: 10 minutes of work, over one invocation's 5
    while not aws.jobs.require_job(job_id).chunk_count:
        assert clock.invocations < 10, "not planned after 10 invocations"
        try:
            plan.handler({"job_id": job_id}, clock.invocation())
        except TransientError:
            pass
    assert clock.invocations > 2 and clock.lines == 20

    def params(job_id):
        chunks = aws.jobs.get_chunks(job_id)
        return [[line["params"] for line in _lines(aws, job_id, c.index)] for c in chunks]

    assert params(job_id) == params(once) and len(params(job_id)) == 7
    assert all(p["system"][0]["cache_control"] == {"type": "ephemeral", "ttl": "1h"} for c in params(job_id) for p in c)
