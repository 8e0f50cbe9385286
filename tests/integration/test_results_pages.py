"""Result and list pages: every page fits Lambda's 6 MB response, and a tampered next_token is a 400, never a 500."""

import base64
import json
import random

import pytest

from batch_gateway.models.ids import new_job_id
from batch_gateway.models.jobs import ItemStatus, Job, JobStatus
from batch_gateway.models.results import result_item
from batch_gateway.service.api import query
from batch_gateway.service.layout import results_key
from lambdas import create, list_jobs, retrieve
from tests.support.events import ALICE, call, load_event

LAMBDA_RESPONSE_LIMIT = 6 * 1024 * 1024  # bytes of the serialized proxy response a synchronous invoke may return


def _finished_job(services, items, **job_fields) -> str:
    job_id = new_job_id()
    services.jobs.put_new_job(Job(id=job_id, owner=ALICE, status=JobStatus.FINISHED, **job_fields))
    data = b"".join(json.dumps(item, separators=(",", ":")).encode() + b"\n" for item in items)
    services.payloads.put_bytes(results_key(job_id), data)
    return job_id


def _page(ctx, job_id, **params):
    event = load_event("api_retrieve.json", job_id)
    event["queryStringParameters"] = {k: str(v) for k, v in params.items()}
    response = retrieve.handler(event, ctx)
    return response, json.loads(response["body"])


def _embedding(caller_id, rng, dims=3072):
    vector = [rng.uniform(-1, 1) for _ in range(dims)]
    return result_item(
        caller_id, ItemStatus.SUCCEEDED, outputs=[{"type": "embedding", "embedding": vector}], input_tokens=8
    )


def test_a_page_of_large_embeddings_stays_under_lambdas_response_limit_and_next_token_carries_on(aws, ctx):
    rng = random.Random(7)
    items = [_embedding(f"doc-{n:03d}", rng) for n in range(150)]  # about 10 MB of results.jsonl
    job_id = _finished_job(aws, items, provider="openai", model="text-embedding-3-large", endpoint="embeddings")
    seen: dict[str, dict] = {}
    token, pages = None, 0
    while True:
        params = {"limit": 1000, **({"next_token": token} if token else {})}
        response, page = _page(ctx, job_id, **params)
        assert response["statusCode"] == 200, page
        assert len(json.dumps(response).encode()) < 5_000_000 < LAMBDA_RESPONSE_LIMIT  # as Lambda serializes it
        assert not set(page["results"]) & set(seen)
        seen.update(page["results"])
        pages += 1
        token = page["next_token"]
        if not token:
            break
    assert pages >= 2
    assert seen == {item["id"]: item for item in items}  # every vector whole, each id exactly once


def test_a_single_result_larger_than_the_page_budget_still_comes_back_alone(aws, ctx, monkeypatch):
    monkeypatch.setattr(query, "PAGE_BYTES", 20_000)
    items = [
        result_item(n, ItemStatus.SUCCEEDED, outputs=[{"type": "text", "text": text}])
        for n, text in (("a", "small"), ("b", "x" * 50_000), ("c", "small too"))
    ]
    job_id = _finished_job(aws, items, provider="anthropic", model="claude-x")
    pages, token = [], None
    while True:
        _, page = _page(ctx, job_id, limit=1000, **({"next_token": token} if token else {}))
        pages.append(sorted(page["results"]))
        if not (token := page["next_token"]):
            break
    assert pages == [["a"], ["b"], ["c"]]


def _token(data) -> str:
    raw = data if isinstance(data, bytes) else json.dumps(data).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


TAMPERED_RESULT_TOKENS = [
    ("offset past the end", _token({"o": 10**9})),
    ("offset exactly at the end", "AT_END"),
    ("offset is a boolean", _token({"o": True})),
    ("offset is a string", _token({"o": "5"})),
    ("offset is a float", _token({"o": 1.5})),
    ("negative offset", _token({"o": -1})),
    ("extra key", _token({"o": 0, "x": 1})),
    ("a list", _token([0])),
    ("a JSON string", _token("o")),
    ("not base64", "!!not-base64!!"),
    ("not JSON", _token(b"\xff\xfe")),
    ("huge offset", _token({"o": 10**40})),
]


@pytest.mark.parametrize(("name", "token"), TAMPERED_RESULT_TOKENS, ids=[t[0] for t in TAMPERED_RESULT_TOKENS])
def test_a_tampered_results_token_is_a_400(aws, ctx, name, token):
    items = [result_item(n, ItemStatus.SUCCEEDED, outputs=[{"type": "text", "text": "hi"}]) for n in "abc"]
    job_id = _finished_job(aws, items, provider="anthropic", model="claude-x")
    if token == "AT_END":
        token = _token({"o": len(aws.payloads.get_bytes(results_key(job_id)))})
    response, body = _page(ctx, job_id, limit=1, next_token=token)
    assert response["statusCode"] == 400, body
    assert body["error"]["type"] == "invalid_request" and "next_token" in body["error"]["message"]


def _real_list_token(ctx) -> dict:
    for _ in range(3):
        assert call(create.handler, load_event("api_create.json"), ctx)[0] == 202
    event = load_event("api_list.json")
    event["queryStringParameters"] = {"limit": "1"}
    _, page = call(list_jobs.handler, event, ctx)
    return json.loads(base64.urlsafe_b64decode(page["next_token"]))


TAMPERED_LIST_TOKENS = [
    ("owner is a string", lambda key: {**key, "owner": key["owner"]["S"]}),
    ("owner is a list", lambda key: {**key, "owner": [key["owner"]]}),
    ("key value of the wrong type", lambda key: {**key, "pk": {"S": 5}}),
    ("key value of an unknown kind", lambda key: {**key, "pk": {"X": "JOB#1"}}),
    ("key value is a number", lambda key: {**key, "created_at": 5}),
    ("extra key", lambda key: {**key, "extra": {"S": "x"}}),
    ("missing key", lambda key: {k: v for k, v in key.items() if k != "pk"}),
    ("a list", lambda key: [key]),
    ("null", lambda key: None),
]


@pytest.mark.parametrize(("name", "tamper"), TAMPERED_LIST_TOKENS, ids=[t[0] for t in TAMPERED_LIST_TOKENS])
def test_a_tampered_list_token_is_a_400(aws, ctx, name, tamper):
    token = base64.urlsafe_b64encode(json.dumps(tamper(_real_list_token(ctx))).encode()).decode()
    event = load_event("api_list.json")
    event["queryStringParameters"] = {"limit": "1", "next_token": token}
    code, body = call(list_jobs.handler, event, ctx)
    assert code == 400, body
    assert body["error"]["type"] == "invalid_request" and "next_token" in body["error"]["message"]


def test_an_untampered_list_token_still_pages_through_every_job(aws, ctx):
    _real_list_token(ctx)
    event = load_event("api_list.json")
    seen, token = [], None
    while True:
        event["queryStringParameters"] = {"limit": "1", **({"next_token": token} if token else {})}
        code, page = call(list_jobs.handler, event, ctx)
        assert code == 200, page
        seen += [b["id"] for b in page["batches"]]
        if not (token := page["next_token"]):
            break
    assert len(seen) == len(set(seen)) == 3
