"""An OpenAI batch input file in S3 becomes the gateway's requests: each line translated for the provider its model
names (``models.openai_format``). Read by the OpenAI door's create, and by Plan for a file too large to translate
while the caller waits (decision 0054)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from batch_gateway.contract.errors import InvalidRequestError
from batch_gateway.models.openai_format import LineProblemError, parse_line, translate_line
from batch_gateway.models.requests import MAX_ERROR_DETAILS
from batch_gateway.service.context import Services


def translated_requests(
    services: Services, key: str, endpoint: str, model: str, provider: str, problems: list[dict[str, Any]]
) -> Iterator[tuple[str, Any, int | None]]:
    """The file's lines translated into the gateway's requests, streamed; problems (with their line) go to
    ``problems``."""
    for number, raw in enumerate(services.payloads.iter_lines(key), start=1):
        if not raw.strip():
            continue
        try:
            line = parse_line(raw)
            custom_id, line_model, line_provider, request = translate_line(line, endpoint, number)
            if line_provider != provider:
                raise LineProblemError(
                    "body.model",
                    f"runs on {line_provider} but line 1's model runs on {provider}: one provider per batch "
                    "(send one file per provider)",
                )
            if line_model != model:
                raise LineProblemError(
                    "body.model", f"is {line_model} but the batch's model is {model}: one model per batch"
                )
        except LineProblemError as problem:
            if len(problems) < MAX_ERROR_DETAILS:
                problems.append({"line": number, "field": problem.field, "message": problem.message})
            continue
        except InvalidRequestError as error:
            problems.extend(error.details[:1])
            continue
        yield custom_id, request, number
