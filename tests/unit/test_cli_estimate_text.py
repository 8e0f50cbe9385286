"""`batch-gateway submit --dry-run`'s text: the cache saving and, with cache-aware planning, its primers."""

from __future__ import annotations

from batch_gateway.cli import _estimate_text


def _estimate(cache: dict) -> dict:
    return {
        "request_count": 30,
        "provider": "anthropic",
        "model": "claude-sonnet-4-20250514",
        "plan": {"chunk_count": 1, "chunks": [{"requests": 30, "bytes": 400_000}]},
        "input_tokens": {"estimate": 90_000, "method": "bytes/4", "ceiling": 360_000},
        "output_tokens": {"ceiling": 30_720},
        "cost": {
            "low": 0.135,
            "high": 0.77,
            "sync_low": 0.27,
            "sync_high": 1.54,
            "saving_low": 0.135,
            "saving_high": 0.77,
        },
        "cache_saving": cache,
    }


def test_a_primed_plan_shows_its_saving_and_its_primers_cost():
    text = _estimate_text(
        _estimate(
            {
                "low": -0.0185,
                "high": 0.1164,
                "cached_input_tokens": 84_870,
                "primers": {"groups": 1, "cost": 0.0185},
                "method": "cache-aware planning",
            }
        )
    )
    assert "cache saving: -$0.0185 to $0.1164 (~84,870 cached input tokens; cache-aware planning)" in text
    assert "cache primers: 1 (one synchronous call each, $0.0185)" in text


def test_no_group_worth_a_primer_shows_neither_line():
    text = _estimate_text(
        _estimate(
            {
                "low": 0.0,
                "high": 0.0,
                "cached_input_tokens": 0,
                "primers": {"groups": 0, "cost": 0.0},
                "method": "cache-aware planning",
            }
        )
    )
    assert "cache saving" not in text and "cache primers" not in text
    assert text.endswith("nothing was stored or started")
