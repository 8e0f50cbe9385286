"""The Bedrock simulator through boto3's own `bedrock` and `bedrock-runtime` clients, against the local AWS process
(moto with IAM enforced): jobs read their input and write their output in S3 as the service role they name."""

from __future__ import annotations

import json
import threading
import time

import boto3
import botocore.session
import pytest
import requests
from botocore.config import Config

from batch_gateway_dev.simulators import SimulatorServer
from tests.support.bedrock_account import ACCOUNT, bedrock_service_role, bedrock_stand_in, bedrock_trust
from tests.support.concurrency import Threads
from tests.support.local_aws import ALLOW_ALL, start_local_aws, user_with_policy
from tests.support.waiting import wait_for

REGION = "us-east-1"
BUCKET = "bedrock-io"
CLAUDE = "anthropic.claude-3-5-haiku-20241022-v1:0"
NOVA = "amazon.nova-lite-v1:0"
NO_RETRIES = Config(retries={"total_max_attempts": 1})

READ_INPUT = {"Effect": "Allow", "Action": "s3:GetObject", "Resource": f"arn:aws:s3:::{BUCKET}/input/*"}
LIST = {"Effect": "Allow", "Action": "s3:ListBucket", "Resource": f"arn:aws:s3:::{BUCKET}"}
WRITE_OUTPUT = {"Effect": "Allow", "Action": "s3:PutObject", "Resource": f"arn:aws:s3:::{BUCKET}/output/*"}
ROLES = {
    "BedrockBatchRole": (bedrock_trust(), (READ_INPUT, LIST, WRITE_OUTPUT)),
    "CannotReadRole": (bedrock_trust(), (LIST, WRITE_OUTPUT)),
    "LambdaTrustRole": (bedrock_trust("lambda.amazonaws.com"), (READ_INPUT, LIST, WRITE_OUTPUT)),
}


def role(name: str = "BedrockBatchRole") -> str:
    return f"arn:aws:iam::{ACCOUNT}:role/{name}"


@pytest.fixture(scope="module")
def aws():
    """The local AWS process (moto, IAM enforced), with a bucket, the roles above and the Bedrock stand-in user."""
    with start_local_aws() as local:
        iam = local.client("iam")
        service = bedrock_stand_in(iam)
        operator = user_with_policy(iam, "operator", ALLOW_ALL)
        for name, (trust, statements) in ROLES.items():
            bedrock_service_role(iam, name, *statements, trust=trust)
        local.client("s3").create_bucket(Bucket=BUCKET)
        local.enforce_iam()
        yield {"endpoint": local.endpoint, "service": service, "operator": operator}


@pytest.fixture(scope="module")
def server(aws):
    with SimulatorServer(
        processing_seconds=0.4, aws_endpoint_url=aws["endpoint"], aws_credentials=aws["service"]
    ) as sim:
        yield sim


@pytest.fixture
def sim(server):
    server.reset()
    server.configure(bedrock_min_records=1)
    return server


@pytest.fixture(scope="module")
def s3(aws):
    return boto3.client("s3", endpoint_url=aws["endpoint"], region_name=REGION, **aws["operator"])


@pytest.fixture(scope="module")
def clients(server):
    keys = {"region_name": REGION, "aws_access_key_id": "AKIDCALLER", "aws_secret_access_key": "secret"}
    bedrock = boto3.client("bedrock", endpoint_url=server.bedrock_endpoint_url, config=NO_RETRIES, **keys)
    runtime = boto3.client("bedrock-runtime", endpoint_url=server.bedrock_endpoint_url, config=NO_RETRIES, **keys)
    return bedrock, runtime


@pytest.fixture
def bedrock(sim, clients):
    return clients[0]


@pytest.fixture
def runtime(sim, clients):
    return clients[1]


def claude_record(record_id: str, text: str = "Hello") -> dict:
    body = {
        "anthropic_version": "bedrock-2023-05-31",
        "max_tokens": 64,
        "messages": [{"role": "user", "content": text}],
    }
    return {"recordId": record_id, "modelInput": body}


def nova_record(record_id: str, text: str = "Hello") -> dict:
    body = {"messages": [{"role": "user", "content": [{"text": text}]}], "inferenceConfig": {"maxTokens": 64}}
    return {"recordId": record_id, "modelInput": body}


_names = iter(range(1_000_000))


def put_input(s3, records: list, name: str = "chunk.jsonl") -> str:
    prefix = f"input/{next(_names)}"
    body = "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records)
    s3.put_object(Bucket=BUCKET, Key=f"{prefix}/{name}", Body=body.encode())
    return f"s3://{BUCKET}/{prefix}/{name}"


def create(bedrock, input_uri: str, model: str = CLAUDE, role_arn: str | None = None, **extra) -> str:
    params = {
        "jobName": f"job-{next(_names)}",
        "roleArn": role_arn or role(),
        "modelId": model,
        "inputDataConfig": {"s3InputDataConfig": {"s3Uri": input_uri}},
        "outputDataConfig": {"s3OutputDataConfig": {"s3Uri": f"s3://{BUCKET}/output/"}},
        **extra,
    }
    return bedrock.create_model_invocation_job(**params)["jobArn"]


ENDED = {"Completed", "PartiallyCompleted", "Failed", "Stopped", "Expired"}


def wait_ended(bedrock, arn: str, timeout: float = 10.0, seen: list | None = None) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        job = bedrock.get_model_invocation_job(jobIdentifier=arn)
        if seen is not None and (not seen or seen[-1] != job["status"]):
            seen.append(job["status"])
        if job["status"] in ENDED:
            return job
        assert time.monotonic() < deadline, f"job still {job['status']}"
        time.sleep(0.02)


def output_lines(s3, arn: str, name: str = "chunk.jsonl") -> list[dict]:
    key = f"output/{arn.rsplit('/', 1)[-1]}/{name}.out"
    return [json.loads(line) for line in s3.get_object(Bucket=BUCKET, Key=key)["Body"].read().splitlines()]


def manifest(s3, arn: str) -> dict:
    key = f"output/{arn.rsplit('/', 1)[-1]}/manifest.json.out"
    return json.loads(s3.get_object(Bucket=BUCKET, Key=key)["Body"].read())


# ---- round trips -----------------------------------------------------------------------------------------------


def test_a_claude_job_completes_with_messages_responses_in_s3(bedrock, s3):
    arn = create(bedrock, put_input(s3, [claude_record(f"r{i}", f"Question {i}") for i in range(3)]))

    job = wait_ended(bedrock, arn)

    assert job["status"] == "Completed"
    assert (job["totalRecordCount"], job["processedRecordCount"], job["successRecordCount"]) == (3, 3, 3)
    lines = output_lines(s3, arn)
    assert [line["recordId"] for line in lines] == ["r0", "r1", "r2"]
    message = lines[1]["modelOutput"]
    assert message["type"] == "message" and message["stop_reason"] == "end_turn"
    assert "Question 1" in message["content"][0]["text"]
    assert message["usage"]["input_tokens"] >= 1 and message["usage"]["output_tokens"] >= 1
    assert lines[1]["modelInput"] == claude_record("r1", "Question 1")["modelInput"]
    counts = manifest(s3, arn)
    assert counts["totalRecordCount"] == counts["processedRecordCount"] == counts["successRecordCount"] == 3
    assert counts["errorRecordCount"] == 0
    assert counts["inputTokenCount"] == sum(line["modelOutput"]["usage"]["input_tokens"] for line in lines)


def test_a_nova_job_writes_nova_responses(bedrock, s3):
    arn = create(bedrock, put_input(s3, [nova_record("n1", "Hi Nova")]), model=NOVA)

    assert wait_ended(bedrock, arn)["status"] == "Completed"
    output = output_lines(s3, arn)[0]["modelOutput"]
    assert output["stopReason"] == "end_turn"
    assert "Hi Nova" in output["output"]["message"]["content"][0]["text"]
    assert output["usage"]["totalTokens"] == output["usage"]["inputTokens"] + output["usage"]["outputTokens"]


def test_an_inference_profile_and_a_folder_of_inputs_are_accepted(bedrock, s3):
    first = put_input(s3, [claude_record("a")], name="one.jsonl")
    folder = first.rsplit("/", 1)[0] + "/"
    s3.put_object(Bucket=BUCKET, Key=folder.split(f"{BUCKET}/", 1)[1] + "two.jsonl", Body=b"")
    arn = create(bedrock, folder, model="us." + CLAUDE)

    assert wait_ended(bedrock, arn)["status"] == "Completed"
    assert [line["recordId"] for line in output_lines(s3, arn, "one.jsonl")] == ["a"]


def test_get_accepts_the_job_id_as_well_as_the_arn(bedrock, s3):
    arn = create(bedrock, put_input(s3, [claude_record("a")]))

    assert bedrock.get_model_invocation_job(jobIdentifier=arn.rsplit("/", 1)[-1])["jobArn"] == arn


def test_an_unknown_job_is_resource_not_found(bedrock):
    with pytest.raises(bedrock.exceptions.ResourceNotFoundException):
        bedrock.get_model_invocation_job(jobIdentifier="abcdefabcdef")


def test_list_filters_by_name_and_status_and_pages(bedrock, s3):
    uri = put_input(s3, [claude_record("a")])
    arns = [create(bedrock, uri, jobName=f"batchgw-{i}") for i in range(3)]
    create(bedrock, uri, jobName="other-job")
    for arn in arns:
        wait_ended(bedrock, arn)

    first = bedrock.list_model_invocation_jobs(nameContains="batchgw", maxResults=2)
    second = bedrock.list_model_invocation_jobs(nameContains="batchgw", maxResults=2, nextToken=first["nextToken"])

    names = [j["jobName"] for j in first["invocationJobSummaries"] + second["invocationJobSummaries"]]
    assert names == ["batchgw-2", "batchgw-1", "batchgw-0"]  # newest first
    assert "nextToken" not in second
    done = bedrock.list_model_invocation_jobs(statusEquals="Completed", nameContains="batchgw")
    assert len(done["invocationJobSummaries"]) == 3


def test_a_job_goes_through_every_status_in_order(bedrock, s3, sim):
    order = ["Submitted", "Validating", "Scheduled", "InProgress", "Completed"]
    sim.configure(processing_seconds=3.0)  # each early phase lasts 150 ms
    seen: list[str] = []
    arn = create(bedrock, put_input(s3, [claude_record(f"r{i}") for i in range(5)]))

    wait_ended(bedrock, arn, seen=seen)

    # Over the wire, polled every 20 ms: never out of order, ending Completed. A poll may land after a whole phase
    # on a busy machine (the test failed so in CI: Submitted, then Scheduled), so seeing each is not required here.
    assert seen == [status for status in order if status in seen] and seen[-1] == "Completed"
    # The job's own timeline, read every 10 ms from its submission to its end: every status, in order.
    job = sim.state.simulators["bedrock"].jobs[arn.rsplit("/", 1)[-1]]
    ended_at = job.final[1]
    statuses = [
        job.schedule(job.submitted + step / 100)[0] for step in range(int((ended_at - job.submitted) * 100) + 2)
    ]
    assert [status for i, status in enumerate(statuses) if i == 0 or statuses[i - 1] != status] == order


@pytest.fixture
def announced(sim):
    """Bedrock's EventBridge events as the simulator puts them, into a list here (the local stack puts them on the
    default bus instead: tests/e2e/test_noticed_at_once.py); the sink is taken away after the test."""
    entries: list[dict] = []
    sim.announce_bedrock_jobs(lambda entry: entries.append(entry) or {"EventId": f"e{len(entries)}"})
    yield entries
    sim.announce_bedrock_jobs(None)


def statuses_of(entries: list[dict], arn: str) -> list[str]:
    return [json.loads(e["Detail"])["status"] for e in entries if e["Resources"] == [arn]]


def test_each_status_a_job_reaches_is_put_once_in_order_as_bedrocks_state_change_event(bedrock, s3, sim, announced):
    order = ["Submitted", "Validating", "Scheduled", "InProgress", "Completed"]
    sim.configure(processing_seconds=3.0)
    arn = create(bedrock, put_input(s3, [claude_record(f"r{i}") for i in range(5)]))

    job = wait_ended(bedrock, arn)

    statuses = wait_for(lambda: (s := statuses_of(announced, arn)) and s[-1] == "Completed" and s, 5, "the end's event")
    # Each once, in the job's order; a timer late on a busy machine may let one early phase pass unannounced.
    assert statuses == [status for status in order if status in statuses]
    assert statuses[0] == "Submitted" and "InProgress" in statuses
    end = announced[-1]
    assert (end["Source"], end["DetailType"], end["Resources"]) == (
        "aws.bedrock",
        "Batch Inference Job State Change",
        [arn],
    )
    assert json.loads(end["Detail"]) == {  # the sample event's detail (How EventBridge for Amazon Bedrock works)
        "version": "0.0",
        "accountId": ACCOUNT,
        "batchJobName": job["jobName"],
        "batchJobArn": arn,
        "batchModelId": f"arn:aws:bedrock:{REGION}::foundation-model/{CLAUDE}",
        "status": "Completed",
        "failureMessage": "",
        "creationTime": json.loads(end["Detail"])["creationTime"],
    }
    assert end["Time"].timestamp() >= job["endTime"].timestamp() - 1
    assert [(e["status"], e["failed"]) for e in sim.stats()["bedrock"]["events"] if e["job_arn"] == arn][-1] == (
        "Completed",
        False,
    )


def test_a_stopped_and_a_failed_job_announce_their_ends(bedrock, s3, sim, announced):
    sim.configure(processing_seconds=3600, cancel_seconds=3600, bedrock_min_records=3)
    stopped = create(bedrock, put_input(s3, [claude_record(f"r{i}") for i in range(4)]))
    failed = create(bedrock, put_input(s3, [claude_record("only")]))  # under the minimum: fails at validation
    bedrock.stop_model_invocation_job(jobIdentifier=stopped)

    sim.end_processing("bedrock")
    wait_ended(bedrock, stopped)
    wait_ended(bedrock, failed)

    assert wait_for(lambda: statuses_of(announced, stopped)[-1] == "Stopped", 5, "the stop's end") is True
    assert statuses_of(announced, stopped) == ["Submitted", "Stopping", "Stopped"]
    assert wait_for(lambda: statuses_of(announced, failed)[-1] == "Failed", 5, "the failure's event") is True
    [end] = [json.loads(e["Detail"]) for e in announced if e["Resources"] == [failed] and "Failed" in e["Detail"]]
    assert "less than the minimum of 3 records" in end["failureMessage"]


def test_without_a_sink_nothing_is_put(bedrock, s3, sim):
    arn = create(bedrock, put_input(s3, [claude_record("a")]))
    wait_ended(bedrock, arn)
    assert sim.stats()["bedrock"]["events"] == []


def test_items_finished_counts_a_running_jobs_records(bedrock, s3, sim):
    sim.configure(processing_seconds=1.0)
    arn = create(bedrock, put_input(s3, [claude_record(f"r{i}") for i in range(10)]))
    job_id = arn.rsplit("/", 1)[-1]

    wait_ended(bedrock, arn)

    assert sim.stats()["items_finished"][job_id] == 10


# ---- idempotency, names, quota, faults -------------------------------------------------------------------------


def test_the_same_client_request_token_and_body_give_the_same_job(bedrock, s3):
    uri = put_input(s3, [claude_record("a")])
    first = create(bedrock, uri, jobName="same-job", clientRequestToken="chunk-0001")

    again = create(bedrock, uri, jobName="same-job", clientRequestToken="chunk-0001")

    assert again == first
    assert len(bedrock.list_model_invocation_jobs()["invocationJobSummaries"]) == 1


def test_the_same_token_with_another_body_is_a_conflict(bedrock, s3):
    uri = put_input(s3, [claude_record("a")])
    create(bedrock, uri, jobName="job-a", clientRequestToken="chunk-0002")

    with pytest.raises(bedrock.exceptions.ConflictException):
        create(bedrock, uri, jobName="job-b", clientRequestToken="chunk-0002")


def test_a_duplicate_job_name_is_refused(bedrock, s3):
    uri = put_input(s3, [claude_record("a")])
    create(bedrock, uri, jobName="taken")

    with pytest.raises(bedrock.exceptions.ValidationException, match="job name is currently in use"):
        create(bedrock, uri, jobName="taken")


def test_an_unknown_model_is_refused_at_create(bedrock, s3):
    with pytest.raises(bedrock.exceptions.ValidationException, match="model identifier is invalid"):
        create(bedrock, put_input(s3, [claude_record("a")]), model="meta.llama3-8b-instruct-v1:0")


def test_jobs_beyond_the_per_model_quota_are_refused(bedrock, s3, sim):
    sim.configure(bedrock_max_jobs_per_model=2, processing_seconds=30)
    uri = put_input(s3, [claude_record("a")])
    create(bedrock, uri)
    create(bedrock, uri)

    with pytest.raises(bedrock.exceptions.ServiceQuotaExceededException):
        create(bedrock, uri)
    create(bedrock, uri, model=NOVA)  # another model has its own quota


def test_a_throttling_fault_is_a_throttling_exception(bedrock, s3, sim):
    sim.add_fault("bedrock", "create_batch", "http_429")

    with pytest.raises(bedrock.exceptions.ThrottlingException):
        create(bedrock, put_input(s3, [claude_record("a")]))
    assert bedrock.list_model_invocation_jobs()["invocationJobSummaries"] == []


@pytest.mark.parametrize("kind", ["http_400", "http_413"])
def test_a_refusal_fault_is_a_validation_exception_with_the_faults_words(bedrock, s3, sim, kind):
    sim.add_fault("bedrock", "create_batch", kind, message="Account 123456789012 is over its limit.")

    with pytest.raises(bedrock.exceptions.ValidationException) as caught:
        create(bedrock, put_input(s3, [claude_record("a")]))
    assert caught.value.response["Error"]["Message"] == "Account 123456789012 is over its limit."
    assert bedrock.list_model_invocation_jobs()["invocationJobSummaries"] == []


def test_unsigned_requests_are_refused(sim):
    answer = requests.get(f"{sim.bedrock_endpoint_url}/model-invocation-jobs", timeout=5)

    assert answer.status_code == 403
    assert answer.headers["x-amzn-ErrorType"] == "MissingAuthenticationTokenException"


# ---- how jobs end ----------------------------------------------------------------------------------------------


def test_malformed_and_failing_records_make_the_job_partially_completed(bedrock, s3, sim):
    sim.configure(item_outcomes={"r2": "errored"})
    broken = {"recordId": "r1", "modelInput": {"anthropic_version": "bedrock-2023-05-31", "messages": []}}
    arn = create(bedrock, put_input(s3, [claude_record("r0"), broken, claude_record("r2"), claude_record("r3")]))

    job = wait_ended(bedrock, arn)

    assert job["status"] == "PartiallyCompleted"
    assert (job["successRecordCount"], job["errorRecordCount"]) == (2, 2)
    lines = {line["recordId"]: line for line in output_lines(s3, arn)}
    assert "max_tokens" in lines["r1"]["error"]["errorMessage"] and "modelOutput" not in lines["r1"]
    assert lines["r2"]["error"]["errorCode"] == 400
    assert "modelOutput" in lines["r3"]
    assert manifest(s3, arn)["errorRecordCount"] == 2


def test_a_stopped_job_keeps_the_records_finished_before_the_stop(bedrock, s3, sim):
    sim.configure(processing_seconds=2.0, cancel_seconds=0.2)
    arn = create(bedrock, put_input(s3, [claude_record(f"r{i}") for i in range(20)]))
    job_id = arn.rsplit("/", 1)[-1]
    wait_for(lambda: sim.stats()["items_finished"].get(job_id, 0) >= 5, timeout=5, what="5 records to finish")

    bedrock.stop_model_invocation_job(jobIdentifier=arn)
    stopping = bedrock.get_model_invocation_job(jobIdentifier=arn)["status"]
    job = wait_ended(bedrock, arn)

    assert stopping == "Stopping"
    assert job["status"] == "Stopped"
    assert 5 <= job["processedRecordCount"] < 20
    lines = output_lines(s3, arn)
    assert [line["recordId"] for line in lines] == [f"r{i}" for i in range(job["processedRecordCount"])]
    assert manifest(s3, arn)["processedRecordCount"] == job["processedRecordCount"]


def test_end_processing_ends_a_job_still_running_and_one_still_stopping_now(bedrock, s3, sim):
    """A test lets a job end, or its stop complete, on its own signal (``sim.end_processing``), not on the clock:
    a job still submitted reads its input and completes with every record; a stopping one stops."""
    sim.configure(processing_seconds=3600, cancel_seconds=3600)
    running = create(bedrock, put_input(s3, [claude_record(f"r{i}") for i in range(4)]))
    stopping = create(bedrock, put_input(s3, [claude_record(f"s{i}") for i in range(4)]))
    bedrock.stop_model_invocation_job(jobIdentifier=stopping)
    assert bedrock.get_model_invocation_job(jobIdentifier=running)["status"] == "Submitted"

    assert sim.end_processing("bedrock") == 2

    job = wait_ended(bedrock, running)
    assert job["status"] == "Completed" and job["successRecordCount"] == 4
    assert [line["recordId"] for line in output_lines(s3, running)] == ["r0", "r1", "r2", "r3"]
    assert wait_ended(bedrock, stopping)["status"] == "Stopped"


def test_stopping_an_ended_job_is_refused(bedrock, s3):
    arn = create(bedrock, put_input(s3, [claude_record("a")]))
    wait_ended(bedrock, arn)

    with pytest.raises(bedrock.exceptions.ValidationException, match="cannot be stopped"):
        bedrock.stop_model_invocation_job(jobIdentifier=arn)


def test_a_job_still_running_when_its_timeout_elapses_expires_with_partial_output(bedrock, s3, sim):
    # 24 hours of 0.25 s: the job times out 6 s in, well before its 20 s of processing end and long enough after
    # validation (assume the role, read the input: over a second on a loaded machine) for records to finish
    sim.configure(processing_seconds=20.0, bedrock_hour_seconds=0.25)
    arn = create(bedrock, put_input(s3, [claude_record(f"r{i}") for i in range(40)]), timeoutDurationInHours=24)

    job = wait_ended(bedrock, arn, timeout=30)

    assert job["status"] == "Expired"
    assert 0 < job["processedRecordCount"] < 40
    assert len(output_lines(s3, arn)) == job["processedRecordCount"]


def test_a_job_below_the_minimum_records_fails_at_validation(bedrock, s3, sim):
    sim.configure(bedrock_min_records=100)
    arn = create(bedrock, put_input(s3, [claude_record(f"r{i}") for i in range(5)]))

    job = wait_ended(bedrock, arn)

    assert job["status"] == "Failed"
    assert "less than the minimum of 100 records" in job["message"]


def test_a_role_that_cannot_read_the_input_fails_the_job_with_access_denied(bedrock, s3):
    arn = create(bedrock, put_input(s3, [claude_record("a")]), role_arn=role("CannotReadRole"))

    job = wait_ended(bedrock, arn)

    assert job["status"] == "Failed"
    assert "Access denied" in job["message"]


def test_a_role_that_does_not_trust_bedrock_fails_the_job(bedrock, s3):
    arn = create(bedrock, put_input(s3, [claude_record("a")]), role_arn=role("LambdaTrustRole"))

    job = wait_ended(bedrock, arn)

    assert job["status"] == "Failed"
    assert "could not assume the service role" in job["message"]


# ---- Converse --------------------------------------------------------------------------------------------------


def test_converse_answers_in_the_converse_shape(runtime):
    answer = runtime.converse(
        modelId="us." + CLAUDE,
        system=[{"text": "Be brief"}],
        messages=[{"role": "user", "content": [{"text": "What is 2+2?"}]}],
        inferenceConfig={"maxTokens": 50},
    )

    assert answer["stopReason"] == "end_turn"
    assert "What is 2+2?" in answer["output"]["message"]["content"][0]["text"]
    assert answer["usage"]["inputTokens"] >= 1


def test_converse_throttling_fault(runtime, sim):
    sim.add_fault("bedrock", "converse", "http_429")

    with pytest.raises(runtime.exceptions.ThrottlingException):
        runtime.converse(modelId=NOVA, messages=[{"role": "user", "content": [{"text": "Hi"}]}])


# ---- answers match botocore's service model --------------------------------------------------------------------

_SESSION = botocore.session.get_session()


def assert_matches(shape, value, where: str = "") -> None:
    """`value` (parsed JSON) is what `shape` allows: required members present, no unknown members, types, enums."""
    kind = shape.type_name
    if kind == "structure":
        assert isinstance(value, dict), f"{where}: expected an object, got {value!r}"
        unknown = set(value) - set(shape.members)
        assert not unknown, f"{where}: members not in {shape.name}: {sorted(unknown)}"
        missing = set(shape.required_members) - set(value)
        assert not missing, f"{where}: required members of {shape.name} missing: {sorted(missing)}"
        for name, member in value.items():
            assert_matches(shape.members[name], member, f"{where}.{name}")
    elif kind == "list":
        assert isinstance(value, list), f"{where}: expected a list"
        for index, item in enumerate(value):
            assert_matches(shape.member, item, f"{where}[{index}]")
    elif kind == "map":
        assert isinstance(value, dict), f"{where}: expected a map"
        for key, item in value.items():
            assert_matches(shape.value, item, f"{where}[{key}]")
    elif kind == "string":
        assert isinstance(value, str), f"{where}: expected a string, got {value!r}"
        if shape.enum:
            assert value in shape.enum, f"{where}: {value!r} not in {shape.enum}"
    elif kind in ("integer", "long"):
        assert isinstance(value, int) and not isinstance(value, bool), f"{where}: expected an integer"
    elif kind == "timestamp":
        assert isinstance(value, str | int | float), f"{where}: expected a timestamp"
        if isinstance(value, str):
            from datetime import datetime

            datetime.fromisoformat(value.replace("Z", "+00:00"))
    elif kind == "boolean":
        assert isinstance(value, bool), f"{where}: expected a boolean"
    elif kind in ("double", "float"):
        assert isinstance(value, int | float), f"{where}: expected a number"
    elif kind == "document":
        pass
    else:
        raise AssertionError(f"{where}: unhandled shape type {kind}")


def raw_answer(client, operation: str, **params) -> dict:
    """The JSON body the simulator sent for a call (botocore's parsed answer would hide unknown members)."""
    captured: dict = {}

    def keep(response_dict, **_):
        captured["body"] = response_dict["body"]

    event = f"before-parse.{client.meta.service_model.service_name}.{operation}"
    client.meta.events.register(event, keep)
    try:
        getattr(client, botocore.xform_name(operation))(**params)
    finally:
        client.meta.events.unregister(event, keep)
    return json.loads(captured["body"] or b"{}")


def check_against_model(service: str, operation: str, body: dict) -> None:
    shape = _SESSION.get_service_model(service).operation_model(operation).output_shape
    assert_matches(shape, body, operation)


def _ended_job(bedrock, s3, **extra) -> str:
    arn = create(bedrock, put_input(s3, [claude_record("a"), claude_record("b")]), **extra)
    wait_ended(bedrock, arn)
    return arn


def test_create_answer_matches_the_service_model(bedrock, s3):
    uri = put_input(s3, [claude_record("a")])
    params = {
        "jobName": "model-check",
        "roleArn": role(),
        "modelId": CLAUDE,
        "inputDataConfig": {"s3InputDataConfig": {"s3Uri": uri}},
        "outputDataConfig": {"s3OutputDataConfig": {"s3Uri": f"s3://{BUCKET}/output/"}},
    }
    check_against_model(
        "bedrock", "CreateModelInvocationJob", raw_answer(bedrock, "CreateModelInvocationJob", **params)
    )


def test_get_answer_matches_the_service_model(bedrock, s3, sim):
    sim.configure(item_outcomes={"b": "errored"})
    arn = _ended_job(bedrock, s3, modelInvocationType="InvokeModel", timeoutDurationInHours=48)
    body = raw_answer(bedrock, "GetModelInvocationJob", jobIdentifier=arn)
    assert body["status"] == "PartiallyCompleted" and "endTime" in body

    check_against_model("bedrock", "GetModelInvocationJob", body)


def test_get_answer_of_a_failed_job_matches_the_service_model(bedrock, s3):
    arn = create(bedrock, put_input(s3, [claude_record("a")]), role_arn=role("CannotReadRole"))
    wait_ended(bedrock, arn)
    body = raw_answer(bedrock, "GetModelInvocationJob", jobIdentifier=arn)
    assert body["status"] == "Failed" and body["message"]

    check_against_model("bedrock", "GetModelInvocationJob", body)


def test_list_answer_matches_the_service_model(bedrock, s3):
    for _ in range(3):
        _ended_job(bedrock, s3)
    body = raw_answer(bedrock, "ListModelInvocationJobs", maxResults=2)
    assert len(body["invocationJobSummaries"]) == 2 and body["nextToken"]

    check_against_model("bedrock", "ListModelInvocationJobs", body)


def test_stop_answer_matches_the_service_model(bedrock, s3, sim):
    sim.configure(processing_seconds=30)
    arn = create(bedrock, put_input(s3, [claude_record("a")]))

    check_against_model(
        "bedrock", "StopModelInvocationJob", raw_answer(bedrock, "StopModelInvocationJob", jobIdentifier=arn)
    )


def test_converse_answer_matches_the_service_model(runtime):
    body = raw_answer(runtime, "Converse", modelId=NOVA, messages=[{"role": "user", "content": [{"text": "Hi"}]}])

    check_against_model("bedrock-runtime", "Converse", body)


def test_a_poll_while_the_input_is_being_read_sees_the_job_validating_not_failed(bedrock, s3, sim, monkeypatch):
    """A poll does not wait for a load under way and shows the job as it stands. It must never show an ended status
    there: the bench saw Failed, then InProgress, and a gateway's Poll would have failed a job that went on."""
    from batch_gateway_dev.simulators import bedrock as simulator

    in_load, polled = threading.Event(), threading.Event()
    real_plan = simulator.Plan
    poller = Threads()

    def plan_after_a_poll(**kwargs):  # the load has read the input and is about to schedule the records
        in_load.set()
        poller.wait(polled, "no poll came while the load held the job")
        return real_plan(**kwargs)

    monkeypatch.setattr(simulator, "Plan", plan_after_a_poll)
    arn = create(bedrock, put_input(s3, [claude_record(f"r{i}") for i in range(3)]))

    def poll_until_loading():  # the load starts on a poll's thread or the job's own timer, whichever comes first
        while not in_load.wait(0.02) and not polled.is_set():
            bedrock.get_model_invocation_job(jobIdentifier=arn)

    poller.start("poller", poll_until_loading)
    try:
        assert in_load.wait(10), "the load never started"
        status = bedrock.get_model_invocation_job(jobIdentifier=arn)["status"]  # while the load holds the job
    finally:
        polled.set()
        poller.join(timeout=10)

    assert status == "Validating"
    assert wait_ended(bedrock, arn)["status"] == "Completed"


def test_a_poll_paused_between_its_reads_of_the_loaded_job_does_not_see_it_failed():
    """``_load`` publishes the plan, then ``loaded``. A poll reads the job without its lock, so it must read them in
    the other order: a poll that read the plan before the load ended and ``loaded`` after it held a loaded job with
    no plan, which it shows as Failed (a review found this window left by the fix above)."""
    from batch_gateway_dev.simulators import bedrock as simulator
    from batch_gateway_dev.simulators.schedule import Plan

    now = time.time()
    plan = Plan(created=now + 60, seconds=60, n=3, forced={}, error_every=0, expire=False)

    class LoadEndsAfterTheFirstRead(simulator._Job):
        """Before the load until the poll's first read of ``plan`` or ``loaded``, after it from then on."""

        def __init__(self, *args, **kwargs):
            self.ended = False
            super().__init__(*args, **kwargs)

        def _read(self, before, after):
            value = after if self.ended else before
            self.ended = True
            return value

        plan = property(lambda self: self._read(None, plan), lambda self, value: None)
        loaded = property(lambda self: self._read(False, True), lambda self, value: None)

    body = {
        "jobName": "j",
        "modelId": CLAUDE,
        "roleArn": role(),
        "clientRequestToken": "t",
        "inputDataConfig": {"s3InputDataConfig": {"s3Uri": f"s3://{BUCKET}/input/x.jsonl"}},
        "outputDataConfig": {"s3OutputDataConfig": {"s3Uri": f"s3://{BUCKET}/output/"}},
    }
    config = {"processing_seconds": 1.0, "bedrock_hour_seconds": 3600.0}
    arn = f"arn:aws:bedrock:{REGION}:{ACCOUNT}:model-invocation-job/x"
    job = LoadEndsAfterTheFirstRead(body, arn, "f", config, now)
    job.submitted = now - 10  # submitted a while ago; the load ran past the end of validation, as a short
    job.validated_at = now - 1  # processing time makes it

    assert job.schedule(now)[0] != "Failed"


@pytest.mark.parametrize("advanced_by", ["its timer", "the caller's polls"])
def test_an_input_read_that_fails_part_way_is_read_again_whole(bedrock, s3, sim, monkeypatch, advanced_by):
    """Reading a folder of inputs can fail on a later file with an error that is not access denied (S3 answers 500
    once). The next advance reads the input again: the job must hold each record once, not the first file's twice.
    The read may be the job's own (its timer) or a status call's, which comes first on a busy machine: Bedrock's
    GetModelInvocationJob never answers with the job's own read error, the job stays where it stands."""
    from botocore.exceptions import ClientError

    from batch_gateway_dev.simulators import bedrock as simulator

    if advanced_by == "the caller's polls":
        monkeypatch.setattr(simulator.BedrockJobs, "_wake", lambda self, job, at: None)

    first = put_input(s3, [claude_record("a1"), claude_record("a2")], name="one.jsonl")
    folder = first.rsplit("/", 1)[0] + "/"
    s3.put_object(
        Bucket=BUCKET,
        Key=folder.split(f"{BUCKET}/", 1)[1] + "two.jsonl",
        Body=(json.dumps(claude_record("b1")) + "\n").encode(),
    )
    failed_once = threading.Event()
    real_s3 = simulator.AwsAccess.s3

    def s3_failing_once_on_the_second_file(self, credentials):
        client = real_s3(self, credentials)
        real_get = client.get_object

        def get_object(**params):
            if params["Key"].endswith("two.jsonl") and not failed_once.is_set():
                failed_once.set()
                raise ClientError({"Error": {"Code": "InternalError", "Message": "try again"}}, "GetObject")
            return real_get(**params)

        client.get_object = get_object
        return client

    monkeypatch.setattr(simulator.AwsAccess, "s3", s3_failing_once_on_the_second_file)
    arn = create(bedrock, folder)

    job = wait_ended(bedrock, arn)

    assert failed_once.is_set()
    assert job["status"] == "Completed"
    assert [line["recordId"] for line in output_lines(s3, arn, "one.jsonl")] == ["a1", "a2"]
    assert [line["recordId"] for line in output_lines(s3, arn, "two.jsonl")] == ["b1"]
    assert manifest(s3, arn)["totalRecordCount"] == 3


def test_a_new_job_shows_in_the_list_only_after_the_list_lag_and_is_found_by_id_at_once(sim, bedrock, s3):
    sim.configure(list_lag_seconds=3600)
    arn = create(bedrock, put_input(s3, [claude_record("a")]), jobName="batchgw-lagged")
    assert bedrock.list_model_invocation_jobs(nameContains="batchgw-lagged")["invocationJobSummaries"] == []
    assert bedrock.get_model_invocation_job(jobIdentifier=arn)["jobName"] == "batchgw-lagged"
    sim.configure(list_lag_seconds=0)
    [listed] = bedrock.list_model_invocation_jobs(nameContains="batchgw-lagged")["invocationJobSummaries"]
    assert listed["jobArn"] == arn


# ---- prompt caching (decision 0123) ----------------------------------------------------------------------------

SONNET = "anthropic.claude-sonnet-4-20250514-v1:0"  # Claude's minimum cacheable prompt: 1,024 tokens (Haiku 3.5: 2,048)
LONG = "You answer questions about rivers, briefly and accurately. " * 80  # 4,720 characters: 1,180 tokens


def _cached_converse(runtime, model: str, question: str) -> dict:
    system = [{"text": LONG}, {"cachePoint": {"type": "default"}}]
    messages = [{"role": "user", "content": [{"text": question}]}]
    body = raw_answer(
        runtime, "Converse", modelId=model, system=system, messages=messages, inferenceConfig={"maxTokens": 1}
    )
    check_against_model("bedrock-runtime", "Converse", body)
    return body


@pytest.mark.parametrize("model", ["us." + SONNET, NOVA])
def test_converse_cache_points_write_then_read_in_the_service_models_shape(runtime, model):
    first, second = _cached_converse(runtime, model, "Name a river."), _cached_converse(runtime, model, "Name a lake.")
    shared = len(LONG) // 4
    assert (first["usage"]["cacheWriteInputTokens"], first["usage"]["cacheReadInputTokens"]) == (shared, 0)
    assert first["usage"]["cacheDetails"] == [{"ttl": "5m", "inputTokens": shared}]
    assert (second["usage"]["cacheWriteInputTokens"], second["usage"]["cacheReadInputTokens"]) == (0, shared)
    usage = second["usage"]
    assert usage["inputTokens"] == (len(LONG) + len("Name a lake.")) // 4 - shared  # the uncached rest
    assert usage["totalTokens"] == usage["inputTokens"] + usage["outputTokens"] + shared
    assert usage["outputTokens"] == 1 and second["stopReason"] == "max_tokens"  # maxTokens is honoured


def test_a_prefix_under_the_models_minimum_never_caches(runtime):
    for question in ("Name a river.", "Name a lake."):
        usage = _cached_converse(runtime, "us." + CLAUDE, question)["usage"]  # Claude 3.5 Haiku: 2,048 tokens at least
        assert (usage["cacheWriteInputTokens"], usage["cacheReadInputTokens"]) == (0, 0)


def test_invoke_model_claude_reports_anthropics_cache_counts_and_batch_jobs_cache_nothing(runtime, bedrock, s3):
    """Claude's InvokeModel body caches at its `cache_control` breakpoints; batch inference is not documented to
    cache, so a job's records report every token as input, even right after a synchronous call wrote the prefix."""
    system = [{"type": "text", "text": LONG, "cache_control": {"type": "ephemeral", "ttl": "1h"}}]

    def body(question: str, max_tokens: int = 1) -> dict:
        return {"anthropic_version": "bedrock-2023-05-31", "max_tokens": max_tokens, "system": system,
                "messages": [{"role": "user", "content": question}]}  # fmt: skip

    answers = [
        json.loads(runtime.invoke_model(modelId=SONNET, body=json.dumps(body(q)))["body"].read())
        for q in ("Name a river.", "Name a lake.")
    ]
    usages = [answer["usage"] for answer in answers]
    shared = len(LONG) // 4
    counts = [(u["cache_creation_input_tokens"], u["cache_read_input_tokens"]) for u in usages]
    assert counts == [(shared, 0), (0, shared)]
    assert answers[0]["stop_reason"] == "max_tokens" and usages[0]["output_tokens"] == 1

    arn = create(bedrock, put_input(s3, [{"recordId": "r1", "modelInput": body("Name a sea.", 64)}]), model=SONNET)
    assert wait_ended(bedrock, arn)["status"] == "Completed"
    [record] = output_lines(s3, arn)
    usage = record["modelOutput"]["usage"]
    assert usage["input_tokens"] == (len(LONG) + len("Name a sea.")) // 4
    assert "cache_read_input_tokens" not in usage and "cache_creation_input_tokens" not in usage
