"""The schemathesis checks both contract tests run (tests/e2e/test_api_contract.py against the local stack,
tests/integration/test_api_contract_in_process.py against the handlers): one list, so they hold the same contract."""

from __future__ import annotations

from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    positive_data_acceptance,
    response_schema_conformance,
    status_code_conformance,
)

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    positive_data_acceptance,
    negative_data_rejection,
]
WITHOUT_ACCEPTANCE = [check for check in CHECKS if check is not positive_data_acceptance]
