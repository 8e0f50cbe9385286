"""Converse-type Bedrock jobs (decision 0132) without a Bedrock: each family's native body as one Converse body, the
routing rule (a chunk with any request Converse cannot carry, tools first of all, stays InvokeModel), the create's
``modelInvocationType`` checked by botocore's own service model (``Stubber``), and a Converse answer read into the
result item a native answer gives.
"""

from __future__ import annotations

from typing import Any

import pytest
from botocore.stub import Stubber

from batch_gateway.contract import errors
from batch_gateway.jsonlines import dumps, loads
from batch_gateway.providers import bedrock as adapter
from batch_gateway.providers import make_provider
from batch_gateway.providers.base import ChunkRef
from batch_gateway.settings import BedrockSettings
from tests.support.bedrock_stubs import BUCKET, CLAUDE, JOB_ARN, NOVA, ROLE
from tests.support.bedrock_stubs import chunk_ref as _ref
from tests.support.bedrock_stubs import stubbed_provider as _provider

TOOL = {"name": "lookup", "description": "Look it up", "input_schema": {"type": "object", "properties": {}}}


def _line(custom_id: str, model: str = CLAUDE, options: dict[str, Any] | None = None, **request: Any) -> bytes:
    base: dict[str, Any] = {
        "messages": [{"role": "user", "content": "Name an animal"}],
        "system": "Be brief",
        "params": {"max_tokens": 64, "temperature": 0.3, "top_k": 5, "stop": ["END"]},
    }
    provider = make_provider("bedrock", api_key="")
    return dumps(
        provider.to_provider(custom_id, {**base, **request}, model=model, endpoint=None, provider_options=options or {})
    )


def _body(line: bytes) -> dict[str, Any]:
    return dict(loads(line)["modelInput"])


# --- one Converse body for every family -------------------------------------------------------------------------


def test_a_claude_body_becomes_a_converse_request_with_every_setting_kept():
    assert adapter.converse_body(CLAUDE, _body(_line("q1"))) == {
        "messages": [{"role": "user", "content": [{"text": "Name an animal"}]}],
        "system": [{"text": "Be brief"}],
        "inferenceConfig": {"maxTokens": 64, "temperature": 0.3, "stopSequences": ["END"]},
        "additionalModelRequestFields": {"top_k": 5},
    }


def test_a_nova_body_becomes_the_same_converse_request_but_for_novas_own_top_k_field():
    assert adapter.converse_body(NOVA, _body(_line("q1", NOVA))) == {
        "messages": [{"role": "user", "content": [{"text": "Name an animal"}]}],
        "system": [{"text": "Be brief"}],
        "inferenceConfig": {"maxTokens": 64, "temperature": 0.3, "stopSequences": ["END"]},
        "additionalModelRequestFields": {"inferenceConfig": {"topK": 5}},
    }


def test_a_claude_conversation_of_text_parts_keeps_its_turns_in_order():
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "Hi"}, {"type": "text", "text": "there"}]},
        {"role": "assistant", "content": "Hello"},
        {"role": "user", "content": "An animal?"},
    ]
    converse = adapter.converse_body(CLAUDE, _body(_line("q1", messages=messages)))
    assert converse is not None
    assert converse["messages"] == [
        {"role": "user", "content": [{"text": "Hi"}, {"text": "there"}]},
        {"role": "assistant", "content": [{"text": "Hello"}]},
        {"role": "user", "content": [{"text": "An animal?"}]},
    ]


# --- the routing rule: what Converse cannot carry stays native --------------------------------------------------


@pytest.mark.parametrize(
    ("why", "line"),
    [
        ("tools", lambda: _line("q1", tools=[TOOL])),
        ("a forced tool", lambda: _line("q1", tools=[TOOL], tool_choice={"type": "tool", "name": "lookup"})),
        ("structured output (a tool)", lambda: _line("q1", response_format={"name": "Pet", "schema": {}})),
        ("provider options", lambda: _line("q1", options={"thinking": {"type": "enabled", "budget_tokens": 1024}})),
        (
            "an image",
            lambda: _line(
                "q1",
                messages=[
                    {"role": "user", "content": [{"type": "image", "source": {"type": "base64", "data": "AA=="}}]}
                ],
            ),
        ),
    ],
)
def test_a_claude_body_converse_cannot_carry_whole_has_no_converse_form(why, line):
    assert adapter.converse_body(CLAUDE, _body(line())) is None, why


def test_a_nova_body_with_a_setting_converse_has_no_field_for_stays_native():
    body = _body(_line("q1", NOVA))
    body["inferenceConfig"]["someNewSetting"] = 1
    assert adapter.converse_body(NOVA, body) is None


# --- the chunk's job type ---------------------------------------------------------------------------------------


def _create_params(ref: ChunkRef, kind: str | None) -> dict[str, Any]:
    params: dict[str, Any] = {
        "jobName": adapter.job_name(ref, "5f0c1b2a-aaaa-bbbb-cccc-0123456789ab"),
        "roleArn": ROLE,
        "clientRequestToken": adapter.request_token(ref),
        "modelId": ref.model,
        "inputDataConfig": {
            "s3InputDataConfig": {
                "s3InputFormat": "JSONL",
                "s3Uri": f"s3://{BUCKET}/{adapter.input_key(ref.job_id, 0)}",
            }
        },
        "outputDataConfig": {"s3OutputDataConfig": {"s3Uri": f"s3://{BUCKET}/{adapter.output_prefix(ref.job_id, 0)}"}},
        "timeoutDurationInHours": 24,
    }
    if kind:
        params["modelInvocationType"] = kind
    return params


def _staged(aws_client: Any, ref: ChunkRef) -> list[dict[str, Any]]:
    body = aws_client.get_object(Bucket=BUCKET, Key=adapter.input_key(ref.job_id, 0))["Body"].read()
    return [loads(line) for line in body.splitlines()]


@pytest.mark.parametrize("model", [CLAUDE, NOVA])
def test_a_plain_text_chunk_is_a_converse_job_of_converse_records(stubbed_s3, model):
    provider, control, _ = _provider()
    ref = _ref(model=model)
    lines = [_line(f"q{i}", model) for i in range(150)]
    control.add_response("create_model_invocation_job", {"jobArn": JOB_ARN}, _create_params(ref, "Converse"))
    with control:  # the Stubber checks modelInvocationType against botocore's enum (InvokeModel | Converse)
        assert provider.submit(lines, ref) == JOB_ARN
    staged = _staged(stubbed_s3, ref)
    assert [record["recordId"] for record in staged] == [f"q{i}" for i in range(150)]
    assert all(record["modelInput"] == adapter.converse_body(model, _body(lines[0])) for record in staged)


def test_one_tool_using_request_keeps_the_whole_chunk_invoke_model_in_native_bodies(stubbed_s3):
    provider, control, _ = _provider()
    ref = _ref()
    lines = [_line(f"q{i}") for i in range(149)] + [_line("q149", tools=[TOOL])]
    control.add_response("create_model_invocation_job", {"jobArn": JOB_ARN}, _create_params(ref, None))
    with control:  # InvokeModel is Bedrock's default: the create leaves modelInvocationType out, as before 0132
        assert provider.submit(lines, ref) == JOB_ARN
    staged = _staged(stubbed_s3, ref)
    assert [record["modelInput"] for record in staged] == [_body(line) for line in lines]
    assert staged[-1]["modelInput"]["tools"][0]["name"] == "lookup"


def test_a_deployment_set_to_invoke_model_sends_plain_chunks_in_native_bodies(stubbed_s3):
    provider, control, _ = _provider(invocation_type="invoke_model")
    ref = _ref()
    lines = [_line(f"q{i}") for i in range(150)]
    control.add_response("create_model_invocation_job", {"jobArn": JOB_ARN}, _create_params(ref, None))
    with control:
        provider.submit(lines, ref)
    assert [record["modelInput"] for record in _staged(stubbed_s3, ref)] == [_body(line) for line in lines]


def test_the_setting_is_read_from_the_environment_and_a_wrong_value_is_refused():
    assert BedrockSettings.from_env({}).invocation_type == "converse"
    assert BedrockSettings.from_env({"BEDROCK_INVOCATION_TYPE": "invoke_model"}).invocation_type == "invoke_model"
    with pytest.raises(ValueError, match="BEDROCK_INVOCATION_TYPE"):
        BedrockSettings.from_env({"BEDROCK_INVOCATION_TYPE": "Converse"})


# --- a Converse answer is the result item a native answer gives -------------------------------------------------


def test_a_converse_answer_reads_as_the_same_result_item_as_claudes_native_answer():
    native = {
        "recordId": "q1",
        "modelOutput": {
            "content": [{"type": "text", "text": "A cat"}],
            "stop_reason": "max_tokens",
            "usage": {
                "input_tokens": 12,
                "output_tokens": 3,
                "cache_read_input_tokens": 4,
                "cache_creation_input_tokens": 2,
            },
        },
    }
    converse = {
        "recordId": "q1",
        "modelOutput": {
            "output": {"message": {"role": "assistant", "content": [{"text": "A cat"}]}},
            "stopReason": "max_tokens",
            "usage": {
                "inputTokens": 12,
                "outputTokens": 3,
                "totalTokens": 21,
                "cacheReadInputTokens": 4,
                "cacheWriteInputTokens": 2,
            },
            "metrics": {"latencyMs": 812},
        },
    }
    assert adapter._to_result(converse) == adapter._to_result(native)
    result = adapter._to_result(converse)
    assert (result.outputs, result.finish_type) == ([{"type": "text", "text": "A cat"}], "length")
    assert (result.cache_read_input_tokens, result.cache_creation_input_tokens) == (4, 2)


def test_a_botocore_stubbed_converse_response_is_a_valid_converse_output():
    """The Converse output shape the results reader takes is botocore's own ConverseResponse (Stubber validates it)."""
    provider, _, runtime = _provider()
    answer = {
        "output": {"message": {"role": "assistant", "content": [{"text": "A cat"}]}},
        "stopReason": "end_turn",
        "usage": {"inputTokens": 12, "outputTokens": 3, "totalTokens": 15},
        "metrics": {"latencyMs": 5},
    }
    stub = Stubber(provider._runtime)
    stub.add_response("converse", answer)
    with stub:
        got = provider._runtime.converse(modelId=CLAUDE, messages=[{"role": "user", "content": [{"text": "x"}]}])
    got.pop("ResponseMetadata", None)
    result = adapter._to_result({"recordId": "q1", "modelOutput": got})
    assert (result.outputs[0]["text"], result.input_tokens, result.output_tokens) == ("A cat", 12, 3)


def test_a_chunk_whose_records_change_between_the_check_and_the_staging_is_refused_not_sent_half_converted(stubbed_s3):
    provider, control, _ = _provider()
    plain, with_tools = [_line(f"q{i}") for i in range(150)], [_line(f"q{i}", tools=[TOOL]) for i in range(150)]

    class Changing:  # the first read (the check) sees plain text, the second (the staging) a tool
        reads = 0

        def __iter__(self):
            Changing.reads += 1
            return iter(plain if Changing.reads == 1 else with_tools)

    with control, pytest.raises(errors.IntegrityError, match="q0 changed"):
        provider.submit(Changing(), _ref())
    assert Changing.reads == 2  # nothing was created: the Stubber holds no create and raised on none
