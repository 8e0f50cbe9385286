"""What a Bedrock job costs, as the job view shows it: batch jobs at half the on-demand price, small jobs run on demand
(decision 0039) at the full on-demand price, a job with both at both. The handlers run against ``bedrock_account``.
"""

from __future__ import annotations

import json

import pytest

from batch_gateway import constants, wiring
from lambdas import create, status
from tests.support.bedrock_account import CLAUDE
from tests.support.events import call, load_event
from tests.support.workflow_driver import run_workflow

NOVA = "us.amazon.nova-lite-v1:0"
# Bedrock's on-demand prices in us-east-1 ($ per million tokens, input and output), as its pricing page lists them
PRICE = {CLAUDE: (0.80, 4.00), NOVA: (0.06, 0.24)}


def _job(ctx, model: str, count: int) -> dict:
    event = load_event("api_create.json")
    body = json.loads(event["body"])
    body.update(provider="bedrock", model=model, requests={f"q{i}": f"question number {i}" for i in range(count)})
    event["body"] = json.dumps(body)
    code, job = call(create.handler, event, ctx)
    assert code == 202, job
    assert run_workflow(job["id"], ctx)["status"] == "finished"
    code, view = call(status.handler, load_event("api_status.json", job["id"]), ctx)
    assert code == 200, view
    return view


def _price(model: str, usage: dict, share: float) -> float:
    input_price, output_price = PRICE[model]
    return (usage["input_tokens"] * input_price + usage["output_tokens"] * output_price) / 1_000_000 * share


@pytest.mark.parametrize("model", [CLAUDE, NOVA])
def test_a_bedrock_batch_job_costs_half_the_on_demand_price(bedrock_aws, ctx, model):
    view = _job(ctx, model, 5)
    assert [c["status"] for c in view["chunks"]] == ["Completed"]
    assert view["usage"]["input_tokens"] > 0 and view["usage"]["output_tokens"] > 0
    assert view["cost_usd"] == pytest.approx(_price(model, view["usage"], 0.5), abs=1e-6)  # estimates are in µ$


def test_a_small_bedrock_job_run_on_demand_costs_the_full_on_demand_price(bedrock_aws, ctx, monkeypatch, simulator):
    monkeypatch.setenv(constants.ENV_BEDROCK_MIN_RECORDS, "100")
    wiring.reset()
    view = _job(ctx, CLAUDE, 5)
    assert [c["status"] for c in view["chunks"]] == ["on_demand"]
    assert simulator.stats()["bedrock"]["converse_calls"] == 5
    assert view["cost_usd"] == pytest.approx(_price(CLAUDE, view["usage"], 1.0), abs=1e-6)
