"""The per-provider tables that workflow steps read from the specs: retry outcomes of item error codes, and the final
batch statuses that leave requests unanswered."""

from __future__ import annotations

import pytest

from batch_gateway.models.jobs import ItemStatus, RequestCounts
from batch_gateway.models.retry import OUTCOMES, outcome_of
from batch_gateway.provider_specs import SPECS
from batch_gateway.service.workflow.collect import _UNANSWERED


@pytest.mark.parametrize("spec", SPECS, ids=lambda spec: spec.name)
def test_each_error_code_of_a_spec_is_a_retry_outcome_and_is_read_as_one(spec):
    for code, outcome in spec.error_outcomes.items():
        assert code == code.lower()  # the adapters' codes are compared lower-cased
        assert outcome in OUTCOMES
        assert outcome_of("errored", code) == outcome
        assert outcome_of("errored", code.upper()) == outcome


def test_no_code_means_two_outcomes_across_providers():
    seen: dict[str, str] = {}
    for spec in SPECS:
        for code, outcome in spec.error_outcomes.items():
            assert seen.setdefault(code, outcome) == outcome, (spec.name, code)


@pytest.mark.parametrize("spec", SPECS, ids=lambda spec: spec.name)
def test_a_final_status_that_leaves_requests_unanswered_is_a_count_and_an_item_status(spec):
    for final, became in spec.unfinished.items():
        assert became in {"canceled", "expired"}
        assert hasattr(RequestCounts(), became)  # the adapters count the rest there
        assert _UNANSWERED[final] is ItemStatus(became)  # and Collect writes their items so
