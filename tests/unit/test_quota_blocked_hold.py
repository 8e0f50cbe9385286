"""A later chunk of a job that already holds quota is sent even while an earlier chunk of the job waits (review R4,
finding 2). Poll held every later chunk back behind a waiting one, and one that held quota (its create's answer lost,
so reconciled to nothing) kept its hold unsent; the repair keeps such a hold. When the owner next in turn needed
exactly that capacity, nothing on the model was ever sent again (one ledger: OpenAI's)."""

from __future__ import annotations

import pytest

from batch_gateway.contract import errors
from batch_gateway.models.jobs import ChunkState
from batch_gateway.service.quotas.repair import repair_quotas
from batch_gateway.service.workflow.poll import poll_job
from batch_gateway.service.workflow.quota_gate import cost_of
from batch_gateway.service.workflow.state import WorkflowState
from batch_gateway.service.workflow.submit import submit_job
from tests.support.quota_workflow import TOKEN_LIMIT, M, P, chunk, planned, services_with


def test_a_later_chunk_holding_quota_is_sent_while_an_earlier_one_waits_so_the_model_never_freezes():
    services, provider = services_with()
    j = planned(services, ["a" * 800, "b" * 800], owner="yusuf")  # two chunks
    x = planned(services, ["c" * 1000], owner="xavier")  # one larger chunk
    c0, c1, cx = (
        cost_of(chunk(services, j, 0)).tokens,
        cost_of(chunk(services, j, 1)).tokens,
        cost_of(chunk(services, x, 0)).tokens,
    )
    limit = c0 + c1
    assert c1 + cx > limit and cx <= limit and c0 + c1 <= limit
    services.settings.quotas[P] = {M: {"enqueued_tokens": limit}}

    real_submit, calls = provider.submit, []

    def submit(lines, ref):
        calls.append(ref.index)
        if len(calls) == 2:  # chunk 1's create: bytes sent, the answer lost
            list(lines)
            raise errors.ProviderAmbiguousError("read timeout after sending")
        return real_submit(lines, ref)

    provider.submit = submit  # type: ignore[method-assign]
    with pytest.raises(errors.ProviderAmbiguousError):
        submit_job(services, WorkflowState(job_id=j))
    assert chunk(services, j, 0).state is ChunkState.SUBMITTED
    assert chunk(services, j, 1).state is ChunkState.RECONCILING  # it holds c1

    submit_job(services, WorkflowState(job_id=x))
    assert chunk(services, x, 0).waits  # xavier: c0 + c1 in flight, cx does not fit

    provider.end("batch_0", failed=TOKEN_LIMIT)  # OpenAI refused chunk 0 for its own quota
    poll_job(services, WorkflowState(job_id=j))
    assert chunk(services, j, 0).waits  # requeued: pending, waiting
    assert chunk(services, j, 1).state is ChunkState.SUBMITTED  # admitted already: sent on its hold

    v = planned(services, ["d" * 40], owner="victor")  # a newcomer with a tiny chunk that fits
    everyone = ((j, 0), (j, 1), (x, 0), (v, 0))
    for _ in range(8):  # polls and the sweeper's repair; each batch ends once it is sent
        for job_id in (x, j, v):
            poll_job(services, WorkflowState(job_id=job_id))
        repair_quotas(services)
        for job_id, index in everyone:
            batch = chunk(services, job_id, index).provider_batch_id
            if batch and not provider.status(batch).ended:
                provider.end(batch)

    ledger, _ = services.quotas.read(P, M)
    states = {f"{job_id}/{index}": chunk(services, job_id, index).waiting_for_quota for job_id, index in everyone}
    assert all(chunk(services, job_id, index).collected for job_id, index in everyone), (
        f"never sent: {states}; in flight (tokens, batches): {(ledger.tokens, ledger.batches)}"
    )
