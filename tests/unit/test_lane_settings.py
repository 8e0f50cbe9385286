"""The lanes' settings (decision 0140): LANES_JSON as the functions read it, and the CDK context that sets it."""

from __future__ import annotations

import pytest

from batch_gateway.settings import LaneSettings
from stacks.config import ConfigError, _lanes


def test_defaults_and_overrides():
    assert LaneSettings.from_json(None) == LaneSettings()
    assert LaneSettings.from_json('{"concurrency": 4, "start_timeout_seconds": null}').concurrency == 4


@pytest.mark.parametrize(
    ("raw", "named"),
    [
        ('{"concurrency": 0}', "concurrency"),
        ('{"concurrency": 2.5}', "concurrency"),
        ('{"latency_seconds": "a"}', "latency_seconds"),
        ('{"cancel_seconds": true}', "cancel_seconds"),
        ('{"outage_polls": null}', "outage_polls"),
        ('{"speed": 1}', "speed"),
        ("[1]", "object"),
    ],
)
def test_a_bad_setting_is_refused_naming_it(raw, named):
    with pytest.raises(ValueError, match=named):
        LaneSettings.from_json(raw)


def test_the_context_is_checked_at_synth_and_empty_means_the_defaults():
    assert _lanes({}) == ""
    assert _lanes({"concurrency": 4}) == '{"concurrency":4}'
    with pytest.raises(ConfigError, match="lanes"):
        _lanes({"concurrency": -1})
