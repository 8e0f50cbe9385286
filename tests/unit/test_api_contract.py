"""The committed API contract matches the code, and real responses match the contract."""

import json
import types
import typing
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from batch_gateway.client import models as client_models
from batch_gateway.client.errors import error_from_response
from batch_gateway.contract import errors as contract_errors
from batch_gateway.contract import jobs as contract_jobs
from batch_gateway.contract import results as contract_results
from batch_gateway.contract.errors import ERROR_TYPES
from batch_gateway.edge.openapi import render
from batch_gateway.models import api
from batch_gateway.models.api import JobView, ResultItem
from batch_gateway.models.jobs import Chunk, ItemStatus, Job, JobStatus
from batch_gateway.models.results import result_item
from batch_gateway.service.api.query import job_view
from tests.support.services import memory_services

OPENAPI = Path(__file__).resolve().parents[2] / "docs" / "openapi.json"


def test_docs_openapi_json_is_what_the_code_generates():
    assert OPENAPI.read_text() == render(), "run: uv run python -m batch_gateway.edge.openapi > docs/openapi.json"


def test_the_job_view_the_api_returns_matches_the_contract():
    services = memory_services()
    for model in ("claude-x", "claude-sonnet-4-20250514"):  # no price (total null, reason); priced (zero so far)
        job = Job(id="job_1", owner="o", provider="anthropic", model=model, metadata={"a": "b"})
        view = job_view(services, job, [Chunk(job_id="job_1", index=0, request_count=2)])
        assert JobView.model_validate(view).model_dump(exclude_unset=True) == view


def test_result_items_match_the_contract():
    for item in (
        result_item("a", ItemStatus.SUCCEEDED, outputs=[{"type": "text", "text": "x"}]),
        result_item("b", ItemStatus.EXPIRED),
    ):
        assert ResultItem.model_validate(item).model_dump(exclude_unset=True) == item
    retried = {  # a retrying job's item (decision 0066): its earlier attempts
        **result_item("c", ItemStatus.SUCCEEDED),
        "attempt_count": 2,
        "attempts": [{"attempt": 1, "status": "expired", **{k: result_item("c", ItemStatus.EXPIRED)[k] for k in (
            "finish_details", "token_usage")}}],
    }  # fmt: skip
    assert ResultItem.model_validate(retried).model_dump(exclude_unset=True) == retried


def test_the_documented_create_body_and_the_runtime_check_know_the_same_fields():
    from batch_gateway.edge.openapi_create import schemas, variants
    from batch_gateway.models.requests import FIELDS, REQUIRED

    for name, _, endpoint in variants():
        schema = schemas()[name]
        assert set(schema["properties"]) == {*FIELDS, "dry_run"}  # dry_run is read before the body's check
        assert set(schema["required"]) == set(REQUIRED) | ({"endpoint"} if endpoint else set())


# --- one shape per concept (decision 0105) ------------------------------------------------------------------------
# The job view, the result item and the error are defined once, as TypedDicts in batch_gateway.contract. The server
# builds them (mypy checks Job.public(), result_item() and to_body() against them); the documented schemas
# (models.api, rendered into docs/openapi.json) and the SDK's models are held to them here, field by field: the same
# names, and wire types compared as JSON kinds (str, a Literal, a StrEnum and a datetime are all a JSON string).


def _kinds(hint: Any) -> frozenset[Any]:
    """A type as the JSON it stands for: a set of alternatives, each a scalar kind ("string", "integer", "number",
    "boolean", "null", "any") or ("array", kinds), ("map", kinds), ("object", fields)."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any:
        return frozenset({"any"})
    if hint is None or hint is type(None):
        return frozenset({"null"})
    if origin in (typing.Union, types.UnionType):
        return frozenset().union(*map(_kinds, args))
    if origin is typing.Annotated:
        return _kinds(args[0])
    if origin is typing.Literal:
        assert all(isinstance(a, str) for a in args), hint
        return frozenset({"string"})
    if origin is list:
        return frozenset({("array", _kinds(args[0]))})
    if origin is dict or hint is dict:
        return frozenset({("map", _kinds(args[1]) if args else frozenset({"any"}))})
    assert isinstance(hint, type), hint
    if typing.is_typeddict(hint) or issubclass(hint, BaseModel):
        return frozenset({("object", _fields(hint))})
    for kind, classes in (("boolean", (bool,)), ("string", (str, datetime)), ("integer", (int,)), ("number", (float,))):
        if issubclass(hint, classes):
            return frozenset({kind})
    raise AssertionError(f"no JSON kind for {hint!r}")


def _fields(shape: type) -> tuple[tuple[str, bool, frozenset[Any]], ...]:
    """(name, required, kinds) of a TypedDict's keys or a pydantic model's fields."""
    if typing.is_typeddict(shape):
        hints = typing.get_type_hints(shape)
        return tuple((name, name in shape.__required_keys__, _kinds(hints[name])) for name in hints)
    assert issubclass(shape, BaseModel)
    return tuple((name, f.is_required(), _kinds(f.annotation)) for name, f in shape.model_fields.items())


def _name(kind: Any) -> str:
    return kind if isinstance(kind, str) else kind[0]


def _drift(contract: frozenset[Any], other: frozenset[Any], where: str, *, documented: bool) -> list[str]:
    """How ``other`` differs from the contract's kinds. The SDK (``documented=False``) must accept every value the
    contract allows (a wider type is fine: ``dict[str, Any]`` takes any object, a float an integer); the documented
    schema must say exactly what the contract says (a key the server may leave out may also be null there: a
    pydantic field with a None default)."""
    problems = []
    for kind in contract:
        same = [o for o in other if _name(o) == _name(kind)]
        if not documented and not same:
            wider = {"any", "number" if kind == "integer" else "any", ("map", frozenset({"any"}))}
            same = [o for o in other if o in wider and (_name(kind) == "object" or not isinstance(o, tuple))]
        if not same:
            problems.append(f"{where}: {_name(kind)} not accepted (it takes {', '.join(sorted(map(_name, other)))})")
        elif isinstance(kind, tuple) and _name(same[0]) == _name(kind):
            if _name(kind) == "object":
                problems += _drift_object(kind[1], same[0][1], where, documented=documented)
            else:
                problems += _drift(kind[1], same[0][1], f"{where}[]", documented=documented)
    if documented:
        extra = {_name(o) for o in other} - {_name(k) for k in contract}
        problems += [f"{where}: {name} is not in the contract" for name in sorted(extra)]
    return problems


def _drift_object(contract: tuple[Any, ...], other: tuple[Any, ...], where: str, *, documented: bool) -> list[str]:
    ours, theirs = {f[0]: f for f in contract}, {f[0]: f for f in other}
    problems = [f"{where}.{name}: missing" for name in ours if name not in theirs]
    problems += [f"{where}.{name}: not in the contract" for name in theirs if name not in ours]
    for name in ours.keys() & theirs.keys():
        (_, required, kinds), (_, their_required, their_kinds) = ours[name], theirs[name]
        if their_required and not required:
            problems.append(f"{where}.{name}: required, but the server may leave it out")
        if documented and not required:
            their_kinds = their_kinds - {"null"} if "null" not in kinds else their_kinds
        problems += _drift(kinds, their_kinds, f"{where}.{name}", documented=documented)
    return sorted(problems)


def _drift_between(contract: type, other: type, *, documented: bool) -> list[str]:
    return _drift_object(_fields(contract), _fields(other), contract.__name__, documented=documented)


SHAPES = [  # the contract's shape, the documented schema (models.api), the SDK's model
    (contract_jobs.JobView, api.JobView, client_models.Job),
    (contract_jobs.JobsPage, api.JobsPage, client_models.JobsPage),
    (contract_results.ResultItem, api.ResultItem, client_models.ResultItem),
    (contract_results.ResultsPage, api.ResultsPage, client_models.ResultsPage),
    (contract_errors.ErrorBody, api.ErrorBody, None),  # the SDK reads errors into the contract's own classes
]


@pytest.mark.parametrize(("contract", "documented"), [(c, d) for c, d, _ in SHAPES], ids=lambda s: s.__name__)
def test_the_documented_schema_is_the_contracts_shape(contract, documented):
    assert _drift_between(contract, documented, documented=True) == []


@pytest.mark.parametrize(("contract", "sdk"), [(c, s) for c, _, s in SHAPES if s is not None], ids=lambda s: s.__name__)
def test_the_sdk_reads_every_field_of_the_contracts_shape(contract, sdk):
    assert _drift_between(contract, sdk, documented=False) == []


@pytest.mark.parametrize("contract", [c for c, _, _ in SHAPES], ids=lambda s: s.__name__)
def test_docs_openapi_json_names_the_contracts_fields(contract):
    """The committed document, read as a client generator would: the same keys, and required ones are sent."""
    schemas = json.loads(OPENAPI.read_text())["components"]["schemas"]

    def check(shape: type, name: str) -> list[str]:
        schema, problems = schemas[name], []
        fields = {f[0]: f for f in _fields(shape)}
        if set(schema["properties"]) != set(fields):
            problems.append(f"{name}: {sorted(schema['properties'])} != {sorted(fields)}")
        problems += [f"{name}.{key}: required but may be left out" for key in schema.get("required", [])
                     if key in fields and not fields[key][1]]  # fmt: skip
        hints = typing.get_type_hints(shape)
        for key, prop in schema["properties"].items():
            ref = next((r["$ref"] for r in _refs(prop)), None)
            nested = [h for h in _typeddicts(hints.get(key))]
            if ref and nested:
                problems += check(nested[0], ref.rsplit("/", 1)[1])
        return problems

    assert check(contract, contract.__name__) == []


def _refs(schema: Any) -> list[dict[str, str]]:
    if isinstance(schema, dict):
        return ([schema] if "$ref" in schema else []) + [r for v in schema.values() for r in _refs(v)]
    return [r for v in schema for r in _refs(v)] if isinstance(schema, list) else []


def _typeddicts(hint: Any) -> list[type]:
    if typing.is_typeddict(hint):
        return [hint]
    return [t for arg in typing.get_args(hint) for t in _typeddicts(arg)]


def test_the_documented_job_statuses_are_the_contracts():
    status = typing.get_args(api.JobView.model_fields["status"].annotation)
    assert set(status) == {s.value for s in JobStatus}
    assert set(typing.get_args(api.ResultItem.model_fields["status"].annotation)) == {s.value for s in ItemStatus}


def test_the_drift_check_sees_a_missing_field_a_narrower_type_and_a_field_the_contract_lacks():
    """The check itself: it fails on what drift looks like (on a shape of its own, so that a field added to the job
    view touches no line here)."""

    class Shape(typing.TypedDict):
        id: str
        cost_usd: float | None
        retry: contract_jobs.RetryView | None
        webhook: contract_jobs.JobWebhookView | None

    class Drifted(BaseModel):
        id: str
        cost_usd: int | None = None  # narrower than the contract's float
        retry: dict[str, Any]  # required, and null not accepted
        # no webhook at all

    assert _drift_between(Shape, Drifted, documented=False) == [
        "Shape.cost_usd: number not accepted (it takes integer, null)",
        "Shape.retry: null not accepted (it takes map)",
        "Shape.webhook: missing",
    ]

    class DocumentedMore(api.RetryView):
        backoff: int  # the documented schema promises a field the server never sends

    assert _drift_between(contract_jobs.RetryView, DocumentedMore, documented=True) == [
        "RetryView.backoff: not in the contract"
    ]


@pytest.mark.parametrize("error_type", sorted(ERROR_TYPES))
def test_the_sdk_rebuilds_every_error_from_the_body_the_server_answers(error_type):
    cls = ERROR_TYPES[error_type]
    sent = cls("it went wrong", details=[{"field": "model", "message": "unknown"}])
    body = sent.to_body()
    api.ErrorBody.model_validate(body)
    rebuilt = error_from_response(cls.http_status, json.dumps(body).encode(), request_id="r-1")
    # its wire class, and also the status class the official SDKs name (PermissionDeniedError, ...: decision 0131)
    assert isinstance(rebuilt, cls) and rebuilt.type == cls.type and rebuilt.status_code == cls.http_status
    assert (rebuilt.message, rebuilt.details) == (sent.message, sent.details)
