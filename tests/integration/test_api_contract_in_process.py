"""Property-based contract test in-process: docs/openapi.json against the API functions' handlers, native routes and
both doors, with schema-valid (positive) and schema-violating (negative) requests (decision 0116).

Schemathesis generates the requests from the document; a ``requests`` adapter hands each one to the function its
route names as the API Gateway event it would be (``ApiFront._event``, the local stack's), signed in as one caller
(the IAM principal on native routes, the key authorizer's owner on the doors), against moto and no network. For each
answer: no 5xx, a documented status with a body of the documented shape, and an invalid request refused with a 4xx;
on native routes a valid request is also accepted (2xx, or 404/409 for an id that is not the caller's or a job not
ended). The doors' bodies are the OpenAI and Anthropic APIs', which the document names but does not spell out (a
request's ``params``, a file's lines): a valid-looking one may be refused naming its field, so that check is not made
there. ``tests/e2e/test_api_contract.py`` runs the native routes against the local stack, over HTTP and SigV4.
"""

from __future__ import annotations

import json
import uuid
from types import SimpleNamespace
from typing import Any
from urllib.parse import urlsplit

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, settings
from requests.adapters import BaseAdapter
from requests.structures import CaseInsensitiveDict
from urllib3 import HTTPHeaderDict

from batch_gateway import wiring
from batch_gateway.constants import ENV_ENABLED_PROVIDERS
from batch_gateway.edge.openapi import document
from batch_gateway.provider_specs import PROVIDERS
from batch_gateway_dev.local.front import ApiFront
from batch_gateway_dev.local.template import Route
from lambdas import anthropic_compat, cancel, create, list_jobs, openai_compat, retrieve, status, uploads
from tests.support.contract_checks import CHECKS, WITHOUT_ACCEPTANCE
from tests.support.lambda_context import FakeLambdaContext

EXAMPLES_PER_OPERATION = 8
BASE_URL = "http://gateway.invalid/v1"  # never resolved: the adapter below answers every request in-process
OWNER = "arn:aws:iam::123456789012:user/contract"
GATEWAY_LIMIT = 10 * 1024 * 1024
HANDLERS = {
    "Create": create.handler,
    "List": list_jobs.handler,
    "Status": status.handler,
    "Retrieve": retrieve.handler,
    "Cancel": cancel.handler,
    "Uploads": uploads.handler,
    "AnthropicCompat": anthropic_compat.handler,
    "OpenAICompat": openai_compat.handler,
}
ROUTES = [
    Route("POST", "/batches", "Create"),
    Route("GET", "/batches", "List"),
    Route("GET", "/batches/{id}", "Status"),
    Route("GET", "/batches/{id}/results", "Retrieve"),
    Route("POST", "/batches/{id}/cancel", "Cancel"),
    Route("POST", "/uploads", "Uploads"),
    Route("ANY", "/anthropic/v1/{proxy+}", "AnthropicCompat", "CUSTOM"),
    Route("ANY", "/openai/v1/{proxy+}", "OpenAICompat", "CUSTOM"),
]
CONFIG = schemathesis.Config.from_dict(
    {
        "seed": 20260102,
        "generation": {
            "max-examples": EXAMPLES_PER_OPERATION,
            "deterministic": True,
            "mode": "all",  # positive and negative
            "with-security-parameters": False,  # the caller is set on the event, as API Gateway's auth would
            "database": "none",
        },
        "phases": {"coverage": {"enabled": False}, "stateful": {"enabled": False}},
        "checks": {
            "positive_data_acceptance": {"expected-statuses": ["2xx", "302", "404", "409"]},
            "negative_data_rejection": {"expected-statuses": ["4xx"]},
        },
    }
)
# Not the key, budget and limit routes (an admin principal's, tests/integration/test_api_keys.py, test_budgets.py
# and test_owner_limits.py), nor webhooks (a subscription's URL is resolved at create: DNS, beyond loopback;
# tests/unit/test_openapi_document.py holds its pattern to the check).
schema = schemathesis.openapi.from_dict(document(), config=CONFIG).exclude(
    path_regex=r"^/(keys|budgets?|limits?|webhooks)\b"
)


class InProcess(BaseAdapter):
    """API Gateway in front of the handlers: the route's function gets the event, its answer is the response."""

    def send(self, request: requests.PreparedRequest, **_: Any) -> requests.Response:
        parts = urlsplit(request.url or "")
        path = parts.path.removeprefix("/v1") or "/"
        body = request.body or b""
        data = body.encode() if isinstance(body, str) else body
        method = request.method or "GET"
        answer: tuple[int, dict[str, str], bytes] = (403, {}, b'{"message": "Missing Authentication Token"}')
        if len(data) > GATEWAY_LIMIT:
            answer = ApiFront.too_long()
        else:
            for route in ROUTES:
                params = route.match(method, path)
                if params is None:
                    continue
                event = ApiFront._event(
                    route, method, path, params, parts.query, dict(request.headers), data, str(uuid.uuid4())
                )
                if route.authorization == "CUSTOM":
                    event["requestContext"]["authorizer"] = {"owner": OWNER, "key_id": "k", "principalId": OWNER}
                else:
                    event["requestContext"]["identity"].update(userArn=OWNER, caller="contract", user="contract")
                out = HANDLERS[route.function](event, FakeLambdaContext())
                payload = out.get("body") or ""
                headers = {k: str(v) for k, v in (out.get("headers") or {}).items()}
                for key, values in (out.get("multiValueHeaders") or {}).items():
                    headers[key] = ", ".join(str(v) for v in values)
                answer = (int(out["statusCode"]), headers, payload.encode())
                break
        response = requests.Response()
        response.status_code, response._content = answer[0], answer[2]
        headers = {"Content-Type": "application/json", **answer[1]} if answer[2] else answer[1]
        response.headers = CaseInsensitiveDict(headers)
        response.raw = SimpleNamespace(headers=HTTPHeaderDict(headers), version=11)  # what schemathesis reads
        response.request, response.url, response.encoding = request, request.url or "", "utf-8"
        return response

    def close(self) -> None:
        pass


@pytest.fixture
def session(aws, monkeypatch) -> requests.Session:
    # A deployment of every provider: the document's providers are all schema-valid, and a provider a deployment
    # does not run is its own 400 (decision 0102). Without it the handlers enabled what the test account reaches (the
    # keyed providers' secrets, no Bedrock service role), and CI's run refused a generated Bedrock job with 400.
    monkeypatch.setenv(ENV_ENABLED_PROVIDERS, ",".join(PROVIDERS))
    wiring.reset()
    session = requests.Session()
    session.mount(BASE_URL, InProcess())
    return session


@schema.parametrize()
# one caller's storage for all of an operation's examples: what one stores, the next may read (a 404 or 409 either way)
@settings(suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
def test_the_handlers_keep_the_documented_contract(case, session):
    response = case.call(base_url=BASE_URL, session=session, allow_redirects=False)
    checks = CHECKS
    door = case.operation.path.startswith(("/openai/", "/anthropic/"))
    if door:
        checks = WITHOUT_ACCEPTANCE
    elif isinstance(case.body, dict) and "dataset" in case.body and _names_what_it_refuses(response):
        # a dataset job (decision 0136): the document cannot say that the template's placeholders and the id column
        # name the table's columns, nor which models a provider runs; a refusal names the field or the row
        checks = WITHOUT_ACCEPTANCE
    elif "next_token" in (case.query or {}) and _refused_field(response) == "next_token":
        # an opaque token the generator made up: the document says only a token the service gave out is taken
        checks = WITHOUT_ACCEPTANCE
    elif _refused_field(response) in ("deadline", "deadline_seconds"):
        # a deadline must be in the future and within the provider's batch window plus a day (decision 0142): bounds
        # that move with the clock, which no schema of the body can say
        checks = WITHOUT_ACCEPTANCE
    case.validate_response(response, checks=checks, transport_kwargs={"base_url": BASE_URL})


def _names_what_it_refuses(response: requests.Response) -> bool:
    if response.status_code != 400:
        return False
    details = json.loads(response.content)["error"]["details"]
    return bool(details) and all("row" in d or str(d.get("field", "")).strip() for d in details)


def _refused_field(response: requests.Response) -> str | None:
    if response.status_code != 400:
        return None
    details = json.loads(response.content)["error"]["details"]
    return details[0]["field"] if len(details) == 1 else None
