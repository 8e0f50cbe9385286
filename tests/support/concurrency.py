"""Concurrency helpers the race tests share."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from batch_gateway_dev.local import moto_dynamodb


class Rendezvous:
    """Waits that a hook inside the code under test makes (the code might catch an ``AssertionError``, or run the hook
    on a thread of its own, so the hook does not assert): a race that never came is noted, and ``check`` fails the
    test in the test thread with "the race never happened"."""

    def __init__(self) -> None:
        self.missed: list[str] = []

    def wait(self, event: threading.Event, what: str, timeout: float = 20.0) -> bool:
        """Wait for ``event``; when it never comes, note that ``what`` never happened and go on."""
        if event.wait(timeout):
            return True
        self.missed.append(what)
        return False

    def missed_message(self) -> str:
        return f"the race never happened: {'; '.join(self.missed)}" if self.missed else ""

    def check(self) -> None:
        assert not self.missed, self.missed_message()


class Threads(Rendezvous):
    """Start callables in threads; ``join`` re-raises the first failure in the test thread, and fails the test when a
    thread is still running or a race it set up (``wait``) never happened."""

    def __init__(self) -> None:
        super().__init__()
        self.threads: list[threading.Thread] = []
        self.failures: list[BaseException] = []
        self.answers: dict[str, Any] = {}

    def start(self, name: str, fn: Callable[[], Any]) -> None:
        def run() -> None:
            try:
                self.answers[name] = fn()
            except BaseException as exc:
                self.failures.append(exc)

        thread = threading.Thread(target=run, name=name, daemon=True)
        self.threads.append(thread)
        thread.start()

    def join(self, timeout: float = 120.0) -> dict[str, Any]:
        for thread in self.threads:
            thread.join(timeout)
            assert not thread.is_alive(), f"{thread.name} is still running"
        if self.failures:
            if self.missed:
                self.failures[0].add_note(self.missed_message())
            raise self.failures[0]
        self.check()
        return self.answers


def serialise_moto_dynamodb(monkeypatch: Any) -> None:
    """DynamoDB applies each conditional write (and each transaction) atomically; moto checks the condition and then
    writes in two Python steps with no lock, so two threads could both pass one check. The local AWS process's lock
    (``moto_dynamodb.make_item_operations_atomic``), around each item operation and the answer written from it,
    restores the service's guarantee for this test. (The answer once was outside it here: a Plan racing another read
    a job item while the other wrote it, ``dictionary changed size during iteration``, in CI.)"""
    moto_dynamodb.make_item_operations_atomic(monkeypatch.setattr)
