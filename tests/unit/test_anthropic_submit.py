"""Anthropic Submit streams the chunk's lines into the create body (defect 9 of issue 9: decoding them for the SDK
held the chunk several times over; ``make bench`` measures that). What the provider receives must not change: the
same requests, in order, with the same custom_ids and params, and the SDK's answers still map to our errors with
its retries off."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from batch_gateway.contract import errors
from batch_gateway.providers import anthropic as adapter
from batch_gateway.providers.anthropic import AnthropicBatchProvider
from batch_gateway.providers.base import ChunkRef
from batch_gateway_dev.simulators import anthropic as simulated_api

MODEL = "claude-sonnet-4-20250514"


def _request(i: int, text: str = "") -> dict:
    return {
        "custom_id": f"job1-c0-{i:05d}",
        "params": {
            "model": MODEL,
            "max_tokens": 64 + i % 7,
            "temperature": 0.5,
            "system": "Réponds en français ☕",
            "stop_sequences": ["\n\nHuman:"],
            "messages": [{"role": "user", "content": f'question {i} «{text}» \u2028 "quoted" \\ back'}],
        },
    }


def _ref(count: int) -> ChunkRef:
    return ChunkRef(job_id="job1", index=0, request_count=count, model=MODEL, claimed_at=datetime.now(UTC))


@pytest.fixture
def received(monkeypatch: pytest.MonkeyPatch) -> list[dict]:
    """Create bodies as the simulator decoded them."""
    bodies: list[dict] = []
    real = simulated_api.parse_requests

    def recording(body, *args, **kwargs):
        bodies.append(body)
        return real(body, *args, **kwargs)

    monkeypatch.setattr(simulated_api, "parse_requests", recording)
    return bodies


def test_the_provider_receives_every_request_intact_and_in_order(sim, received):
    requests = [_request(i, "x" * 1500) for i in range(2500)]  # ~4 MiB: the body goes out in several pieces
    lines = [json.dumps(r, ensure_ascii=False, separators=(",", ":")).encode() for r in requests]
    provider = AnthropicBatchProvider(api_key="k", base_url=sim.url)

    batch_id = provider.submit(iter(lines), _ref(len(requests)))

    (body,) = received
    assert body == {"requests": requests}
    assert provider.status(batch_id).counts.total == len(requests)


def test_blank_lines_are_not_requests(sim, received):
    requests = [_request(i) for i in range(3)]
    lines = [
        b"",
        json.dumps(requests[0]).encode(),
        b"  ",
        json.dumps(requests[1]).encode(),
        json.dumps(requests[2]).encode(),
        b"",
    ]
    AnthropicBatchProvider(api_key="k", base_url=sim.url).submit(iter(lines), _ref(3))
    assert received == [{"requests": requests}]


def test_a_body_split_across_pieces_still_decodes(sim, received, monkeypatch):
    monkeypatch.setattr(adapter, "BODY_PIECE_BYTES", 7)  # a piece boundary inside every line
    requests = [_request(i) for i in range(20)]
    AnthropicBatchProvider(api_key="k", base_url=sim.url).submit((json.dumps(r).encode() for r in requests), _ref(20))
    assert received == [{"requests": requests}]


def test_a_rate_limit_is_not_retried_by_the_sdk_and_maps_to_a_transient_error(sim):
    sim.add_fault("anthropic", "create_batch", "http_429")
    provider = AnthropicBatchProvider(api_key="k", base_url=sim.url)
    with pytest.raises(errors.ProviderRateLimitedError):
        provider.submit(iter([json.dumps(_request(1)).encode()]), _ref(1))
    assert sim.stats()["anthropic"]["batches_created"] == 0


def test_a_refused_body_maps_to_a_request_error_with_the_providers_error_type_not_its_message(sim):
    bad = {"custom_id": "has space", "params": {"model": MODEL, "max_tokens": 5, "messages": []}}
    with pytest.raises(errors.ProviderRequestError) as refused:
        AnthropicBatchProvider(api_key="k", base_url=sim.url).submit(iter([json.dumps(bad).encode()]), _ref(1))
    assert refused.value.message == "Anthropic refused the request (400 invalid_request_error)"  # decision 0112


def test_an_answer_lost_after_sending_is_ambiguous(sim):
    sim.add_fault("anthropic", "create_batch", "drop_after_accept")
    with pytest.raises(errors.ProviderAmbiguousError):
        AnthropicBatchProvider(api_key="k", base_url=sim.url).submit(iter([json.dumps(_request(1)).encode()]), _ref(1))
    assert sim.stats()["anthropic"]["batches_created"] == 1  # accepted once, never re-sent
