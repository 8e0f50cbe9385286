"""Bedrock jobs through the local stack over HTTP (issue 11): the functions call the Bedrock simulator with their own
roles through boto3's endpoint settings, and the simulator reads each job's input and writes its output in the local
S3 as the deployment's Bedrock service role, assumed as bedrock.amazonaws.com, so the role's grants are checked as in
AWS. Covers: a 250-request job by caller id, a job above the per-job maximum split with every id once, a small job on
demand (and refused under ``reject``), cancel keeping finished records, a job Bedrock fails, a lost create answer
yielding one Bedrock job, the service role's read grant broken on purpose, and a plain job run as a Converse-type job
with the result items an InvokeModel job gives while a tool-using job runs as InvokeModel (decision 0132)."""

from __future__ import annotations

import json
import time

import pytest

from batch_gateway import constants
from batch_gateway_dev.local.stack import DROP_FOLDER_USER
from tests.support.seed_program import run_seed_program

pytestmark = pytest.mark.e2e

CLAUDE = "anthropic.claude-3-5-haiku-20241022-v1:0"
NOVA = "us.amazon.nova-lite-v1:0"


def bedrock_body(count: int, model: str = CLAUDE, **changes) -> dict:
    return {"provider": "bedrock", "model": model, "requests": {f"id-{i}": f"question {i}" for i in range(count)}}


def finished(caller, body: dict, timeout: float = 60) -> dict:
    job = caller.create(body)
    done = caller.wait(job["id"], timeout=timeout)
    assert done["status"] == "finished", done.get("error")
    return done


def set_env(stack, module: str, changes: dict[str, str | None]) -> dict[str, str | None]:
    """Change a function's settings as an operator would; the previous values, to put back."""
    function = stack.function(module)
    before = stack.function_environment(function)
    stack.set_function_environment(function, changes)
    return {key: before.get(key) for key in changes}


def test_a_250_request_job_finishes_with_250_results_by_caller_id(alice, sim):
    done = finished(alice, bedrock_body(250))
    assert done["request_counts"]["succeeded"] == 250 and done["request_counts"]["processing"] == 0
    [chunk] = done["chunks"]
    assert chunk["provider_batch_id"].startswith("arn:aws:bedrock:us-east-1:123456789012:model-invocation-job/")
    assert sim.stats()["bedrock"]["batches_created"] == 1
    results = alice.all_results(done["id"])
    assert set(results) == {f"id-{i}" for i in range(250)}
    assert all(r["status"] == "succeeded" and r["text"] for r in results.values())
    assert results["id-7"]["token_usage"]["input_tokens"] > 0 and "mode" not in results["id-7"]
    assert results["id-7"]["finish_details"] == {"type": "stop"}


def test_a_job_above_the_per_job_maximum_splits_and_every_id_comes_back_once(stack, alice, sim):
    sim.configure(bedrock_max_records=200)
    previous = set_env(stack, "plan", {constants.ENV_BEDROCK_MAX_RECORDS: "200"})
    try:
        done = finished(alice, bedrock_body(450, model=NOVA))
    finally:
        set_env(stack, "plan", previous)
    assert [c["request_counts"]["total"] for c in done["chunks"]] == [150, 150, 150]  # even, none below the minimum
    assert sim.stats()["bedrock"]["batches_created"] == 3
    results = alice.all_results(done["id"], limit=200)
    assert sorted(results) == sorted(f"id-{i}" for i in range(450))
    assert all(r["status"] == "succeeded" for r in results.values())


def test_a_small_job_runs_on_demand_and_is_refused_under_reject(stack, alice, sim):
    done = finished(alice, bedrock_body(5))
    assert [c["status"] for c in done["chunks"]] == ["on_demand"]
    assert sim.stats()["bedrock"]["batches_created"] == 0 and sim.stats()["bedrock"]["converse_calls"] == 5
    results = alice.all_results(done["id"])
    assert sorted(results) == [f"id-{i}" for i in range(5)]
    assert {r["mode"] for r in results.values()} == {"on_demand"} and all(r["text"] for r in results.values())

    previous = set_env(stack, "create", {constants.ENV_BEDROCK_SMALL_JOBS: "reject"})
    try:
        answer = alice.request("POST", "/batches", bedrock_body(5))
    finally:
        set_env(stack, "create", previous)
    assert answer.status_code == 400, answer.text
    assert "at least 100 requests" in answer.json()["error"]["message"]
    assert alice.request("POST", "/batches", bedrock_body(5)).status_code == 202  # on demand again


def test_cancel_keeps_the_records_that_finished(alice, sim):
    sim.configure(processing_seconds=6)
    job = alice.create(bedrock_body(200))
    batch = alice.wait(job["id"], until={"in_progress"})
    deadline = time.monotonic() + 20
    while not any(n >= 40 for n in sim.stats()["items_finished"].values()):
        assert time.monotonic() < deadline, sim.stats()["items_finished"]
        time.sleep(0.1)
    assert alice.request("POST", f"/batches/{batch['id']}/cancel").status_code == 202
    done = alice.wait(job["id"])
    assert done["status"] == "canceled"
    results = alice.all_results(job["id"])
    statuses = [r["status"] for r in results.values()]
    assert len(results) == 200 and 0 < statuses.count("succeeded") < 200
    assert statuses.count("succeeded") + statuses.count("canceled") == 200


def test_a_job_bedrock_fails_ends_failed_naming_bedrock_but_not_in_its_words(alice, sim):
    sim.configure(bedrock_min_records=300)  # Bedrock's quota for this account is higher than the deployment says
    job = alice.create(bedrock_body(250))
    done = alice.wait(job["id"])
    assert done["status"] == "failed"
    assert "Amazon Bedrock failed the batch" in done["error"]  # its message is the operator's (decision 0112)
    assert "minimum of 300 records" not in done["error"]


def test_a_lost_create_answer_yields_exactly_one_bedrock_job(stack, alice, sim):
    sim.add_fault("bedrock", "create_batch", "drop_after_accept")
    done = finished(alice, bedrock_body(150))
    assert sim.stats()["bedrock"]["batches_created"] == 1
    assert sim.stats()["bedrock"]["batches"] == [done["chunks"][0]["provider_batch_id"].rsplit("/", 1)[-1]]
    assert len(alice.all_results(done["id"])) == 150


def test_a_service_role_that_cannot_read_the_input_fails_the_job_without_showing_the_role(stack, alice, sim):
    role_name = stack.function_environment(stack.function("submit"))[constants.ENV_BEDROCK_ROLE_ARN].split("/")[-1]
    iam = stack.client("iam")
    [policy_name] = iam.list_role_policies(RoleName=role_name)["PolicyNames"]
    document = iam.get_role_policy(RoleName=role_name, PolicyName=policy_name)["PolicyDocument"]
    narrower = {
        **document,
        "Statement": [s for s in document["Statement"] if s["Action"] != "s3:GetObject"],  # the input read
    }
    assert len(narrower["Statement"]) == len(document["Statement"]) - 1
    iam.put_role_policy(RoleName=role_name, PolicyName=policy_name, PolicyDocument=json.dumps(narrower))
    try:
        job = alice.create(bedrock_body(150))
        done = alice.wait(job["id"])
    finally:
        iam.put_role_policy(RoleName=role_name, PolicyName=policy_name, PolicyDocument=json.dumps(document))
    assert done["status"] == "failed"
    assert "Amazon Bedrock failed the batch" in done["error"]
    assert "Access denied" not in done["error"] and role_name not in done["error"]  # the operator's (decision 0112)


def test_the_seed_program_runs_with_a_bedrock_invoker(stack, sim, tmp_path):
    lines = run_seed_program(stack, tmp_path, "bedrock", CLAUDE)
    assert [line.split(":")[0] for line in lines] == [f">> request_{c}" for c in "ABCDE"]
    assert all("Name an animal that starts with the letter" in line for line in lines)
    assert sim.stats()["bedrock"]["converse_calls"] == 5  # five requests: a small job, run on demand


def test_a_dropped_bedrock_file_yields_results_in_the_outbox(stack, sim, drop_folder_owner):
    s3 = stack.client("s3", stack.caller(DROP_FOLDER_USER))
    header = {"batch_gateway": {"provider": "bedrock", "model": NOVA, "hyperparameters": {"max_tokens": 64}}}
    lines = [header] + [{"id": f"row-{i}", "request": f"Summarise item {i}"} for i in range(120)]
    body = "".join(json.dumps(line) + "\n" for line in lines).encode()
    s3.put_object(Bucket=stack.bucket, Key="inbox/bedrock/daily.jsonl", Body=body)
    deadline = time.monotonic() + 60
    while True:
        try:
            results = s3.get_object(Bucket=stack.bucket, Key="outbox/bedrock/daily.results.jsonl")["Body"].read()
            break
        except s3.exceptions.NoSuchKey:
            assert time.monotonic() < deadline, "no results in the outbox"
            time.sleep(0.3)
    by_id = {item["id"]: item for item in map(json.loads, results.decode().splitlines())}
    assert sorted(by_id) == sorted(f"row-{i}" for i in range(120))
    assert all(item["status"] == "succeeded" for item in by_id.values())
    assert sim.stats()["bedrock"]["batches_created"] == 1


def _invocation_types(sim, done: dict) -> list[str | None]:
    """The ``modelInvocationType`` each of the job's Bedrock jobs was created with (None: left out, InvokeModel)."""
    ids = {chunk["provider_batch_id"].rsplit("/", 1)[-1] for chunk in done["chunks"]}
    return [job["invocation_type"] for job in sim.created_batches()["bedrock"] if job["id"] in ids]


def _seen(result: dict) -> tuple:
    """What the user reads of a result item (its text, usage and so cost, finish), not which job it came from."""
    return (result["status"], result["text"], result["token_usage"], result["finish_details"], result.get("cost"))


def test_a_plain_job_runs_as_converse_with_the_items_invoke_model_gives_and_a_tool_job_as_invoke_model(
    stack, alice, sim
):
    converse = finished(alice, bedrock_body(150))
    assert _invocation_types(sim, converse) == ["Converse"]
    converse_results = alice.all_results(converse["id"])

    sending = ("submit", "poll")  # Poll sends pending chunks too
    previous = {m: set_env(stack, m, {constants.ENV_BEDROCK_INVOCATION_TYPE: "invoke_model"}) for m in sending}
    try:
        native = finished(alice, bedrock_body(150))
    finally:
        for module, before in previous.items():
            set_env(stack, module, before)
    assert _invocation_types(sim, native) == [None]
    native_results = alice.all_results(native["id"])
    assert sorted(converse_results) == sorted(native_results) == sorted(f"id-{i}" for i in range(150))
    assert all(_seen(r)[0] == "succeeded" and r["text"] for r in converse_results.values())
    assert {i: _seen(r) for i, r in converse_results.items()} == {i: _seen(r) for i, r in native_results.items()}

    tool = {"name": "lookup", "description": "Look a word up", "input_schema": {"type": "object", "properties": {}}}
    body = bedrock_body(120)
    body["requests"]["id-7"] = {"messages": [{"role": "user", "content": "question 7"}], "tools": [tool]}
    with_tools = finished(alice, body)
    results = alice.all_results(with_tools["id"])  # in a Converse-type job, Bedrock refuses id-7's toolConfig
    assert {i: r["finish_details"] for i, r in results.items() if r["status"] != "succeeded"} == {}
    assert len(results) == 120 and _invocation_types(sim, with_tools) == [None]
