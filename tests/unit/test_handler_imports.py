"""The API functions' bundle carries no provider SDK: their handlers must not import them (a Lambda
would fail at its first cold start), nor pydantic or the X-Ray SDK, which would double their cold-start import. Nor
does an API function load what only other functions use: ``make bench`` holds its cold import to 1.5x the floor of
Powertools + boto3 (import_ratio_to_floor)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from batch_gateway import constants

REPO = Path(__file__).resolve().parents[2]
API_BUNDLE_HANDLERS = [
    *constants.API_HANDLERS.values(),
    constants.INGEST_HANDLER,
    constants.PARK_HANDLER,
    constants.PROVIDER_WEBHOOK_HANDLER,
    constants.BEDROCK_JOB_EVENT_HANDLER,
]
NOT_IN_API_BUNDLE = {"anthropic", "openai", "httpx2"}
NOT_ON_API_PATH = {"pydantic", "aws_xray_sdk"}
# module -> the API functions that may load it when imported; every other API function must not
ONLY_WHERE_USED = {
    "batch_gateway.store.quotas": set(),  # the quota ledgers: workflow steps and the sweeper
    "batch_gateway.models.quotas": set(),
    "batch_gateway.service.api.keys": set(),  # the Keys function and the authorizer build it on first use
    "batch_gateway.store.api_keys": set(),
    "batch_gateway.store.webhooks": set(),  # subscriptions: built on first use by the Webhooks function
    "batch_gateway.store.provider_batches": set(),  # the OpenAI webhook receiver, on first use
    "batch_gateway.service.api.webhooks": {  # a job's own webhook is checked at create; subscriptions
        "Create",
        "AnthropicCompat",
        "OpenAICompat",
        "Uploads",
        "Webhooks",
    },
    "batch_gateway.service.events.webhook_delivery": set(),  # fan-out, signing and sending: the webhook functions only
    "batch_gateway.store.webhook_http": set(),  # the sender, the resolver and the queue: built on first use by them
    "batch_gateway.store.dns": set(),
    "batch_gateway.store.webhook_queue": set(),
    "batch_gateway.models.webhook_attempts": set(),
    "email.policy": set(),  # the OpenAI door's multipart upload loads it when one arrives
    "batch_gateway.models.api_keys": set(),  # callers are named by models.principals; the key model is Keys' own
    "batch_gateway.service.workflow.join": set(),  # loaded for a failed job's results; Finalize and MarkFailed join
    "batch_gateway.contract.jobs": set(),  # the view's TypedDicts: types only, plain dicts at run time (decision 0105)
    "batch_gateway.contract.results": set(),
    # Powertools' event_handler package and the event data classes its __init__ loads, asyncio with them: the API
    # functions route with edge.routing (decision 0106)
    "aws_lambda_powertools.event_handler": set(),
    "aws_lambda_powertools.utilities.data_classes": set(),
    "asyncio": set(),
}


@pytest.mark.parametrize("handler", API_BUNDLE_HANDLERS)
def test_api_bundle_handlers_import_only_what_their_bundle_carries(handler):
    module = handler.rsplit(".", 1)[0]
    code = f"import sys, json, {module}; print(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}})))"
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60, check=True
    )
    loaded = set(json.loads(done.stdout))
    assert not loaded & NOT_IN_API_BUNDLE
    if handler in (*constants.API_HANDLERS.values(), constants.PROVIDER_WEBHOOK_HANDLER):
        assert not loaded & NOT_ON_API_PATH


def _loaded_after_wiring(module: str) -> set[str]:
    """What importing ``module`` and building its services (as its first request does) loaded."""
    code = (
        f"import sys, json, {module}; from batch_gateway import wiring; wiring.services(); "
        "print(json.dumps(sorted(sys.modules)))"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update({"AWS_DEFAULT_REGION": "us-east-1", constants.ENV_JOBS_TABLE: "t", constants.ENV_PAYLOAD_BUCKET: "b"})
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=60, check=True
    )
    return set(json.loads(done.stdout))


@pytest.mark.parametrize("name", sorted(constants.API_HANDLERS))
def test_an_api_function_loads_only_what_it_uses(name):
    loaded = _loaded_after_wiring(constants.API_HANDLERS[name].rsplit(".", 1)[0])
    unneeded = {module for module, users in ONLY_WHERE_USED.items() if name not in users} & loaded
    assert unneeded == set()


@pytest.mark.parametrize("name", sorted(constants.API_HANDLERS))
def test_no_dataclass_an_api_function_loads_builds_its_docstring_at_import(name):
    """A dataclass without a docstring gets one made from ``inspect.signature`` when it is built, at import: about
    0.19 ms for the job's 38 fields (decision 0105). Every dataclass the API functions load has its own."""
    code = (
        f"import sys, json, dataclasses, {constants.API_HANDLERS[name].rsplit('.', 1)[0]}; "
        "print(json.dumps(sorted(f'{m}.{k}' for m, mod in list(sys.modules.items()) "
        "if m.startswith(('batch_gateway', 'lambdas')) for k, v in vars(mod).items() "
        "if dataclasses.is_dataclass(v) and isinstance(v, type) and v.__module__ == m "
        "and (v.__doc__ or '').startswith(v.__name__ + '('))))"
    )
    env = {**os.environ, "AWS_DEFAULT_REGION": "us-east-1"}
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=60, check=True
    )
    assert json.loads(done.stdout) == []
