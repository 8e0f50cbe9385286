"""Each chaos invariant (decision 0122) on what a run observed: it names what broke, and finds nothing when all is
well."""

from __future__ import annotations

from batch_gateway_dev.chaos import invariants
from batch_gateway_dev.chaos.invariants import JobSeen, Probe


def job(**changes) -> JobSeen:
    base = {
        "id": "job_a",
        "owner": "ana",
        "provider": "anthropic",
        "status": "finished",
        "request_ids": ["j0q0", "j0q1"],
        "prompts": {"j0q0": "chaos-1-ana j0q0", "j0q1": "chaos-1-ana j0q1"},
        "batch_ids": ["msgbatch_1"],
        "cost_usd": 0.25,
        "results": [
            {"id": "j0q0", "status": "succeeded", "text": "[simulated] Reply to: chaos-1-ana j0q0"},
            {"id": "j0q1", "status": "errored", "text": None},
        ],
    }
    return JobSeen(**{**base, **changes})


def batch(batch_id: str, mark: str, ended: bool = True) -> dict:
    return {"id": batch_id, "mark": mark, "ended": ended}


def names(found) -> list[str]:
    return [v.invariant for v in found]


def test_a_well_run_job_breaks_nothing():
    seen = [job()]
    created = {"anthropic": [batch("msgbatch_1", "abcd0123")]}
    assert invariants.jobs_ended(seen) == []
    assert invariants.one_result_per_request(seen) == []
    assert invariants.one_batch_per_chunk(created, seen) == []
    assert invariants.none_running(created) == []
    assert invariants.owners_apart({"ana": {"job_a"}}, seen, [Probe("ben", "job_a", {"GET /batches/job_a": 404})]) == []


def test_an_open_job_is_named():
    [violation] = invariants.jobs_ended([job(status="in_progress")])
    assert violation.invariant == invariants.JOBS_ENDED and "job_a (ana, anthropic) in_progress" in violation.details


def test_a_missing_a_repeated_and_a_foreign_line_are_named():
    lines = [{"id": "j0q0", "status": "errored"}, {"id": "j0q0", "status": "errored"}, {"id": "zz", "status": "x"}]
    [violation] = invariants.one_result_per_request([job(results=lines)])
    assert violation.details == "job_a (finished): missing ['j0q1'], repeated or foreign ['j0q0', 'zz']"
    assert names(invariants.one_result_per_request([job(results=None)])) == [invariants.ONE_RESULT]


def test_a_result_that_answers_another_prompt_is_a_leak():
    lines = [
        {"id": "j0q0", "status": "succeeded", "text": "[simulated] Reply to: chaos-1-ben j3q0"},
        {"id": "j0q1", "status": "canceled", "text": None},
    ]
    assert names(invariants.one_result_per_request([job(results=lines)])) == [invariants.OWNERS_APART]


def test_two_batches_with_one_mark_are_one_chunk_sent_twice():
    created = {
        "openai": [batch("batch_1", '{"job": "j", "chunk": "0"}'), batch("batch_2", '{"job": "j", "chunk": "0"}')]
    }
    found = invariants.one_batch_per_chunk(created, [job(provider="openai", batch_ids=["batch_1"])])
    assert names(found) == [invariants.ONE_BATCH, invariants.ONE_BATCH]
    assert "openai made 2 batches for one chunk" in found[0].details
    assert "batch_2" in found[1].details and "recorded by no chunk" in found[1].details


def test_a_chunk_recording_a_batch_the_provider_lacks_is_named_and_ids_compare_as_the_simulators_key_them():
    bedrock = job(provider="bedrock", batch_ids=["arn:aws:bedrock:us-east-1:1:model-invocation-job/abc"])
    assert invariants.one_batch_per_chunk({"bedrock": [batch("abc", "bg-x-0")]}, [bedrock]) == []
    gemini = job(provider="google", batch_ids=["batches/xyz", None])
    assert invariants.one_batch_per_chunk({"google": [batch("xyz", "bg-y-0")]}, [gemini]) == []
    [violation] = invariants.one_batch_per_chunk({"google": []}, [gemini])
    assert "records google batch xyz, which the provider lacks" in violation.details


def test_a_running_batch_is_named():
    [violation] = invariants.none_running({"google": [batch("xyz", "bg-y-0", ended=False), batch("b", "m")]})
    assert violation.details == "1 running: google xyz (bg-y-0)"


def test_a_ledger_that_still_counts_or_holds_is_named():
    items = [
        {"pk": "QUOTA#anthropic#m", "sk": "LEDGER", "tokens": 0, "requests": 0, "batches": 0, "version": 9},
        {"pk": "QUOTA#openai#m", "sk": "LEDGER", "tokens": 10, "requests": 1, "batches": 1},
        {"pk": "QUOTA#openai#m", "sk": "HOLD#job_a#00000"},
        {"pk": "QUOTA#openai#m", "sk": "OWNER#ana"},
        {"pk": "QUOTA#openai#m", "sk": "MINUTE#29000000", "creates": 3},
    ]
    found = invariants.quota_ledgers_zero(items)
    assert names(found) == [invariants.QUOTAS_ZERO] * 3
    assert "{'tokens': 10, 'requests': 1, 'batches': 1}" in found[0].details


def test_a_reservation_left_or_a_spend_that_is_not_the_jobs_cost_is_named():
    before = {"ana": {"spent_usd": 1.0, "reserved_usd": 0}}
    settled = {"ana": {"spent_usd": 1.25, "reserved_usd": 0}}
    assert invariants.budgets_settled(before, settled, [job()]) == []
    found = invariants.budgets_settled(before, {"ana": {"spent_usd": 1.0, "reserved_usd": 0.5}}, [job()])
    assert names(found) == [invariants.BUDGETS_ZERO] * 2
    assert "still has $0.5 reserved" in found[0].details and "spent $0.000000" in found[1].details


def test_an_owner_that_lists_or_reaches_anothers_job_is_named():
    seen = [job(), job(id="job_b", owner="ben")]
    probes = [Probe("ben", "job_a", {"GET /batches/job_a": 404, "POST /batches/job_a/cancel": 409})]
    found = invariants.owners_apart({"ana": {"job_a", "job_b"}, "ben": set()}, seen, probes)
    assert [v.details for v in found] == [
        "ana lists others' jobs ['job_b']",
        "ben does not list its own jobs ['job_b']",
        "ben on job_a: {'POST /batches/job_a/cancel': 409}",
    ]


def test_a_workflow_that_ends_in_markfailed_for_a_job_that_did_not_fail_is_named():
    failures = [
        {"job": "job_a", "execution": "job_a-cancel", "status": "canceled", "caught": "ConflictError"},
        {"job": "job_b", "execution": "job_b", "status": "failed", "caught": "ProviderAuthError"},
        {"job": "job_c", "execution": "job_c", "status": "finished", "error": "States.Timeout"},
    ]
    [violation] = invariants.workflows_fail_with_their_job(failures)
    assert violation.details == "execution job_a-cancel ended in MarkFailed (ConflictError) but its job is canceled"
