"""The infra cost bench (bench/infra_cost.py) on a 10-request job, so its code cannot rot: the real steps run in a
fresh process against moto and the simulator with every AWS call counted, and the job is priced with the
transitions of the synthesized definition."""

from __future__ import annotations

import json

from bench import infra_cost
from bench.common import run_worker
from bench.lag_bench import transitions_model


def test_a_ten_request_job_is_counted_step_by_step_and_priced(synthesized):
    counted = run_worker("bench.infra_cost", ["count", "--n", "10"], timeout=300)
    assert counted["status"] == "finished"
    assert counted["calls"]["create"]["stepfunctions:StartExecution"] == 1
    assert counted["calls"]["submit"]["dynamodb:TransactWriteItems"] >= 1
    prices = json.loads(infra_cost.PRICES.read_text())
    job = infra_cost.price_job(counted, transitions_model(synthesized.json), polls=10, prices=prices)
    assert job["transitions"] == 9 + 3 * 10  # fixed (with Finalized? and Planned?, 0117, 0118) + three per poll cycle
    assert all(v > 0 for k, v in job["usd"].items() if k not in ("sqs", "s3_storage"))
    assert 0 < job["total_usd"] < 0.05  # a small job costs cents of AWS at most


def test_every_price_names_its_page_and_the_saving_is_half_the_synchronous_cost():
    prices = json.loads(infra_cost.PRICES.read_text())
    assert prices["as_of"] and all(p["url"].startswith("https://") for p in prices["prices"].values())
    gain = infra_cost.saving(100_000, prices)
    assert gain["synchronous_usd"] == 450.0 and gain["saving_usd"] == 225.0
