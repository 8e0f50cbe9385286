"""``wiring.prices``: the SSM parameter's override rows over prices.json, read with a 5-minute cache; a bad or
unreadable value is logged (without the parameter's value) and ignored, never a crash."""

from __future__ import annotations

import json

import pytest
from aws_lambda_powertools.utilities import parameters

from batch_gateway import constants, wiring
from batch_gateway.models.pricing import file_table

PARAMETER = "/batch-gateway/test/price-overrides"


@pytest.fixture
def ssm(monkeypatch):
    values: dict[str, object] = {}
    calls: list[tuple[str, int]] = []

    def get_parameter(name, max_age=None, **_):
        calls.append((name, max_age))
        value = values[name]
        if isinstance(value, Exception):
            raise value
        return value

    monkeypatch.setattr(parameters, "get_parameter", get_parameter)
    monkeypatch.setenv(constants.ENV_PRICE_OVERRIDES_PARAMETER, PARAMETER)
    return values, calls


def test_without_the_parameter_the_file_table_prices(monkeypatch):
    monkeypatch.delenv(constants.ENV_PRICE_OVERRIDES_PARAMETER, raising=False)
    assert wiring.prices() is file_table()


def test_override_rows_merge_over_the_file_and_are_read_with_a_5_minute_cache(ssm):
    values, calls = ssm
    values[PARAMETER] = json.dumps(
        {"version": "ops-7", "rows": [{"provider": "openai", "model": "gpt-4o", "input": 9}]}
    )
    table = wiring.prices()
    assert table.version.endswith("+ops-7")
    assert table.price_for("openai", "gpt-4o-2024-08-06").batch.input == 9.0  # type: ignore[union-attr]
    assert table.price_for("openai", "gpt-4o-mini").batch.input == 0.075  # type: ignore[union-attr]
    assert calls == [(PARAMETER, 300)]


@pytest.mark.parametrize(
    "value",
    [
        "{not json",
        json.dumps([{"provider": "openai", "model": "gpt-4o", "input": "secret-ish-junk"}]),
        json.dumps({"rows": 5}),
        json.dumps("text"),
    ],
)
def test_a_bad_override_is_logged_and_ignored(ssm, caplog, value):
    values, _ = ssm
    values[PARAMETER] = value
    assert wiring.prices() is file_table()
    [record] = [r for r in caplog.records if r.name.endswith("wiring")]
    assert record.levelname == "ERROR"
    assert record.getMessage() == "price overrides ignored; using prices.json"
    assert "secret-ish-junk" not in str(record.__dict__) and "{not json" not in str(record.__dict__)


def test_an_unreadable_parameter_is_logged_and_ignored(ssm, caplog):
    values, _ = ssm
    values[PARAMETER] = parameters.exceptions.GetParameterError("AccessDenied")
    assert wiring.prices() is file_table()
    assert [r.getMessage() for r in caplog.records] == ["price overrides unreadable; using prices.json"]
