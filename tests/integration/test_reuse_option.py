"""The ``reuse`` job option (decision 0127) where jobs are created: the native create checks it (a bad one is a 400
naming the field, and nothing is stored), the job view shows it, a job without it takes the deployment's default
(``REUSE_DEFAULT_MAX_AGE``, off unless set), and no job may ask beyond the deployment's maximum (``REUSE_MAX_AGE``)."""

from __future__ import annotations

import json

import pytest

from batch_gateway import wiring
from batch_gateway.contract.jsonl import parse_jsonl
from batch_gateway.service.api.create import settings_only
from lambdas import create
from tests.support.events import call, load_event


def _create(ctx, **changes):
    event = load_event("api_create.json")
    event["body"] = json.dumps({**json.loads(event["body"]), **changes})
    return call(create.handler, event, ctx)


def test_reuse_is_off_unless_asked_and_the_view_shows_what_was_asked(aws, ctx):
    status, job = _create(ctx)
    assert status == 202 and job["reuse"] is None
    assert aws.jobs.require_job(job["id"]).reuse_max_age is None
    status, job = _create(ctx, reuse={"scope": "owner", "max_age_seconds": 3600})
    assert status == 202 and job["reuse"] == {"scope": "owner", "max_age_seconds": 3600}
    assert aws.jobs.require_job(job["id"]).reuse_max_age == 3600


def test_an_age_written_as_a_whole_float_is_that_many_seconds(aws, ctx):
    """JSON Schema's integer admits 348.0 (the documented contract, docs/openapi.json): it is 348 seconds."""
    status, job = _create(ctx, reuse={"scope": "owner", "max_age_seconds": 348.0})
    assert status == 202, job
    assert job["reuse"] == {"scope": "owner", "max_age_seconds": 348}


def test_reuse_without_an_age_takes_the_deployments_maximum(aws, ctx):
    status, job = _create(ctx, reuse={"scope": "owner"})
    assert status == 202 and job["reuse"] == {"scope": "owner", "max_age_seconds": 30 * 86_400}


@pytest.mark.parametrize(
    ("reuse", "message"),
    [
        ({"scope": "all", "max_age_seconds": 60}, "scope must be 'owner' (reuse never crosses owners)"),
        ({"scope": "owner", "max_age_seconds": -1}, "max_age_seconds must be a whole number of seconds above 0"),
        ({"scope": "owner", "max_age_seconds": 0}, "max_age_seconds must be a whole number of seconds above 0"),
        ({"scope": "owner", "max_age_seconds": 1.5}, "max_age_seconds must be a whole number of seconds above 0"),
        ({"scope": "owner", "max_age_seconds": "60"}, "max_age_seconds must be a whole number of seconds above 0"),
        ({"scope": "owner", "age": 60}, 'must be an object such as {"scope": "owner", "max_age_seconds": 86400}'),
        (True, 'must be an object such as {"scope": "owner", "max_age_seconds": 86400}'),
    ],
)
def test_a_bad_reuse_option_is_a_400_naming_the_field_and_nothing_is_stored(aws, ctx, reuse, message, monkeypatch):
    stored = []
    monkeypatch.setattr(aws.jobs, "put_new_job", lambda *a, **k: stored.append(a))
    status, body = _create(ctx, reuse=reuse)
    assert status == 400
    assert body["error"]["details"] == [{"field": "reuse", "message": message}]
    assert stored == []


def test_an_age_beyond_the_deployments_maximum_is_a_400_and_nothing_is_stored(aws, ctx, monkeypatch):
    monkeypatch.setenv("REUSE_MAX_AGE", "3600")
    wiring.reset()
    stored = []
    monkeypatch.setattr(wiring.services().jobs, "put_new_job", lambda *a, **k: stored.append(a))
    status, body = _create(ctx, reuse={"scope": "owner", "max_age_seconds": 3601})
    assert status == 400
    assert body["error"]["details"] == [{"field": "reuse", "message": "max_age_seconds must be at most 3600"}]
    assert stored == []


def test_the_deployments_default_applies_to_a_job_that_gives_none(aws, ctx, monkeypatch):
    monkeypatch.setenv("REUSE_DEFAULT_MAX_AGE", "600")
    wiring.reset()
    status, job = _create(ctx)
    assert status == 202 and job["reuse"] == {"scope": "owner", "max_age_seconds": 600}
    status, job = _create(ctx, reuse={"scope": "owner", "max_age_seconds": 60})
    assert status == 202 and job["reuse"] == {"scope": "owner", "max_age_seconds": 60}


def test_a_files_header_line_sets_it_as_the_body_would():
    header = json.dumps({"batch_gateway": {"provider": "anthropic", "model": "claude-sonnet-4-20250514",
                                           "reuse": {"scope": "owner", "max_age_seconds": 60}}})  # fmt: skip
    parsed = parse_jsonl([header, json.dumps({"id": "a", "request": "Hi"})])
    assert settings_only(parsed.header).reuse == {"scope": "owner", "max_age_seconds": 60}


def test_the_stored_job_watch_above_sees_a_good_create(aws, ctx, monkeypatch):
    """The control for the 400 tests' "nothing is stored": the same watch records a create that is accepted."""
    stored = []
    real = aws.jobs.put_new_job
    monkeypatch.setattr(aws.jobs, "put_new_job", lambda *a, **k: stored.append(a) or real(*a, **k))
    status, _job = _create(ctx, reuse={"scope": "owner", "max_age_seconds": 60})
    assert status == 202 and len(stored) == 1
