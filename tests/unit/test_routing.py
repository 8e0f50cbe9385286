"""``edge.routing`` answers as Powertools' ``APIGatewayRestResolver`` does (decision 0106): the same routes and
requests through both give the same Lambda response, field by field; the event's fields read the same; and every API
function's own route table routes the same paths to the same routes."""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any

import pytest
from aws_lambda_powertools.event_handler import APIGatewayRestResolver
from aws_lambda_powertools.event_handler import Response as PowertoolsResponse
from aws_lambda_powertools.event_handler.exceptions import NotFoundError as PowertoolsNotFound
from aws_lambda_powertools.utilities.data_classes import APIGatewayProxyEvent
from hypothesis import given, settings
from hypothesis import strategies as st

from batch_gateway import constants
from batch_gateway.edge.routing import ApiEvent, Response, RestResolver, RouteNotFoundError

EVENTS = Path(__file__).resolve().parents[2] / "events"
RULES = [
    ("GET", "/batches"),
    ("POST", "/batches"),
    ("GET", "/batches/<job_id>"),
    ("POST", "/batches/<job_id>/cancel"),
    ("GET", "/batches/<job_id>/results"),
    ("DELETE", "/webhooks/<subscription_id>"),
    ("GET", "/budget"),
    ("GET", "/budgets/"),  # a trailing slash in the rule
    ("PUT", "/a.b/<x>/<y_z>"),  # a regex character in the rule
    ("GET", "/"),
    ("GET", "/batches/latest"),  # static, registered after a dynamic route that matches it too: static wins
]
METHODS = ["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS", "get", "Post"]
PATHS = [
    "/batches",
    "/batches/",
    "/batches//",
    "/batches/b_1",
    "/batches/latest",
    "/batches/b_1/",
    "/batches/a%20b",
    "/batches/x y",
    "/batches/é",
    "/batches/a/b",
    "/batches/a.b-c~d",
    "/batches/b_1/cancel",
    "/batches/b_1/results",
    "/batches/b_1/results/",
    "/webhooks/s_1",
    "/budget",
    "/budget/",
    "/budgets",
    "/budgets/",
    "/budget/x",
    "/",
    "",
    "//",
    "/axb/1/2",
    "/a.b/1/2",
    "/batches\n",
    "/nope",
    "/BATCHES",
]
ANSWERS = ["plain", "dict", "tuple", "bytes", "object", "headers", "known", "other", "empty"]


class KnownError(ValueError):
    """Handled by the handler registered for ValueError: handlers are found along the MRO."""


def _event(method: str, path: str, answer: str = "plain", **extra: Any) -> dict[str, Any]:
    return {
        "resource": path,
        "path": path,
        "httpMethod": method,
        "headers": {"Content-Type": "application/json", "Accept-Encoding": "gzip"},
        "multiValueHeaders": {},
        "queryStringParameters": {"answer": answer},
        "requestContext": {"path": f"/v1{path}", "stage": "v1", "requestId": "r-1", "identity": {}},
        "body": None,
        "isBase64Encoded": False,
        **extra,
    }


def _route(app: Any, response: type, index: int) -> Any:
    def handle(**params: str) -> Any:
        answer = app.current_event.query_string_parameters.get("answer")
        if answer == "dict":
            return {"route": index, "params": params}
        if answer == "tuple":
            return {"route": index}, 201
        if answer == "bytes":
            return response(
                status_code=200, content_type="application/octet-stream", body=b"\x00\xff" + str(index).encode()
            )
        if answer == "object":
            return response(status_code=200, content_type="application/json", body={"route": index, "é": [1, 2.5]})
        if answer == "headers":
            return response(status_code=302, headers={"Location": "/x", "X-Many": ["a", "b"], "X-None": None}, body="")
        if answer == "known":
            raise KnownError("bad")
        if answer == "other":
            raise KeyError("missing")
        if answer == "empty":
            return response(status_code=204)
        return response(status_code=200, content_type="application/json", body=json.dumps([index, params]))

    return handle


def _build(app: Any, response: type, not_found: type, *, handlers: bool = True) -> Any:
    for index, (method, rule) in enumerate(RULES):
        app.route(rule, method)(_route(app, response, index))
    if handlers:
        app.exception_handler(ValueError)(lambda e: response(400, "application/json", json.dumps({"known": str(e)})))
        app.exception_handler(Exception)(lambda e: response(500, "application/json", json.dumps(type(e).__name__)))
        app.not_found(lambda _: response(404, "application/json", json.dumps({"no": app.current_event.path})))
    return app


def _answer(app: Any, event: dict[str, Any]) -> Any:
    try:
        out = app.resolve(event, None)
    except Exception as exc:  # an exception no handler takes propagates from both
        return ("raised", type(exc).__name__, str(exc))
    return {**out, "multiValueHeaders": dict(out["multiValueHeaders"])}  # Powertools': a defaultdict


def _pair(*, handlers: bool = True) -> tuple[RestResolver, APIGatewayRestResolver]:
    ours = _build(RestResolver(), Response, RouteNotFoundError, handlers=handlers)
    theirs = _build(APIGatewayRestResolver(), PowertoolsResponse, PowertoolsNotFound, handlers=handlers)
    return ours, theirs


@pytest.mark.parametrize("handlers", [True, False])
@pytest.mark.parametrize("answer", ANSWERS)
def test_every_method_path_and_answer_is_answered_as_powertools_does(handlers, answer):
    ours, theirs = _pair(handlers=handlers)
    for method in METHODS:
        for path in PATHS:
            event = _event(method, path, answer)
            assert _answer(ours, event) == _answer(theirs, event), (method, path)


@settings(max_examples=300, deadline=None)
@given(
    method=st.sampled_from(METHODS),
    path=st.lists(
        st.sampled_from(
            ["", "batches", "b_1", "cancel", "results", "budget", "budgets", "webhooks", "a.b", "x", "latest"]
        )
        | st.text(alphabet="ab._-~%é /\n:@+$[]{}|^<>", max_size=6),
        max_size=5,
    ).map(lambda parts: "/" + "/".join(parts)),
    answer=st.sampled_from(ANSWERS),
)
def test_any_path_is_routed_as_powertools_routes_it(method, path, answer):
    ours, theirs = _pair()
    event = _event(method, path, answer)
    assert _answer(ours, event) == _answer(theirs, event)


def _api_modules() -> list[str]:
    handlers = [*constants.API_HANDLERS.values(), constants.PROVIDER_WEBHOOK_HANDLER]
    return sorted({handler.rsplit(".", 1)[0] for handler in handlers})


@pytest.mark.parametrize("module", _api_modules())
def test_each_api_functions_routes_match_the_same_paths_as_under_powertools(module):
    app = importlib.import_module(module).app
    routes = app.routes()
    assert routes, module
    ours, theirs = RestResolver(), APIGatewayRestResolver()
    for resolver, response in ((ours, Response), (theirs, PowertoolsResponse)):
        for index, (method, rule) in enumerate(routes):
            resolver.route(rule, method)(
                lambda index=index, response=response, **params: response(
                    200, "application/json", json.dumps([index, params])
                )
            )
    paths = {"/nope", "/"}
    for _, rule in routes:
        for value in ("x1", "a.b", "a b", "b_1/extra"):
            path = rule.replace("<", "{").replace(">", "}")
            for name in {part[1:-1] for part in path.split("/") if part.startswith("{")}:
                path = path.replace("{" + name + "}", value)
            paths |= {path, path + "/", path + "/x", path.upper()}
    for method in {"GET", "POST", "DELETE", "PUT"}:
        for path in sorted(paths):
            event = _event(method, path)
            assert _answer(ours, event) == _answer(theirs, event), (module, method, path)


def _sample_events() -> list[dict[str, Any]]:
    events = [json.loads(path.read_text()) for path in sorted(EVENTS.glob("api_*.json"))]
    first = events[0]
    return [
        *events,
        {**first, "headers": None, "queryStringParameters": None, "body": None, "isBase64Encoded": None},
        {**first, "headers": {"X-Mixed-Case": "1", "x-other": "2"}, "queryStringParameters": {"limit": "5"}},
        {**first, "requestContext": {**first["requestContext"], "authorizer": {"owner": "o", "rate_limited": "true"}}},
    ]


@pytest.mark.parametrize("raw", _sample_events())
def test_the_event_reads_as_powertools_event_reads(raw):
    ours, theirs = ApiEvent(raw), APIGatewayProxyEvent(raw)
    assert ours.headers == theirs.headers
    for name in ("content-type", "Content-Type", "CONTENT-TYPE", "x-mixed-case", "X-Other", "host"):
        assert ours.headers.get(name) == theirs.headers.get(name)
        assert (name in ours.headers) == (name in theirs.headers)
    for name in ("query_string_parameters", "path_parameters", "body", "is_base64_encoded", "path", "http_method"):
        assert getattr(ours, name) == getattr(theirs, name), name
    assert ours.get("requestContext") == theirs.get("requestContext")
    ours_context, theirs_context = ours.request_context, theirs.request_context
    assert ours_context.get("authorizer") == theirs_context.get("authorizer")
    for name in ("path", "stage", "request_id"):
        assert getattr(ours_context, name) == getattr(theirs_context, name), name
    assert ours_context.identity.user_arn == theirs_context.identity.user_arn
    assert ours_context.identity.caller == theirs_context.identity.caller


def test_a_missing_request_context_or_identity_fails_as_in_powertools():
    for raw in ({"headers": {}}, {"requestContext": {}}):
        for read in (lambda e: e.request_context.identity, lambda e: e.request_context.path):
            with pytest.raises(KeyError):
                read(APIGatewayProxyEvent(raw))
            with pytest.raises(KeyError):
                read(ApiEvent(raw))
