"""Quota admission (decision 0080), pure: a chunk is sent only when it fits every limit of its provider and model,
the creates of the current minute count and older minutes do not, an owner takes capacity in turn when others wait
(least served first, by weight), a chunk larger than a whole limit is sent alone instead of waiting forever, and a
bad overrides document is refused with the reason."""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime, timedelta

import pytest

from batch_gateway.models.quotas import (
    DEFAULT_LIMITS,
    Ledger,
    OwnerUsage,
    QuotaCost,
    QuotaLimits,
    QuotaScope,
    epoch_minute,
    limits_for,
    parse_overrides,
    scopes_for,
)
from batch_gateway.models.requests import PROVIDERS
from batch_gateway.service.money.estimate import RequestStats
from batch_gateway.service.quotas.rule import Admitted, LedgerView, Wait, admit, admit_all

NOW = datetime(2026, 12, 1, 12, 0, 30, tzinfo=UTC)
MODEL = "gpt-4o-mini"


def ledger(tokens: int = 0, requests: int = 0, batches: int = 0, creates: int = 0, minute: int | None = None):
    counts = {epoch_minute(NOW) if minute is None else minute: creates} if creates else {}
    return Ledger(provider="openai", model=MODEL, tokens=tokens, requests=requests, batches=batches, creates=counts)


def cost(tokens: int = 1_000, requests: int = 10) -> QuotaCost:
    return QuotaCost(tokens=tokens, requests=requests)


# ---- limits, each way


def test_a_chunk_that_fits_the_enqueued_tokens_exactly_is_admitted_and_one_token_more_waits_with_the_amounts():
    limits = QuotaLimits(enqueued_tokens=2_000_000)
    assert isinstance(admit(limits, ledger(tokens=1_800_000), {}, "alice", cost(200_000), NOW), Admitted)

    decision = admit(limits, ledger(tokens=1_800_000), {}, "alice", cost(200_001), NOW)
    assert isinstance(decision, Wait) and decision.quota == "enqueued_tokens"
    assert decision.reason == "waiting for quota: 1,800,000 of 2,000,000 enqueued tokens for gpt-4o-mini in flight"


def test_batches_in_flight_and_requests_in_flight_each_hold_a_chunk_back():
    by_batches = admit(QuotaLimits(batches_in_flight=3), ledger(batches=3), {}, "alice", cost(), NOW)
    assert isinstance(by_batches, Wait) and by_batches.quota == "batches_in_flight"
    assert by_batches.reason == "waiting for quota: 3 of 3 batches for gpt-4o-mini in flight"

    limits = QuotaLimits(requests_in_flight=100_000)
    by_requests = admit(limits, ledger(requests=99_995, batches=1), {}, "alice", cost(requests=10), NOW)
    assert isinstance(by_requests, Wait) and by_requests.quota == "requests_in_flight"
    assert by_requests.reason == "waiting for quota: 99,995 of 100,000 requests for gpt-4o-mini in flight"
    assert isinstance(admit(limits, ledger(requests=99_990, batches=1), {}, "alice", cost(requests=10), NOW), Admitted)


def test_no_limit_never_holds_a_chunk_back():
    huge = ledger(tokens=10**12, requests=10**9, batches=10**6, creates=10**6)
    assert isinstance(admit(QuotaLimits(), huge, {}, "alice", cost(10**9, 10**6), NOW), Admitted)


# ---- the minute window


def test_creates_count_in_the_current_minute_only():
    limits = QuotaLimits(creates_per_minute=20)
    full = admit(limits, ledger(creates=20), {}, "alice", cost(), NOW)
    assert isinstance(full, Wait) and full.quota == "creates_per_minute"
    assert full.reason == "waiting for quota: 20 of 20 batch creates for gpt-4o-mini this minute"
    assert isinstance(admit(limits, ledger(creates=19), {}, "alice", cost(), NOW), Admitted)

    last_minute = ledger(creates=20, minute=epoch_minute(NOW) - 1)
    assert isinstance(admit(limits, last_minute, {}, "alice", cost(), NOW), Admitted)
    next_minute = NOW.replace(second=0) + timedelta(minutes=1)
    assert isinstance(admit(limits, ledger(creates=20), {}, "alice", cost(), next_minute), Admitted)


# ---- fairness


def waiting(minutes_ago: int, batches: int = 0) -> OwnerUsage:
    return OwnerUsage(batches=batches, waiting_since=NOW - timedelta(minutes=minutes_ago))


def test_when_three_owners_wait_the_least_served_goes_first_and_the_others_are_told_it_is_not_their_turn():
    limits = QuotaLimits(batches_in_flight=10)
    owners = {"alice": waiting(5, batches=5), "bob": waiting(1, batches=1), "carol": waiting(9, batches=3)}
    in_flight = ledger(batches=9)
    for owner in ("alice", "carol"):
        decision = admit(limits, in_flight, owners, owner, cost(), NOW)
        assert isinstance(decision, Wait) and decision.quota == "fair_share"
        assert decision.reason == "waiting for its turn: another owner waiting for gpt-4o-mini has less in flight"
    assert isinstance(admit(limits, in_flight, owners, "bob", cost(), NOW), Admitted)


def test_owners_not_waiting_never_block_and_an_owner_not_yet_waiting_yields_to_one_that_is():
    limits = QuotaLimits(batches_in_flight=10)
    idle = {"bob": OwnerUsage(batches=0), "carol": OwnerUsage()}  # nothing waiting
    owners = {"alice": OwnerUsage(batches=4), **idle}
    assert isinstance(admit(limits, ledger(batches=4), owners, "alice", cost(), NOW), Admitted)

    tied = {"alice": OwnerUsage(), "bob": waiting(2)}  # equal use: the one waiting longest goes first
    assert isinstance(admit(limits, ledger(), tied, "alice", cost(), NOW), Wait)
    assert isinstance(admit(limits, ledger(), tied, "bob", cost(), NOW), Admitted)


def test_equal_owners_share_equally_and_a_weight_of_2_gets_twice_the_share():
    def run(weights: dict[str, float]) -> dict[str, int]:
        limits = QuotaLimits(batches_in_flight=12)
        owners = {name: waiting(minutes_ago=10 - i) for i, name in enumerate(weights)}
        total = 0
        for _ in range(20):  # every owner always has another chunk waiting; each tries in turn
            for name in reversed(list(weights)):
                decision = admit(limits, ledger(batches=total), owners, name, QuotaCost(0, 1), NOW, weights)
                if isinstance(decision, Admitted):
                    usage = owners[name]
                    owners[name] = OwnerUsage(batches=usage.batches + 1, waiting_since=usage.waiting_since)
                    total += 1
        return {name: usage.batches for name, usage in owners.items()}

    assert run({"alice": 1, "bob": 1, "carol": 1}) == {"alice": 4, "bob": 4, "carol": 4}
    assert run({"alice": 2, "bob": 1}) == {"alice": 8, "bob": 4}


def test_fair_shares_are_measured_on_the_limit_that_binds():
    """Bob has fewer batches in flight but most of the enqueued tokens: Alice, with the smaller share, goes first."""
    limits = QuotaLimits(enqueued_tokens=1_000_000, batches_in_flight=100)
    owners = {
        "alice": OwnerUsage(tokens=100_000, batches=5, waiting_since=NOW),
        "bob": OwnerUsage(tokens=800_000, batches=1, waiting_since=NOW - timedelta(hours=1)),
    }
    in_flight = ledger(tokens=900_000, batches=6)
    assert isinstance(admit(limits, in_flight, owners, "bob", cost(50_000), NOW), Wait)
    assert isinstance(admit(limits, in_flight, owners, "alice", cost(50_000), NOW), Admitted)


# ---- a chunk larger than a whole limit


def test_a_chunk_larger_than_the_limit_is_sent_alone_when_nothing_is_in_flight_and_says_so():
    limits = QuotaLimits(enqueued_tokens=2_000_000)
    decision = admit(limits, ledger(), {}, "alice", cost(3_000_000), NOW)
    assert isinstance(decision, Admitted)
    assert decision.note == (
        "sent alone: its 3,000,000 enqueued tokens exceed the limit of 2,000,000 for gpt-4o-mini, "
        "so it goes when nothing else is in flight"
    )
    assert admit(limits, ledger(), {}, "alice", cost(2_000_000), NOW) == Admitted(note=None)


def test_a_chunk_larger_than_the_limit_waits_while_anything_is_in_flight():
    limits = QuotaLimits(enqueued_tokens=2_000_000)
    decision = admit(limits, ledger(tokens=1, batches=1), {}, "alice", cost(3_000_000), NOW)
    assert isinstance(decision, Wait) and decision.quota == "enqueued_tokens"
    assert decision.reason == (
        "waiting for quota: its 3,000,000 enqueued tokens exceed the limit of 2,000,000 for gpt-4o-mini, "
        "so it goes when nothing else is in flight (1 in flight now)"
    )


# ---- the cost of a chunk


@pytest.mark.parametrize("byte_size", [0, 1, 4, 5, 1_234_567])
def test_a_chunks_tokens_are_the_estimate_modules_bytes_over_4(byte_size):
    assert QuotaCost.for_chunk(byte_size, 7) == QuotaCost(
        tokens=RequestStats(input_bytes=byte_size).input_tokens_estimate, requests=7, batches=1
    )


# ---- limits and overrides


def test_every_provider_has_documented_defaults_and_a_model_without_its_own_takes_the_providers():
    assert set(DEFAULT_LIMITS) == set(PROVIDERS)
    assert all("*" in by_model for by_model in DEFAULT_LIMITS.values())
    assert limits_for("openai", "gpt-4o-mini").enqueued_tokens == 2_000_000
    assert limits_for("openai", "gpt-unknown") == DEFAULT_LIMITS["openai"]["*"]
    assert limits_for("anthropic", "claude-haiku-4-5").requests_in_flight == 100_000
    assert limits_for("bedrock", "anthropic.claude-3-haiku").batches_in_flight is not None
    assert limits_for("google", "gemini-2.5-flash").batches_in_flight == 100


def test_overrides_replace_the_fields_they_name_model_over_provider_over_defaults_and_null_lifts_a_limit():
    overrides = parse_overrides(
        json.dumps(
            {
                "openai": {"*": {"enqueued_tokens": 10_000_000, "batches_in_flight": 50}},
                "bedrock": {"anthropic.claude-3-haiku": {"batches_in_flight": None}},
            }
        )
    )
    assert limits_for("openai", "gpt-4o-mini", overrides) == QuotaLimits(
        enqueued_tokens=10_000_000, batches_in_flight=50
    )
    overrides = parse_overrides('{"openai": {"*": {"enqueued_tokens": 10000000}, "gpt-4o": {"enqueued_tokens": 5}}}')
    assert limits_for("openai", "gpt-4o", overrides).enqueued_tokens == 5
    assert limits_for("openai", "gpt-4.1", overrides).enqueued_tokens == 10_000_000
    lifted = parse_overrides('{"bedrock": {"anthropic.claude-3-haiku": {"batches_in_flight": null}}}')
    assert limits_for("bedrock", "anthropic.claude-3-haiku", lifted).batches_in_flight is None
    assert limits_for("bedrock", "anthropic.claude-3-5-haiku", lifted) == DEFAULT_LIMITS["bedrock"]["*"]
    assert parse_overrides("") == {} and parse_overrides(None) == {}


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ("{not json", "quota overrides are not JSON"),
        ("[1]", "quota overrides must be an object of providers"),
        (
            '{"azure": {"*": {}}}',
            "quota overrides: unknown provider 'azure' (one of anthropic, openai, bedrock, google)",
        ),
        ('{"openai": []}', "quota overrides: openai must be an object of models"),
        ('{"openai": {"gpt-4o": 5}}', "quota overrides: openai gpt-4o must be an object of limits"),
        (
            '{"openai": {"gpt-4o": {"tokens": 5}}}',
            "quota overrides: openai gpt-4o: unknown limit 'tokens' (one of enqueued_tokens, batches_in_flight, "
            "creates_per_minute, requests_in_flight)",
        ),
        (
            '{"openai": {"*": {"enqueued_tokens": -1}}}',
            "quota overrides: openai *: enqueued_tokens must be a whole number of at least 1, or null (-1)",
        ),
        (
            '{"openai": {"*": {"batches_in_flight": 0}}}',
            "quota overrides: openai *: batches_in_flight must be a whole number of at least 1, or null (0)",
        ),
        (
            '{"openai": {"*": {"batches_in_flight": 2.5}}}',
            "quota overrides: openai *: batches_in_flight must be a whole number of at least 1, or null (2.5)",
        ),
        (
            '{"openai": {"*": {"batches_in_flight": true}}}',
            "quota overrides: openai *: batches_in_flight must be a whole number of at least 1, or null (True)",
        ),
    ],
)
def test_a_bad_overrides_document_is_refused_with_the_reason(document, message):
    with pytest.raises(ValueError) as refused:
        parse_overrides(document)
    assert str(refused.value) == message


# ---- the organisation's limits (decision 0087)


def test_anthropics_limits_are_the_organisations_one_ledger_for_every_model_and_a_models_own_cap_is_extra():
    assert scopes_for("anthropic", "claude-sonnet-4-20250514") == (
        QuotaScope("*", QuotaLimits(requests_in_flight=100_000, creates_per_minute=20)),
    )
    capped = parse_overrides(
        '{"anthropic": {"*": {"requests_in_flight": 500000}, "claude-x": {"requests_in_flight": 9}}}'
    )
    assert scopes_for("anthropic", "claude-x", capped) == (
        QuotaScope("claude-x", QuotaLimits(requests_in_flight=9)),
        QuotaScope("*", QuotaLimits(requests_in_flight=500_000, creates_per_minute=20)),
    )
    assert scopes_for("anthropic", "claude-y", capped)[-1].limits.requests_in_flight == 500_000
    assert scopes_for("google", "gemini-2.5-flash") == (
        QuotaScope("gemini-2.5-flash", QuotaLimits(enqueued_tokens=3_000_000)),
        QuotaScope("*", QuotaLimits(batches_in_flight=100)),
    )
    assert scopes_for("openai", "gpt-4o-mini") == (QuotaScope("gpt-4o-mini", QuotaLimits(enqueued_tokens=2_000_000)),)
    assert scopes_for("bedrock", "m") == (QuotaScope("m", QuotaLimits(batches_in_flight=10)),)
    lifted = parse_overrides('{"anthropic": {"*": {"requests_in_flight": null, "creates_per_minute": null}}}')
    assert scopes_for("anthropic", "claude-x", lifted) == (QuotaScope("claude-x", QuotaLimits()),)


def shared(requests: int = 0, batches: int = 0) -> Ledger:
    return Ledger(provider="anthropic", model="*", requests=requests, batches=batches)


def test_a_chunk_must_fit_every_ledger_it_takes_and_the_wait_names_the_one_it_waits_on():
    org = LedgerView(QuotaLimits(requests_in_flight=100_000), shared(requests=90_000, batches=1), {})
    own = LedgerView(QuotaLimits(requests_in_flight=20_000), ledger(requests=5_000, batches=1), {})
    big = QuotaCost(tokens=1, requests=15_000)

    decision = admit_all([own, org], "alice", big, NOW)
    assert isinstance(decision, Wait) and (decision.quota, decision.ledger) == ("requests_in_flight", "*")
    assert decision.reason == "waiting for quota: 90,000 of 100,000 requests for all anthropic models in flight"
    roomy = dataclasses.replace(org, ledger=shared(requests=10_000, batches=1))
    assert isinstance(admit_all([own, roomy], "alice", big, NOW), Admitted)
    too_many = admit_all([own, roomy], "alice", QuotaCost(tokens=1, requests=15_001), NOW)
    assert isinstance(too_many, Wait) and too_many.ledger == MODEL


def test_fairness_holds_on_the_shared_ledger_across_models():
    """Bob waits for Claude 3.5 Haiku with nothing in flight; Alice holds 50,000 requests of Sonnet 4. Alice's next
    chunk, of any model, waits for Bob's turn on the organisation's ledger, though it would fit."""
    owners = {
        "alice": OwnerUsage(requests=50_000, batches=1),
        "bob": OwnerUsage(waiting_since=NOW - timedelta(minutes=5)),
    }
    org = LedgerView(QuotaLimits(requests_in_flight=100_000), shared(requests=50_000, batches=1), owners)
    decision = admit_all([org], "alice", QuotaCost(tokens=1, requests=10), NOW)
    assert isinstance(decision, Wait) and (decision.quota, decision.ledger) == ("fair_share", "*")
    assert decision.reason == "waiting for its turn: another owner waiting for all anthropic models has less in flight"
    assert isinstance(admit_all([org], "bob", QuotaCost(tokens=1, requests=40_000), NOW), Admitted)
