"""A job run while the local stack's Anthropic key is blank, so Submit fails with ProviderAuthError and MarkFailed
ends the job: the key is put back (and the functions' cached copies dropped) whatever happens."""

from __future__ import annotations

from typing import Any

from tests.support.api_caller import Caller, seed_body

KEY_SECRET = "batch-gateway/anthropic-api-key"


def job_run_with_a_blank_key(stack: Any, caller: Caller) -> dict[str, Any]:
    """Create the seed job with the key blank and wait until it ends: the job as it ended."""
    secrets = stack.client("secretsmanager")
    secrets.put_secret_value(SecretId=KEY_SECRET, SecretString=" ")
    stack.recycle_functions()  # forget the cached key, as new Lambda instances would
    try:
        job = caller.create(seed_body())
        done: dict[str, Any] = caller.wait(job["id"], timeout=60)
    finally:
        secrets.put_secret_value(SecretId=KEY_SECRET, SecretString="simulator-key")
        stack.recycle_functions()
    return done
