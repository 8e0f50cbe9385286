"""The price table: every row names its source and date, batch is half the synchronous price, cache tokens are priced
apart, an unknown model has no cost (never 0), and override rows merge over the file's by provider + model prefix."""

from __future__ import annotations

import json
from importlib import resources

import pytest

from batch_gateway.models.jobs import Usage
from batch_gateway.models.pricing import PriceTable, add_costs, cost_of, file_table, price_for, with_savings

USAGE = Usage(
    input_tokens=1_000_000,
    output_tokens=2_000_000,
    cache_creation_input_tokens=3_000_000,
    cache_read_input_tokens=4_000_000,
    reasoning_tokens=500_000,
)


def _document() -> dict:
    return json.loads(resources.files("batch_gateway.models").joinpath("prices.json").read_text())


def test_every_row_has_a_source_a_date_and_batch_prices_at_half_the_synchronous_ones():
    document = _document()
    assert document["version"]
    for row in document["rows"]:
        assert row["source"].startswith("https://"), row
        assert len(row["date"]) == 10, row
        for part in ("input", "output", "cache_write", "cache_read"):
            assert row[part] == pytest.approx(row["sync"][part] / 2), (row["model"], part)


@pytest.mark.parametrize(
    ("provider", "model"),
    [
        ("anthropic", "claude-sonnet-4-5-20250929"),
        ("anthropic", "claude-haiku-4-5"),
        ("bedrock", "us.anthropic.claude-sonnet-4-20250514-v1:0"),
    ],
)
def test_anthropic_cache_writes_cost_1_25x_and_reads_0_1x_input(provider, model):
    price = price_for(provider, model)
    assert price is not None
    assert price.sync.cache_write == pytest.approx(price.sync.input * 1.25)
    assert price.sync.cache_read == pytest.approx(price.sync.input * 0.1)


def test_openai_has_no_cache_write_charge_and_publishes_cached_input():
    price = price_for("openai", "gpt-4o-mini-2024-07-18")
    assert price is not None
    assert (price.sync.input, price.sync.cache_read, price.sync.cache_write) == (0.15, 0.075, 0.0)


def test_the_longest_prefix_wins_so_opus_4_5_is_not_priced_as_opus_4():
    assert price_for("anthropic", "claude-opus-4-5-20251101").sync.input == 5.0  # type: ignore[union-attr]
    assert price_for("anthropic", "claude-opus-4-1-20250805").sync.input == 15.0  # type: ignore[union-attr]
    assert price_for("openai", "gpt-4o-mini").sync.input == 0.15  # type: ignore[union-attr]
    assert price_for("openai", "gpt-4o-2024-08-06").sync.input == 2.5  # type: ignore[union-attr]


def test_cost_of_prices_each_part_and_the_saving():
    cost = cost_of("anthropic", "claude-sonnet-4-20250514", USAGE)
    # batch: 1 x 1.5 + 2 x 7.5 + 3 x 1.875 + 4 x 0.15 = 22.725; synchronous twice that
    assert cost == {
        "currency": "USD",
        "input": 1.5,
        "output": 15.0,
        "cache_write": 5.625,
        "cache_read": 0.6,
        "total": 22.725,
        "sync_total": 45.45,
        "saving": 22.725,
        # cache: 4 M reads at the input price (1.5) less what they cost (0.15): 5.4
        "savings": {"batch": 22.725, "cache": 5.4, "reuse": 0.0, "dedup": 0.0},
        "price_version": file_table().version,
    }


def test_on_demand_costs_the_synchronous_price_and_saves_nothing():
    cost = cost_of("anthropic", "claude-sonnet-4-20250514", USAGE, on_demand=True)
    assert cost["total"] == cost["sync_total"] == 45.45
    assert cost["saving"] == 0
    assert cost["savings"] == {"batch": 0.0, "cache": 10.8, "reuse": 0.0, "dedup": 0.0}  # reads at sync input 3.0


def test_savings_add_up_across_costs_and_a_dedup_saving_adds_to_the_rest():
    batch = cost_of("anthropic", "claude-sonnet-4-20250514", USAGE)
    both = add_costs(batch, cost_of("anthropic", "claude-sonnet-4-20250514", USAGE, on_demand=True))
    assert both["savings"] == {"batch": 22.725, "cache": 16.2, "reuse": 0.0, "dedup": 0.0}
    assert with_savings(both, dedup=1.25)["savings"]["dedup"] == 1.25
    assert with_savings(both, dedup=1.25)["saving"] == both["saving"]  # the batch saving, as before
    unknown = cost_of("openai", "my-finetune", USAGE)
    assert with_savings(unknown, dedup=1.0) == unknown


def test_a_stored_cost_from_before_savings_gets_them_from_its_batch_saving():
    old = {"currency": "USD", "total": 1.0, "sync_total": 2.0, "saving": 1.0, "price_version": "v"}
    assert with_savings(old, dedup=0.5)["savings"] == {"batch": 1.0, "cache": 0.0, "reuse": 0.0, "dedup": 0.5}


def test_a_completions_model_is_priced_and_a_moderation_model_costs_nothing_not_no_price():
    tokens = Usage(input_tokens=1_000_000, output_tokens=1_000_000)
    davinci = cost_of("openai", "davinci-002", tokens)
    assert davinci["total"] == 2.0 and davinci["sync_total"] == 4.0
    assert cost_of("openai", "babbage-002", tokens)["total"] == 0.4
    for model in ("omni-moderation-latest", "omni-moderation-2024-09-26", "text-moderation-stable"):
        free = cost_of("openai", model, Usage(input_tokens=1_000_000))
        assert free["total"] == 0 and free["sync_total"] == 0 and "reason" not in free, model


def test_an_unknown_model_has_no_total_and_says_why():
    cost = cost_of("openai", "my-finetune", USAGE)
    assert cost["total"] is None
    assert "my-finetune" in cost["reason"]


def test_an_override_row_changes_only_what_it_names_and_a_new_row_prices_a_new_model():
    table = file_table().merged(
        {
            "version": "ops-1",
            "rows": [
                {"provider": "openai", "model": "gpt-4o-mini", "input": 0.1},
                {"provider": "openai", "model": "my-finetune", "input": 1.0, "output": 4.0, "cache_read": 0.5},
            ],
        }
    )
    assert table.version == f"{file_table().version}+ops-1"
    mini = table.price_for("openai", "gpt-4o-mini")
    assert mini is not None
    assert (mini.batch.input, mini.batch.output, mini.sync.input) == (0.1, 0.3, 0.15)
    cost = cost_of(
        "openai", "my-finetune-v2", Usage(input_tokens=1_000_000, cache_read_input_tokens=2_000_000), table=table
    )
    assert cost["total"] == 2.0
    assert cost["sync_total"] == 4.0  # a new row without sync prices: twice batch
    assert file_table().price_for("openai", "my-finetune") is None  # the file's table is untouched


def test_no_overrides_is_the_file_table():
    assert file_table().merged({}) is file_table()
    assert file_table().merged([]) is file_table()


@pytest.mark.parametrize(
    "overrides",
    [
        "not rows",
        {"rows": "x"},
        {"prices": []},
        [{"provider": "openai", "model": "gpt-4o", "input": "cheap"}],
        [{"provider": "openai", "model": "gpt-4o", "input": -1}],
        [{"provider": "openai", "model": "new-model", "input": 1.0}],  # a new row without output
        [{"model": "gpt-4o", "input": 1.0}],
        [42],
    ],
)
def test_a_bad_override_is_refused_whole(overrides):
    with pytest.raises(ValueError):
        file_table().merged(overrides)


def test_a_table_prices_usage_without_cache_tokens_like_before():
    table = PriceTable(version="t", rows=file_table().rows)
    cost = cost_of("openai", "gpt-4o-mini", Usage(input_tokens=1_000_000, output_tokens=1_000_000), table=table)
    assert cost["total"] == 0.375


def test_anthropic_one_hour_cache_writes_cost_twice_the_input_and_the_five_minute_part_1_25x():
    for row in file_table().rows:
        if row.provider == "anthropic":
            for rates in (row.batch, row.sync):
                assert rates.cache_write_1h == pytest.approx(rates.input * 2), row.model
    price = price_for("anthropic", "claude-sonnet-4-20250514")
    assert price is not None
    mixed = Usage(cache_creation_input_tokens=3_000_000, cache_creation_1h_input_tokens=1_000_000)
    cost = cost_of("anthropic", "claude-sonnet-4-20250514", mixed)
    assert cost["cache_write"] == pytest.approx(2 * price.batch.cache_write + 1 * price.batch.input * 2)
    assert cost["total"] == cost["cache_write"]
    sync = cost_of("anthropic", "claude-sonnet-4-20250514", mixed, on_demand=True)
    assert sync["cache_write"] == pytest.approx(2 * price.sync.cache_write + 1 * price.sync.input * 2)
    assert cost["sync_total"] == sync["total"]


def test_a_row_without_a_one_hour_rate_prices_a_one_hour_write_as_any_write():
    table = file_table().merged([{"provider": "openai", "model": "my-model", "input": 1.0, "output": 2.0}])
    row = table.price_for("openai", "my-model")
    assert row is not None and row.batch.cache_write_1h == row.batch.cache_write == 1.0
    assert row.sync.cache_write_1h == 2.0
    usage = Usage(cache_creation_input_tokens=1_000_000, cache_creation_1h_input_tokens=1_000_000)
    assert cost_of("openai", "my-model", usage, table=table)["cache_write"] == 1.0
