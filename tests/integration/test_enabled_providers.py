"""A job for a provider the deployment does not run is refused at create by every way in (decision 0102): the native
``POST /batches`` and its dry run, both compatible doors and the drop folder answer 400 naming the enabled providers,
and nothing is stored or started.

Each handler runs with the provider variables its own function gets in a template synthesized with
``-c providers=anthropic,openai`` (the local stack enables all four providers, so this is tested here and not end to
end): the functions that create jobs hold no provider key, so the template alone says what is enabled.
"""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest

from batch_gateway import constants, wiring
from batch_gateway.provider_specs import SPECS
from batch_gateway_dev.local.template import Template, synthesized_template
from lambdas import create, ingest
from tests.support.doors import anthropic_send, create_openai_batch, upload_openai_file
from tests.support.events import call, executions, load_event

# What a function may know about providers: which are enabled, the keys it holds, Bedrock's service role.
PROVIDER_VARIABLES = (
    constants.ENV_ENABLED_PROVIDERS,
    *(spec.secret_env for spec in SPECS if spec.secret_env),
    constants.ENV_BEDROCK_ROLE_ARN,
)
HANDLERS = {
    "Create": constants.API_HANDLERS["Create"],
    "OpenAICompat": constants.API_HANDLERS["OpenAICompat"],
    "AnthropicCompat": constants.API_HANDLERS["AnthropicCompat"],
    "Ingest": constants.INGEST_HANDLER,
}
ENABLED = "anthropic, openai"
GEMINI = "gemini-2.5-flash"
BEDROCK_CLAUDE = "anthropic.claude-3-5-haiku-20241022-v1:0"


@pytest.fixture(scope="module")
def deployed_environments() -> dict[str, dict[str, Any]]:
    """Each job-creating function's template environment, deployed with ``-c providers=anthropic,openai``."""
    functions = Template(synthesized_template({"providers": "anthropic,openai"})).functions()
    return {name: next(f.environment for f in functions if f.handler == h) for name, h in HANDLERS.items()}


@pytest.fixture
def as_deployed(aws, deployed_environments, monkeypatch):
    """``as_deployed("Create")``: the handlers now see the provider variables that function's template gives it (a
    secret the template names keeps the emulated account's ARN; one it does not name is gone)."""

    def use(function_id: str) -> None:
        template = deployed_environments[function_id]
        for name in PROVIDER_VARIABLES:
            if name not in template:
                monkeypatch.delenv(name, raising=False)
            elif isinstance(template[name], str):
                monkeypatch.setenv(name, template[name])
        wiring.reset()

    return use


def _nothing_kept(started_before: int) -> None:
    """No job, no job object, no workflow started (an uploaded door file is the caller's own, not the job's)."""
    items = boto3.client("dynamodb").scan(TableName="jobs")["Items"]
    assert [i for i in items if i["sk"]["S"] == "JOB"] == []
    listed = boto3.client("s3").list_object_versions(Bucket="payloads", Prefix="jobs/")
    assert not listed.get("Versions") and not listed.get("DeleteMarkers")
    assert len(executions(wiring.services())) == started_before


def _native(ctx, body: dict[str, Any]) -> tuple[int, Any]:
    event = load_event("api_create.json")
    event["body"] = json.dumps(body)
    return call(create.handler, event, ctx)


@pytest.mark.parametrize("dry_run", [False, True], ids=["create", "dry run"])
@pytest.mark.parametrize(("provider", "model"), [("google", GEMINI), ("bedrock", BEDROCK_CLAUDE)])
def test_the_native_create_refuses_a_provider_the_deployment_does_not_run(as_deployed, ctx, dry_run, provider, model):
    as_deployed("Create")
    started = len(executions(wiring.services()))
    body = {"provider": provider, "model": model, "requests": {"a": "Hi"}, **({"dry_run": True} if dry_run else {})}
    code, answer = _native(ctx, body)
    assert code == 400, answer
    assert answer["error"]["type"] == "invalid_request"
    assert f"'{provider}' is not enabled" in answer["error"]["message"] and ENABLED in answer["error"]["message"]
    assert answer["error"]["details"] == [{"field": "provider", "message": "not enabled"}]
    _nothing_kept(started)


def test_an_enabled_provider_is_still_accepted_with_the_deployed_environment(as_deployed, ctx):
    as_deployed("Create")
    code, answer = _native(ctx, {"provider": "anthropic", "model": "claude-sonnet-4-20250514", "requests": {"a": "Hi"}})
    assert code == 202, answer


def test_the_openai_door_refuses_a_file_for_a_provider_the_deployment_does_not_run(as_deployed, ctx):
    as_deployed("OpenAICompat")
    line = {
        "custom_id": "a",
        "method": "POST",
        "url": "/v1/chat/completions",
        "body": {"model": GEMINI, "messages": [{"role": "user", "content": "Hi"}]},
    }
    code, file, _ = upload_openai_file(ctx, json.dumps(line).encode())
    assert code == 200, file
    started = len(executions(wiring.services()))
    code, answer, _ = create_openai_batch(ctx, file["id"])
    assert code == 400, answer
    error = answer["error"]  # OpenAI's shape, which the openai SDK reads into BadRequestError
    assert error["type"] == "invalid_request_error" and error["param"] == "provider"
    assert "'google' is not enabled" in error["message"] and ENABLED in error["message"]
    _nothing_kept(started)


def test_the_anthropic_door_refuses_a_bedrock_model_when_the_deployment_does_not_run_bedrock(as_deployed, ctx):
    as_deployed("AnthropicCompat")
    started = len(executions(wiring.services()))
    body = {
        "requests": [
            {
                "custom_id": "a",
                "params": {"model": BEDROCK_CLAUDE, "max_tokens": 8, "messages": [{"role": "user", "content": "Hi"}]},
            }
        ]
    }
    code, answer, _ = anthropic_send(ctx, "POST", "/anthropic/v1/messages/batches", body)
    assert code == 400, answer
    assert answer["type"] == "error" and answer["error"]["type"] == "invalid_request_error"
    assert "'bedrock' is not enabled" in answer["error"]["message"] and ENABLED in answer["error"]["message"]
    _nothing_kept(started)


def test_the_drop_folder_rejects_a_file_for_a_provider_the_deployment_does_not_run(as_deployed, ctx):
    as_deployed("Ingest")
    started = len(executions(wiring.services()))
    header = {"batch_gateway": {"provider": "google", "model": GEMINI}}
    body = (json.dumps(header) + "\n" + json.dumps({"id": "a", "request": "Hi"}) + "\n").encode()
    s3 = boto3.client("s3")
    s3.put_object(Bucket="payloads", Key="inbox/gemini.jsonl", Body=body)
    event = load_event("sqs_drop_folder.json")
    message = json.loads(event["Records"][0]["body"])
    message["Records"][0]["s3"]["object"]["key"] = "inbox/gemini.jsonl"
    message["Records"][0]["s3"]["object"].pop("eTag")
    event["Records"][0]["body"] = json.dumps(message)

    assert ingest.handler(event, ctx) == {"batchItemFailures": []}  # refused for good: not retried
    receipt = json.loads(s3.get_object(Bucket="payloads", Key="outbox/gemini.receipt.json")["Body"].read())
    assert receipt["status"] == "rejected" and "job_id" not in receipt
    assert "'google' is not enabled" in receipt["error"] and ENABLED in receipt["error"]
    _nothing_kept(started)
