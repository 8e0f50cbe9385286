"""The job's guardrails under the upgrade contract (decisions 0121, 0124): a job of the release before them reads
back unscreened and shows `off`; a screened job's counts survive the round trip through its stored form."""

from batch_gateway.models.jobs import Guardrails, Job

ZERO = {"currency": "USD", "total": 0.0}


def test_a_job_stored_before_guardrails_reads_back_as_off():
    job = Job.from_dict({"id": "job_1", "owner": "o", "provider": "anthropic", "model": "claude-x"})
    assert job.guardrails is None
    assert job.public(zero_cost=ZERO)["guardrails"] == {"pii": "off", "flagged": {}, "redacted": {}}


def test_the_counts_survive_the_stored_form_and_the_view_holds_no_value():
    counts = {"card_number": 1, "email": 2}
    job = Job(id="job_1", owner="o", provider="anthropic", model="claude-x")
    job.guardrails = Guardrails(pii="redact", flagged=counts, redacted=counts)
    again = Job.from_dict(job.to_dict())
    assert again.public(zero_cost=ZERO)["guardrails"] == {"pii": "redact", "flagged": counts, "redacted": counts}
