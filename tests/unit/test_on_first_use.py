"""Every port of ``wiring.services()`` is built, and its module imported, on first use (``wiring._OnFirstUse``,
decisions 0089 and 0107): what a caller of ``services().quotas`` sees must be the store itself: its answers, one store
per process, a failed build that is tried again, and a proxy that copies like any object."""

from __future__ import annotations

import copy

import pytest

from batch_gateway.wiring import _OnFirstUse
from batch_gateway_dev.fakes.quotas import MemoryQuotaStore


def test_it_builds_on_first_use_once_and_answers_as_the_store():
    builds = []

    def build():
        builds.append(1)
        return MemoryQuotaStore()

    proxy = _OnFirstUse(build)
    assert builds == []
    ledger, owners = proxy.read("anthropic", "claude")
    assert (ledger.tokens, owners) == (0, {})
    proxy.read("anthropic", "claude")
    assert builds == [1]


def test_a_failed_build_fails_that_use_and_is_tried_again():
    attempts = []

    def build():
        attempts.append(1)
        if len(attempts) == 1:
            raise RuntimeError("the table is not reachable yet")
        return MemoryQuotaStore()

    proxy = _OnFirstUse(build)
    with pytest.raises(RuntimeError, match="not reachable"):
        proxy.read("anthropic", "claude")
    assert proxy.read("anthropic", "claude")[1] == {}


@pytest.mark.parametrize("copier", [copy.copy, copy.deepcopy])
def test_it_copies_without_recursing(copier):
    proxy = _OnFirstUse(MemoryQuotaStore)
    copied = copier(proxy)  # a copy is made without __init__: looking up its hooks must not recurse
    assert copied.read("anthropic", "claude")[1] == {}


def test_a_copy_after_first_use_shares_the_built_store():
    proxy = _OnFirstUse(MemoryQuotaStore)
    proxy.read("anthropic", "claude")
    assert copy.copy(proxy).read == proxy.read


def test_unknown_attributes_are_still_attribute_errors():
    proxy = _OnFirstUse(MemoryQuotaStore)
    with pytest.raises(AttributeError):
        proxy.no_such_method  # noqa: B018
    assert not hasattr(proxy, "__no_such_dunder__")
