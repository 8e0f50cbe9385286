"""A Lambda handler for tests of the local AWS process that only need a function to exist and answer: it returns
its event (``tests/integration/test_step_functions_task_tokens.py``)."""

from __future__ import annotations

from typing import Any


def handler(event: Any, context: Any) -> Any:
    return event
