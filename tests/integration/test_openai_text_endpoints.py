"""OpenAI's completions and moderations batch endpoints through the native API (POST /batches), in-process against
moto and the simulator: what a caller gets back, and what it costs."""

from __future__ import annotations

import json

from lambdas import create, retrieve, status
from tests.support.events import call, load_event
from tests.support.workflow_driver import run_workflow


def _create(ctx, **body):
    event = load_event("api_create.json")
    event["body"] = json.dumps({"provider": "openai", **body})
    return call(create.handler, event, ctx)


def _results(ctx, job_id):
    code, page = call(retrieve.handler, load_event("api_retrieve.json", job_id), ctx)
    assert code == 200, page
    return page["results"]


def test_a_completions_job_on_davinci_answers_text_and_costs_its_tokens(aws, ctx):
    code, job = _create(
        ctx,
        model="davinci-002",
        endpoint="completions",
        requests={"a": "Once upon a time", "b": {"prompt": "Roses are", "max_tokens": 8, "stop": ["\n"]}},
    )
    assert code == 202, job
    assert job["endpoint"] == "completions"
    run_workflow(job["id"], ctx)
    _, view = call(status.handler, load_event("api_status.json", job["id"]), ctx)
    assert view["status"] == "finished" and view["request_counts"]["succeeded"] == 2
    results = _results(ctx, job["id"])
    assert results["a"]["text"] == "[simulated davinci-002] Reply to: Once upon a time"
    assert results["a"]["token_usage"]["output_tokens"] > 0 and results["a"]["cost"] > 0
    assert view["cost"]["total"] > 0


def test_a_moderations_job_answers_each_texts_verdict_and_costs_nothing(aws, ctx):
    code, job = _create(
        ctx,
        model="omni-moderation-latest",
        endpoint="moderations",
        requests={"threat": "I will kill the lights", "calm": "A calm morning"},
    )
    assert code == 202, job
    run_workflow(job["id"], ctx)
    results = _results(ctx, job["id"])
    [threat], [calm] = results["threat"]["outputs"], results["calm"]["outputs"]
    assert threat["type"] == "moderation" and threat["flagged"] and threat["categories"]["violence"]
    assert results["threat"]["status"] == "succeeded" and results["threat"]["text"] is None
    assert threat["category_scores"]["violence"] == 0.9
    assert not calm["flagged"] and not any(calm["categories"].values())
    assert results["threat"]["cost"] == 0 and results["calm"]["cost"] == 0
    _, view = call(status.handler, load_event("api_status.json", job["id"]), ctx)
    assert view["cost"]["total"] == 0
