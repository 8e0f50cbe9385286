"""POST /uploads takes a number the way its OpenAPI document describes it: an integer written with a fraction of zero
(``576.0``, valid JSON Schema ``integer``) is that integer (found by tests/e2e/test_api_contract.py)."""

from __future__ import annotations

import pytest

from batch_gateway.contract.errors import InvalidRequestError
from batch_gateway.service.api import uploads

OWNER = "arn:aws:iam::123456789012:user/alice"


def test_an_integer_written_with_a_zero_fraction_is_taken_and_a_real_fraction_is_refused(aws):
    answer = uploads.create_upload(aws, owner=OWNER, body={"size": 108798.0, "expires_in": 576.0})
    assert answer["method"] == "PUT"
    with pytest.raises(InvalidRequestError) as refused:
        uploads.create_upload(aws, owner=OWNER, body={"size": 100, "expires_in": 576.5})
    assert refused.value.details[0]["field"] == "expires_in"
