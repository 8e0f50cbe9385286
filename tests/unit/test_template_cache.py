"""The local template cache (``batch_gateway_dev.local.template.synthesized_template``): processes and threads that
ask for the same template at once synthesize it once; the others read what it wrote."""

from __future__ import annotations

import sys
import threading
import types
from typing import Any

import pytest

from batch_gateway_dev.local import template
from tests.support.concurrency import Threads


def test_callers_asking_at_once_synthesize_the_template_once(monkeypatch: pytest.MonkeyPatch, tmp_path):
    monkeypatch.setattr(template, "CACHE_DIR", tmp_path)
    synthesizing = threading.Event()
    second_asked = threading.Event()
    calls: list[str] = []

    def synth_template(context: dict[str, Any]) -> dict[str, Any]:
        calls.append(threading.current_thread().name)
        if len(calls) > 1:
            second_asked.set()  # a second synthesis while the first is running: what the lock prevents
            return {"Resources": {"second": {}}}
        synthesizing.set()
        # The second caller has found no template and either waits for this one (the lock) or synthesizes its own,
        # which would set second_asked; 2 s is far more than that takes.
        second_asked.wait(timeout=2)
        return {"Resources": {"first": {}}}

    monkeypatch.setitem(sys.modules, "stacks.app_factory", types.SimpleNamespace(synth_template=synth_template))
    callers = Threads()
    callers.start("first", lambda: template.synthesized_template({"probe": 1}))
    assert synthesizing.wait(timeout=30)
    callers.start("second", lambda: template.synthesized_template({"probe": 1}))
    answers = callers.join(timeout=30)
    assert calls == ["first"]
    assert answers == {"first": {"Resources": {"first": {}}}, "second": {"Resources": {"first": {}}}}
