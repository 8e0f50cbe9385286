"""Simulator hold faults keep a create on the wire until released; drop_before_accept accepts nothing."""

import anthropic
import pytest

from tests.support.concurrency import Threads
from tests.support.waiting import wait_for

REQUEST = [
    {
        "custom_id": "a",
        "params": {
            "model": "claude-sonnet-4-20250514",
            "max_tokens": 8,
            "messages": [{"role": "user", "content": "hi"}],
        },
    }
]


def _client(sim):
    return anthropic.Anthropic(api_key="k", base_url=sim.url, max_retries=0, timeout=10)


@pytest.mark.parametrize(("kind", "created_while_held"), [("hold_before_accept", 0), ("hold_after_accept", 1)])
def test_a_held_create_answers_only_after_release(sim, kind, created_while_held):
    sim.add_fault("anthropic", "create_batch", kind)
    create = Threads()
    create.start("create", lambda: _client(sim).messages.batches.create(requests=REQUEST))
    wait_for(lambda: sim.stats()["held"] == 1, timeout=10, what="the create to be held")
    assert sim.stats()["anthropic"]["batches_created"] == created_while_held and not create.answers
    assert sim.release_held() == 1
    assert create.join(timeout=10)["create"].id == sim.stats()["anthropic"]["batches"][0]


def test_drop_before_accept_loses_the_answer_and_creates_nothing(sim):
    sim.add_fault("anthropic", "create_batch", "drop_before_accept")
    with pytest.raises(anthropic.APIConnectionError):
        _client(sim).messages.batches.create(requests=REQUEST)
    assert sim.stats()["anthropic"]["batches_created"] == 0


def test_a_reset_refuses_the_calls_it_finds_held_before_accept(sim):
    """A reset starts a test afresh: a create an earlier test left held before accept must not land after it (it
    would be counted as this test's batch, a stray no chunk records). The held caller sees a lost connection, as
    after drop_before_accept, and nothing is created."""
    sim.add_fault("anthropic", "create_batch", "hold_before_accept")
    create = Threads()
    create.start("create", lambda: _client(sim).messages.batches.create(requests=REQUEST))
    wait_for(lambda: sim.stats()["held"] == 1, timeout=10, what="the create to be held")
    sim.reset()
    with pytest.raises(anthropic.APIConnectionError):
        create.join(timeout=10)
    assert sim.stats()["anthropic"]["batches_created"] == 0 and sim.stats()["held"] == 0
