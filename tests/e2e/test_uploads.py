"""Large inputs on the native API: ``POST /uploads`` gives presigned S3 URLs (signed by the Uploads function's role,
verified by the local S3 as S3 does: the signature, the expiry, then that role's policy), and ``POST /batches
{"input_file": ...}`` makes a job of the uploaded JSONL file, checked line by line like a dropped file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from urllib.parse import parse_qs, urlparse

import pytest
import requests

from batch_gateway.client import BatchGatewayClient
from tests.support.api_caller import Caller
from tests.support.uploads import jsonl, put_file, start_upload
from tests.support.waiting import wait_for

pytestmark = pytest.mark.e2e

MODEL = {"provider": "anthropic", "model": "claude-sonnet-4-20250514"}


def test_a_file_larger_than_an_inline_body_goes_up_in_parts_and_the_job_finishes(alice):
    prompt = "Describe this animal in one word. " + "x" * 4000
    lines = [{"id": f"q{i}", "request": f"{i}: {prompt}"} for i in range(2000)]
    data = jsonl(lines)
    assert len(data) > 8_000_000  # past the 3 MB inline body docs/api.md promises, and past Lambda's 6 MB
    upload = start_upload(alice, len(data), part_size=5 * 1024 * 1024)
    assert upload["method"] == "multipart" and len(upload["parts"]) == 2
    put_file(upload, data)

    created = alice.request("POST", "/batches", {"input_file": upload["id"], **MODEL})
    assert created.status_code == 202, created.text
    job = alice.wait(created.json()["id"], timeout=120)
    assert job["status"] == "finished" and job["request_counts"]["succeeded"] == 2000
    results = alice.all_results(job["id"])
    assert set(results) == {line["id"] for line in lines}


def test_a_small_file_goes_up_in_one_put_and_its_header_line_sets_the_job(alice):
    data = jsonl([{"batch_gateway": MODEL}, *({"id": f"r{c}", "request": f"Name a {c} animal"} for c in "ABC")])
    upload = start_upload(alice, len(data))
    assert upload["method"] == "PUT"
    put_file(upload, data)
    created = alice.request("POST", "/batches", {"input_file": upload["id"]})
    assert created.status_code == 202, created.text
    assert alice.wait(created.json()["id"])["request_counts"]["succeeded"] == 3


def job_keys(stack) -> set[str]:
    s3 = stack.client("s3")
    pages = s3.get_paginator("list_objects_v2").paginate(Bucket=stack.info()["bucket"], Prefix="jobs/")
    return {o["Key"] for page in pages for o in page.get("Contents", [])}


def test_a_file_with_a_bad_line_7_is_refused_naming_line_7_and_nothing_is_stored_or_started(stack, sim):
    alice = Caller(stack.info()["api_url"], stack.caller("uploads-bad-line"))
    before = job_keys(stack)
    lines = [{"id": f"r{i}", "request": f"Say {i}"} for i in range(1, 11)]
    data = jsonl(lines[:6]).decode() + '{"id": "r7", "request": 42}\n' + jsonl(lines[7:]).decode()
    upload = start_upload(alice, len(data.encode()))
    put_file(upload, data.encode())

    refused = alice.request("POST", "/batches", {"input_file": upload["id"], **MODEL})
    assert refused.status_code == 400, refused.text
    error = refused.json()["error"]
    assert [d["line"] for d in error["details"]] == [7], error
    assert "line 7" in error["message"]
    assert alice.request("GET", "/batches").json()["batches"] == []
    assert job_keys(stack) == before, "a refused job stored requests"


def test_more_bytes_than_declared_are_refused_and_nothing_is_stored_or_started(stack, sim):
    """Declaring 10 bytes and putting 18 MB (decision 0113). The presigned PUT signs its Content-Length, so S3 (and
    the local S3, which verifies presigned URLs as S3 does, decision 0120) refuses the PUT and there is no upload to
    make a job of. (The create's own size check, for a store that takes the bytes anyway, is
    tests/integration/test_upload_sizes.py's.)"""
    alice = Caller(stack.info()["api_url"], stack.caller("uploads-oversized"))
    before = job_keys(stack)
    upload = start_upload(alice, 10)
    data = jsonl([{"batch_gateway": MODEL}, *({"id": f"q{i}", "request": "x" * 1000} for i in range(17_500))])
    assert len(data) > 17_000_000
    put = requests.put(upload["url"], data=data, timeout=120)
    assert put.status_code == 403 and b"<Code>SignatureDoesNotMatch</Code>" in put.content, put.text
    created = alice.request("POST", "/batches", {"input_file": upload["id"]})
    assert created.status_code == 404, created.text
    assert alice.request("GET", "/batches").json()["batches"] == []
    assert job_keys(stack) == before, "a refused upload stored requests"


def test_another_caller_cannot_use_an_upload_id(stack, sim, alice):
    bob = Caller(stack.info()["api_url"], stack.caller("uploads-bob"))
    data = jsonl([{"id": "a", "request": "Hi"}])
    upload = start_upload(alice, len(data))
    put_file(upload, data)
    stolen = bob.request("POST", "/batches", {"input_file": upload["id"], **MODEL})
    assert stolen.status_code == 404, stolen.text
    assert bob.request("GET", "/batches").json()["batches"] == []
    assert alice.request("POST", "/batches", {"input_file": upload["id"], **MODEL}).status_code == 202


def _url_expiry(url: str) -> datetime:
    """When S3 stops honouring a presigned URL: its signature's date (whole seconds) plus its X-Amz-Expires."""
    query = parse_qs(urlparse(url).query)
    signed_at = datetime.strptime(query["X-Amz-Date"][0], "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)
    return signed_at + timedelta(seconds=int(query["X-Amz-Expires"][0]))


def test_a_presigned_upload_url_stops_working_when_it_expires(alice):
    data = jsonl([{"id": "a", "request": "Hi"}])
    upload = start_upload(alice, len(data), expires_in=2)
    assert requests.put(upload["url"], data=data, timeout=30).status_code == 200  # valid while fresh
    expiry = _url_expiry(upload["url"])
    assert abs(expiry - datetime.fromisoformat(upload["expires_at"])) <= timedelta(seconds=1)  # as the answer says
    wait_for(lambda: datetime.now(UTC) > expiry, timeout=10, what="the URL's expiry to pass")
    late = requests.put(upload["url"], data=data, timeout=30)
    assert late.status_code == 403 and b"expired" in late.content, late.text


def _sdk_env(stack, user: str) -> dict[str, str]:
    return {
        **os.environ,
        "BATCH_GATEWAY_ENDPOINT": stack.info()["api_url"],
        **stack.caller(user).as_env(),
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_SESSION_TOKEN": "",
        "AWS_ENDPOINT_URL": "",
    }


def test_the_sdk_uploads_a_file_in_parts_and_creates_a_job_from_it(stack, sim, tmp_path, monkeypatch):
    for key, value in _sdk_env(stack, "uploads-sdk").items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("AWS_SESSION_TOKEN")
    path = tmp_path / "big.jsonl"
    path.write_bytes(jsonl([{"id": f"q{i}", "request": f"{i} " + "y" * 3000} for i in range(2000)]))
    assert path.stat().st_size > 6_000_000
    client = BatchGatewayClient(stack.info()["api_url"], region="us-east-1")
    upload_id = client.upload(path, part_size=5 * 1024 * 1024)
    batch_id = client.batch.create(input_file=upload_id, **MODEL)
    job = client.batch.wait(batch_id, status_check_interval=0.3)
    assert job.request_counts.succeeded == 2000


def test_cli_submit_sends_a_file_over_the_inline_limit_as_an_upload(stack, sim, tmp_path):
    path = tmp_path / "big.jsonl"
    lines = [{"batch_gateway": MODEL}, *({"id": f"q{i}", "request": f"{i} " + "z" * 3000} for i in range(1200))]
    path.write_bytes(jsonl(lines))
    assert path.stat().st_size > 3_000_000  # more than an inline body may hold (docs/api.md)
    done = subprocess.run(
        [sys.executable, "-m", "batch_gateway.cli", "--json", "submit", str(path)],
        env=_sdk_env(stack, "uploads-cli"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    job = json.loads(done.stdout)
    assert job["request_counts"]["total"] == 1200
