"""Step Functions' side of a parked workflow in unit tests (decision 0072): which task tokens wait, which were
resumed. ``resume`` answers as ``Services.resume_workflow`` does: False for a token whose task has moved on."""

from __future__ import annotations


class Tasks:
    """Step Functions' side: which tokens wait, which were resumed."""

    def __init__(self) -> None:
        self.waiting: set[str] = set()
        self.resumed: list[str] = []

    def resume(self, token: str) -> bool:
        if token not in self.waiting:
            return False  # TaskTimedOut / InvalidToken: that task has moved on
        self.waiting.discard(token)
        self.resumed.append(token)
        return True
