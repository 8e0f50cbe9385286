"""Our error for a provider's refusal is worded by us: the provider's name, status and error type or code, never the
provider's message, which names the operator's organisation, account or project and its totals (decision 0112).
The provider's whole message goes to the operator's log. Every SDK family, every error class that carries text."""

from __future__ import annotations

import json

import anthropic
import httpx2
import openai
import pytest
from botocore.exceptions import ClientError
from google.genai import errors as google

from batch_gateway.contract import errors
from batch_gateway.providers.sdk_errors import mapped_errors

ORG_TEXT = "Your organization org-abc123 has 1,234,567 enqueued tokens in flight; account 123456789012 is over."
SECRETS = ("org-abc123", "1,234,567", "123456789012")


def _stainless(module, kind, status: int, error: dict) -> Exception:
    response = httpx2.Response(status, request=httpx2.Request("POST", "https://provider.invalid/v1/batches"))
    body = {"type": "error", "error": error} if module is anthropic else error  # OpenAI's SDK keeps the inner object
    return kind(f"Error code: {status} - {body}", response=response, body=body)


def _boto(code: str, status: int) -> Exception:
    answer = {"Error": {"Code": code, "Message": ORG_TEXT}, "ResponseMetadata": {"HTTPStatusCode": status}}
    return ClientError(answer, "CreateModelInvocationJob")  # type: ignore[arg-type]


def _google(code: int, status: str) -> Exception:
    return google.APIError.raise_error(code, {"error": {"code": code, "message": ORG_TEXT, "status": status}}, None)


CASES = [
    (
        "anthropic",
        lambda: _stainless(
            anthropic, anthropic.BadRequestError, 400, {"type": "invalid_request_error", "message": ORG_TEXT}
        ),
        errors.ProviderRequestError,
        "400 invalid_request_error",
    ),
    (
        "anthropic",
        lambda: _stainless(
            anthropic, anthropic.APIStatusError, 413, {"type": "request_too_large", "message": ORG_TEXT}
        ),
        errors.ProviderRequestError,
        "413 request_too_large",
    ),
    (
        "openai",
        lambda: _stainless(
            openai,
            openai.BadRequestError,
            400,
            {"message": ORG_TEXT, "type": "invalid_request_error", "param": None, "code": "token_limit_exceeded"},
        ),
        errors.ProviderRequestError,
        "400 token_limit_exceeded",
    ),
    ("botocore", lambda: _boto("ValidationException", 400), errors.ProviderRequestError, "ValidationException"),
    ("botocore", lambda: _boto("AccessDeniedException", 403), errors.ProviderAuthError, "AccessDeniedException"),
    (
        "botocore",
        lambda: _boto("ServiceQuotaExceededException", 400),
        errors.ProviderRateLimitedError,
        "ServiceQuotaExceededException",
    ),
    ("botocore", lambda: _boto("ResourceNotFoundException", 404), errors.ProviderNotFoundError, "ResourceNotFound"),
    ("google.genai", lambda: _google(400, "INVALID_ARGUMENT"), errors.ProviderRequestError, "400 INVALID_ARGUMENT"),
    ("google.genai", lambda: _google(429, "RESOURCE_EXHAUSTED"), errors.ProviderRateLimitedError, "RESOURCE_EXHAUSTED"),
    ("google.genai", lambda: _google(404, "NOT_FOUND"), errors.ProviderNotFoundError, "404 NOT_FOUND"),
]


@pytest.mark.parametrize(("sdk", "make", "ours", "named"), CASES)
def test_our_error_names_the_providers_error_type_and_the_log_keeps_its_words(sdk, make, ours, named, caplog):
    with pytest.raises(ours) as raised, mapped_errors(sdk, "Provider"):
        raise make()
    assert named in raised.value.message
    shown = json.dumps(raised.value.to_body()) + str(raised.value)
    assert not [secret for secret in SECRETS if secret in shown], shown
    logged = [record for record in caplog.records if getattr(record, "provider_message", None)]
    assert [record.provider_message for record in logged] == [ORG_TEXT]


@pytest.mark.parametrize(
    ("code", "account"),
    [
        ("rate_limit_error", True),  # Anthropic
        ("rate_limit_exceeded", True),  # OpenAI
        ("http_429", True),
        ("insufficient_quota", True),
        ("token_limit_exceeded", True),
        ("billing_error", True),
        ("ThrottlingException", True),  # Bedrock's runtime
        ("bedrock_429", True),
        ("RESOURCE_EXHAUSTED", True),  # Google
        ("invalid_request_error", False),  # the request's own: the tenant reads the provider's words
        ("INVALID_ARGUMENT", False),
        ("overloaded_error", False),
        ("api_error", False),
        ("missing_result", False),
        (None, False),
    ],
)
def test_an_items_error_is_about_the_account_only_for_rate_limits_and_quotas(code, account):
    from batch_gateway.service.workflow.collect import about_the_account

    assert about_the_account(code) is account
