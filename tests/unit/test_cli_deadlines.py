"""The deadline and lane options in the SDK and the CLI (decision 0142): ``submit --deadline/--lanes/--max-cost-usd``
(over the file header's), the SDK's ``create_job``/``batch.invoke`` options, and ``status`` printing the plan of the
view the server builds; ``--json`` of a job without them is the job as before, with no new keys."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from batch_gateway.cli import _status_lines, main
from batch_gateway.client import BatchGatewayClient
from batch_gateway.client.models import Job
from batch_gateway.models.jobs import Chunk, LaneMoveEntry, LanePlan, RequestCounts, Usage
from batch_gateway.models.jobs import Job as StoredJob
from batch_gateway.service.api.query import job_view
from tests.support.replay_gateway import FAKE_AWS_ENV, INPUT, ReplayGateway, item, job, results
from tests.support.services import memory_services

T = datetime(2026, 12, 5, 1, 0, tzinfo=UTC)


@pytest.fixture(autouse=True)
def aws_env(monkeypatch):
    for name, value in FAKE_AWS_ENV.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("BATCH_GATEWAY_ENDPOINT", raising=False)


@pytest.fixture
def gateway(monkeypatch):
    with ReplayGateway() as server:
        monkeypatch.setenv("BATCH_GATEWAY_ENDPOINT", server.url)
        server.script("POST", "/batches", *(job(f"job_{n}", total=2) for n in range(1, 6)))
        yield server


@pytest.fixture
def input_file(tmp_path):
    path = tmp_path / "requests.jsonl"
    path.write_text(INPUT)
    return path


def test_submit_sends_the_flags_over_the_headers_options_and_nothing_without_them(gateway, input_file, tmp_path):
    with_header = tmp_path / "with_header.jsonl"
    header = '"deadline_seconds": 7200, "lanes": ["batch", "failover"], "max_cost_usd": 4, "hyperparameters"'
    with_header.write_text(INPUT.replace('"hyperparameters"', header, 1))
    assert (
        main(["submit", str(input_file), "--deadline", "3600", "--lanes", "batch, sync", "--max-cost-usd", "2.5"]) == 0
    )
    assert main(["submit", str(input_file), "--deadline", "2026-12-06T09:00:00+01:00"]) == 0
    assert main(["submit", str(with_header)]) == 0
    assert main(["submit", str(with_header), "--deadline", "2026-12-06T09:00:00Z"]) == 0
    assert main(["submit", str(input_file)]) == 0
    bodies = [r.body for r in gateway.requests_to("POST", "/batches")]
    assert {k: bodies[0][k] for k in ("deadline_seconds", "lanes", "max_cost_usd")} == {
        "deadline_seconds": 3600,
        "lanes": ["batch", "sync"],
        "max_cost_usd": 2.5,
    }
    assert bodies[1]["deadline"] == "2026-12-06T09:00:00+01:00" and "deadline_seconds" not in bodies[1]
    assert (bodies[2]["deadline_seconds"], bodies[2]["lanes"], bodies[2]["max_cost_usd"]) == (
        7200,
        ["batch", "failover"],
        4,
    )
    assert bodies[3]["deadline"] == "2026-12-06T09:00:00Z" and "deadline_seconds" not in bodies[3]  # the flag wins
    assert not {"deadline", "deadline_seconds", "lanes", "max_cost_usd"} & set(bodies[4])


def test_the_sdk_sends_an_aware_datetime_as_rfc3339_and_refuses_a_naive_one(gateway):
    with BatchGatewayClient(gateway.url, backoff_base=0.001) as client:
        client.create_job({"a": "hi"}, provider="anthropic", model="m", deadline=T, lanes=("batch", "sync"))
        with pytest.raises(TypeError, match="aware"):
            client.create_job({"a": "hi"}, provider="anthropic", model="m", deadline=datetime(2026, 12, 6))
        gateway.script("GET", "/batches/job_2", job("job_2", "finished"))
        gateway.script("GET", "/batches/job_2/results", results("job_2", [item("a")]))
        client.batch.invoke({"a": "hi"}, provider="anthropic", model="m", deadline_seconds=600, max_cost_usd=1.0)
    first, second = (r.body for r in gateway.requests_to("POST", "/batches"))
    assert (first["deadline"], first["lanes"]) == ("2026-12-05T01:00:00+00:00", ["batch", "sync"])
    assert (second["deadline_seconds"], second["max_cost_usd"]) == (600, 1.0)


def _server_view(**changes) -> dict:
    """The view the server answers for a job with a deadline, through the SDK's wire (JSON)."""
    stored = StoredJob(
        id="job_" + "d" * 24, owner="o", provider="anthropic", model="claude-sonnet-4-20250514", created_at=T,
        updated_at=T, request_counts=RequestCounts(total=4, processing=1, succeeded=3), **changes,
    )  # fmt: skip
    chunk = Chunk(
        job_id=stored.id, index=0, request_count=4, lane="batch", usage=Usage(input_tokens=1000, output_tokens=100),
        request_counts=RequestCounts(total=4, processing=1, succeeded=3),
    )  # fmt: skip
    return json.loads(json.dumps(job_view(memory_services(), stored, [chunk])))


def test_status_prints_the_plan_the_server_shows():
    move = LaneMoveEntry(
        at=T + timedelta(hours=1), chunk=0, from_lane="batch", to_lane="sync", provider="anthropic",
        model="claude-sonnet-4-20250514", items=1, reason="deadline",
    )  # fmt: skip
    plan = LanePlan(
        predicted_end=T + timedelta(hours=3), moves=[move], billed_twice=1, billed_twice_usd=0.002,
        billed_twice_ids=["x"], held="the move would cross max_cost_usd",
    )  # fmt: skip
    view = _server_view(deadline=T + timedelta(hours=2), lanes=["batch", "sync"], max_cost_usd=1.0, plan=plan)
    lines = list(_status_lines(Job.model_validate(view)))
    shown = dict(lines)
    assert shown["deadline"] == "2026-12-05T03:00:00+00:00"
    assert shown["lanes"] == "batch, sync" and shown["max cost"] == "$1.0000"
    assert shown["predicted end"] == "2026-12-05T04:00:00+00:00"
    assert shown["items per lane"] == "batch 4"
    assert shown["cost per lane"].startswith("batch $") and shown["cost per provider"].startswith("anthropic $")
    assert shown["billed twice"] == "1 items, $0.0020 (x)"
    assert (
        shown["move"]
        == "2026-12-05T02:00:00+00:00 chunk 0: 1 items batch -> sync (anthropic claude-sonnet-4-20250514; deadline)"
    )
    assert shown["held"] == "the move would cross max_cost_usd"


def test_status_of_a_job_without_a_deadline_prints_no_plan_and_its_json_has_no_new_keys(gateway, capsys):
    plain = _server_view()
    assert not {"deadline", "lanes", "max_cost_usd", "plan"} & set(plain)
    assert (
        not {"deadline", "lanes", "plan", "predicted end", "move"}
        & dict(_status_lines(Job.model_validate(plain))).keys()
    )
    gateway.script("GET", f"/batches/{plain['id']}", plain)
    assert main(["status", plain["id"], "--json"]) == 0
    assert set(json.loads(capsys.readouterr().out)) == set(Job.model_validate(plain).model_dump()) - {
        "deadline",
        "lanes",
        "max_cost_usd",
        "plan",
    }
    with_lanes = {**_server_view(lanes=["batch", "failover"]), "id": "job_" + "e" * 24}
    gateway.script("GET", f"/batches/{with_lanes['id']}", with_lanes)
    assert main(["status", with_lanes["id"], "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert (shown["lanes"], shown["deadline"], shown["plan"]["items_per_lane"]) == (
        ["batch", "failover"],
        None,
        {"batch": 4},
    )
