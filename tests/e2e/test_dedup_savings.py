"""In-job dedup and the savings a caller sees, through the local stack (decision 0126): identical requests of a job
are sent once, each id gets its own result item (the copies cost 0), the job view counts ``total`` and ``sent``, and
``cost.savings`` says what dedup, the batch price and the prompt cache saved; the SDK and ``batch-gateway status``
show them."""

from __future__ import annotations

import pytest

from tests.support.api_caller import seed_body

pytestmark = pytest.mark.e2e

SYSTEM = "You answer questions about animals, briefly and accurately. " * 80  # 1,200 tokens: Sonnet caches 1,024 up


@pytest.fixture(autouse=True)
def one_item_per_wave(sim):
    sim.configure(cache_wave_size=1)  # an item reads what the items before it wrote (decision 0123)


def test_a_job_with_repeated_requests_sends_each_once_and_shows_what_dedup_and_the_cache_saved(alice):
    asks = {"bird": "Name a bird.", "bird_again": "Name a bird.", "fish": "Name a fish.", "bird_3": "Name a bird."}
    requests = {cid: {"system": SYSTEM, "messages": [{"role": "user", "content": q}]} for cid, q in asks.items()}
    requests["bird_longer"] = {**requests["bird"], "max_tokens": 1000}  # same prompt, another request: sent
    body = seed_body(requests=requests, provider_options={"cache_control": {"type": "ephemeral"}})

    done = alice.wait(alice.create(body)["id"])

    assert done["status"] == "finished"
    counts = done["request_counts"]
    assert (counts["total"], counts["sent"], counts["succeeded"]) == (5, 3, 5)
    results = alice.all_results(done["id"])
    assert sorted(results) == sorted(requests)
    for copy in ("bird_again", "bird_3"):
        assert results[copy]["text"] == results["bird"]["text"] and results[copy]["status"] == "succeeded"
        assert results[copy]["token_usage"] == results["bird"]["token_usage"]
        assert results[copy]["cost"] == 0
    assert results["bird"]["cost"] > 0
    savings = done["cost"]["savings"]
    assert savings["dedup"] == pytest.approx(2 * results["bird"]["cost"], abs=1e-6)
    assert savings["batch"] == done["cost"]["saving"] > 0
    assert savings["cache"] > 0  # bird_longer read the prompt bird wrote
    assert savings["reuse"] == 0
    assert done["usage"]["cache_read_input_tokens"] > 0  # kept in usage
