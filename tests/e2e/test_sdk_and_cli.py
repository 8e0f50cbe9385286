"""The Python SDK, the seed's example program and the CLI against the local stack, as their users run them."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from batch_gateway.client import BatchGatewayClient, BatchStatus, NotFoundError

pytestmark = pytest.mark.e2e
REPO = Path(__file__).resolve().parents[2]


def _env(stack, user="sdk-user"):
    return {
        **os.environ,
        "BATCH_GATEWAY_ENDPOINT": stack.info()["api_url"],
        **stack.caller(user).as_env(),
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_SESSION_TOKEN": "",
        "AWS_ENDPOINT_URL": "",
    }


def test_seed_example_with_only_import_and_constructor_changed_prints_five_results(stack, sim):
    source = (REPO / "examples" / "seed_batch_invocation.py").read_text()
    assert "from batch_gateway.client import GatewayLMInvoker" in source
    assert 'GatewayLMInvoker("anthropic", "claude-sonnet-4-20250514")' in source
    done = subprocess.run(
        [sys.executable, str(REPO / "examples" / "seed_batch_invocation.py")],
        env=_env(stack),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stdout.splitlines() if line.startswith(">> ")]
    assert [line.split(":")[0] for line in lines] == [f">> request_{c}" for c in "ABCDE"]
    assert all("Name an animal that starts with the letter" in line for line in lines)


def test_sync_sdk_create_status_retrieve_list_cancel(stack, sim, monkeypatch):
    for key, value in _env(stack, "sdk-sync").items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("AWS_SESSION_TOKEN")
    client = BatchGatewayClient(stack.info()["api_url"], region="us-east-1")
    results = client.batch.invoke(
        {"a": "Hello", "b": [{"role": "system", "content": "Be brief"}, {"role": "user", "content": "Hi"}]},
        provider="anthropic",
        model="claude-sonnet-4-20250514",
        hyperparameters={"max_tokens": 32},
        status_check_interval=0.2,
    )
    assert set(results) == {"a", "b"} and results["a"].text.startswith("[simulated")
    assert results["a"].token_usage.output_tokens > 0
    batch_id = client.batch.create({"x": "later"}, provider="anthropic", model="claude-sonnet-4-20250514")
    assert client.batch.status(batch_id) in (BatchStatus.IN_PROGRESS, BatchStatus.FINISHED)
    assert batch_id in [b["id"] for b in client.batch.list()]
    sim.configure(processing_seconds=30)
    slow = client.batch.create({"y": "slow"}, provider="anthropic", model="claude-sonnet-4-20250514")
    client.batch.cancel(slow)
    assert client.batch.status(slow) in (BatchStatus.CANCELING, BatchStatus.FINISHED)
    with pytest.raises(NotFoundError) as missing:
        client.batch.status("job_000000000000000000000000")
    assert missing.value.status_code == 404 and missing.value.request_id  # the stack's x-amzn-RequestId
    assert batch_id in [job.id for job in client.list_jobs(limit=1)]  # one job a page, paged lazily


def test_sdk_webhook_subscriptions_are_created_listed_and_deleted(stack, sim, monkeypatch):
    for key, value in _env(stack, "sdk-hooks").items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("AWS_SESSION_TOKEN")
    client = BatchGatewayClient(stack.info()["api_url"], region="us-east-1")
    hook = client.webhooks.create("http://127.0.0.1:9/hook", events=["batch.ended"], description="e2e")
    assert hook.secret and hook.secret.startswith("whsec_")
    assert [(h.id, h.secret) for h in client.webhooks.list()] == [(hook.id, None)]
    assert client.webhooks.delete(hook.id) == {"id": hook.id, "deleted": True}
    with pytest.raises(NotFoundError):
        client.webhooks.get(hook.id)


def test_cli_submit_wait_writes_results_and_status_list_work(stack, sim, tmp_path):
    requests = tmp_path / "requests.jsonl"
    requests.write_text(
        json.dumps({"batch_gateway": {"provider": "anthropic", "model": "claude-sonnet-4-20250514"}})
        + "\n"
        + "".join(json.dumps({"id": f"q{i}", "request": f"Question {i}"}) + "\n" for i in range(4))
    )
    out = tmp_path / "results.jsonl"
    env = _env(stack, "cli-user")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "batch_gateway.cli",
            "submit",
            str(requests),
            "--wait",
            "--poll-interval",
            "0.3",
            "-o",
            str(out),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    items = [json.loads(line) for line in out.read_text().splitlines()]
    assert sorted(i["id"] for i in items) == ["q0", "q1", "q2", "q3"]
    assert all(i["status"] == "succeeded" for i in items)
    batch_id = done.stderr.strip().splitlines()[-1].split()[0]
    waited = subprocess.run(  # wait on a job that has ended: its results again, at once
        [sys.executable, "-m", "batch_gateway.cli", "wait", batch_id],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert waited.returncode == 0, waited.stderr
    assert sorted(json.loads(line)["id"] for line in waited.stdout.splitlines()) == ["q0", "q1", "q2", "q3"]
    listed = subprocess.run(
        [sys.executable, "-m", "batch_gateway.cli", "--json", "list"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert listed.returncode == 0, listed.stderr
    assert len(json.loads(listed.stdout)) >= 1
    bad = subprocess.run(
        [sys.executable, "-m", "batch_gateway.cli", "status", "job_000000000000000000000000"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 1 and "not_found" in bad.stderr and "request id: " in bad.stderr
