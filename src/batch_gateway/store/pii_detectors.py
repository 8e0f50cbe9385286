"""The ``PiiDetector`` port on AWS (decision 0124): Amazon Comprehend's ``DetectPiiEntities`` or a Bedrock guardrail's
``ApplyGuardrail``, named by the deployment instead of the built-in patterns (``models.pii``). The text goes to the
service and nowhere else: nothing here logs it, and an error names the service, never the text."""

from __future__ import annotations

from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from batch_gateway.contract.errors import TransientError

COMPREHEND_MAX_BYTES = 100_000  # DetectPiiEntities' limit on one text (UTF-8)


def _failed(service: str, exc: Exception) -> TransientError:
    code = exc.response.get("Error", {}).get("Code", "") if isinstance(exc, ClientError) else type(exc).__name__
    return TransientError(f"the personal-data detector ({service}) did not answer ({code}); nothing was kept")


class ComprehendDetector:
    """DetectPiiEntities on each text, in pieces of at most 100,000 bytes; its entity types, lower case
    (``email``, ``credit_debit_number``, ``name``, ...), with their character offsets."""

    def __init__(self, client: Any, language: str = "en") -> None:
        self.client = client
        self.language = language

    def find(self, text: str) -> list[tuple[str, int, int]]:
        found: list[tuple[str, int, int]] = []
        for offset, piece in _pieces(text, COMPREHEND_MAX_BYTES):
            try:
                answer = self.client.detect_pii_entities(Text=piece, LanguageCode=self.language)
            except (ClientError, BotoCoreError) as exc:
                raise _failed("Amazon Comprehend", exc) from None
            for entity in sorted(answer.get("Entities", []), key=lambda e: e["BeginOffset"]):
                start, end = offset + entity["BeginOffset"], offset + entity["EndOffset"]
                if found and start < found[-1][2]:  # overlapping: the first one found covers it
                    continue
                found.append((str(entity["Type"]).lower(), start, end))
        return found


class BedrockGuardrailDetector:
    """ApplyGuardrail (source INPUT) of one guardrail version on each text; the personal data its sensitive
    information policy matched, located in the text by their matched values (the API answers values, not offsets).
    Types lower case (``email``, ``credit_debit_card_number``, ...); the guardrail's own regexes count by name."""

    def __init__(self, client: Any, guardrail_id: str, version: str) -> None:
        self.client = client
        self.guardrail_id = guardrail_id
        self.version = version

    def find(self, text: str) -> list[tuple[str, int, int]]:
        try:
            answer = self.client.apply_guardrail(
                guardrailIdentifier=self.guardrail_id,
                guardrailVersion=self.version,
                source="INPUT",
                content=[{"text": {"text": text}}],
            )
        except (ClientError, BotoCoreError) as exc:
            raise _failed("Bedrock guardrail", exc) from None
        matches: list[tuple[str, str]] = []
        for assessment in answer.get("assessments", []):
            policy = assessment.get("sensitiveInformationPolicy") or {}
            matches += [(str(e["type"]).lower(), e["match"]) for e in policy.get("piiEntities", []) if e.get("match")]
            matches += [
                (str(r.get("name") or "regex"), r["match"]) for r in policy.get("regexes", []) if r.get("match")
            ]
        spans: list[tuple[str, int, int]] = []
        for kind, value in matches:
            at = 0
            while (start := text.find(value, at)) >= 0:
                spans.append((kind, start, start + len(value)))
                at = start + len(value)
        spans.sort(key=lambda span: span[1])
        kept: list[tuple[str, int, int]] = []
        for span in spans:
            if not kept or span[1] >= kept[-1][2]:
                kept.append(span)
        return kept


def _pieces(text: str, max_bytes: int) -> list[tuple[int, str]]:
    """(character offset, piece) of ``text`` cut so each piece is at most ``max_bytes`` in UTF-8."""
    if len(text) * 4 <= max_bytes or len(text.encode("utf-8")) <= max_bytes:
        return [(0, text)]
    pieces: list[tuple[int, str]] = []
    start = 0
    step = max_bytes // 4  # at most 4 bytes a character: never over the limit
    while start < len(text):
        pieces.append((start, text[start : start + step]))
        start += step
    return pieces
