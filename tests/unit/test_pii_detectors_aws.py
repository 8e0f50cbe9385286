"""The deployment-named detectors of the input guardrails (decision 0124), at the boto3 client with botocore's Stubber
(moto answers DetectPiiEntities with a canned list whatever the text, and has no ApplyGuardrail): each call is the
one the service documents, findings become (type, start, end) spans into the text, and a failure names the service,
never the text."""

import boto3
import pytest
from botocore.stub import Stubber

from batch_gateway.contract.errors import TransientError
from batch_gateway.service.intake.guardrails import Screen
from batch_gateway.store.pii_detectors import BedrockGuardrailDetector, ComprehendDetector

TEXT = "Mail ana@example.com or call +44 20 7946 0958"


def _client(service):
    return boto3.client(service, region_name="eu-west-1", aws_access_key_id="test", aws_secret_access_key="test")


def test_comprehend_spans_come_from_its_offsets_in_lower_case_types():
    client = _client("comprehend")
    with Stubber(client) as stub:
        stub.add_response(
            "detect_pii_entities",
            {
                "Entities": [
                    {"Type": "PHONE", "Score": 0.99, "BeginOffset": 29, "EndOffset": 45},
                    {"Type": "EMAIL", "Score": 0.99, "BeginOffset": 5, "EndOffset": 20},
                ]
            },
            {"Text": TEXT, "LanguageCode": "en"},
        )
        found = ComprehendDetector(client).find(TEXT)
    assert [(kind, TEXT[start:end]) for kind, start, end in found] == [
        ("email", "ana@example.com"),
        ("phone", "+44 20 7946 0958"),
    ]


def test_a_bedrock_guardrail_match_is_located_in_the_text_and_redacted_by_a_screen():
    client = _client("bedrock-runtime")
    with Stubber(client) as stub:
        stub.add_response(
            "apply_guardrail",
            {
                "usage": {
                    "topicPolicyUnits": 0,
                    "contentPolicyUnits": 0,
                    "wordPolicyUnits": 0,
                    "sensitiveInformationPolicyUnits": 1,
                    "sensitiveInformationPolicyFreeUnits": 0,
                    "contextualGroundingPolicyUnits": 0,
                },
                "action": "GUARDRAIL_INTERVENED",
                "outputs": [{"text": "Mail {EMAIL} or call {PHONE}"}],
                "assessments": [
                    {
                        "sensitiveInformationPolicy": {
                            "piiEntities": [
                                {"match": "ana@example.com", "type": "EMAIL", "action": "ANONYMIZED"},
                                {"match": "+44 20 7946 0958", "type": "PHONE", "action": "ANONYMIZED"},
                            ],
                            "regexes": [],
                        }
                    }
                ],
            },
            {
                "guardrailIdentifier": "gr-abc123",
                "guardrailVersion": "3",
                "source": "INPUT",
                "content": [{"text": {"text": TEXT}}],
            },
        )
        screen = Screen("redact", BedrockGuardrailDetector(client, "gr-abc123", "3"))
        item = screen.item({"id": "a", "messages": [{"role": "user", "content": TEXT}], "system": None})
    assert item["messages"][0]["content"] == "Mail [EMAIL] or call [PHONE]"
    assert screen.result().redacted == {"email": 1, "phone": 1}


def test_a_detector_that_fails_is_a_retryable_error_that_never_quotes_the_text():
    client = _client("comprehend")
    with Stubber(client) as stub:
        stub.add_client_error("detect_pii_entities", service_error_code="ThrottlingException", http_status_code=400)
        with pytest.raises(TransientError) as raised:
            ComprehendDetector(client).find(TEXT)
    assert "Comprehend" in str(raised.value) and "ana@" not in str(raised.value)
