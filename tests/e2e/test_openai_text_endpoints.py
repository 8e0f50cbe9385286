"""OpenAI's completions and moderations batch endpoints end to end on the local stack (decision 0125): the official
openai SDK, unmodified, creates and reads a batch of each through the OpenAI door with a gateway key, the native API
runs both with an OpenAI model, and the image and video endpoints are refused by name both ways in, nothing stored."""

from __future__ import annotations

import json

import openai
import pytest
from openai.types import Completion, ModerationCreateResponse

from tests.support.door_clients import OPENAI_ENDED as ENDED
from tests.support.door_clients import native_job_ids as _job_ids
from tests.support.door_clients import openai_door_client as door_client
from tests.support.waiting import wait_for

pytestmark = pytest.mark.usefixtures("settled")  # no workflow left running into another test


def _file(url: str, model: str, texts: list[str], **body) -> bytes:
    field = "prompt" if url == "/v1/completions" else "input"
    return b"".join(
        json.dumps(
            {"custom_id": f"t-{i}", "method": "POST", "url": url, "body": {"model": model, field: text, **body}}
        ).encode()
        + b"\n"
        for i, text in enumerate(texts)
    )


def _run(client: openai.OpenAI, url: str, data: bytes) -> tuple[openai.types.Batch, list[dict]]:
    file = client.files.create(file=("input.jsonl", data), purpose="batch")
    batch = client.batches.create(input_file_id=file.id, endpoint=url, completion_window="24h")  # type: ignore[arg-type]
    assert batch.endpoint == url and batch.status == "validating"
    done = wait_for(
        lambda: (found := client.batches.retrieve(batch.id)).status in ENDED and found, 90, f"batch {batch.id}"
    )
    assert done.status == "completed" and done.error_file_id is None, done
    lines = [json.loads(line) for line in client.files.content(done.output_file_id).text.splitlines() if line]
    return done, sorted(lines, key=lambda line: line["custom_id"])


def test_the_sdk_runs_a_completions_batch_through_the_door(stack, alice):
    client = door_client(stack, alice)
    done, lines = _run(client, "/v1/completions", _file("/v1/completions", "davinci-002", ["Once upon", "Roses are"],
                                                        max_tokens=16))  # fmt: skip
    assert done.request_counts.completed == 2
    completions = [Completion.model_validate(line["response"]["body"]) for line in lines]
    assert [c.choices[0].text for c in completions] == [
        "[simulated davinci-002] Reply to: Once upon",
        "[simulated davinci-002] Reply to: Roses are",
    ]
    assert all(c.object == "text_completion" and c.usage.completion_tokens > 0 for c in completions)
    assert alice.request("GET", f"/batches/{done.id}").json()["cost"]["total"] > 0  # the same job, priced, natively


def test_the_sdk_runs_a_moderations_batch_through_the_door(stack, alice):
    client = door_client(stack, alice)
    texts = ["I will kill the lights", "A calm morning"]
    done, lines = _run(client, "/v1/moderations", _file("/v1/moderations", "omni-moderation-latest", texts))
    answers = [ModerationCreateResponse.model_validate(line["response"]["body"]) for line in lines]
    assert [a.results[0].flagged for a in answers] == [True, False]
    assert answers[0].results[0].categories.violence and answers[0].model == "omni-moderation-latest"
    assert alice.request("GET", f"/batches/{done.id}").json()["cost"]["total"] == 0  # moderation is free


def test_the_native_api_runs_completions_and_moderations_with_an_openai_model(alice):
    jobs = {
        "completions": alice.create({"provider": "openai", "model": "babbage-002", "endpoint": "completions",
                                     "requests": {"a": "Once upon"}, "hyperparameters": {"max_tokens": 8}}),
        "moderations": alice.create({"provider": "openai", "model": "omni-moderation-latest",
                                     "endpoint": "moderations", "requests": {"a": "A calm morning"}}),
    }  # fmt: skip
    done = {name: alice.wait(job["id"]) for name, job in jobs.items()}
    assert {name: job["status"] for name, job in done.items()} == dict.fromkeys(jobs, "finished")
    assert alice.all_results(jobs["completions"]["id"])["a"]["text"] == "[simulated babbage-002] Reply to: Once upon"
    [verdict] = alice.all_results(jobs["moderations"]["id"])["a"]["outputs"]
    assert verdict["type"] == "moderation" and verdict["flagged"] is False


@pytest.mark.parametrize("url", ["/v1/images/generations", "/v1/images/edits", "/v1/videos"])
def test_image_and_video_batches_are_refused_naming_the_endpoint_both_ways_in(stack, alice, url):
    client = door_client(stack, alice)
    jobs_before = _job_ids(alice)
    file = client.files.create(file=("input.jsonl", _file("/v1/chat/completions", "gpt-4o-mini", ["hi"])),
                               purpose="batch")  # fmt: skip
    with pytest.raises(openai.BadRequestError) as refused:
        client.batches.create(input_file_id=file.id, endpoint=url, completion_window="24h")  # type: ignore[arg-type]
    assert refused.value.param == "endpoint" and f"{url} is not supported" in refused.value.message

    body = {"provider": "openai", "model": "gpt-image-1", "endpoint": url, "requests": {"a": "a cat"}}
    native = alice.request("POST", "/batches", body)
    assert native.status_code == 400 and f"endpoint '{url}' is not supported" in native.json()["error"]["message"]
    assert _job_ids(alice) == jobs_before  # nothing stored or started either way
