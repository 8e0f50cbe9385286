"""The async client through the local stack: what the sync client does on this branch (a file uploaded to the
presigned URLs and a job made of it; an admin's key create, list and revoke), awaited."""

from __future__ import annotations

import asyncio
import json

import boto3
import pytest

from batch_gateway.client import AsyncBatchGatewayClient, UnauthorizedError
from batch_gateway_dev.local.stack import DEFAULT_CALLER

pytestmark = pytest.mark.e2e

MODEL = {"provider": "anthropic", "model": "claude-sonnet-4-20250514"}


def _client(stack, user: str, *, admin: bool = False) -> AsyncBatchGatewayClient:
    creds = stack.caller(user, admin=admin)
    session = boto3.Session(
        aws_access_key_id=creds.access_key, aws_secret_access_key=creds.secret_key, region_name="us-east-1"
    )
    return AsyncBatchGatewayClient(stack.info()["api_url"], region="us-east-1", session=session)


def test_the_async_client_uploads_a_file_and_creates_a_job_from_it(stack, sim, tmp_path):
    path = tmp_path / "input.jsonl"
    path.write_text("".join(json.dumps({"id": f"q{i}", "request": f"prompt {i}"}) + "\n" for i in range(30)))

    async def run():
        async with _client(stack, "async-uploads") as client:
            upload_id = await client.upload(path)
            batch_id = await client.batch.create(input_file=upload_id, **MODEL)
            job = await client.batch.wait(batch_id, status_check_interval=0.3, max_iterations=400)
            direct = await client.create_job(input_file=upload_id, idempotency_key="again", **MODEL)
            return upload_id, job, direct, await client.batch.retrieve(batch_id)

    upload_id, job, direct, outputs = asyncio.run(run())
    assert upload_id.startswith("upl_")
    assert job.status == "finished" and job.request_counts.succeeded == 30
    assert sorted(outputs) == sorted(f"q{i}" for i in range(30))
    assert direct.id != job.id and direct.request_counts.total == 30  # the same upload may start several jobs


def test_an_admin_manages_keys_with_the_async_client_and_a_tenant_cannot(stack, sim, alice):
    async def run():
        async with _client(stack, DEFAULT_CALLER) as admin:
            made = await admin.create_key(alice.principal, name="async")
            listed = await admin.list_keys()
            revoked = await admin.revoke_key(made["id"])
        async with _client(stack, "async-tenant") as tenant:
            with pytest.raises(UnauthorizedError) as refused:
                await tenant.create_key(alice.principal)
        return made, listed, revoked, refused.value

    made, listed, revoked, refused = asyncio.run(run())
    assert made["key"].startswith("bgk_") and made["owner"] == alice.principal and made["name"] == "async"
    assert made["id"] in [k["id"] for k in listed] and made["key"] not in json.dumps(listed)
    assert revoked["id"] == made["id"] and revoked["revoked_at"]
    assert "not authorized" in str(refused)
