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


def test_another_checkouts_template_comes_from_its_own_cdk_app_and_is_cached_apart(monkeypatch, tmp_path):
    """A redeploy's template (decision 0121): that tree's stacks/ synthesize it, in a process of its own whose imports
    resolve in that tree first; this tree's template and the other's never share a cache entry."""
    monkeypatch.setattr(template, "CACHE_DIR", tmp_path / "cache")
    other = tmp_path / "other"
    (other / "stacks").mkdir(parents=True)
    (other / "src" / "batch_gateway").mkdir(parents=True)
    (other / "src" / "batch_gateway" / "__init__.py").write_text("")
    (other / "src" / "batch_gateway" / "constants.py").write_text("STACK = 'from the other tree'\n")
    (other / "stacks" / "__init__.py").write_text("")
    (other / "stacks" / "app_factory.py").write_text(
        "from batch_gateway.constants import STACK\n"
        "def synth_template(context):\n"
        "    return {'Resources': {'Made': {'Type': STACK, 'Properties': context}}}\n"
    )
    (other / "cdk.json").write_text("{}")
    (other / "uv.lock").write_bytes((template.REPO_ROOT / "uv.lock").read_bytes())

    made = template.synthesized_template({"probe": 2}, other)

    assert made["Resources"]["Made"]["Type"] == "from the other tree"
    assert made["Resources"]["Made"]["Properties"]["probe"] == 2
    assert template._fingerprint({**template.LOCAL_CONTEXT, "probe": 2}, other) != template._fingerprint(
        {**template.LOCAL_CONTEXT, "probe": 2}
    )
    monkeypatch.setattr(template, "_synthesize_elsewhere", lambda *_: pytest.fail("synthesized again"))
    assert template.synthesized_template({"probe": 2}, other) == made  # cached
