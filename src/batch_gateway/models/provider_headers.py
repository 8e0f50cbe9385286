"""Provider headers a job passes through to its provider (decision 0129): the deployment's allow-list and the check
of a job's headers against it.

The allow-list is ``{provider: {header name: [allowed values] | "*"}}``: a list names every value the header may
take (for a list header such as ``anthropic-beta``, every member of its comma-separated value), ``"*"`` any value of
safe characters (an id such as a workspace's). A header the provider cannot take, or the deployment has not named,
or a value it has not named, is a 400 that names it: nothing is stored or started. Values are never logged.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from batch_gateway.contract.errors import InvalidRequestError
from batch_gateway.provider_specs import BY_NAME

ANY_VALUE = "*"
MAX_HEADERS = 8  # of one job
MAX_VALUE_CHARS = 512  # of one header's whole value
_VALUE_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}")  # one value (or one member of a list header's value)

AllowList = dict[str, dict[str, tuple[str, ...] | None]]  # provider -> header -> allowed values (None: any)


def parse_allow_list(raw: Any) -> AllowList:
    """The deployment's allow-list from its JSON (text or parsed); ValueError says what is wrong. The CDK app checks
    the context with it at synth, the functions read ``PROVIDER_HEADERS_JSON`` with it."""
    if raw in (None, ""):
        return {}
    value = json.loads(raw) if isinstance(raw, str) else raw
    if not isinstance(value, dict):
        raise ValueError("provider headers must be a JSON object of provider -> {header name: allowed values}")
    allowed: AllowList = {}
    for provider, headers in value.items():
        spec = BY_NAME.get(provider)
        if spec is None or spec.passthrough_headers is None:
            takers = ", ".join(s.name for s in BY_NAME.values() if s.passthrough_headers) or "none"
            raise ValueError(f"provider {provider!r} takes no pass-through headers (those that do: {takers})")
        if not isinstance(headers, dict):
            raise ValueError(f'{provider}: an object of header name -> list of allowed values or "*"')
        allowed[provider] = {}
        for name, values in headers.items():
            if not isinstance(name, str) or not re.fullmatch(spec.passthrough_headers, name.lower()):
                raise ValueError(f"{provider}: {name!r} is not a header {spec.label} takes from a caller")
            if values == ANY_VALUE:
                allowed[provider][name.lower()] = None
            elif (
                isinstance(values, list)
                and values
                and all(isinstance(v, str) and _VALUE_RE.fullmatch(v) for v in values)
            ):
                allowed[provider][name.lower()] = tuple(dict.fromkeys(values))
            else:
                raise ValueError(f'{provider}: {name}: a non-empty list of values (letters, digits, . _ : -) or "*"')
    return allowed


def requested_headers(provider: str, headers: Mapping[str, str]) -> dict[str, str]:
    """Of a caller's HTTP request headers (a compatible door's), those that ask the provider for something: the names
    the provider takes from a caller (``ProviderSpec.passthrough_headers``), lower case. Everything else the caller
    sent (its key, content type, the SDK's version header) is not the provider's."""
    spec = BY_NAME.get(provider)
    if spec is None or spec.passthrough_headers is None:
        return {}
    pattern = re.compile(spec.passthrough_headers)
    return {name.lower(): value for name, value in headers.items() if pattern.fullmatch(name.lower())}


def check_provider_headers(provider: str, headers: Any, allowed: Mapping[str, Any]) -> dict[str, str]:
    """A job's headers, checked against the deployment's allow-list (``Settings.provider_headers``: the JSON document
    of context ``provider_headers``, parsed here) and normalised (names lower case, a list header's members trimmed
    and without repeats); ``InvalidRequestError`` names the first header or value not allowed."""
    if headers is None or headers == {}:
        return {}
    allowed = parse_allow_list(dict(allowed))
    if not isinstance(headers, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in headers.items()):
        raise _refused("provider_headers", "must be an object of header name -> string value")
    if len(headers) > MAX_HEADERS:
        raise _refused("provider_headers", f"at most {MAX_HEADERS} headers")
    spec = BY_NAME[provider]
    ours = allowed.get(provider, {})
    checked: dict[str, str] = {}
    for raw_name, value in headers.items():
        name = raw_name.lower()
        field = f"provider_headers.{name[:64]}"
        if name not in ours:
            named = ", ".join(sorted(ours)) or "none"
            raise _refused(
                field,
                f"header {name[:64]!r} is not passed to {spec.label} by this deployment (allowed: {named})",
            )
        if len(value) > MAX_VALUE_CHARS:
            raise _refused(field, f"the value is longer than {MAX_VALUE_CHARS} characters")
        members = [m.strip() for m in value.split(",")] if name in spec.list_headers else [value.strip()]
        members = list(dict.fromkeys(m for m in members if m))
        if not members:
            raise _refused(field, "the value is empty")
        values = ours[name]
        for member in members:
            if not _VALUE_RE.fullmatch(member):
                raise _refused(field, "a value is letters, digits, '.', '_', ':' and '-', up to 128 characters")
            if values is not None and member not in values:
                raise _refused(
                    field,
                    f"{member[:128]!r} is not allowed for {name} by this deployment (allowed: {', '.join(values)})",
                )
        checked[name] = ",".join(members)
    return checked


def _refused(field: str, message: str) -> InvalidRequestError:
    return InvalidRequestError(f"{field}: {message}", details=[{"field": field, "message": message}])


def header_values(provider: str, headers: Mapping[str, str]) -> set[str]:
    """Every value a job's checked headers name (each member of a list header's value)."""
    spec = BY_NAME.get(provider)
    lists = spec.list_headers if spec is not None else frozenset()
    return {
        member.strip()
        for name, value in headers.items()
        for member in (value.split(",") if name in lists else [value])
        if member.strip()
    }


def long_context(provider: str, headers: Mapping[str, str]) -> bool:
    """The job's headers ask for the provider's long context: its long requests cost the long-context rates."""
    spec = BY_NAME.get(provider)
    return spec is not None and bool(header_values(provider, headers) & spec.long_context_headers)
