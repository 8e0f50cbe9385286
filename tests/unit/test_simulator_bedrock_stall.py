"""A lasting `stall` on the Bedrock simulator (decision 0133): a job of the stalled model is accepted, then neither
reads its input nor processes a record while a later job of another model completes; lifted, it completes."""

from __future__ import annotations

from tests.support.waiting import wait_for
from tests.unit import test_simulator_bedrock as bedrock_sim

# The Bedrock simulator's module fixtures (the local AWS process with its roles and bucket, the clients), by name.
aws, server, sim, s3, clients, bedrock = (
    bedrock_sim.aws,
    bedrock_sim.server,
    bedrock_sim.sim,
    bedrock_sim.s3,
    bedrock_sim.clients,
    bedrock_sim.bedrock,
)
CLAUDE, NOVA = bedrock_sim.CLAUDE, bedrock_sim.NOVA


def test_a_stalled_job_makes_no_progress_until_lifted(sim, bedrock, s3):
    sim.add_lasting_fault("bedrock", "stall", model=CLAUDE)
    records = [bedrock_sim.claude_record("a"), bedrock_sim.claude_record("b")]
    held = bedrock_sim.create(bedrock, bedrock_sim.put_input(s3, records))
    free = bedrock_sim.create(bedrock, bedrock_sim.put_input(s3, [bedrock_sim.nova_record("n")]), model=NOVA)
    assert bedrock_sim.wait_ended(bedrock, free)["status"] == "Completed"
    assert sim.end_processing("bedrock") == 0  # the stalled job is not cut short either
    job = bedrock.get_model_invocation_job(jobIdentifier=held)
    assert job["status"] not in bedrock_sim.ENDED and job.get("processedRecordCount", 0) == 0
    assert sim.stats()["items_finished"][held.rsplit("/", 1)[-1]] == 0
    sim.lift_fault("bedrock", "stall", model=CLAUDE)
    # nobody polls: the lift re-arms the job, which reads its input and writes its output on its own, as Bedrock does
    prefix = f"output/{held.rsplit('/', 1)[-1]}/"
    written = lambda: s3.list_objects_v2(Bucket=bedrock_sim.BUCKET, Prefix=prefix).get("KeyCount", 0) >= 2  # noqa: E731
    wait_for(written, timeout=10, what="the lifted job to write its output and manifest unpolled")
    done = bedrock_sim.wait_ended(bedrock, held)
    assert done["status"] == "Completed" and done["processedRecordCount"] == 2
    assert [line["recordId"] for line in bedrock_sim.output_lines(s3, held)] == ["a", "b"]
