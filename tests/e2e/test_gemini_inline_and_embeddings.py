"""Gemini embeddings end to end on the local stack (decision 0130): a native embeddings job and the official openai
SDK's embeddings batch through the OpenAI door, both run as Gemini embeddings batches (inline: no file uploaded),
answering vectors; an embeddings request with a chat model, and a chat request with an embedding model, refused
both ways in with nothing stored. (Inline chat jobs and the file path: ``test_gemini.py``.)"""

from __future__ import annotations

import json

import openai
import pytest
from openai.types import CreateEmbeddingResponse

from tests.support.door_clients import OPENAI_ENDED as ENDED
from tests.support.door_clients import native_job_ids as _job_ids
from tests.support.door_clients import openai_door_client as door_client
from tests.support.waiting import wait_for

pytestmark = pytest.mark.usefixtures("settled")

EMBED = "gemini-embedding-001"


def _batch_of(sim, provider_batch_id: str) -> dict:
    [batch] = [b for b in sim.created_batches()["google"] if b["id"] == provider_batch_id.split("/")[-1]]
    return batch


def test_a_native_gemini_embeddings_job_answers_vectors_by_caller_id(alice, sim):
    texts = {"doc one": "whales are mammals " * 20, "ünïcode/id": "a second text"}
    job = alice.create(
        {
            "provider": "google",
            "model": EMBED,
            "endpoint": "embeddings",
            "requests": texts,
            "provider_options": {"outputDimensionality": 32, "taskType": "RETRIEVAL_DOCUMENT"},
        }
    )
    done = alice.wait(job["id"])
    assert done["status"] == "finished", done.get("error")
    [chunk] = done["chunks"]
    batch = _batch_of(sim, chunk["provider_batch_id"])
    assert batch["embeddings"] and batch["inline"] and sim.stats()["google"]["files_uploaded"] == 0
    results = alice.all_results(job["id"])
    assert set(results) == set(texts)
    for rid, text in texts.items():
        [output] = results[rid]["outputs"]
        assert output["type"] == "embedding" and len(output["embedding"]) == 32
        assert results[rid]["token_usage"]["input_tokens"] == len(text) // 4
    assert done["cost"]["total"] > 0


def test_the_openai_sdk_runs_a_gemini_embeddings_batch_through_the_door(stack, alice, sim):
    client = door_client(stack, alice)
    lines = b"".join(
        json.dumps({"custom_id": f"e-{i}", "method": "POST", "url": "/v1/embeddings",
                    "body": {"model": EMBED, "input": text, "dimensions": 12}}).encode() + b"\n"
        for i, text in enumerate(["first text", "second text"])
    )  # fmt: skip
    file = client.files.create(file=("input.jsonl", lines), purpose="batch")
    batch = client.batches.create(input_file_id=file.id, endpoint="/v1/embeddings", completion_window="24h")
    done = wait_for(
        lambda: (found := client.batches.retrieve(batch.id)).status in ENDED and found, 90, f"batch {batch.id}"
    )
    assert done.status == "completed" and done.request_counts.completed == 2, done
    out = [json.loads(x) for x in client.files.content(done.output_file_id).text.splitlines() if x]
    answers = {line["custom_id"]: CreateEmbeddingResponse.model_validate(line["response"]["body"]) for line in out}
    assert set(answers) == {"e-0", "e-1"}
    assert all(len(a.data[0].embedding) == 12 and a.model == EMBED for a in answers.values())
    assert answers["e-0"].data[0].embedding != answers["e-1"].data[0].embedding
    native = alice.request("GET", f"/batches/{done.id}").json()
    assert native["provider"] == "google" and native["endpoint"] == "embeddings"
    assert _batch_of(sim, native["chunks"][0]["provider_batch_id"])["embeddings"]


@pytest.mark.parametrize(
    ("model", "endpoint", "url"),
    [("gemini-2.5-flash", "embeddings", "/v1/embeddings"), (EMBED, None, "/v1/chat/completions")],
)
def test_a_model_on_the_wrong_gemini_endpoint_is_refused_both_ways_in_and_nothing_is_stored(
    stack, alice, model, endpoint, url
):
    before = _job_ids(alice)
    body = {"provider": "google", "model": model, "requests": {"a": "text"}}
    native = alice.request("POST", "/batches", {**body, **({"endpoint": endpoint} if endpoint else {})})
    assert native.status_code == 400
    assert f"model '{model}' is not served on endpoint '{endpoint or 'chat'}'" in native.json()["error"]["message"]

    client = door_client(stack, alice)
    field = {"input": "text"} if url == "/v1/embeddings" else {"messages": [{"role": "user", "content": "text"}]}
    line = {"custom_id": "a", "method": "POST", "url": url, "body": {"model": model, **field}}
    file = client.files.create(file=("input.jsonl", json.dumps(line).encode()), purpose="batch")
    with pytest.raises(openai.BadRequestError) as refused:
        client.batches.create(input_file_id=file.id, endpoint=url, completion_window="24h")  # type: ignore[arg-type]
    assert refused.value.param == "line 1: body.model" and f"is not served on {url}" in refused.value.message
    assert _job_ids(alice) == before
