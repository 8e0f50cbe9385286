"""The Keys admin handler and the key authorizer in-process against moto (decision 0045): POST /keys answers a key
once, GET /keys lists no key material, DELETE /keys/{id} revokes; the REQUEST authorizer allows a live key sent as
``Authorization: Bearer`` or ``x-api-key`` with the owner as principal, denies an unknown or revoked one, raises
``Unauthorized`` (API Gateway's 401) without a key, and no key appears in any log line."""

from __future__ import annotations

import copy
import json
import uuid

import boto3
import pytest

from batch_gateway import wiring
from batch_gateway.constants import ENV_KEY_PEPPER_SECRET_ARN
from tests.support.events import call, load_event

OWNER = "arn:aws:iam::123456789012:user/tenant-a"
METHOD_ARN = "arn:aws:execute-api:eu-west-1:123456789012:abc123/v1/POST/openai/v1/batches"


@pytest.fixture
def keys_env(aws, monkeypatch):
    secrets = boto3.client("secretsmanager", region_name="us-east-1")
    # a fresh name each test (id() of a fixture object can repeat once the old one is freed)
    arn = secrets.create_secret(Name=f"pepper-{uuid.uuid4().hex}", SecretString="a-pepper")["ARN"]
    monkeypatch.setenv(ENV_KEY_PEPPER_SECRET_ARN, arn)
    wiring.reset()
    yield
    wiring.reset()


def _keys_event(method: str, path: str, body: dict | None = None, key_id: str | None = None) -> dict:
    event = copy.deepcopy(load_event("api_create.json"))
    resource = "/keys/{id}" if key_id else "/keys"
    event.update(
        resource=resource,
        path=path,
        httpMethod=method,
        body=json.dumps(body) if body is not None else None,
        pathParameters={"id": key_id} if key_id else None,
    )
    event["requestContext"].update(resourcePath=resource, httpMethod=method, path=f"/v1{path}")
    return event


def _authorizer_event(headers: dict[str, str]) -> dict:
    return {
        "type": "REQUEST",
        "methodArn": METHOD_ARN,
        "resource": "/openai/v1/{proxy+}",
        "path": "/openai/v1/batches",
        "httpMethod": "POST",
        "headers": headers,
        "requestContext": {"apiId": "abc123", "stage": "v1", "accountId": "123456789012"},
    }


def _key_mount_event(
    method: str, path: str, key: str, owner: str, body: dict | None = None, admin: bool = False
) -> dict:
    """A request through the key mount (decision 0134) as API Gateway hands it on: resource and path under /k, the
    Bearer key in the headers, the authorizer's context, no IAM identity."""
    event = _keys_event(method, path, body)
    resource = "/k" + event["resource"]
    event.update(resource=resource, path="/k" + path)
    event["headers"] = {**(event.get("headers") or {}), "Authorization": f"Bearer {key}"}
    event["requestContext"].update(resourcePath=resource, path=f"/v1/k{path}")
    event["requestContext"]["identity"] = {"sourceIp": "127.0.0.1"}
    event["requestContext"]["authorizer"] = {
        "owner": owner,
        "key_id": "key_0000000000000001",
        "admin": "true" if admin else "false",
        "principalId": owner,
    }
    return event


def _create(ctx, name: str = "ci") -> dict:
    from lambdas import keys

    code, body = call(keys.handler, _keys_event("POST", "/keys", {"owner": OWNER, "name": name}), ctx)
    assert code == 201, body
    return body


def test_keys_are_created_once_listed_without_material_and_revoked(keys_env, ctx):
    from lambdas import keys

    created = _create(ctx)
    assert created["key"].startswith("bgk_") and created["owner"] == OWNER and created["name"] == "ci"
    code, listed = call(keys.handler, _keys_event("GET", "/keys"), ctx)
    assert code == 200 and [k["id"] for k in listed["keys"]] == [created["id"]]
    assert created["key"] not in json.dumps(listed) and "key" not in listed["keys"][0]
    code, revoked = call(keys.handler, _keys_event("DELETE", f"/keys/{created['id']}", key_id=created["id"]), ctx)
    assert code == 200 and revoked["revoked_at"]
    code, missing = call(
        keys.handler, _keys_event("DELETE", "/keys/key_0000000000000000", key_id="key_0000000000000000"), ctx
    )
    assert code == 404 and missing["error"]["type"] == "not_found"


def test_a_bad_owner_is_a_400_naming_the_field(keys_env, ctx):
    from lambdas import keys

    code, body = call(keys.handler, _keys_event("POST", "/keys", {"owner": "alice"}), ctx)
    assert code == 400 and body["error"]["details"][0]["field"] == "owner"


@pytest.mark.parametrize("header", ["Authorization", "authorization", "x-api-key", "X-Api-Key"])
def test_a_live_key_in_either_header_is_allowed_as_its_owner(keys_env, ctx, header):
    from lambdas import authorizer

    created = _create(ctx)
    value = f"Bearer {created['key']}" if header.lower() == "authorization" else created["key"]
    answer = authorizer.handler(_authorizer_event({header: value}), ctx)
    assert answer["principalId"] == OWNER
    assert answer["context"] == {"owner": OWNER, "key_id": created["id"], "admin": "false"}
    [statement, *_] = answer["policyDocument"]["Statement"]
    assert statement["Effect"] == "Allow" and statement["Action"] == "execute-api:Invoke"
    assert statement["Resource"] == "arn:aws:execute-api:eu-west-1:123456789012:abc123/v1/*"


def test_an_unknown_or_revoked_key_is_denied(keys_env, ctx):
    from lambdas import authorizer, keys

    unknown = authorizer.handler(_authorizer_event({"x-api-key": "bgk_" + "B" * 43}), ctx)
    assert unknown["policyDocument"]["Statement"][0]["Effect"] == "Deny"
    created = _create(ctx)
    call(keys.handler, _keys_event("DELETE", f"/keys/{created['id']}", key_id=created["id"]), ctx)
    wiring.reset()  # a fresh instance: nothing cached
    revoked = authorizer.handler(_authorizer_event({"x-api-key": created["key"]}), ctx)
    assert revoked["policyDocument"]["Statement"][0]["Effect"] == "Deny"


@pytest.mark.parametrize("headers", [{}, {"Authorization": "Bearer "}, {"Authorization": "Basic abc"}])
def test_no_key_raises_unauthorized_for_api_gateways_401(keys_env, ctx, headers):
    from lambdas import authorizer

    with pytest.raises(Exception, match=r"\AUnauthorized\Z"):
        authorizer.handler(_authorizer_event(headers), ctx)


def test_no_key_appears_in_any_log_line(keys_env, ctx, capsys):
    from lambdas import authorizer, keys

    created = _create(ctx)
    authorizer.handler(_authorizer_event({"Authorization": f"Bearer {created['key']}"}), ctx)
    authorizer.handler(_authorizer_event({"x-api-key": created["key"][:-1] + "Z"}), ctx)
    call(keys.handler, _keys_event("GET", "/keys"), ctx)
    out = capsys.readouterr()
    assert created["key"] not in out.out + out.err
    assert created["key"][4:20] not in out.out + out.err


def test_a_key_over_its_rate_is_allowed_but_marked_so_the_door_answers_429(keys_env, ctx, monkeypatch):
    from lambdas import authorizer

    monkeypatch.setenv("API_KEY_RATE_LIMIT", "2")
    wiring.reset()
    created = _create(ctx)
    answers = [authorizer.handler(_authorizer_event({"x-api-key": created["key"]}), ctx) for _ in range(5)]
    limited = [a["context"].get("rate_limited") == "true" for a in answers]
    assert limited[:2] == [False, False]  # within the limit, whichever second they fall in
    assert sum(limited) >= 1  # five calls span at most two one-second windows of two each
    assert all(a["policyDocument"]["Statement"][0]["Effect"] == "Allow" for a in answers)


KEY_MOUNT_ADMIN = {  # method ARN of a key-mount admin route -> denied to a key without the admin flag (decision 0134)
    "GET/k/keys": True,
    "POST/k/keys": True,
    "DELETE/k/keys/key_0123456789abcdef": True,
    "GET/k/budgets": True,
    "DELETE/k/budgets": True,
    "POST/k/limits": True,
    "GET/k/budget": False,  # the caller's own
    "GET/k/limit": False,
    "GET/k/batches": False,
    "POST/k/batches/job_1/cancel": False,
    "POST/openai/v1/batches": False,  # the doors are not the key mount
    "GET/anthropic/v1/messages/batches": False,
}


def _denied(policy: dict, method_arn: str) -> bool:
    """IAM's evaluation of the authorizer's policy for one method ARN, as API Gateway applies it (a Deny wins)."""
    from moto.iam.access_control import IAMPolicy, PermissionResult

    result = IAMPolicy(json.dumps(policy)).is_action_permitted("execute-api:Invoke", method_arn)
    return bool(result != PermissionResult.PERMITTED)


@pytest.mark.parametrize("admin", [False, True])
def test_the_key_mounts_admin_routes_are_denied_to_a_key_without_the_admin_flag(keys_env, ctx, admin):
    from lambdas import authorizer, keys

    code, created = call(keys.handler, _keys_event("POST", "/keys", {"owner": OWNER, "admin": admin}), ctx)
    assert code == 201 and created["admin"] is admin
    answer = authorizer.handler(_authorizer_event({"Authorization": f"Bearer {created['key']}"}), ctx)
    assert answer["context"]["admin"] == ("true" if admin else "false")
    stage = "arn:aws:execute-api:eu-west-1:123456789012:abc123/v1/"
    for route, admin_only in KEY_MOUNT_ADMIN.items():
        assert _denied(answer["policyDocument"], stage + route) == (admin_only and not admin), route


def test_the_admin_flag_is_listed_and_older_keys_without_it_are_not_admins(keys_env, ctx):
    from lambdas import keys

    plain = _create(ctx)
    code, listed = call(keys.handler, _keys_event("GET", "/keys"), ctx)
    assert code == 200 and [k["admin"] for k in listed["keys"]] == [False]
    assert plain["admin"] is False
    table = boto3.client("dynamodb", region_name="us-east-1")
    name = wiring.settings().table
    items = table.scan(TableName=name)["Items"]
    for item in items:  # a key from before the flag: its items carry no admin attribute
        if item["pk"]["S"].startswith("APIKEY"):
            item.pop("admin", None)
            table.put_item(TableName=name, Item=item)
    wiring.reset()
    code, listed = call(keys.handler, _keys_event("GET", "/keys"), ctx)
    assert code == 200 and [k["admin"] for k in listed["keys"]] == [False]


@pytest.mark.parametrize("admin", ["true", 1, "yes", []])
def test_an_admin_flag_that_is_not_a_boolean_is_a_400_naming_it(keys_env, ctx, admin):
    from lambdas import keys

    code, body = call(keys.handler, _keys_event("POST", "/keys", {"owner": OWNER, "admin": admin}), ctx)
    assert code == 400 and body["error"]["details"][0]["field"] == "admin"


def test_an_admin_key_mints_plain_keys_but_not_admin_keys(keys_env, ctx):
    from lambdas import keys

    admin = "arn:aws:iam::123456789012:user/ops"
    code, plain = call(keys.handler, _key_mount_event("POST", "/keys", "bgk_x", admin, {"owner": OWNER}, True), ctx)
    assert code == 201 and plain["admin"] is False and plain["owner"] == OWNER
    code, refused = call(
        keys.handler, _key_mount_event("POST", "/keys", "bgk_x", admin, {"owner": OWNER, "admin": True}, True), ctx
    )
    assert code == 403 and refused["error"]["type"] == "forbidden" and "SigV4" in refused["error"]["message"]
    code, listed = call(keys.handler, _keys_event("GET", "/keys"), ctx)
    assert [k["admin"] for k in listed["keys"]] == [False]  # the refused one was never stored


def test_the_key_mount_routes_like_the_native_route_and_logs_no_key(keys_env, ctx, capsys):
    from lambdas import keys

    created = _create(ctx)
    code, listed = call(keys.handler, _key_mount_event("GET", "/keys", created["key"], OWNER, admin=True), ctx)
    assert code == 200 and [k["id"] for k in listed["keys"]] == [created["id"]]
    out = capsys.readouterr()
    assert created["key"] not in out.out + out.err and created["key"][4:20] not in out.out + out.err
