"""The key mount (decision 0134): the native API again under ``/k``, reached with ``Authorization: Bearer bgk_...``
through the key authorizer, as a browser console calls it: plain HTTP, no SigV4, CORS for the console's origin only.
The console's origin is the local stack's own console server (decision 0138), as on AWS it is the distribution's."""

from __future__ import annotations

import json
from typing import Any

import pytest
import requests

from batch_gateway.constants import KEY_MOUNT_PREFIX
from tests.support.api_caller import Caller, seed_body

DENIED = {"message": "User is not authorized to access this resource"}  # API Gateway: the authorizer's Deny


class KeyCaller(Caller):
    """Calls the key mount with a gateway key (``Authorization: Bearer``), never signing: the console's way."""

    def __init__(self, api_url: str, key: str | None, principal: str = "", *, origin: str) -> None:
        self.base_url = api_url + KEY_MOUNT_PREFIX
        self.origin = origin
        self.principal = principal
        self.key = key
        self.http = requests.Session()

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        raw: bytes | None = None,
        headers: dict[str, str] | None = None,
        sign: bool = False,
    ) -> requests.Response:
        assert not sign, "the key mount takes a gateway key, not SigV4"
        sent = {"Content-Type": "application/json", "Origin": self.origin, **(headers or {})}
        if self.key is not None:
            sent["Authorization"] = f"Bearer {self.key}"
        data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
        return self.http.request(method, self.base_url + path, data=data, headers=sent, timeout=60)


@pytest.fixture
def alice_by_key(stack, alice) -> KeyCaller:
    return KeyCaller(stack.info()["api_url"], stack.api_key(alice), alice.principal, origin=stack.console_origin)


def test_a_job_made_by_key_is_its_owners_read_by_key_and_by_sigv4(stack, alice, bob, alice_by_key, settled):
    made = alice_by_key.request("POST", "/batches", seed_body(), headers={"Idempotency-Key": "key-mount-1"})
    assert made.status_code == 202, made.text
    job = made.json()
    # the key's owner's job, exactly as if alice had signed: she sees it with SigV4, bob does not
    assert alice.request("GET", f"/batches/{job['id']}").status_code == 200
    assert bob.request("GET", f"/batches/{job['id']}").status_code == 404

    done = alice_by_key.wait(job["id"])
    assert done["status"] == "finished", done
    assert len(alice_by_key.all_results(job["id"])) == 5
    # The SigV4 mount still works as before, on the same job, with no CORS headers.
    signed = alice.request("GET", f"/batches/{job['id']}")
    assert signed.status_code == 200 and signed.json()["status"] == "finished"
    assert "Access-Control-Allow-Origin" not in signed.headers

    listed = alice_by_key.request("GET", "/batches?limit=100").json()["batches"]
    signed_list = alice.request("GET", "/batches?limit=100").json()["batches"]
    assert job["id"] in [j["id"] for j in listed] and [j["id"] for j in listed] == [j["id"] for j in signed_list]
    theirs = bob.create(seed_body(requests={"x": "hi"}))
    assert alice_by_key.request("GET", f"/batches/{theirs['id']}").status_code == 404  # another owner's job
    assert alice_by_key.request("POST", f"/batches/{theirs['id']}/cancel").status_code == 404
    assert theirs["id"] not in [j["id"] for j in alice_by_key.request("GET", "/batches?limit=100").json()["batches"]]


def test_the_mounts_answers_carry_the_console_origins_cors_headers(stack, alice_by_key):
    answer = alice_by_key.request("GET", "/budget")
    assert answer.status_code == 200, answer.text
    assert answer.headers["Access-Control-Allow-Origin"] == stack.console_origin
    assert "Retry-After" in answer.headers["Access-Control-Expose-Headers"]
    missing = alice_by_key.request("GET", "/batches/job_0123456789abcdef")  # the service's own 404 too
    assert missing.status_code == 404 and missing.headers["Access-Control-Allow-Origin"] == stack.console_origin


def test_admin_routes_by_key_need_an_admin_key(stack, alice, alice_by_key):
    api_url = stack.info()["api_url"]
    for method, path in [("GET", "/keys"), ("GET", "/budgets"), ("GET", "/limits"), ("DELETE", "/keys/key_0")]:
        refused = alice_by_key.request(method, path)
        assert (refused.status_code, refused.json()) == (403, DENIED), (method, path)
    assert alice_by_key.request("GET", "/limit").status_code == 200  # the caller's own: any key

    admin_key = stack.api_key(stack.caller("ops", admin=True), admin=True)
    admin = KeyCaller(api_url, admin_key, origin=stack.console_origin)
    listed = admin.request("GET", "/keys")
    assert listed.status_code == 200, listed.text
    assert any(k["admin"] for k in listed.json()["keys"])
    assert admin.request("GET", "/budgets").status_code == 200
    assert admin.request("GET", "/limits").status_code == 200

    minted = admin.request("POST", "/keys", {"owner": alice.principal, "name": "by-admin-key"})
    assert minted.status_code == 201, minted.text
    assert (
        minted.json()["admin"] is False
        and KeyCaller(api_url, minted.json()["key"], origin=stack.console_origin).request("GET", "/budget").status_code
        == 200
    )
    escalate = admin.request("POST", "/keys", {"owner": alice.principal, "admin": True})
    assert escalate.status_code == 403 and escalate.json()["error"]["type"] == "forbidden"
    assert admin.request("DELETE", f"/keys/{minted.json()['id']}").json()["revoked_at"]


def test_a_missing_key_is_401_and_an_unknown_one_403(stack):
    api_url = stack.info()["api_url"]
    missing = KeyCaller(api_url, None, origin=stack.console_origin).request("GET", "/batches")
    assert (missing.status_code, missing.json()) == (401, {"message": "Unauthorized"})
    unknown = KeyCaller(api_url, "bgk_" + "x" * 43, origin=stack.console_origin).request("GET", "/batches")
    assert (unknown.status_code, unknown.json()) == (403, DENIED)
    garbage = KeyCaller(api_url, "not-a-key", origin=stack.console_origin).request("GET", "/batches")
    assert (garbage.status_code, garbage.json()) == (403, DENIED)
    # API Gateway's own refusals carry the console's origin (the DEFAULT_4XX gateway response's header), so the
    # console reads "401"/"403", not a CORS failure.
    assert {r.headers.get("Access-Control-Allow-Origin") for r in (missing, unknown, garbage)} == {stack.console_origin}


def test_a_sigv4_signature_is_no_key_on_the_key_mount(stack, alice):
    """A SigV4 Authorization header is not a Bearer key: the mount answers 401, it never falls back to IAM."""
    signed_to_mount = Caller(stack.info()["api_url"] + KEY_MOUNT_PREFIX, stack.caller("alice"))
    answer = signed_to_mount.request("GET", "/batches")
    assert answer.status_code == 401


def _preflight(api_url: str, path: str, origin: str, method: str = "POST") -> requests.Response:
    return requests.options(
        api_url + KEY_MOUNT_PREFIX + path,
        headers={
            "Origin": origin,
            "Access-Control-Request-Method": method,
            "Access-Control-Request-Headers": "authorization,content-type",
        },
        timeout=30,
    )


def test_a_preflight_allows_the_console_origin_alone_and_only_on_the_key_mount(stack):
    api_url = stack.info()["api_url"]
    allowed = _preflight(api_url, "/batches", stack.console_origin)
    assert allowed.status_code == 204
    assert allowed.headers["Access-Control-Allow-Origin"] == stack.console_origin
    assert {"GET", "POST"} <= set(allowed.headers["Access-Control-Allow-Methods"].split(","))
    assert {"authorization", "content-type"} <= {
        h.strip().lower() for h in allowed.headers["Access-Control-Allow-Headers"].split(",")
    }
    by_id = _preflight(api_url, "/batches/job_0123456789abcdef/cancel", stack.console_origin)
    assert by_id.status_code == 204 and by_id.headers["Access-Control-Allow-Methods"] == "POST,OPTIONS"

    # Another origin: the answer names the console's origin, not the caller's, so a browser refuses it.
    other = _preflight(api_url, "/batches", "https://evil.example.net")
    assert other.headers.get("Access-Control-Allow-Origin") != "https://evil.example.net"
    # The SigV4 mount has no preflight at all: API Gateway's unknown-route 403, which allows no method or header.
    native = requests.options(api_url + "/batches", headers={"Origin": stack.console_origin}, timeout=30)
    assert native.status_code == 403 and native.json() == {"message": "Missing Authentication Token"}
    assert "Access-Control-Allow-Methods" not in native.headers and "Access-Control-Allow-Headers" not in native.headers
