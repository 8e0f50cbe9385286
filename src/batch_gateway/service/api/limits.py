"""Per-owner limits on creates (decision 0119): the admin routes (``/limits``) and the caller's own ``GET /limit``.
What a create is admitted against, and when a slot is freed, is ``limits.admission``'s."""

from __future__ import annotations

from typing import Any

from batch_gateway.contract.errors import InvalidRequestError, NotFoundError
from batch_gateway.models.jobs import utcnow
from batch_gateway.models.owner_limits import (
    LIMIT_FIELDS,
    LimitOverride,
    LimitsError,
    epoch_minute,
    limit_view,
    parse_limits,
)
from batch_gateway.models.principals import checked_owner
from batch_gateway.service.context import Services
from batch_gateway.service.limits.admission import deployment_limits, limits_for

_NEEDS = "owner and creates_per_minute or open_jobs (a whole number, or null for no limit)"


def set_limits(services: Services, body: Any) -> dict[str, Any]:
    """``POST /limits {"owner", "creates_per_minute"?, "open_jobs"?}``: set or replace the owner's override (a limit
    not named is the deployment's default; null lifts it)."""
    if not isinstance(body, dict):
        raise _invalid("body", f"the body must be a JSON object with {_NEEDS}")
    owner = checked_owner(body.get("owner"))
    fields = {name: value for name, value in body.items() if name != "owner"}
    if not fields:
        raise _invalid(LIMIT_FIELDS[0], f"name at least one limit: {', '.join(LIMIT_FIELDS)} (a number, or null)")
    try:
        limits = parse_limits(fields)
    except LimitsError as error:
        raise _invalid(error.field, error.reason) from None
    services.limits.put_override(LimitOverride(owner=owner, limits=limits, updated_at=utcnow()))
    return own_limits(services, owner)


def list_limits(services: Services) -> dict[str, Any]:
    """``GET /limits``: the deployment's default, and every owner with an override (its limits in force and usage)."""
    return {
        "defaults": deployment_limits(services).to_dict(),
        "limits": [own_limits(services, override.owner) for override in services.limits.list_overrides()],
    }


def remove_limits(services: Services, owner: str | None) -> dict[str, Any]:
    """``DELETE /limits?owner=ARN``: the owner's override goes; the deployment's default applies again."""
    name = checked_owner(owner)
    if not services.limits.delete_override(name):
        raise NotFoundError(f"no limits set for owner '{name}'")
    return {"owner": name, "deleted": True}


def own_limits(services: Services, owner: str) -> dict[str, Any]:
    """``GET /limit``: the limits in force for ``owner``, the override they come from, and its usage now."""
    limits, override = limits_for(services, owner)
    minute = epoch_minute(services.clock().timestamp())
    return limit_view(owner, limits, override, services.limits.usage(owner), minute)


def _invalid(field: str, message: str) -> InvalidRequestError:
    return InvalidRequestError(f"{field}: {message}", details=[{"field": field, "message": message}])
