"""Deadlines, lanes and failover through the local stack (issue 28, decision 0140).

- A job with a short deadline finishes on time while its provider's batches stall, for each provider in turn (all
  four at once, on the same stack: their jobs wait for their latest safe move time together).
- A provider that goes down (the simulator's lasting ``outage``) moves a job's items to the equivalent model of
  another provider: Anthropic to Bedrock's Claude, and back.
- A job without a deadline or lanes is unchanged: no plan, no new keys, no lane call.

The stack's ``lanes`` context (tests/e2e/conftest.py) makes a lane call's expected time 0.5 s and a cancel's 8 s,
so a 75-second deadline moves a stalled batch at 57-62 s and leaves about 13 s for the cancel, the lane and the end.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime

import pytest

pytestmark = pytest.mark.e2e

DEADLINE_SECONDS = 75
MODELS = {
    "anthropic": "claude-sonnet-4-20250514",
    "openai": "gpt-4o-mini",
    "google": "gemini-2.5-flash",
    "bedrock": "anthropic.claude-3-5-haiku-20241022-v1:0",
}
SIZES = {"bedrock": 100}  # Bedrock's minimum records per job: a smaller job runs on demand, not as a batch


def _requests(provider: str, tag: str) -> dict[str, str]:
    return {f"{tag}-{i}": f"Name an animal, number {i}." for i in range(SIZES.get(provider, 6))}


def _when(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _wait_sent(caller, job_id: str, timeout: float = 60) -> None:
    give_up = time.monotonic() + timeout
    while caller.request("GET", f"/batches/{job_id}").json()["status"] != "in_progress":
        assert time.monotonic() < give_up, f"{job_id} was never sent"
        time.sleep(0.2)


def _one_stalled_job(caller, sim, provider: str) -> tuple[dict, dict]:
    model = MODELS[provider]
    sim.add_lasting_fault(provider, "stall", model)
    try:
        job = caller.create(
            {
                "provider": provider,
                "model": model,
                "requests": _requests(provider, provider),
                "deadline_seconds": DEADLINE_SECONDS,
            }
        )
        ended = caller.wait(job["id"], timeout=DEADLINE_SECONDS + 60)
        return ended, caller.all_results(job["id"])
    finally:
        sim.lift_fault(provider, "stall", model)


def test_a_short_deadline_finishes_on_time_while_each_provider_stalls(alice, sim, settled):
    with ThreadPoolExecutor(max_workers=len(MODELS)) as pool:
        done = dict(zip(MODELS, pool.map(lambda p: _one_stalled_job(alice, sim, p), MODELS), strict=True))
    for provider, (job, results) in done.items():
        assert job["status"] == "finished", (provider, job.get("error"))
        assert _when(job["ended_at"]) <= _when(job["plan"]["deadline"]), (provider, job["ended_at"])
        assert len(results) == len(_requests(provider, provider))
        assert {r["status"] for r in results.values()} == {"succeeded"}, provider
        lanes = {r["lane"] for r in results.values()}
        assert lanes <= {"flex", "sync"} and lanes, (provider, lanes)  # nothing came back from the stalled batch
        assert {r["provider"] for r in results.values()} == {provider}
        plan = job["plan"]
        assert [(m["from_lane"], m["reason"]) for m in plan["moves"]] == [("batch", "deadline")], provider
        assert sum(plan["items_per_lane"].values()) == len(results) + plan["items_per_lane"].get("batch", 0)
        assert sum(plan["cost_per_lane"].values()) == pytest.approx(job["cost"]["total"])
    assert done["openai"][1] and {r["lane"] for r in done["openai"][1].values()} == {"flex"}  # flex before sync
    calls = sim.sync_calls()
    assert calls["openai"]["count"] >= len(_requests("openai", "openai"))


@pytest.mark.parametrize(
    ("provider", "other", "other_model"),
    [
        ("anthropic", "bedrock", "anthropic.claude-sonnet-4-20250514-v1:0"),
        ("bedrock", "anthropic", "claude-sonnet-4-20250514"),
    ],
)
def test_an_outage_moves_the_items_to_the_same_claude_on_the_other_provider(
    alice, sim, settled, provider, other, other_model
):
    model = "claude-sonnet-4-20250514" if provider == "anthropic" else "anthropic.claude-sonnet-4-20250514-v1:0"
    job = alice.create(
        {"provider": provider, "model": model, "requests": _requests(provider, "f"), "lanes": ["batch", "failover"]}
    )
    _wait_sent(alice, job["id"])
    sim.add_lasting_fault(provider, "outage")
    try:
        ended = alice.wait(job["id"], timeout=120)
    finally:
        sim.lift_fault(provider, "outage")
    assert ended["status"] == "finished", ended
    results = alice.all_results(job["id"])
    assert len(results) == len(_requests(provider, "f"))
    assert {(r["status"], r["provider"], r["model"]) for r in results.values()} == {("succeeded", other, other_model)}
    plan = ended["plan"]
    assert [(m["reason"], m["provider"]) for m in plan["moves"]] == [("outage", other)]
    assert sum(plan["cost_per_provider"].values()) == pytest.approx(ended["cost"]["total"], abs=1e-9)
    assert plan["cost_per_provider"][other] > 0


def test_a_job_without_a_deadline_runs_as_before(alice, sim):
    job = alice.create({"provider": "anthropic", "model": MODELS["anthropic"], "requests": _requests("anthropic", "p")})
    ended = alice.wait(job["id"])
    assert ended["status"] == "finished"
    assert not {"deadline", "lanes", "max_cost_usd", "plan"} & set(ended)
    results = alice.all_results(job["id"])
    assert all(not {"lane", "provider", "model"} & set(r) for r in results.values())
    assert sim.sync_calls().get("anthropic", {}).get("count", 0) == 0  # no lane was used
