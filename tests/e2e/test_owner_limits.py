"""Per-owner limits through the local stack (decision 0119), each function with its own role: the operator gives a
tenant one open job (the Limits function writes the override), the tenant's second create is refused 429 with
Retry-After and nothing kept (Create reads the override and writes the usage), and a tenant cannot manage limits (403
from IAM, as API Gateway answers) but reads its own. That a job's end frees its slot, on every path, is
tests/integration/test_owner_limits.py's (the same code; Finalize, MarkFailed and the Sweeper write the table:
tests/infra/test_owner_limits_deployment.py)."""

from __future__ import annotations

import uuid

import pytest

from batch_gateway_dev.local.stack import DEFAULT_CALLER
from tests.support.api_caller import Caller, seed_body

pytestmark = pytest.mark.e2e


@pytest.fixture
def tenant(stack, sim) -> Caller:
    """A tenant of its own: an override is per owner, and the session's stack is shared by every test."""
    return Caller(stack.info()["api_url"], stack.caller(f"limited-{uuid.uuid4().hex[:8]}"))


def test_one_open_job_refuses_the_second_create_and_tenants_cannot_set_limits(stack, sim, tenant):
    operator = Caller(stack.info()["api_url"], stack.caller(DEFAULT_CALLER))
    set_limits = operator.request("POST", "/limits", {"owner": tenant.principal, "open_jobs": 1})
    assert set_limits.status_code == 200, set_limits.text
    assert set_limits.json()["limits"]["open_jobs"] == 1

    sim.configure(processing_seconds=30)  # the first job stays open (the next test's start stops its workflow)
    first = tenant.create(seed_body())
    refused = tenant.request("POST", "/batches", seed_body())
    assert refused.status_code == 429, refused.text
    assert refused.headers["Retry-After"] == "60"
    error = refused.json()["error"]
    assert error["type"] == "limit_exceeded" and error["details"][0]["field"] == "open_jobs"
    assert [j["id"] for j in tenant.request("GET", "/batches").json()["batches"]] == [first["id"]]
    assert tenant.request("GET", "/limit").json()["usage"]["open_jobs"] == 1

    for method, path, body in (
        ("POST", "/limits", {"owner": tenant.principal, "open_jobs": 1000}),
        ("GET", "/limits", None),
        ("DELETE", f"/limits?owner={tenant.principal}", None),
    ):
        denied = tenant.request(method, path, body)
        assert denied.status_code == 403, (method, path, denied.text)
        assert "execute-api:Invoke" in denied.text
