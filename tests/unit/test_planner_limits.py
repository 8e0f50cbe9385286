"""The planner's chunk limits at and around each boundary: the operator's request and byte limits, the providers'
real request limits (OpenAI 50,000, Anthropic 100,000 per batch), order and completeness of the chunks, and caller
ids that had to be replaced on the way to the provider and back.

Runs ``plan_job`` on the in-memory stores (``batch_gateway_dev.fakes.memory``, held to DynamoDB's and S3's semantics by
``tests/integration/test_store_contract.py``): no AWS emulation, so the 100,000-request cases stay fast. The adapters
are the real ones, calling the provider simulator.
"""

from __future__ import annotations

import json
import time

import pytest

from batch_gateway.models.ids import CUSTOM_ID_RE
from batch_gateway.models.jobs import JobStatus
from batch_gateway.providers import make_provider
from batch_gateway.service.context import Services
from batch_gateway.service.layout import chunk_idmap_key, chunk_ids_key, chunk_input_key, results_key
from batch_gateway.service.planning.chunks import ENVELOPE_BYTES
from batch_gateway.service.workflow.finalize import finalize_job
from batch_gateway.service.workflow.plan import plan_job
from batch_gateway.service.workflow.poll import poll_job
from batch_gateway.service.workflow.state import FinalizeState, WorkflowState
from batch_gateway.service.workflow.submit import submit_job
from batch_gateway.settings import Settings
from tests.support.planned_jobs import MODELS, neutral_line, plan
from tests.support.services import memory_services


@pytest.fixture
def svc(simulator) -> Services:
    """The workflow's services on fresh in-memory stores, with the real adapters pointed at the simulator."""
    simulator.reset()
    simulator.configure(processing_seconds=0.2)
    urls = {"anthropic": simulator.url, "openai": simulator.openai_base_url}

    def provider(name: str):
        return make_provider(name, api_key="sim-key", base_url=urls[name], deployment_id="plan-test")

    return memory_services(  # no workflow: the planner tests run the steps themselves
        settings=Settings(table="jobs", bucket="payloads", poll_schedule=[0]),
        provider_for=provider,
        emit_event=lambda detail_type, detail: None,
    )


def chunk_sizes(services, job_id: str) -> list[int]:
    chunks = services.jobs.get_chunks(job_id)
    assert [c.index for c in chunks] == list(range(len(chunks)))
    assert services.jobs.require_job(job_id).chunk_count == len(chunks)
    return [c.request_count for c in chunks]


def chunk_ids(services, job_id: str) -> list[list[str]]:
    """Each chunk's custom_ids without its marker (Anthropic chunks prefix every custom_id with one)."""
    from batch_gateway.models.ids import unmarked

    return [
        [
            unmarked(line.decode(), c.id_marker)
            for line in services.payloads.iter_lines(chunk_ids_key(job_id, c.index))
            if line
        ]
        for c in services.jobs.get_chunks(job_id)
    ]


def chunk_lines(services, job_id: str, index: int) -> list[bytes]:
    return [line for line in services.payloads.iter_lines(chunk_input_key(job_id, index)) if line]


def provider_line_bytes(services, provider: str = "openai", caller_id: str = "r0", text: str | None = None) -> int:
    """Bytes one request takes in a chunk file (its provider line plus the newline)."""
    adapter = services.provider_for(provider)
    request = json.loads(neutral_line(caller_id, text))
    line = adapter.to_provider(caller_id, request, model=MODELS[provider], endpoint=None, provider_options={})
    return len(json.dumps(line, ensure_ascii=False, separators=(",", ":")).encode()) + 1


# ---- the operator's request limit


@pytest.mark.parametrize(
    ("requests", "expected"),
    [(1, [1]), (2, [2]), (3, [3]), (4, [3, 1]), (6, [3, 3]), (7, [3, 3, 1])],
)
def test_operator_request_limit_fills_each_chunk_up_to_the_limit_and_no_further(svc, requests, expected):
    svc.settings.max_chunk_requests = 3
    job_id = plan(svc, [f"r{i}" for i in range(requests)])
    assert chunk_sizes(svc, job_id) == expected


def test_every_request_lands_in_exactly_one_chunk_in_input_order(svc):
    svc.settings.max_chunk_requests = 4
    ids = [f"r{i}" for i in range(11)]
    job_id = plan(svc, ids)
    per_chunk = chunk_ids(svc, job_id)
    assert [len(c) for c in per_chunk] == [4, 4, 3]
    assert [cid for chunk in per_chunk for cid in chunk] == ids
    for index, expected in enumerate(per_chunk):  # the provider lines say the same, in the same order
        assert [json.loads(line)["custom_id"] for line in chunk_lines(svc, job_id, index)] == expected


def test_a_retried_plan_keeps_the_chunks_it_made(svc):
    svc.settings.max_chunk_requests = 2
    job_id = plan(svc, ["a", "b", "c"])
    svc.settings.max_chunk_requests = 1
    plan_job(svc, WorkflowState(job_id=job_id))
    assert chunk_sizes(svc, job_id) == [2, 1]


# ---- the operator's byte limit


@pytest.mark.parametrize(
    ("lines_that_fit", "slack", "expected"),
    [(3, 0, [3, 3, 1]), (3, -1, [2, 2, 2, 1]), (3, +1, [3, 3, 1]), (1, 0, [1] * 7)],
    ids=["exactly-three-lines", "one-byte-short-of-three", "one-byte-over-three", "one-line"],
)
def test_byte_limit_closes_a_chunk_when_the_next_line_would_cross_it(svc, lines_that_fit, slack, expected):
    size = provider_line_bytes(svc)  # every line is the same size: ids r0..r6, each asking its own id
    svc.settings.max_chunk_bytes = ENVELOPE_BYTES + lines_that_fit * size + slack
    job_id = plan(svc, [f"r{i}" for i in range(7)])
    assert chunk_sizes(svc, job_id) == expected
    assert all(c.byte_size <= lines_that_fit * size + slack for c in svc.jobs.get_chunks(job_id))


def test_byte_limit_with_uneven_lines_packs_greedily_and_never_exceeds_the_limit(svc):
    texts = [chr(97 + i) * n for i, n in enumerate((10, 300, 20, 20, 500, 5, 5, 5, 250, 1))]  # all different
    limit = 700
    svc.settings.max_chunk_bytes = ENVELOPE_BYTES + limit
    ids = [f"r{i}" for i in range(len(texts))]
    job_id = plan(svc, ids, texts=texts)
    chunks = svc.jobs.get_chunks(job_id)
    per_chunk = chunk_ids(svc, job_id)
    assert [cid for chunk in per_chunk for cid in chunk] == ids
    sizes = {cid: provider_line_bytes(svc, caller_id=cid, text=text) for cid, text in zip(ids, texts, strict=True)}
    for chunk, members in zip(chunks, per_chunk, strict=True):
        assert chunk.byte_size == sum(sizes[cid] for cid in members) <= limit
        assert sum(len(line) + 1 for line in chunk_lines(svc, job_id, chunk.index)) == chunk.byte_size
    for members, following in zip(per_chunk, per_chunk[1:], strict=False):
        assert sum(sizes[cid] for cid in members) + sizes[following[0]] > limit  # closed only when it had to


def test_a_request_larger_than_the_byte_limit_travels_alone(svc):
    svc.settings.max_chunk_bytes = ENVELOPE_BYTES + 400
    job_id = plan(svc, ["a", "big", "b"], texts=["x", "y" * 1000, "z"])
    assert chunk_ids(svc, job_id) == [["a"], ["big"], ["b"]]


def test_request_and_byte_limits_together_whichever_is_reached_first_closes_the_chunk(svc):
    size = provider_line_bytes(svc)
    svc.settings.max_chunk_requests = 2
    svc.settings.max_chunk_bytes = ENVELOPE_BYTES + 3 * size
    assert chunk_sizes(svc, plan(svc, [f"r{i}" for i in range(5)])) == [2, 2, 1]
    svc.settings.max_chunk_requests = 5
    assert chunk_sizes(svc, plan(svc, [f"r{i}" for i in range(5)])) == [3, 2]


# ---- the providers' real request limits


@pytest.mark.parametrize(
    ("provider", "requests", "expected"),
    [
        ("openai", 50_000, [50_000]),
        ("openai", 50_001, [50_000, 1]),
        ("anthropic", 100_000, [100_000]),
        ("anthropic", 100_001, [100_000, 1]),
    ],
    ids=["openai-50000", "openai-50001", "anthropic-100000", "anthropic-100001"],
)
def test_provider_request_limit_splits_only_past_the_limit(svc, provider, requests, expected):
    svc.settings.max_chunk_requests = 10 * requests  # an operator limit above the provider's does not raise it
    svc.settings.quotas = {"openai": {MODELS["openai"]: {"enqueued_tokens": None}}}  # 50,000 requests: ~2.1M tokens
    ids = [f"r{i}" for i in range(requests)]
    job_id = plan(svc, ids, provider)
    assert chunk_sizes(svc, job_id) == expected
    per_chunk = chunk_ids(svc, job_id)
    assert per_chunk[-1][-1] == ids[-1] and [cid for chunk in per_chunk for cid in chunk] == ids


# ---- caller ids that are not provider-safe


ODD_IDS = ["plain", "has space", "ünïcode", "bgw-7", "x" * 65, "slash/and.dot", "bgw-3", "ok_id-2"]


def test_ids_that_need_mapping_get_unique_provider_safe_custom_ids_kept_in_the_chunks_id_map(svc):
    svc.settings.max_chunk_requests = 3
    job_id = plan(svc, ODD_IDS)
    per_chunk = chunk_ids(svc, job_id)
    custom_ids = [cid for chunk in per_chunk for cid in chunk]
    assert all(CUSTOM_ID_RE.fullmatch(cid) for cid in custom_ids) and len(set(custom_ids)) == len(ODD_IDS)
    assert custom_ids[0] == "plain" and custom_ids[-1] == "ok_id-2"  # safe ids travel as they are
    back: dict[str, str] = {}
    for index, members in enumerate(per_chunk):
        key = chunk_idmap_key(job_id, index)
        idmap = json.loads(svc.payloads.get_bytes(key)) if svc.payloads.exists(key) else {}
        assert set(idmap) <= set(members)  # a chunk's map holds only its own ids
        back.update({cid: idmap.get(cid, cid) for cid in members})
    assert [back[cid] for cid in custom_ids] == ODD_IDS


def test_ids_that_needed_mapping_come_back_as_the_callers_ids_in_the_results(svc, simulator):
    svc.settings.max_chunk_requests = 3
    job_id = plan(svc, ODD_IDS)
    submit_job(svc, WorkflowState(job_id=job_id))
    state = WorkflowState(job_id=job_id)
    deadline = time.monotonic() + 30
    while not (state := poll_job(svc, state)).done:
        assert time.monotonic() < deadline, "the job's chunks did not all end"
        time.sleep(0.05)
    assert finalize_job(svc, FinalizeState(job_id=job_id))["status"] == JobStatus.FINISHED.value
    results = [json.loads(line) for line in svc.payloads.iter_lines(results_key(job_id)) if line]
    assert [r["id"] for r in results] == ODD_IDS
    assert all(r["status"] == "succeeded" and r["text"] for r in results)
    assert len(simulator.stats()["openai"]["batches"]) == 3
