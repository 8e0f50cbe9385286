"""``Idempotency-Key`` on ``POST /batches`` with Powertools idempotency, stored in the jobs table.

Same key and body: the first answer again, and no second job. Same key, another body: 422. The same key while the
first request is still being handled: 409. Keys are scoped to the caller, so two callers never collide.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from functools import cache
from typing import TYPE_CHECKING, Any

from batch_gateway.contract.errors import ConflictError, IdempotencyMismatchError, InvalidRequestError
from batch_gateway.store import aws

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.idempotency import DynamoDBPersistenceLayer

KEY_TTL_SECONDS = 24 * 3600
MAX_KEY_CHARS = 255
# COLD_START: Powertools' idempotency utility (16 modules, 3.4 ms beyond what lambdas.create loads: python -X
# importtime, median of 9, decision 0107) is imported only by a create that carries an Idempotency-Key.


@cache
def _persistence(table: str) -> DynamoDBPersistenceLayer:
    from aws_lambda_powertools.utilities.idempotency import (  # noqa: PLC0415 (cold start: COLD_START)
        DynamoDBPersistenceLayer,
    )

    return DynamoDBPersistenceLayer(
        table_name=table,
        key_attr="pk",
        sort_key_attr="sk",
        static_pk_value="IDEMPOTENCY#create-batch",
        expiry_attr="expires_at",
        boto3_client=aws.client("dynamodb"),
    )


def idempotency_key(headers: dict[str, str] | None) -> str | None:
    value = next((v for k, v in (headers or {}).items() if k.lower() == "idempotency-key"), None)
    if value is None:
        return None
    if not value.strip() or len(value) > MAX_KEY_CHARS:
        raise InvalidRequestError(f"Idempotency-Key must be 1 to {MAX_KEY_CHARS} characters")
    return value.strip()


def run_once(
    table: str,
    owner: str,
    key: str,
    body: bytes | str,
    create: Callable[[], dict[str, Any]],
    lambda_context: Any = None,
) -> dict[str, Any]:
    """Call ``create`` once per (owner, key); replay its answer for the same body."""
    from aws_lambda_powertools.utilities.idempotency import (  # noqa: PLC0415 (cold start: COLD_START)
        IdempotencyConfig,
        idempotent_function,
    )
    from aws_lambda_powertools.utilities.idempotency.exceptions import (  # noqa: PLC0415 (cold start: COLD_START)
        IdempotencyAlreadyInProgressError,
        IdempotencyValidationError,
    )

    body_bytes = body.encode("utf-8", "surrogatepass") if isinstance(body, str) else body
    config = IdempotencyConfig(
        event_key_jmespath="[owner, key]",
        payload_validation_jmespath="body_sha256",
        expires_after_seconds=KEY_TTL_SECONDS,
        raise_on_no_idempotency_key=True,
    )
    if lambda_context is not None:
        config.register_lambda_context(lambda_context)  # an in-progress record expires with the invocation

    @idempotent_function(  # type: ignore[untyped-decorator]  # Powertools types the decorator as Any
        data_keyword_argument="request", persistence_store=_persistence(table), config=config
    )
    def _create(request: dict[str, str]) -> dict[str, Any]:
        return create()

    try:
        answer: dict[str, Any] = _create(
            request={"owner": owner, "key": key, "body_sha256": hashlib.sha256(body_bytes).hexdigest()}
        )
        return answer
    except IdempotencyValidationError:
        raise IdempotencyMismatchError(
            "this Idempotency-Key was already used with a different body; use a new key for a new batch"
        ) from None
    except IdempotencyAlreadyInProgressError:
        raise ConflictError("a request with this Idempotency-Key is still being handled; retry shortly") from None
