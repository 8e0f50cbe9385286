"""A task's error is its class name, and Step Functions retries exact names only (a subclass of a retried class is
not retried). So every transient error class must be named in each task's Retry, or the job fails on the first one
instead of retrying it."""

from __future__ import annotations

import pytest

from batch_gateway.contract.errors import ProviderKeyRejectedError, TransientError
from tests.support.classes import modules, subclasses

TASKS = ("Plan", "Submit", "Poll", "Finalize", "MarkFailed")
# Not transient, still retried: the key may have been rotated since this instance read it, and the retry reads it again.
RETRIED_ON_PURPOSE = {ProviderKeyRejectedError.__name__}


def _retried_names() -> set[str]:
    modules("batch_gateway")  # every module imported, so no subclass hides in one nobody imported yet
    # The SDK's own (client.errors: APIConnectionError, APITimeoutError) are raised in a caller's process, never in a
    # task.
    served = (cls for cls in subclasses(TransientError) if not cls.__module__.startswith("batch_gateway.client"))
    return {TransientError.__name__, *(cls.__name__ for cls in served)} | RETRIED_ON_PURPOSE


@pytest.mark.parametrize("task", TASKS)
def test_every_transient_error_class_is_retried_by_every_task(synthesized, task):
    state = synthesized.state_machine_definition()["States"][task]
    retried = {name for retry in state["Retry"] for name in retry["ErrorEquals"]}
    assert sorted(_retried_names() - retried) == []
