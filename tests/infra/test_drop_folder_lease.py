"""The drop folder's claim lease fits the deployed timeouts (decision 0015): a claim outlives the invocation that
holds it, and lapses before SQS redelivers the message, so the first redelivery after a crash takes over."""

from batch_gateway.service.inbound.drop_folder import CLAIM_LEASE


def test_the_claim_lease_outlives_the_ingest_function_and_lapses_before_the_queue_redelivers(synthesized):
    _, function = synthesized.function("Ingest")
    _, queue = synthesized.by_path("DropFolder/Events/Resource")
    timeout = function["Properties"]["Timeout"]
    visibility = queue["Properties"]["VisibilityTimeout"]
    assert timeout < CLAIM_LEASE.total_seconds() < visibility, (timeout, CLAIM_LEASE, visibility)
