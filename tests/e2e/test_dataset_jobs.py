"""Dataset jobs end to end (decision 0136): a CSV with awkward rows and a prompt template through the local stack, by
the API, the SDK and the CLI; the results CSV fetched through its presigned URL holds every input row, in order, its
columns unchanged, with the result columns filled."""

from __future__ import annotations

import asyncio
import csv
import io
import json
import os
import subprocess
import sys
import time

import pytest
import requests

from batch_gateway.client import AsyncBatchGatewayClient, BatchGatewayClient
from batch_gateway_dev.local.stack import DROP_FOLDER_USER
from tests.support.uploads import start_upload

pytestmark = pytest.mark.e2e
MODEL = {"provider": "anthropic", "model": "claude-sonnet-4-20250514"}
RESULT_COLUMNS = ["result_text", "status", "error", "input_tokens", "output_tokens", "cost"]
# Spreadsheet-made rows that break naive CSV handling: quoted commas, doubled quotes, a line break inside a field,
# non-ASCII text and emoji, empty fields, a value that looks like a placeholder, a byte order mark.
AWKWARD = (
    "\ufeffid,text,lang,notes\r\n"
    'r1,"Hello, world",en,\r\n'
    'r2,"She said ""stop""",en,quoted\r\n'
    'r3,"first line\r\nsecond line",en,"multi\nline note"\r\n'
    "r4,Grüße aus Köln 🌍,de,\r\n"
    "r5,{not_a_column} stays literal,en,braces\r\n"
    "r6,日本語のテキスト,ja,\r\n"
)


def _rows(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text.removeprefix("\ufeff"), newline="")))


def _check_round_trip(data: bytes, table: str, result_columns: list[str]) -> list[list[str]]:
    """Every input row in order with its columns unchanged, the result columns filled; the rows back."""
    text = data.decode("utf-8")
    assert text.startswith("\ufeff") == table.startswith("\ufeff")
    original, back = _rows(table), _rows(text)
    width = len(original[0])
    assert back[0] == original[0] + result_columns
    assert len(back) == len(original)
    assert [row[:width] for row in back[1:]] == original[1:]
    for row in back[1:]:
        result = dict(zip(result_columns, row[width:], strict=True))
        assert result[result_columns[1]] == "succeeded" and result[result_columns[0]].startswith("[simulated"), row
        assert result[result_columns[2]] == "" and int(result[result_columns[3]]) > 0, row
        assert float(result[result_columns[5]]) >= 0, row
    return back


def _env(stack, user):
    return {
        **os.environ,
        "BATCH_GATEWAY_ENDPOINT": stack.info()["api_url"],
        **stack.caller(user).as_env(),
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_SESSION_TOKEN": "",
        "AWS_ENDPOINT_URL": "",
    }


def test_a_csv_with_awkward_rows_comes_back_as_the_same_csv_with_its_results(stack, alice):
    body = {
        **MODEL,
        "dataset": {
            "csv": AWKWARD,
            "template": "Summarise ({lang}): {text}",
            "system": "Notes: {notes}",
            "id_column": "id",
        },
    }
    estimate = alice.request("POST", "/batches", {**body, "dry_run": True})
    assert estimate.status_code == 200, estimate.text
    assert estimate.json()["request_count"] == 6
    job = alice.create(body)
    assert job["request_counts"]["total"] == 6
    assert alice.wait(job["id"])["status"] == "finished"
    assert sorted(alice.all_results(job["id"])) == ["r1", "r2", "r3", "r4", "r5", "r6"]

    answer = alice.request("GET", f"/batches/{job['id']}/results?format=csv")
    assert answer.status_code == 200, answer.text
    download = answer.json()
    assert set(download) == {"id", "status", "url", "expires_in"} and download["status"] == "finished"
    fetched = requests.get(download["url"], timeout=30)  # presigned: no signature of ours
    assert fetched.status_code == 200, fetched.text
    _check_round_trip(fetched.content, AWKWARD, RESULT_COLUMNS)


def test_bad_rows_are_refused_with_their_row_numbers_and_nothing_starts(stack, alice):
    table = "id,text\nr1,fine\nr1,again\nr3,\n"
    # the newest of alice's jobs, from the worker's earlier tests: a job stored by this create would be the newest
    before = {j["id"] for j in alice.request("GET", "/batches?limit=100").json()["batches"]}
    answer = alice.request(
        "POST", "/batches", {**MODEL, "dataset": {"csv": table, "template": "{text}", "id_column": "id"}}
    )
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"]["details"] == [
        {"row": 3, "message": "duplicate id 'r1' (first on row 2)"},
        {"row": 4, "message": "the template filled with this row is empty (empty columns: text)"},
    ]
    after = {j["id"] for j in alice.request("GET", "/batches?limit=100").json()["batches"]}
    assert after == before  # nothing stored or started


def test_the_sdk_sync_and_async_create_a_dataset_job_and_fetch_its_csv(stack, sim, monkeypatch):
    for key, value in _env(stack, "sdk-dataset").items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("AWS_SESSION_TOKEN")
    client = BatchGatewayClient(stack.info()["api_url"], region="us-east-1")
    records = [{"question": "Why is the sky blue?", "n": 1}, {"question": "Name a prime", "n": 2}]
    job = client.create_job(dataset={"records": records, "template": "Q{n}: {question}"}, **MODEL)
    assert job.request_counts.total == 2
    client.batch.wait(job.id, status_check_interval=0.2)
    rows = _rows(client.results_csv(job.id).decode("utf-8"))
    assert rows[0] == ["question", "n", "text", "status", "error", "input_tokens", "output_tokens", "cost"]
    assert [r[:2] for r in rows[1:]] == [["Why is the sky blue?", "1"], ["Name a prime", "2"]]

    async def run() -> bytes:
        async_client = AsyncBatchGatewayClient(stack.info()["api_url"], region="us-east-1")
        made = await async_client.create_job(dataset={"csv": AWKWARD, "template": "{text}"}, **MODEL)
        await async_client.batch.wait(made.id, status_check_interval=0.2)
        return await async_client.results_csv(made.id)

    with_row_ids = asyncio.run(run())
    _check_round_trip(with_row_ids, AWKWARD, RESULT_COLUMNS)


def test_the_cli_submits_a_csv_with_a_template_and_writes_the_same_csv_back(stack, sim, tmp_path):
    table = tmp_path / "rows.csv"
    table.write_bytes(AWKWARD.encode("utf-8"))
    out = tmp_path / "results.csv"
    env = _env(stack, "cli-dataset")
    command = [sys.executable, "-m", "batch_gateway.cli", "submit", str(table), *("--provider", MODEL["provider"])]
    command += ["--model", MODEL["model"], "--template", "Summarise: {text}", "--id-column", "id"]
    done = subprocess.run(
        [*command, "--wait", "--poll-interval", "0.3", "-o", str(out)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    _check_round_trip(out.read_bytes(), AWKWARD, RESULT_COLUMNS)
    batch_id = done.stderr.strip().splitlines()[-1].split()[0]
    again = subprocess.run(
        [sys.executable, "-m", "batch_gateway.cli", "results", batch_id, "--csv"],
        env=env,
        capture_output=True,
        timeout=60,
    )
    assert again.returncode == 0, again.stderr
    assert again.stdout == out.read_bytes()


def test_a_csv_dropped_with_its_settings_file_gets_its_csv_back_in_the_outbox(stack, sim, drop_folder_owner):
    s3 = stack.client("s3", stack.caller(DROP_FOLDER_USER))  # the pipeline writes with its own keys
    settings = {"batch_gateway": {**MODEL, "dataset": {"template": "Summarise: {text}", "id_column": "id"}}}
    s3.put_object(Bucket=stack.bucket, Key="inbox/sheets/awkward.csv.json", Body=json.dumps(settings).encode())
    s3.put_object(Bucket=stack.bucket, Key="inbox/sheets/awkward.csv", Body=AWKWARD.encode())
    receipt = json.loads(_wait_for(s3, stack.bucket, "outbox/sheets/awkward.receipt.json"))
    assert receipt["status"] == "accepted" and receipt["requests"] == 6, receipt
    _check_round_trip(_wait_for(s3, stack.bucket, "outbox/sheets/awkward.results.csv"), AWKWARD, RESULT_COLUMNS)


def _wait_for(s3, bucket, key, timeout=60):
    deadline = time.monotonic() + timeout
    while True:
        try:
            return s3.get_object(Bucket=bucket, Key=key)["Body"].read()
        except s3.exceptions.NoSuchKey:
            assert time.monotonic() < deadline, f"{key} did not appear"
            time.sleep(0.3)  # polling for an object to appear: the observable condition


def test_an_uploaded_csv_becomes_a_dataset_job_read_from_the_copy_the_job_keeps(stack, alice):
    data = AWKWARD.encode()
    upload = start_upload(alice, len(data))
    assert requests.put(upload["url"], data=data, timeout=30).status_code == 200
    body = {**MODEL, "input_file": upload["id"], "dataset": {"format": "csv", "template": "{text}", "id_column": "id"}}
    job = alice.create(body)
    assert job["request_counts"]["total"] == 6
    assert alice.wait(job["id"])["status"] == "finished"
    download = alice.request("GET", f"/batches/{job['id']}/results?format=csv").json()
    _check_round_trip(requests.get(download["url"], timeout=30).content, AWKWARD, RESULT_COLUMNS)
