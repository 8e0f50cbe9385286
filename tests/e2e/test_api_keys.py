"""Gateway API keys through the local stack (decision 0045): an admin (IAM allowed on /keys) creates keys, a tenant
cannot manage them (403 from IAM, as API Gateway answers); a key works on both doors with either header; no key is a
401 and an unknown key a 403 from the authorizer; a revoked key is refused within the authorizer's cache time; the
listing shows no key material; a key's requests are its owner's (tenant isolation of the SigV4 API); a key that
cannot be checked (Secrets Manager or the table unreachable) is a 503 both SDKs read and retry; and no key appears in
any function's log."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import anthropic
import openai
import pytest
import requests

from batch_gateway_dev.local.stack import DEFAULT_CALLER
from tests.support.api_caller import Caller

DENIED = {"message": "User is not authorized to access this resource"}
DOOR_LISTS = {"anthropic": "/anthropic/v1/messages/batches", "openai": "/openai/v1/batches"}


@pytest.fixture
def admin(stack, sim) -> Caller:
    return Caller(stack.info()["api_url"], stack.caller(DEFAULT_CALLER))


def door_get(caller: Caller, path: str, key: str | None, header: str = "x-api-key"):
    headers = {}
    if key is not None:
        headers = {"Authorization": f"Bearer {key}"} if header == "authorization" else {"x-api-key": key}
    headers["anthropic-version"] = "2023-06-01"
    return caller.request("GET", path, headers=headers, sign=False)


def test_an_admin_manages_keys_and_a_tenant_cannot(admin, alice):
    created = admin.request("POST", "/keys", {"owner": alice.principal, "name": "ci"})
    assert created.status_code == 201, created.text
    key = created.json()["key"]
    listed = admin.request("GET", "/keys")
    assert listed.status_code == 200 and created.json()["id"] in [k["id"] for k in listed.json()["keys"]]
    assert key not in listed.text
    for method, path, body in (("POST", "/keys", {"owner": alice.principal}), ("GET", "/keys", None)):
        refused = alice.request(method, path, body)
        assert refused.status_code == 403, (method, path, refused.text)
        assert "execute-api:Invoke" in refused.text
    assert alice.request("DELETE", f"/keys/{created.json()['id']}").status_code == 403
    assert alice.request("GET", "/batches").status_code == 200  # the tenant's own routes still work


@pytest.mark.parametrize("door", sorted(DOOR_LISTS))
@pytest.mark.parametrize("header", ["authorization", "x-api-key"])
def test_a_key_works_on_both_doors_with_either_header(stack, alice, door, header):
    key = stack.api_key(alice)
    answer = door_get(alice, DOOR_LISTS[door], key, header)
    assert answer.status_code == 200, answer.text


def test_no_key_is_401_and_an_unknown_key_is_403(stack, alice):
    path = DOOR_LISTS["openai"]
    missing = door_get(alice, path, None)
    assert (missing.status_code, missing.json()) == (401, {"message": "Unauthorized"})
    unknown = door_get(alice, path, "bgk_" + "x" * 43)
    assert (unknown.status_code, unknown.json()) == (403, DENIED)


# What the authorizer reads: Secrets Manager (the pepper its key hashes are keyed with) and the table (the key's item)
KEY_STORES = {"secrets_manager": "AWS_ENDPOINT_URL_SECRETS_MANAGER", "table": "AWS_ENDPOINT_URL_DYNAMODB"}


@pytest.mark.parametrize("unreachable", sorted(KEY_STORES))
def test_a_key_that_cannot_be_checked_is_a_503_in_each_doors_error_shape_that_the_sdks_retry(stack, alice, unreachable):
    """Secrets Manager (the pepper) or the table (the key's item) unreachable from the authorizer: the authorizer
    raises, and API Gateway answers the template's gateway response for it (decision 0102), not a bare 500. Each
    door's SDK reads it as a server error (503, which both retry) with the gateway's message."""
    variable = KEY_STORES[unreachable]
    info, key = stack.info(), stack.api_key(alice)
    openai_door = openai.OpenAI(base_url=info["openai_base_url"], api_key=key, max_retries=0)
    anthropic_door = anthropic.Anthropic(base_url=info["anthropic_base_url"], api_key=key, max_retries=0)
    authorizer = stack.function("authorizer")
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))  # bound and never listening: every connection to it is refused
        endpoint = f"http://127.0.0.1:{closed.getsockname()[1]}"
        stack.set_function_environment(authorizer, {variable: endpoint})  # fresh instances
        try:
            with pytest.raises(openai.InternalServerError) as openai_refused:
                openai_door.batches.list()
            with pytest.raises(anthropic.InternalServerError) as anthropic_refused:
                anthropic_door.messages.batches.list()
        finally:
            stack.set_function_environment(authorizer, {variable: None})
    from_openai, from_anthropic = openai_refused.value, anthropic_refused.value
    assert from_openai.status_code == 503, from_openai.body
    assert from_openai.code == "transient_error" and "retry" in from_openai.body["message"]  # OpenAI's error object
    assert from_anthropic.status_code == 503, from_anthropic.body
    assert from_anthropic.body["type"] == "error" and from_anthropic.body["error"]["type"] == "api_error"
    assert "retry" in from_anthropic.body["error"]["message"]
    assert door_get(alice, DOOR_LISTS["openai"], key).status_code == 200  # reachable again: the key works


def test_a_revoked_key_is_refused_within_the_cache_time(stack, admin, alice):
    created = admin.request("POST", "/keys", {"owner": alice.principal}).json()
    assert door_get(alice, DOOR_LISTS["anthropic"], created["key"]).status_code == 200
    assert admin.request("DELETE", f"/keys/{created['id']}").status_code == 200
    deadline = time.monotonic() + 40  # the authorizer's cache is 30 s
    while (answer := door_get(alice, DOOR_LISTS["anthropic"], created["key"])).status_code == 200:
        assert time.monotonic() < deadline, "the revoked key still works after the cache time"
        time.sleep(1)
    assert (answer.status_code, answer.json()) == (403, DENIED)
    assert admin.request("GET", "/keys").json()["keys"][-1]["revoked_at"]


def test_a_keys_requests_are_its_owners_and_no_one_elses(stack, alice, bob):
    key = stack.api_key(alice)
    made = alice.request(
        "POST",
        "/anthropic/v1/messages/batches",
        {
            "requests": [
                {
                    "custom_id": "a",
                    "params": {
                        "model": "claude-sonnet-4-20250514",
                        "max_tokens": 8,
                        "messages": [{"role": "user", "content": "hi"}],
                    },
                }
            ]
        },
        headers={"x-api-key": key, "anthropic-version": "2023-06-01"},
        sign=False,
    )
    assert made.status_code == 200, made.text
    batch_id = made.json()["id"]
    assert alice.request("GET", f"/batches/{batch_id}").status_code == 200  # the owner's job, through SigV4
    assert bob.request("GET", f"/batches/{batch_id}").status_code == 404
    bobs = door_get(bob, f"/anthropic/v1/messages/batches/{batch_id}", stack.api_key(bob))
    assert bobs.status_code == 404


def test_no_key_appears_in_any_functions_log(stack, admin, alice):
    created = admin.request("POST", "/keys", {"owner": alice.principal, "name": "logs"}).json()
    for path in DOOR_LISTS.values():
        door_get(alice, path, created["key"])
        door_get(alice, path, created["key"], "authorization")
    admin.request("DELETE", f"/keys/{created['id']}")
    logs = stack.logs()
    assert "api key accepted" in logs or not any(
        r.path.startswith(("/openai/", "/anthropic/")) for r in stack.front.routes
    )
    assert created["key"] not in logs and created["key"][4:24] not in logs
    for module in ("keys", "authorizer"):
        assert created["key"] not in stack.logs(stack.function(module))


def _cli(stack, user: str, *args: str, admin: bool = False) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "BATCH_GATEWAY_ENDPOINT": stack.info()["api_url"],
        **stack.caller(user, admin=admin).as_env(),
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_SESSION_TOKEN": "",
        "AWS_ENDPOINT_URL": "",
    }
    return subprocess.run(
        [sys.executable, "-m", "batch_gateway.cli", *args], env=env, capture_output=True, text=True, timeout=60
    )


def test_the_cli_creates_lists_and_revokes_keys_and_a_tenant_is_refused(stack, alice):
    made = _cli(stack, "key-admin", "keys", "create", "--owner", alice.principal, "--name", "cli", "--json", admin=True)
    assert made.returncode == 0, made.stderr
    created = json.loads(made.stdout)
    assert created["key"].startswith("bgk_") and created["owner"] == alice.principal
    listed = _cli(stack, "key-admin", "keys", "list", "--json", admin=True)
    assert listed.returncode == 0 and created["id"] in [k["id"] for k in json.loads(listed.stdout)]
    assert created["key"] not in listed.stdout
    table = _cli(stack, "key-admin", "keys", "list", admin=True)
    assert created["id"] in table.stdout and "cli" in table.stdout and created["key"] not in table.stdout
    revoked = _cli(stack, "key-admin", "keys", "revoke", created["id"], admin=True)
    assert revoked.returncode == 0 and "revoked" in revoked.stdout
    refused = _cli(stack, "alice", "keys", "create", "--owner", alice.principal)
    assert refused.returncode == 1, refused.stdout
    assert "not authorized" in refused.stderr and "bgk_" not in refused.stdout
    plain = _cli(stack, "key-admin", "keys", "create", "--owner", alice.principal, admin=True)
    assert plain.returncode == 0 and plain.stdout.strip().startswith("bgk_")


def test_a_key_over_its_rate_gets_429_and_another_key_does_not(stack, alice, bob):
    authorizer = stack.function("authorizer")
    stack.set_function_environment(authorizer, {"API_KEY_RATE_LIMIT": "2"})
    try:
        greedy, other = stack.api_key(alice), stack.api_key(bob)
        url = stack.info()["api_url"] + DOOR_LISTS["anthropic"]
        headers = {"x-api-key": greedy, "anthropic-version": "2023-06-01"}
        with ThreadPoolExecutor(8) as pool:  # eight at once: at most two one-second windows of two each
            codes = list(pool.map(lambda _: requests.get(url, headers=headers, timeout=60).status_code, range(8)))
        assert set(codes) == {200, 429} and codes.count(200) <= 4, codes
        assert door_get(bob, DOOR_LISTS["anthropic"], other).status_code == 200
    finally:
        stack.set_function_environment(authorizer, {"API_KEY_RATE_LIMIT": None})
