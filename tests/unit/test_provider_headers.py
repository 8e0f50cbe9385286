"""Provider header pass-through (decision 0129): the deployment's allow-list, the check of a job's headers against
it (a 400 naming the header or value, before anything is stored), the door's choice of which caller headers ask the
provider for something, and the adapter sending them on every call about the job's batches, primers without the
batch-only betas. The adapter runs against the Anthropic simulator, which records the headers of each batch and
finds a workspace's batch only for calls naming that workspace."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import anthropic
import pytest

from batch_gateway.contract.errors import InvalidRequestError, ProviderNotFoundError, ProviderRequestError
from batch_gateway.models.provider_headers import check_provider_headers, parse_allow_list, requested_headers
from batch_gateway.provider_specs import ANTHROPIC, BEDROCK, OPENAI
from batch_gateway.providers.anthropic import AnthropicBatchProvider
from batch_gateway.providers.base import ChunkRef
from batch_gateway.settings import Settings

MODEL = "claude-sonnet-4-20250514"
LARGE = "output-300k-2026-03-24"
OLD = "output-128k-2025-02-19"
WORKSPACE = "wrkspc_01UnitHeaders"
ALLOWED = {ANTHROPIC.name: {"anthropic-beta": [LARGE, OLD], "anthropic-workspace-id": "*"}}


def allowed() -> dict:
    """The deployment's allow-list as the functions hold it (``Settings.provider_headers``: the context's JSON)."""
    return json.loads(json.dumps(ALLOWED))


# ---- the allow-list


def test_the_allow_list_names_values_or_any_value_and_empty_allows_nothing():
    parsed = parse_allow_list(json.dumps(ALLOWED))
    assert parsed == {ANTHROPIC.name: {"anthropic-beta": (LARGE, OLD), "anthropic-workspace-id": None}}
    assert parse_allow_list("") == parse_allow_list(None) == parse_allow_list("{}") == {}
    settings = Settings.from_env({"PROVIDER_HEADERS_JSON": json.dumps(ALLOWED)})
    assert parse_allow_list(settings.provider_headers) == parsed
    assert Settings.from_env({}).provider_headers == {}


@pytest.mark.parametrize(
    ("document", "says"),
    [
        ({OPENAI.name: {"openai-beta": "*"}}, "takes no pass-through headers"),
        ({BEDROCK.name: {"anthropic-beta": "*"}}, "takes no pass-through headers"),
        ({ANTHROPIC.name: {"anthropic-version": "*"}}, "not a header"),
        ({ANTHROPIC.name: {"x-api-key": "*"}}, "not a header"),
        ({ANTHROPIC.name: {"anthropic-beta": []}}, "non-empty list"),
        ({ANTHROPIC.name: {"anthropic-beta": ["bad value"]}}, "non-empty list"),
        ({ANTHROPIC.name: ["anthropic-beta"]}, "an object"),
        (["anthropic-beta"], "JSON object"),
    ],
)
def test_an_unusable_allow_list_is_refused_with_the_reason(document, says):
    with pytest.raises(ValueError, match=says):
        parse_allow_list(json.dumps(document))


# ---- a job's headers


def test_allowed_headers_are_normalised_names_lower_case_betas_trimmed_and_once():
    headers = {"Anthropic-Beta": f" {LARGE} ,{OLD},{LARGE}", "anthropic-workspace-id": WORKSPACE}
    assert check_provider_headers(ANTHROPIC.name, headers, allowed()) == {
        "anthropic-beta": f"{LARGE},{OLD}",
        "anthropic-workspace-id": WORKSPACE,
    }
    assert check_provider_headers(ANTHROPIC.name, {}, allowed()) == {}


@pytest.mark.parametrize(
    ("provider", "headers", "field", "says"),
    [
        (
            ANTHROPIC.name,
            {"anthropic-beta": "context-1m-2025-08-07"},
            "anthropic-beta",
            "'context-1m-2025-08-07' is not",
        ),
        (ANTHROPIC.name, {"anthropic-beta": f"{LARGE},nope-2099-01-01"}, "anthropic-beta", "'nope-2099-01-01'"),
        (ANTHROPIC.name, {"anthropic-user-profile-id": "u1"}, "anthropic-user-profile-id", "not passed to Anthropic"),
        (ANTHROPIC.name, {"anthropic-workspace-id": "wrk space"}, "anthropic-workspace-id", "letters, digits"),
        (ANTHROPIC.name, {"anthropic-beta": " , "}, "anthropic-beta", "empty"),
        (OPENAI.name, {"anthropic-beta": LARGE}, "anthropic-beta", "allowed: none"),
    ],
)
def test_a_header_or_value_not_allowed_is_a_400_naming_it(provider, headers, field, says):
    with pytest.raises(InvalidRequestError, match=says) as refused:
        check_provider_headers(provider, headers, allowed())
    assert refused.value.details == [
        {"field": f"provider_headers.{field}", "message": refused.value.details[0]["message"]}
    ]


def test_with_no_allow_list_every_header_is_refused():
    with pytest.raises(InvalidRequestError, match="allowed: none"):
        check_provider_headers(ANTHROPIC.name, {"anthropic-beta": LARGE}, {})


def test_the_door_takes_the_anthropic_headers_but_the_version_and_nothing_else():
    sent = {
        "Anthropic-Beta": LARGE,
        "anthropic-workspace-id": WORKSPACE,
        "anthropic-version": "2023-06-01",
        "x-api-key": "secret",
        "Authorization": "Bearer secret",
        "x-stainless-lang": "python",
    }
    assert requested_headers(ANTHROPIC.name, sent) == {"anthropic-beta": LARGE, "anthropic-workspace-id": WORKSPACE}
    assert requested_headers(BEDROCK.name, sent) == {}


# ---- the adapter, against the simulator


def _line(i: int, max_tokens: int = 64) -> bytes:
    params = {"model": MODEL, "max_tokens": max_tokens, "messages": [{"role": "user", "content": f"q{i}"}]}
    return json.dumps({"custom_id": f"job1-c0-{i}", "params": params}).encode()


def _ref(count: int) -> ChunkRef:
    return ChunkRef(job_id="job1", index=0, request_count=count, model=MODEL, claimed_at=datetime.now(UTC))


def _created(sim) -> dict[str, dict]:
    return {batch["id"]: batch["headers"] for batch in sim.created_batches()["anthropic"]}


def test_every_call_about_a_jobs_batch_carries_its_headers(sim):
    plain = AnthropicBatchProvider(api_key="k", base_url=sim.url)
    scoped = plain.with_headers({"anthropic-beta": OLD, "anthropic-workspace-id": WORKSPACE})
    assert plain.with_headers({}) is plain
    batch_id = scoped.submit(iter([_line(0), _line(1)]), _ref(2))
    assert _created(sim)[batch_id] == {"anthropic-beta": OLD, "anthropic-workspace-id": WORKSPACE}
    sim.end_processing("anthropic")
    batch = scoped.status(batch_id)
    assert batch.ended and sorted(r.custom_id for r in scoped.results(batch)) == ["job1-c0-0", "job1-c0-1"]
    # the same batch, asked about without the workspace: the API would not find it
    with pytest.raises(ProviderNotFoundError):
        plain.status(batch_id)
    other = plain.submit(iter([_line(2)]), _ref(1))
    assert _created(sim)[other] == {}  # the adapter the copy came from kept no header


def test_the_large_output_beta_lets_a_batch_ask_for_more_than_the_standard_cap(sim):
    plain = AnthropicBatchProvider(api_key="k", base_url=sim.url)
    with pytest.raises(ProviderRequestError):
        plain.submit(iter([_line(0, max_tokens=200_000)]), _ref(1))
    large = plain.with_headers({"anthropic-beta": LARGE})
    assert large.submit(iter([_line(0, max_tokens=200_000)]), _ref(1))
    request = json.loads(_line(0, max_tokens=300_001))
    with anthropic.Anthropic(base_url=sim.url, api_key="k", max_retries=0) as client:
        with pytest.raises(anthropic.BadRequestError, match="max_tokens: 200000 > 128000"):
            client.messages.batches.create(requests=[json.loads(_line(0, max_tokens=200_000))])
        with pytest.raises(anthropic.BadRequestError, match="max_tokens: 300001 > 300000"):
            client.messages.batches.create(requests=[request], extra_headers={"anthropic-beta": LARGE})


def test_a_primer_goes_without_the_batch_only_beta_and_with_the_rest(sim):
    params = {"model": MODEL, "max_tokens": 64, "system": "x" * 8000, "messages": [{"role": "user", "content": "q"}]}
    line = {"custom_id": "job1-p0", "params": params}
    scoped = AnthropicBatchProvider(api_key="k", base_url=sim.url).with_headers(
        {"anthropic-beta": f"{LARGE},{OLD}", "anthropic-workspace-id": WORKSPACE}
    )
    assert scoped.prime(line).input_tokens >= 0  # the simulator refuses a synchronous call naming a batch-only beta
    only_large = AnthropicBatchProvider(api_key="k", base_url=sim.url).with_headers({"anthropic-beta": LARGE})
    assert only_large.prime(line).input_tokens >= 0
    with (
        anthropic.Anthropic(base_url=sim.url, api_key="k", max_retries=0) as client,
        pytest.raises(anthropic.BadRequestError, match="Unsupported beta header"),
    ):
        client.messages.create(**params, extra_headers={"anthropic-beta": LARGE})
