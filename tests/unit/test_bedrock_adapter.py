"""The Bedrock adapter without a Bedrock: request bodies per model family, the job's name and token against
botocore's own service model (``Stubber`` validates every parameter), status mapping, result records, the error
mapping keyed on botocore's error codes, reconcile by exact name, and small jobs run on demand through Converse.

S3 is moto in-process (``mock_aws``); the ``bedrock`` and ``bedrock-runtime`` clients are real boto3 clients under
``botocore.stub.Stubber``, so a call the service model would refuse fails here too.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

import pytest
from botocore.exceptions import EndpointConnectionError, ReadTimeoutError
from botocore.stub import ANY

from batch_gateway.contract import errors
from batch_gateway.jsonlines import dumps, loads
from batch_gateway.models.jobs import ItemStatus
from batch_gateway.models.requests import check_model_for_provider
from batch_gateway.providers import bedrock as adapter
from batch_gateway.providers import make_provider
from batch_gateway.service.layout import chunk_prefix
from batch_gateway.settings import BedrockLimits
from tests.support.bedrock_stubs import BUCKET, CLAUDE, JOB_ARN, NOVA, ROLE
from tests.support.bedrock_stubs import chunk_ref as _ref
from tests.support.bedrock_stubs import stubbed_provider as _provider

NAME_RE = re.compile(r"[a-zA-Z0-9]{1,63}(-*[a-zA-Z0-9\+\-\.]){0,63}")  # botocore's ModelInvocationJobName
TOKEN_RE = re.compile(r"[a-zA-Z0-9]{1,256}(-*[a-zA-Z0-9]){0,256}")


def _request(text: str = "Name an animal", **params: Any) -> dict[str, Any]:
    return {
        "id": "q1",
        "messages": [{"role": "user", "content": text}],
        "system": "Be brief",
        "params": {"max_tokens": 64, **params},
    }


def _job(status: str, **extra: Any) -> dict[str, Any]:
    return {
        "jobArn": JOB_ARN,
        "jobName": adapter.job_name(_ref(), "5f0c1b2a-aaaa-bbbb-cccc-0123456789ab"),
        "modelId": CLAUDE,
        "roleArn": ROLE,
        "status": status,
        "submitTime": datetime(2025, 1, 1, tzinfo=UTC),
        "inputDataConfig": {"s3InputDataConfig": {"s3Uri": f"s3://{BUCKET}/in.jsonl"}},
        "outputDataConfig": {
            "s3OutputDataConfig": {"s3Uri": f"s3://{BUCKET}/{adapter.output_prefix(_ref().job_id, 0)}"}
        },
        **extra,
    }


# --- request bodies ---------------------------------------------------------------------------------------------


def test_claude_line_is_a_bedrock_messages_body_with_anthropic_version_and_no_model():
    provider = make_provider("bedrock", api_key="")
    line = provider.to_provider(
        "q1", _request(temperature=0.2, stop=["END"]), model=CLAUDE, endpoint=None, provider_options={}
    )
    assert line == {
        "recordId": "q1",
        "modelInput": {
            "anthropic_version": "bedrock-2023-05-31",
            "max_tokens": 64,
            "messages": [{"role": "user", "content": "Name an animal"}],
            "system": "Be brief",
            "temperature": 0.2,
            "stop_sequences": ["END"],
        },
    }


def test_nova_line_is_novas_messages_v1_body():
    provider = make_provider("bedrock", api_key="")
    line = provider.to_provider(
        "q1", _request(temperature=0.5, top_p=0.9, stop="END"), model=NOVA, endpoint=None, provider_options={}
    )
    assert line == {
        "recordId": "q1",
        "modelInput": {
            "schemaVersion": "messages-v1",
            "messages": [{"role": "user", "content": [{"text": "Name an animal"}]}],
            "system": [{"text": "Be brief"}],
            "inferenceConfig": {"maxTokens": 64, "temperature": 0.5, "topP": 0.9, "stopSequences": ["END"]},
        },
    }


@pytest.mark.parametrize("model", ["meta.llama3-70b-instruct-v1:0", "mistral.mistral-large-2402-v1:0", "gpt-4o"])
def test_other_model_families_are_refused_at_create_naming_what_is_supported(model):
    with pytest.raises(errors.InvalidRequestError) as refused:
        check_model_for_provider("bedrock", model)
    assert "anthropic.claude" in refused.value.message and "amazon.nova" in refused.value.message


@pytest.mark.parametrize(
    "model",
    [
        CLAUDE,
        NOVA,
        "us.anthropic.claude-sonnet-4-20250514-v1:0",
        "arn:aws:bedrock:us-east-1::foundation-model/amazon.nova-pro-v1:0",
    ],
)
def test_claude_and_nova_ids_profiles_and_arns_are_accepted(model):
    check_model_for_provider("bedrock", model)


def test_job_name_and_token_fit_bedrocks_patterns_and_differ_per_chunk():
    names = {adapter.job_name(_ref(index=i), "5f0c1b2a-aaaa-bbbb-cccc-0123456789ab") for i in range(3)}
    assert len(names) == 3
    for i in (0, 99_999):
        name = adapter.job_name(_ref(index=i), "5f0c1b2a-aaaa-bbbb-cccc-0123456789ab")
        token = adapter.request_token(_ref(index=i))
        assert NAME_RE.fullmatch(name) and len(name) <= 63, name
        assert TOKEN_RE.fullmatch(token) and len(token) <= 256, token
    assert adapter.request_token(_ref()) == adapter.request_token(_ref())  # the same chunk: the same token


def test_chunk_files_live_under_the_chunks_prefix():
    assert adapter.chunk_dir("job_x", 7).startswith(chunk_prefix("job_x", 7))


# --- create, status, results ------------------------------------------------------------------------------------


def test_submit_stages_the_chunk_under_its_prefix_and_creates_one_named_job(stubbed_s3):
    provider, control, _ = _provider(timeout_hours=48)
    ref = _ref()
    lines = [dumps({"recordId": f"r{i}", "modelInput": {"max_tokens": 5}}) for i in range(150)]
    control.add_response(
        "create_model_invocation_job",
        {"jobArn": JOB_ARN},
        {
            "jobName": adapter.job_name(ref, "5f0c1b2a-aaaa-bbbb-cccc-0123456789ab"),
            "roleArn": ROLE,
            "clientRequestToken": adapter.request_token(ref),
            "modelId": CLAUDE,
            "inputDataConfig": {
                "s3InputDataConfig": {
                    "s3InputFormat": "JSONL",
                    "s3Uri": f"s3://{BUCKET}/{adapter.input_key(ref.job_id, 0)}",
                }
            },
            "outputDataConfig": {
                "s3OutputDataConfig": {"s3Uri": f"s3://{BUCKET}/{adapter.output_prefix(ref.job_id, 0)}"}
            },
            "timeoutDurationInHours": 48,
        },
    )
    with control:
        assert provider.submit(iter(lines), ref) == JOB_ARN
    staged = stubbed_s3.get_object(Bucket=BUCKET, Key=adapter.input_key(ref.job_id, 0))["Body"].read().splitlines()
    assert staged == lines


@pytest.mark.parametrize(
    ("status", "ended"),
    [
        ("Submitted", False),
        ("Validating", False),
        ("Scheduled", False),
        ("InProgress", False),
        ("Stopping", False),
        ("Completed", True),
        ("PartiallyCompleted", True),
        ("Failed", True),
        ("Stopped", True),
        ("Expired", True),
    ],
)
def test_bedrock_statuses_map_onto_running_and_ended(stubbed_s3, status, ended):
    provider, control, _ = _provider()
    control.add_response(
        "get_model_invocation_job", _job(status, message="bad record at line 3"), {"jobIdentifier": JOB_ARN}
    )
    with control:
        batch = provider.status(JOB_ARN)
    assert (batch.status, batch.ended) == (status, ended)
    assert batch.provider_message == ("bad record at line 3" if status == "Failed" else None)
    assert batch.failed_reason == ("Amazon Bedrock failed the batch (no error code)" if status == "Failed" else None)


def test_ended_job_counts_come_from_the_manifest(stubbed_s3):
    provider, control, _ = _provider()
    out = adapter.output_prefix(_ref().job_id, 0) + "abc123def456/"
    stubbed_s3.put_object(
        Bucket=BUCKET,
        Key=out + "manifest.json.out",
        Body=dumps(
            {"totalRecordCount": 150, "processedRecordCount": 120, "successRecordCount": 118, "errorRecordCount": 2}
        ),
    )
    control.add_response("get_model_invocation_job", _job("Stopped"), {"jobIdentifier": JOB_ARN})
    with control:
        batch = provider.status(JOB_ARN)
    assert (batch.counts.total, batch.counts.succeeded, batch.counts.errored, batch.counts.canceled) == (
        150,
        118,
        2,
        30,
    )


def test_results_stream_every_jsonl_out_object_with_outputs_errors_and_usage(stubbed_s3):
    provider, control, _ = _provider()
    out = adapter.output_prefix(_ref().job_id, 0) + "abc123def456/"
    claude = {
        "recordId": "q1",
        "modelInput": {},
        "modelOutput": {
            "content": [{"type": "text", "text": "A cat"}],
            "stop_reason": "end_turn",
            "usage": {"input_tokens": 12, "output_tokens": 3},
        },
    }
    nova = {
        "recordId": "q2",
        "modelInput": {},
        "modelOutput": {
            "output": {"message": {"role": "assistant", "content": [{"text": "A dog"}]}},
            "stopReason": "max_tokens",
            "usage": {"inputTokens": 10, "outputTokens": 5},
        },
    }
    failed = {"recordId": "q3", "modelInput": {}, "error": {"errorCode": 400, "errorMessage": "Malformed input"}}
    stubbed_s3.put_object(
        Bucket=BUCKET, Key=out + "records.jsonl.out", Body=b"\n".join(dumps(x) for x in (claude, nova))
    )
    stubbed_s3.put_object(Bucket=BUCKET, Key=out + "more.jsonl.out", Body=dumps(failed) + b"\n")
    stubbed_s3.put_object(Bucket=BUCKET, Key=out + "manifest.json.out", Body=b"{}")
    control.add_response("get_model_invocation_job", _job("PartiallyCompleted"), {"jobIdentifier": JOB_ARN})
    with control:
        results = {r.custom_id: r for r in provider.results(provider.status(JOB_ARN))}
    assert set(results) == {"q1", "q2", "q3"}
    assert (results["q1"].outputs, results["q1"].input_tokens, results["q1"].finish_type) == (
        [{"type": "text", "text": "A cat"}],
        12,
        "stop",
    )
    assert (results["q2"].outputs[0]["text"], results["q2"].output_tokens, results["q2"].finish_type) == (
        "A dog",
        5,
        "length",
    )
    assert results["q3"].status is ItemStatus.ERRORED and results["q3"].message == "Malformed input"


# --- errors -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "status", "error"),
    [
        ("ThrottlingException", 429, errors.ProviderRateLimitedError),
        ("ServiceQuotaExceededException", 400, errors.ProviderRateLimitedError),
        ("ValidationException", 400, errors.ProviderRequestError),
        ("AccessDeniedException", 403, errors.ProviderAuthError),
        ("ResourceNotFoundException", 404, errors.ProviderNotFoundError),
        ("InternalServerException", 500, errors.ProviderUnavailableError),
    ],
)
def test_bedrock_error_codes_become_ours(stubbed_s3, code, status, error):
    provider, control, _ = _provider()
    control.add_client_error("get_model_invocation_job", service_error_code=code, http_status_code=status)
    with control, pytest.raises(error):
        provider.status(JOB_ARN)


def test_a_quota_refusal_at_create_is_a_wait_not_a_failure(stubbed_s3):
    provider, control, _ = _provider()
    control.add_client_error("create_model_invocation_job", service_error_code="ServiceQuotaExceededException")
    with control, pytest.raises(errors.TransientError):
        provider.submit(iter([b'{"recordId":"a","modelInput":{}}']), _ref())


class _Failing:
    def __init__(self, exc: Exception) -> None:
        self.exc = exc

    def create_model_invocation_job(self, **kwargs: Any) -> Any:
        raise self.exc


def test_a_read_timeout_on_create_is_ambiguous_and_a_refused_connection_is_not(stubbed_s3):
    provider, _, _ = _provider()
    provider.__dict__["_create_client"] = _Failing(ReadTimeoutError(endpoint_url="https://bedrock"))
    with pytest.raises(errors.ProviderAmbiguousError):
        provider.submit(iter([b'{"recordId":"a","modelInput":{}}']), _ref())
    provider.__dict__["_create_client"] = _Failing(EndpointConnectionError(endpoint_url="https://bedrock"))
    with pytest.raises(errors.ProviderUnavailableError):
        provider.submit(iter([b'{"recordId":"a","modelInput":{}}']), _ref())


def test_reconcile_adopts_only_the_job_with_exactly_the_chunks_name(stubbed_s3):
    provider, control, _ = _provider()
    ref = _ref(index=1)
    name = adapter.job_name(ref, "5f0c1b2a-aaaa-bbbb-cccc-0123456789ab")
    similar = {
        **_job("InProgress"),
        "jobArn": JOB_ARN[:-1] + "0",
        "jobName": name + "0",
    }  # chunk 10 contains chunk 1's name
    ours = {**_job("InProgress"), "jobName": name}
    control.add_response(
        "list_model_invocation_jobs", {"invocationJobSummaries": [similar, ours]}, {"nameContains": name}
    )
    with control:
        assert provider.find_submitted(ref) == JOB_ARN


# --- small jobs on demand ---------------------------------------------------------------------------------------


def _converse_answer(text: str) -> dict[str, Any]:
    return {
        "output": {"message": {"role": "assistant", "content": [{"text": text}]}},
        "stopReason": "end_turn",
        "usage": {"inputTokens": 4, "outputTokens": 2, "totalTokens": 6},
        "metrics": {"latencyMs": 10},
    }


def test_a_small_chunk_runs_on_demand_and_a_retry_never_asks_twice_for_an_answered_record(stubbed_s3):
    provider, _, runtime = _provider(on_demand_concurrency=1, limits=BedrockLimits(min_records=100))
    ref = _ref(count=3)
    provider_lines = [
        dumps(provider.to_provider(f"q{i}", _request(f"prompt {i}"), model=CLAUDE, endpoint=None, provider_options={}))
        for i in range(3)
    ]
    runtime.add_response(
        "converse", _converse_answer("one"), {"modelId": CLAUDE, "messages": ANY, "system": ANY, "inferenceConfig": ANY}
    )
    runtime.add_client_error("converse", service_error_code="ThrottlingException", http_status_code=429)
    runtime.add_response(
        "converse",
        _converse_answer("three"),
        {"modelId": CLAUDE, "messages": ANY, "system": ANY, "inferenceConfig": ANY},
    )
    with runtime, pytest.raises(errors.ProviderRateLimitedError):
        provider.submit(iter(provider_lines), ref)
    runtime.assert_no_pending_responses()

    # The retry asks only for the throttled record.
    runtime.add_response(
        "converse",
        _converse_answer("two"),
        {
            "modelId": CLAUDE,
            "messages": [{"role": "user", "content": [{"text": "prompt 1"}]}],
            "system": ANY,
            "inferenceConfig": ANY,
        },
    )
    with runtime:
        batch_id = provider.submit(iter(provider_lines), ref)
    runtime.assert_no_pending_responses()

    batch = provider.status(batch_id)
    assert batch.ended
    results = {r.custom_id: r for r in provider.results(batch)}
    assert {k: r.outputs[0]["text"] for k, r in results.items()} == {"q0": "one", "q1": "two", "q2": "three"}
    assert {r.mode for r in results.values()} == {"on_demand"}


def test_converse_request_from_a_claude_record():
    body = loads(
        dumps(
            make_provider("bedrock", api_key="").to_provider(
                "q", _request(top_k=5, stop="X"), model=CLAUDE, endpoint=None, provider_options={}
            )["modelInput"]
        )
    )
    assert adapter.converse_request(CLAUDE, body) == {
        "messages": [{"role": "user", "content": [{"text": "Name an animal"}]}],
        "inferenceConfig": {"maxTokens": 64, "stopSequences": ["X"]},
        "system": [{"text": "Be brief"}],
        "additionalModelRequestFields": {"top_k": 5},
    }
