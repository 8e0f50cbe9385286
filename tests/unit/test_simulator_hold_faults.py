"""Simulator hold faults keep a create on the wire until released; drop_before_accept accepts nothing."""

import threading
import time

import anthropic
import pytest

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


def _wait(condition, timeout=10.0):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


@pytest.mark.parametrize(("kind", "created_while_held"), [("hold_before_accept", 0), ("hold_after_accept", 1)])
def test_a_held_create_answers_only_after_release(sim, kind, created_while_held):
    sim.add_fault("anthropic", "create_batch", kind)
    answer = {}
    thread = threading.Thread(
        target=lambda: answer.update(batch=_client(sim).messages.batches.create(requests=REQUEST))
    )
    thread.start()
    _wait(lambda: sim.stats()["held"] == 1)
    assert sim.stats()["anthropic"]["batches_created"] == created_while_held and not answer
    assert sim.release_held() == 1
    thread.join(10)
    assert answer["batch"].id == sim.stats()["anthropic"]["batches"][0]


def test_drop_before_accept_loses_the_answer_and_creates_nothing(sim):
    sim.add_fault("anthropic", "create_batch", "drop_before_accept")
    with pytest.raises(anthropic.APIConnectionError):
        _client(sim).messages.batches.create(requests=REQUEST)
    assert sim.stats()["anthropic"]["batches_created"] == 0
