"""Who a request is from (decision 0045): the SigV4 principal, or the owner of the gateway key the authorizer
accepted; a role's sessions are the role either way."""

from __future__ import annotations

import pytest

from batch_gateway.contract.errors import UnauthorizedError
from batch_gateway.edge.http import caller
from batch_gateway.edge.routing import ApiEvent


def _event(identity: dict | None = None, authorizer: dict | None = None) -> ApiEvent:
    context: dict = {"identity": identity or {}}
    if authorizer is not None:
        context["authorizer"] = authorizer
    return ApiEvent({"requestContext": context, "headers": {}})


def test_a_sigv4_caller_is_its_principal_and_a_role_session_is_the_role():
    assert caller(_event({"userArn": "arn:aws:iam::123456789012:user/alice"})) == "arn:aws:iam::123456789012:user/alice"
    session = "arn:aws:sts::123456789012:assumed-role/runner/i-0abc"
    assert caller(_event({"userArn": session})) == "arn:aws:iam::123456789012:role/runner"


def test_a_request_through_the_key_authorizer_is_the_keys_owner():
    event = _event(
        {"userArn": None, "caller": None},
        {
            "principalId": "arn:aws:iam::123456789012:user/bob",
            "owner": "arn:aws:iam::123456789012:user/bob",
            "key_id": "key_0123456789abcdef",
        },
    )
    assert caller(event) == "arn:aws:iam::123456789012:user/bob"


def test_an_authorizer_owner_that_is_a_role_session_is_the_role():
    event = _event({}, {"owner": "arn:aws:sts::123456789012:assumed-role/runner/s1"})
    assert caller(event) == "arn:aws:iam::123456789012:role/runner"


def test_no_principal_and_no_authorizer_owner_is_refused():
    with pytest.raises(UnauthorizedError):
        caller(_event({}))
    with pytest.raises(UnauthorizedError):
        caller(_event({}, {"principalId": ""}))


def test_a_key_over_its_rate_is_a_429_for_its_owner():
    from batch_gateway.contract.errors import RateLimitedError

    event = _event({}, {"owner": "arn:aws:iam::123456789012:user/bob", "key_id": "key_1", "rate_limited": "true"})
    with pytest.raises(RateLimitedError) as raised:
        caller(event)
    assert raised.value.http_status == 429


def test_a_key_over_its_rate_reads_as_a_rate_limit_with_retry_after_in_both_doors():
    """Decision 0046's 429 in each door's words: Anthropic's ``rate_limit_error`` (it was ``api_error``), OpenAI's
    ``requests``, and ``Retry-After: 1`` (its window is a second), which both SDKs wait before their retry."""
    import json

    from batch_gateway.edge.anthropic_http import make_anthropic_resolver
    from batch_gateway.edge.openai_http import make_openai_resolver

    authorizer = {"owner": "arn:aws:iam::123456789012:user/bob", "key_id": "key_1", "rate_limited": "true"}
    for app, path, kind in (
        (make_anthropic_resolver(), "/anthropic/v1/messages/batches", "rate_limit_error"),
        (make_openai_resolver(), "/openai/v1/batches", "requests"),
    ):

        @app.get(path)
        def route(app=app):
            return caller(app.current_event)

        answer = app(
            {"httpMethod": "GET", "path": path, "requestContext": {"authorizer": authorizer}, "headers": {}}, None
        )
        assert (answer["statusCode"], answer["multiValueHeaders"]["Retry-After"]) == (429, ["1"]), answer
        assert json.loads(answer["body"])["error"]["type"] == kind
