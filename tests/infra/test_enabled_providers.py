"""The providers a deployment runs (context ``providers``) reach every function that creates jobs as
``ENABLED_PROVIDERS`` (decision 0102): those functions hold no provider key (only the workflow does), so without it
a job for a provider the deployment does not run was accepted and failed later at Submit."""

from __future__ import annotations

from typing import Any

from batch_gateway import constants
from batch_gateway.provider_specs import ANTHROPIC, OPENAI
from tests.support.synthesized import ALL_HANDLERS, Synthesized

JOB_CREATORS = {"Create", "AnthropicCompat", "OpenAICompat", "Ingest"}


def environment(synthesized: Synthesized, function_id: str) -> dict[str, Any]:
    variables: dict[str, Any] = synthesized.function(function_id)[1]["Properties"]["Environment"]["Variables"]
    return variables


def test_the_functions_that_create_jobs_are_create_both_doors_and_ingest(synthesized):
    """Every function that may write a job's requests and start its workflow: a new way in must be listed here."""
    creators = {
        function_id
        for function_id in ALL_HANDLERS
        if "jobs/*/requests.jsonl" in synthesized.object_grants(function_id).get("s3:PutObject", set())
        and "states:StartExecution" in synthesized.role_actions(function_id)
    }
    assert creators == JOB_CREATORS


def test_every_function_that_creates_jobs_is_told_the_enabled_providers(synthesized):
    # the session's template is cdk.json's context: -c providers=anthropic,openai
    for function_id in JOB_CREATORS:
        env = environment(synthesized, function_id)
        assert env.get(constants.ENV_ENABLED_PROVIDERS) == "anthropic,openai", function_id
        # what the function could otherwise have told it from: it holds no provider key
        assert not {ANTHROPIC.secret_env, OPENAI.secret_env} & set(env), function_id
