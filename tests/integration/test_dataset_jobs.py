"""Dataset jobs through the create handler (decision 0136): a CSV or records and a template become one request per
row; a bad table is a 400 naming its rows with nothing stored or started; the finished job's results come back as
the same CSV, every row in order, with the result columns appended."""

from __future__ import annotations

import csv
import io
import json

import boto3
import pytest

from batch_gateway.service.layout import upload_key
from lambdas import create, ingest, retrieve
from tests.support.events import ALICE, call, executions, load_event
from tests.support.workflow_driver import run_workflow

MODEL = {"provider": "anthropic", "model": "claude-sonnet-4-20250514"}
AWKWARD = (
    "\ufeffid,text,note\r\n"
    'a1,"Hello, world",plain\r\n'
    'a2,"She said ""hi""",quotes\r\n'
    'a3,"two\r\nlines",newline\r\n'
    "a4,Grüße 🌍,unicode\r\n"
    "a5,blank note,\r\n"
)


def _post(ctx, body):
    event = load_event("api_create.json")
    event["body"] = json.dumps(body)
    return call(create.handler, event, ctx)


def _dataset_body(**dataset):
    return {**MODEL, "dataset": {"template": "Summarise: {text}", **dataset}}


def _nothing_kept(services, started_before):
    listed = boto3.client("s3").list_objects_v2(Bucket="payloads").get("Contents", [])
    assert [o["Key"] for o in listed if o["Key"].startswith("jobs/")] == []
    assert boto3.client("dynamodb").scan(TableName="jobs")["Count"] == 0
    assert len(executions(services)) == started_before


def _csv_results(aws, ctx, job_id):
    event = load_event("api_retrieve.json", job_id)
    event["queryStringParameters"] = {"format": "csv"}
    code, answer = call(retrieve.handler, event, ctx)
    assert code == 200, answer
    assert set(answer) == {"id", "status", "url", "expires_in"} and answer["url"].startswith("http")
    return aws.payloads.get_bytes(f"jobs/{job_id}/dataset/results.csv").decode("utf-8")


def test_a_csv_becomes_one_request_per_row_and_comes_back_as_the_same_csv_with_results(aws, ctx):
    code, job = _post(ctx, _dataset_body(csv=AWKWARD, id_column="id", system="Be brief about {note}."))
    assert code == 202, job
    assert job["request_counts"]["total"] == 5 and job["id"] in executions(aws)
    stored = [json.loads(line) for line in aws.payloads.get_bytes(f"jobs/{job['id']}/requests.jsonl").splitlines()]
    assert [r["id"] for r in stored] == ["a1", "a2", "a3", "a4", "a5"]
    assert stored[2]["messages"] == [{"role": "user", "content": "Summarise: two\r\nlines"}]
    assert stored[1]["system"] == "Be brief about quotes."

    assert run_workflow(job["id"], ctx)["status"] == "finished"
    text = _csv_results(aws, ctx, job["id"])
    assert text.startswith("\ufeff")  # the input's byte order mark, for the spreadsheets that need it
    rows = list(csv.reader(io.StringIO(text.removeprefix("\ufeff"), newline="")))
    original = list(csv.reader(io.StringIO(AWKWARD.removeprefix("\ufeff"), newline="")))
    # the input has a `text` column: the result's text is `result_text`
    assert rows[0] == ["id", "text", "note", "result_text", "status", "error", "input_tokens", "output_tokens", "cost"]
    assert [r[:3] for r in rows[1:]] == original[1:]  # every row, in order, its columns unchanged
    assert all(r[4] == "succeeded" and r[3] and r[5] == "" and int(r[6]) > 0 and float(r[8]) >= 0 for r in rows[1:])


def test_records_without_an_id_column_take_their_row_number_as_id(aws, ctx):
    records = [{"text": "first", "n": 1}, {"text": "second", "n": 2.5}, {"text": "third", "n": None}]
    code, job = _post(ctx, _dataset_body(records=records, template="{text} #{n}"))
    assert code == 202, job
    stored = [json.loads(line) for line in aws.payloads.get_bytes(f"jobs/{job['id']}/requests.jsonl").splitlines()]
    assert [(r["id"], r["messages"][0]["content"]) for r in stored] == [
        ("1", "first #1"),
        ("2", "second #2.5"),
        ("3", "third #"),
    ]
    run_workflow(job["id"], ctx)
    rows = list(csv.reader(io.StringIO(_csv_results(aws, ctx, job["id"]), newline="")))
    assert rows[0][:3] == ["text", "n", "result_text"] and [r[:2] for r in rows[1:]] == [
        ["first", "1"],
        ["second", "2.5"],
        ["third", ""],
    ]


def test_an_uploaded_csv_is_a_dataset_and_its_dry_run_estimates_it(aws, ctx):
    upload_id = "upl_" + "5" * 32
    table = "text\n" + "".join(f"row {i}\n" for i in range(40))
    boto3.client("s3").put_object(Bucket="payloads", Key=upload_key(ALICE, upload_id), Body=table.encode())
    body = {**MODEL, "input_file": upload_id, "dataset": {"format": "csv", "template": "Say: {text}"}}
    code, estimate = _post(ctx, {**body, "dry_run": True})
    assert code == 200, estimate
    assert estimate["request_count"] == 40
    assert boto3.client("dynamodb").scan(TableName="jobs")["Count"] == 0
    code, job = _post(ctx, body)
    assert code == 202, job
    assert aws.payloads.get_bytes(f"jobs/{job['id']}/dataset/input.csv") == table.encode()


BAD_TABLES = [
    # (name, dataset, expected details (or a fragment of the message))
    ("unknown placeholder", {"csv": "id,text\na,b\n", "template": "{txt}"}, "unknown column 'txt'"),
    ("attribute access", {"csv": "id,text\na,b\n", "template": "{text.upper}"}, "not a column name"),
    ("format spec", {"csv": "id,text\na,b\n", "template": "{text:>10}"}, "not a column name"),
    ("lone brace", {"csv": "id,text\na,b\n", "template": "a } b {text}"}, "literal brace"),
    ("unknown id column", {"csv": "id,text\na,b\n", "id_column": "key"}, "unknown column 'key'"),
    ("empty table", {"csv": ""}, "header"),
    ("csv and records", {"csv": "text\na\n", "records": [{"text": "a"}]}, "exactly one of csv"),
    ("neither", {}, "exactly one of csv"),
    ("format without a file", {"csv": "text\na\n", "format": "csv"}, "input_file only"),
    ("unknown field", {"csv": "text\na\n", "templat": "x"}, "dataset.templat"),
]


@pytest.mark.parametrize(("name", "dataset", "fragment"), BAD_TABLES, ids=[b[0] for b in BAD_TABLES])
def test_a_bad_dataset_is_a_400_naming_the_problem_and_nothing_is_kept(aws, ctx, name, dataset, fragment):
    started = len(executions(aws))
    body = {**MODEL, "dataset": {"template": "Summarise: {text}", **dataset}}
    real = _post(ctx, body)
    dry = _post(ctx, {**body, "dry_run": True})
    assert real[0] == 400, real
    assert fragment in real[1]["error"]["message"]
    assert dry == real
    _nothing_kept(aws, started)


def test_bad_rows_are_refused_with_their_spreadsheet_row_numbers_and_nothing_is_kept(aws, ctx):
    started = len(executions(aws))
    table = (
        "id,text\n"  # row 1
        "a,fine\n"  # row 2
        'b,"multi\nline"\n'  # row 3 (two lines of text, one spreadsheet row)
        "a,duplicate\n"  # row 4
        "c,\n"  # row 5: the filled template is empty
        "d,one,too many\n"  # row 6
        ",no id\n"  # row 7
    )
    code, answer = _post(ctx, _dataset_body(csv=table, template="{text}", id_column="id"))
    assert code == 400, answer
    assert answer["error"]["details"] == [
        {"row": 4, "message": "duplicate id 'a' (first on row 2)"},
        {"row": 5, "message": "the template filled with this row is empty (empty columns: text)"},
        {"row": 6, "message": "3 fields, but the header names 2 columns"},
        {"row": 7, "message": "id column 'id': ids must be non-empty strings"},
    ]
    assert answer["error"]["message"].startswith("invalid dataset: 4 problems; row 4:")
    _nothing_kept(aws, started)


def test_a_request_check_on_a_row_names_the_row(aws, ctx):
    table = "text\nshort\n" + "x" * 1_000_001 + "\n"
    code, answer = _post(ctx, _dataset_body(csv=table, template="{text}"))
    assert code == 400, answer
    too_long = "the request's text is longer than 1,000,000 characters"
    assert answer["error"]["details"] == [{"row": 3, "message": too_long}]


def test_csv_results_of_a_job_that_is_not_a_dataset_job_are_a_400_that_says_so(aws, ctx):
    code, job = _post(ctx, {**MODEL, "requests": {"a": "Hi"}})
    assert code == 202
    run_workflow(job["id"], ctx)
    event = load_event("api_retrieve.json", job["id"])
    event["queryStringParameters"] = {"format": "csv"}
    code, answer = call(retrieve.handler, event, ctx)
    assert code == 400
    assert "not a dataset job" in answer["error"]["message"]
    assert answer["error"]["details"] == [{"field": "format", "message": "csv is for dataset jobs"}]


# -- the drop folder -------------------------------------------------------------------------------------------------

SETTINGS = {"batch_gateway": {**MODEL, "dataset": {"template": "Summarise: {text}", "id_column": "id"}}}


def _drop(key: str, body: bytes) -> dict:
    boto3.client("s3").put_object(Bucket="payloads", Key=key, Body=body)
    event = load_event("sqs_drop_folder.json")
    message = json.loads(event["Records"][0]["body"])
    message["Records"][0]["s3"]["object"]["key"] = key
    message["Records"][0]["s3"]["object"].pop("eTag")
    event["Records"][0]["body"] = json.dumps(message)
    return event


def _outbox(name: str) -> bytes:
    return boto3.client("s3").get_object(Bucket="payloads", Key=f"outbox/{name}")["Body"].read()


def test_a_dropped_csv_with_its_settings_file_runs_and_its_csv_lands_in_the_outbox(aws, ctx):
    boto3.client("s3").put_object(Bucket="payloads", Key="inbox/team/rows.csv.json", Body=json.dumps(SETTINGS))
    assert ingest.handler(_drop("inbox/team/rows.csv", AWKWARD.encode()), ctx) == {"batchItemFailures": []}
    receipt = json.loads(_outbox("team/rows.receipt.json"))
    assert receipt["status"] == "accepted" and receipt["requests"] == 5, receipt
    assert run_workflow(receipt["job_id"], ctx)["status"] == "finished"
    rows = list(csv.reader(io.StringIO(_outbox("team/rows.results.csv").decode().removeprefix("\ufeff"), newline="")))
    assert [r[0] for r in rows] == ["id", "a1", "a2", "a3", "a4", "a5"] and rows[3][1] == "two\r\nlines"


def test_a_dropped_csv_without_its_settings_file_gets_a_receipt_saying_so_and_starts_nothing(aws, ctx):
    started = len(executions(aws))
    ingest.handler(_drop("inbox/alone.csv", AWKWARD.encode()), ctx)
    receipt = json.loads(_outbox("alone.receipt.json"))
    assert receipt["status"] == "rejected" and "drop alone.csv.json first" in receipt["error"]
    assert len(executions(aws)) == started


def test_a_dropped_jsonl_of_records_with_a_dataset_header_names_bad_rows_by_line(aws, ctx):
    lines = [SETTINGS, {"id": "a", "text": "one"}, {"id": "a", "text": "two"}, {"id": "", "text": "three"}]
    body = "\n".join(json.dumps(line) for line in lines).encode()
    ingest.handler(_drop("inbox/records.jsonl", body), ctx)
    receipt = json.loads(_outbox("records.receipt.json"))
    assert receipt["status"] == "rejected", receipt
    assert receipt["errors"] == [
        {"row": 3, "message": "duplicate id 'a' (first on row 2)"},
        {"row": 4, "message": "id column 'id': ids must be non-empty strings"},
    ]
    good = "\n".join(json.dumps(line) for line in [SETTINGS, {"id": "a", "text": "one"}, {"id": "b", "text": "x"}])
    ingest.handler(_drop("inbox/records2.jsonl", good.encode()), ctx)
    receipt = json.loads(_outbox("records2.receipt.json"))
    assert receipt["status"] == "accepted" and receipt["requests"] == 2, receipt
