"""Cache groups kept together in chunks (decision 0128's addendum): Plan sends each primed group's requests in one
chunk where they fit and in consecutive chunks otherwise, every request once, and a Plan that goes on over several
invocations cuts the chunks one run does (decision 0118); the dry run's chunk plan is Plan's."""

from __future__ import annotations

import json

from batch_gateway import wiring
from batch_gateway.contract.errors import TransientError
from batch_gateway.jsonlines import loads
from batch_gateway.models.ids import unmarked
from batch_gateway.service.layout import chunk_input_key, results_key
from lambdas import create, finalize, plan, poll, submit
from tests.support.events import call, load_event
from tests.support.work_clock import WorkClock

MODEL = "claude-sonnet-4-20250514"
TOPICS = ("rivers", "mountains", "deserts")
# three system prompts of about 1,600 tokens each: each group of 12 pays back its primer (decision 0128)
SYSTEMS = {topic: f"You answer questions about {topic}, briefly and accurately, in one line. " * 90 for topic in TOPICS}


def _body(per_group: int) -> dict:
    """Requests whose groups interleave: r0 rivers, r1 mountains, r2 deserts, r3 rivers, ..."""
    requests = {}
    for i in range(per_group * len(TOPICS)):
        topic = TOPICS[i % len(TOPICS)]
        requests[f"r{i}"] = {"system": SYSTEMS[topic], "messages": [{"role": "user", "content": f"Name {topic} {i}."}]}
    return {"provider": "anthropic", "model": MODEL, "requests": requests}


def _create(ctx, body: dict, **options) -> dict:
    event = load_event("api_create.json")
    event["body"] = json.dumps({**body, **options})
    status, answer = call(create.handler, event, ctx)
    assert status in (200, 202), answer
    return answer


def _chunked(services, job_id: str) -> list[list[tuple[str, str]]]:
    """Each chunk's (caller id, topic) in the order its lines are sent."""
    chunks = []
    for chunk in services.jobs.get_chunks(job_id):
        lines = [loads(raw) for raw in services.payloads.iter_lines(chunk_input_key(job_id, chunk.index))]
        chunks.append(
            [
                (unmarked(line["custom_id"], chunk.id_marker), _topic(line["params"]["system"][0]["text"]))
                for line in lines
            ]
        )
    return chunks


def _topic(system: str) -> str:
    return next(topic for topic, text in SYSTEMS.items() if text == system)


def _chunks_of(chunked: list[list[tuple[str, str]]], topic: str) -> list[int]:
    return sorted({index for index, lines in enumerate(chunked) for _, t in lines if t == topic})


def test_interleaved_groups_larger_than_a_chunk_are_sent_each_in_consecutive_chunks_every_request_once(
    aws, ctx, monkeypatch
):
    monkeypatch.setattr(aws.settings, "max_chunk_requests", 5)  # 36 requests, three groups of 12: 8 chunks
    body = _body(12)
    job_id = _create(ctx, body)["id"]
    plan.handler({"job_id": job_id}, ctx)
    groups = aws.jobs.require_job(job_id).cache_plan.groups
    assert sorted(g.requests for g in groups) == [12, 12, 12]

    chunked = _chunked(aws, job_id)
    sent = [line for lines in chunked for line in lines]
    assert sorted(caller_id for caller_id, _ in sent) == sorted(body["requests"])  # every request, once
    topics = [topic for _, topic in sent]
    for topic in TOPICS:  # a group's requests follow one another, in input order, in consecutive chunks
        where = [i for i, t in enumerate(topics) if t == topic]
        assert where == list(range(where[0], where[0] + 12)), topics
        indexes = _chunks_of(chunked, topic)
        assert indexes == list(range(indexes[0], indexes[0] + len(indexes)))
        ids = [caller_id for caller_id, t in sent if t == topic]
        assert ids == sorted(ids, key=lambda caller_id: int(caller_id[1:]))


def test_a_group_that_fits_in_a_chunk_is_sent_in_one_and_the_job_ends_with_one_result_a_request(aws, ctx, monkeypatch):
    monkeypatch.setattr(aws.settings, "max_chunk_requests", 25)  # two groups of 10 fit together, a third does not
    body = _body(10)
    job_id = _create(ctx, body)["id"]
    state = submit.handler(plan.handler({"job_id": job_id}, ctx), ctx)

    chunked = _chunked(aws, job_id)
    assert [len(lines) for lines in chunked] == [20, 10]  # in input order it would have been 25 and 5
    assert all(len(_chunks_of(chunked, topic)) == 1 for topic in TOPICS)
    for _ in range(200):
        state = poll.handler(state, ctx)
        if state["done"]:
            break
    assert finalize.handler(state, ctx)["status"] == "finished"
    results = [json.loads(raw) for raw in aws.payloads.iter_lines(results_key(job_id)) if raw]
    assert sorted(item["id"] for item in results) == sorted(body["requests"])
    assert all(item["status"] == "succeeded" for item in results)


def test_a_plan_over_several_invocations_cuts_the_grouped_chunks_one_run_does(aws, ctx, monkeypatch):
    monkeypatch.setattr(aws.settings, "max_chunk_requests", 5)
    body = _body(12)
    once = _create(ctx, body)["id"]
    plan.handler({"job_id": once}, ctx)
    job_id = _create(ctx, body)["id"]
    clock = WorkClock(monkeypatch, line_ms=30_000)  # 36 lines of 30 s: several 5-minute invocations
    while not aws.jobs.require_job(job_id).chunk_count:
        assert clock.invocations < 20, "not planned after 20 invocations"
        _plan_once(job_id, clock)
    assert clock.invocations > 3 and clock.lines == 36  # each line written once: none again, none skipped
    assert _chunked(aws, job_id) == _chunked(aws, once)


def test_identical_requests_in_a_group_are_sent_once_when_the_plan_goes_on_over_invocations(aws, ctx, monkeypatch):
    """In-job dedup (0126) replays what the passes before planned: a copy in a later invocation is still a copy."""
    monkeypatch.setattr(aws.settings, "max_chunk_requests", 5)
    body = _body(12)
    for i in range(36, 42):  # copies of r0..r5, after every other request
        body["requests"][f"r{i}"] = body["requests"][f"r{i - 36}"]
    job_id = _create(ctx, body)["id"]
    clock = WorkClock(monkeypatch, line_ms=30_000)
    while not aws.jobs.require_job(job_id).chunk_count:
        assert clock.invocations < 20, "not planned after 20 invocations"
        _plan_once(job_id, clock)
    job = aws.jobs.require_job(job_id)
    assert clock.invocations > 3 and clock.lines == 36 and job.duplicates == 6


def _plan_once(job_id: str, clock: WorkClock) -> None:
    try:
        plan.handler({"job_id": job_id}, clock.invocation())
    except TransientError:
        pass


def test_the_dry_run_plans_the_grouped_chunks_plan_cuts(aws, ctx, monkeypatch):
    monkeypatch.setenv("MAX_CHUNK_REQUESTS", "25")
    wiring.reset()
    services = wiring.services()
    body = _body(10)
    estimate = _create(ctx, body, dry_run=True)
    job_id = _create(ctx, body)["id"]
    plan.handler({"job_id": job_id}, ctx)
    planned = [c.request_count for c in services.jobs.get_chunks(job_id)]
    assert planned == [20, 10]
    assert [c["requests"] for c in estimate["plan"]["chunks"]] == planned


def test_a_cache_plan_recorded_by_the_code_before_the_order_is_chunked_in_input_order(aws, ctx, monkeypatch):
    """Upgrade: a job whose cache plan the previous release recorded (no ``order.bin``) goes on as that release cut
    it, in input order, every request once and every line still marked."""
    monkeypatch.setattr(aws.settings, "max_chunk_requests", 5)
    body = _body(12)
    planned = _create(ctx, body)["id"]
    plan.handler({"job_id": planned}, ctx)
    job_id = _create(ctx, body)["id"]
    aws.jobs.update_job(job_id, cache_plan=aws.jobs.require_job(planned).cache_plan)  # as the code before left it
    plan.handler({"job_id": job_id}, ctx)

    chunked = _chunked(aws, job_id)
    ids = [caller_id for lines in chunked for caller_id, _ in lines]
    assert ids == [f"r{i}" for i in range(36)]  # input order, each once
    assert [len(lines) for lines in chunked] == [5] * 7 + [1]
    assert all(len(_chunks_of(chunked, topic)) >= 7 for topic in TOPICS)  # each group spread over the chunks
