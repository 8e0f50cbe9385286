"""The whole service through the local stack over HTTP: what a calling service sees."""

import pytest

from tests.support.api_caller import seed_body
from tests.support.waiting import wait_for

pytestmark = pytest.mark.e2e


def test_create_status_retrieve_list_through_the_state_machine(alice):
    job = alice.create(seed_body(metadata={"team": "search"}))
    assert job["status"] == "queued" and job["request_counts"]["total"] == 5
    done = alice.wait(job["id"])
    assert done["status"] == "finished"
    assert done["request_counts"] == {
        "total": 5,
        "processing": 0,
        "succeeded": 5,
        "errored": 0,
        "canceled": 0,
        "expired": 0,
        "sent": 5,  # all different: each sent (decision 0126)
    }
    assert done["chunks"][0]["provider_batch_id"].startswith("msgbatch_")
    assert done["usage"]["output_tokens"] > 0 and done["metadata"] == {"team": "search"}
    results = alice.all_results(job["id"], limit=2)
    assert sorted(results) == [f"request_{c}" for c in "ABCDE"]
    assert "letter 'C'" in results["request_C"]["text"]
    assert results["request_C"]["finish_details"] == {"type": "stop"}
    listed = alice.request("GET", "/batches").json()["batches"]
    assert job["id"] in [b["id"] for b in listed]


def test_cancel_of_a_running_job_keeps_items_finished_before_the_cancel(alice, sim):
    sim.configure(processing_seconds=20)  # item i of 20 finishes 1 s * (i + 1) after the batch is created
    body = seed_body(requests={f"r{i:02d}": f"question {i}" for i in range(20)})
    job = alice.create(body)

    def provider_batch_id() -> str | None:
        chunks = alice.request("GET", f"/batches/{job['id']}").json()["chunks"]
        return chunks[0]["provider_batch_id"] if chunks else None

    def items_finished() -> int:
        return int(sim.stats()["items_finished"].get(batch_id, 0))

    batch_id = wait_for(provider_batch_id, timeout=60, what="the job's batch at the provider")
    wait_for(lambda: items_finished() >= 2, timeout=30, what="two of its items to finish at the provider")
    finished_before = items_finished()
    answer = alice.request("POST", f"/batches/{job['id']}/cancel")
    assert answer.status_code == 202 and answer.json()["status"] == "canceling"
    done = alice.wait(job["id"])
    assert done["status"] == "canceled"
    results = alice.all_results(job["id"])
    statuses = [r["status"] for r in results.values()]
    assert len(results) == 20
    assert finished_before <= statuses.count("succeeded") < 20
    assert statuses.count("succeeded") + statuses.count("canceled") == 20
    assert all(r["text"] for r in results.values() if r["status"] == "succeeded")
    assert all(r["finish_details"]["type"] == "error" for r in results.values() if r["status"] == "canceled")
    assert alice.request("POST", f"/batches/{job['id']}/cancel").status_code == 409


def test_two_callers_cannot_see_or_touch_each_others_jobs(alice, bob):
    job = alice.create(seed_body())
    for method, path in [
        ("GET", f"/batches/{job['id']}"),
        ("GET", f"/batches/{job['id']}/results"),
        ("POST", f"/batches/{job['id']}/cancel"),
    ]:
        answer = bob.request(method, path)
        assert answer.status_code == 404, (method, path)
        assert answer.json()["error"]["type"] == "not_found"
    assert job["id"] not in [b["id"] for b in bob.request("GET", "/batches").json()["batches"]]
    alice.wait(job["id"])


def test_unsigned_requests_are_refused_with_403(alice):
    for method, path in [("GET", "/batches"), ("POST", "/batches"), ("GET", "/batches/job_x")]:
        assert alice.request(method, path, seed_body() if method == "POST" else None, sign=False).status_code == 403


def test_bad_input_is_400_with_a_clear_message_and_nothing_is_created(alice, stack):
    s3, ddb, sfn = stack.client("s3"), stack.client("dynamodb"), stack.client("stepfunctions")
    objects = s3.list_objects_v2(Bucket=stack.bucket).get("KeyCount", 0)
    items = ddb.scan(TableName=stack.table, Select="COUNT")["Count"]
    executions = len(sfn.list_executions(stateMachineArn=stack.state_machine_arn)["executions"])
    answer = alice.request("POST", "/batches", seed_body(requests={"a": "", "b": 7}))
    assert answer.status_code == 400
    error = answer.json()["error"]
    assert error["type"] == "invalid_request"
    assert "2 request(s) are invalid" in error["message"] and "requests.a" in error["message"]
    assert [d["field"] for d in error["details"]] == ["requests.a", "requests.b"]
    assert alice.request("POST", "/batches", raw=b"{not json").status_code == 400
    assert s3.list_objects_v2(Bucket=stack.bucket).get("KeyCount", 0) == objects
    assert ddb.scan(TableName=stack.table, Select="COUNT")["Count"] == items
    assert len(sfn.list_executions(stateMachineArn=stack.state_machine_arn)["executions"]) == executions


def test_results_before_the_end_answer_409(alice, sim):
    sim.configure(processing_seconds=5)
    job = alice.create(seed_body())
    answer = alice.request("GET", f"/batches/{job['id']}/results")
    assert answer.status_code == 409
    alice.request("POST", f"/batches/{job['id']}/cancel")
    alice.wait(job["id"])
