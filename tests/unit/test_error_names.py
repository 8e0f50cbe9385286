"""Error class names are a Step Functions contract (a task's error is its class name; the state machine retries by
name), so they follow one rule: a public exception class's name ends in ``Error``."""

from __future__ import annotations

import importlib
import warnings

import pytest

from tests.support.classes import modules


def test_every_public_exception_class_in_the_runtime_and_the_sdk_ends_in_error():
    badly_named = sorted(
        f"{module.__name__}.{name}"
        for module in modules("batch_gateway")
        for name, value in vars(module).items()
        if isinstance(value, type)
        and issubclass(value, BaseException)
        and value.__module__ == module.__name__
        and not name.startswith("_")
        and not value.__name__.endswith("Error")
    )
    assert badly_named == []


def test_the_old_wait_timeout_name_still_works_for_sdk_users_with_a_deprecation_warning():
    from batch_gateway.client import BatchWaitTimeoutError

    for module in ("batch_gateway.client", "batch_gateway.client.errors"):
        with pytest.warns(DeprecationWarning, match="BatchWaitTimeoutError"):
            old = importlib.import_module(module).BatchWaitTimeout
        assert old is BatchWaitTimeoutError
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        from batch_gateway.client import BatchWaitTimeoutError as again  # the new name: no warning
    assert again is BatchWaitTimeoutError
