"""What makes two requests the same request (decision 0126): ``request_hash`` over the canonical JSON."""

from __future__ import annotations

from batch_gateway.models.jobs import Job, RequestCounts
from batch_gateway.service.planning.canonical import request_hash


def _job(**changes) -> Job:
    fields = {
        "id": "job_0123456789abcdef01234567",
        "owner": "alice",
        "provider": "anthropic",
        "model": "claude-sonnet-4-20250514",
        "request_counts": RequestCounts(total=1, processing=1),
        **changes,
    }
    return Job(**fields)


REQUEST = {"id": "a", "messages": [{"role": "user", "content": "Grüße, 世界"}], "system": "Be brief", "params": {}}


def test_the_callers_id_and_the_order_of_keys_change_nothing():
    reordered = {"params": {}, "system": "Be brief", "messages": [{"content": "Grüße, 世界", "role": "user"}]}
    assert request_hash(_job(), REQUEST) == request_hash(_job(), {**reordered, "id": "another id"})


def test_what_is_sent_and_where_changes_the_hash():
    base = request_hash(_job(), REQUEST)
    assert request_hash(_job(model="claude-opus-4-20250514"), REQUEST) != base
    assert request_hash(_job(hyperparameters={"max_tokens": 10}), REQUEST) != base
    assert request_hash(_job(), {**REQUEST, "system": "Be long"}) != base
    assert request_hash(_job(), {**REQUEST, "messages": [{"role": "user", "content": "Grüße, 世界!"}]}) != base
    assert len(base) == 16


def test_values_orjson_refuses_still_hash_and_stay_distinct():
    lone = {**REQUEST, "system": "bad \ud800 surrogate"}
    huge = {**REQUEST, "params": {"seed": 2**70}}
    assert request_hash(_job(), lone) == request_hash(_job(), dict(reversed(list(lone.items()))))
    assert request_hash(_job(), huge) != request_hash(_job(), {**REQUEST, "params": {"seed": 2**70 + 1}})
    assert len({request_hash(_job(), lone), request_hash(_job(), huge), request_hash(_job(), REQUEST)}) == 3
