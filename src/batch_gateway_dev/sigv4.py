"""The one reader of SigV4 credentials for the dev servers: an ``Authorization`` header, or a presigned URL's query.

The local API front checks signatures with it, the local S3 reads presigned URLs with it, and the SDK tests' replay
gateway records who signed. Verifying a signature is the front's job (``batch_gateway_dev.local.front``) and the
local S3's (``batch_gateway_dev.local.presigned_urls``); this module only says what a request claims.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

ALGORITHM = "AWS4-HMAC-SHA256"
_AUTHORIZATION = re.compile(
    r"\AAWS4-HMAC-SHA256 Credential=(?P<key>[^/]+)/(?P<date>\d{8})/(?P<region>[\w-]+)/(?P<service>[\w-]+)/"
    r"aws4_request, ?SignedHeaders=(?P<signed>[a-z0-9;-]+), ?Signature=(?P<signature>[0-9a-f]{64})\Z"
)


@dataclass(frozen=True)
class SigV4Authorization:
    access_key: str
    date: str  # YYYYMMDD, the credential scope's date
    region: str
    service: str
    signed_headers: tuple[str, ...]
    signature: str

    @property
    def scope(self) -> str:
        return f"{self.access_key}/{self.date}/{self.region}/{self.service}/aws4_request"

    def header(self) -> str:
        """The ``Authorization`` header value that says the same."""
        return f"{ALGORITHM} Credential={self.scope}, SignedHeaders={';'.join(self.signed_headers)}, " + (
            f"Signature={self.signature}"
        )


def parse_authorization(value: str | None) -> SigV4Authorization | None:
    """The claims of a well-formed SigV4 ``Authorization`` header; None for anything else (missing, another scheme,
    a malformed credential scope or signature)."""
    found = _AUTHORIZATION.match(value or "")
    if not found:
        return None
    return SigV4Authorization(
        access_key=found["key"],
        date=found["date"],
        region=found["region"],
        service=found["service"],
        signed_headers=tuple(found["signed"].split(";")),
        signature=found["signature"],
    )


# The query parameters of SigV4 query-string authentication (a presigned URL), all required.
PRESIGNED_PARAMETERS = (
    "X-Amz-Algorithm",
    "X-Amz-Credential",
    "X-Amz-Date",
    "X-Amz-Expires",
    "X-Amz-SignedHeaders",
    "X-Amz-Signature",
)


class MalformedPresignedQuery(ValueError):
    """A presigned URL's authentication parameters cannot be read; the message is S3's
    (``AuthorizationQueryParametersError``)."""


@dataclass(frozen=True)
class PresignedClaims:
    authorization: SigV4Authorization
    amz_date: str  # X-Amz-Date as sent (the verifier reads it)
    expires: str  # X-Amz-Expires as sent
    security_token: str | None


def is_presigned(query: Mapping[str, Sequence[str]]) -> bool:
    """Whether a request means to authenticate by its query (any SigV4 query parameter present)."""
    return any(name in query for name in PRESIGNED_PARAMETERS)


def read_presigned_query(query: Mapping[str, Sequence[str]]) -> PresignedClaims:
    """The claims of a presigned URL (``parse_qs`` of its query); ``MalformedPresignedQuery`` when S3 could not read
    them: a parameter missing, another algorithm, a credential that is not ``KEY/DATE/REGION/SERVICE/aws4_request``."""
    if not all(query.get(name) for name in PRESIGNED_PARAMETERS):
        raise MalformedPresignedQuery(
            "Query-string authentication version 4 requires the X-Amz-Algorithm, X-Amz-Credential, X-Amz-Signature, "
            "X-Amz-Date, X-Amz-SignedHeaders, and X-Amz-Expires parameters."
        )
    value = {name: query[name][0] for name in PRESIGNED_PARAMETERS}
    if value["X-Amz-Algorithm"] != ALGORITHM:
        raise MalformedPresignedQuery(f'X-Amz-Algorithm only supports "{ALGORITHM}"')
    credential = value["X-Amz-Credential"].split("/")
    if len(credential) != 5 or credential[4] != "aws4_request" or not all(credential):
        raise MalformedPresignedQuery(
            "Error parsing the X-Amz-Credential parameter; the Credential is mal-formed; expecting "
            '"<YOUR-AKID>/YYYYMMDD/REGION/SERVICE/aws4_request".'
        )
    key, date, region, service, _ = credential
    authorization = SigV4Authorization(
        access_key=key,
        date=date,
        region=region,
        service=service,
        signed_headers=tuple(value["X-Amz-SignedHeaders"].split(";")),
        signature=value["X-Amz-Signature"],
    )
    token = query.get("X-Amz-Security-Token")
    return PresignedClaims(authorization, value["X-Amz-Date"], value["X-Amz-Expires"], token[0] if token else None)
