"""The ``prompt_cache`` job option (decision 0128) where jobs are created: the native create checks it and the job
view shows it, a job without it takes the deployment's default (``PROMPT_CACHE_DEFAULT``), and a file's header line
sets it for an upload."""

from __future__ import annotations

import json

from batch_gateway import wiring
from batch_gateway.contract.jsonl import parse_jsonl
from batch_gateway.service.api.create import settings_only
from lambdas import create
from tests.support.events import call, load_event


def _create(ctx, **changes):
    event = load_event("api_create.json")
    event["body"] = json.dumps({**json.loads(event["body"]), **changes})
    return call(create.handler, event, ctx)


def test_a_job_takes_auto_unless_it_says_off_and_the_view_shows_which(aws, ctx):
    status, job = _create(ctx)
    assert status == 202 and job["prompt_cache"] == "auto"
    status, job = _create(ctx, prompt_cache="off")
    assert status == 202 and job["prompt_cache"] == "off"
    assert aws.jobs.require_job(job["id"]).prompt_cache == "off"


def test_an_unknown_prompt_cache_is_a_400_naming_the_field(aws, ctx):
    status, body = _create(ctx, prompt_cache="always")
    assert status == 400
    assert body["error"]["details"] == [{"field": "prompt_cache", "message": "must be 'auto' or 'off'"}]


def test_a_files_header_line_sets_it_as_the_body_would():
    header = json.dumps({"batch_gateway": {"provider": "anthropic", "model": "claude-sonnet-4-20250514",
                                           "prompt_cache": "off"}})  # fmt: skip
    parsed = parse_jsonl([header, json.dumps({"id": "a", "request": "Hi"})])
    assert settings_only(parsed.header).prompt_cache == "off"


def test_the_deployments_default_applies_to_a_job_that_gives_none(aws, ctx, monkeypatch):
    monkeypatch.setenv("PROMPT_CACHE_DEFAULT", "off")
    wiring.reset()
    status, job = _create(ctx)
    assert status == 202 and job["prompt_cache"] == "off"
    status, job = _create(ctx, prompt_cache="auto")
    assert status == 202 and job["prompt_cache"] == "auto"
