"""The one reader of SigV4 credentials for the dev servers: an ``Authorization`` header, or a presigned URL's query.

The local API front checks signatures with it, the local AWS process turns a presigned URL into the header moto's
IAM check reads, and the SDK tests' replay gateway records who signed. Verifying a signature is the front's job
(``batch_gateway_dev.local.front.verify_signature``); this module only says what a request claims.
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


def parse_presigned_query(query: Mapping[str, Sequence[str]]) -> SigV4Authorization | None:
    """The claims of a presigned URL (``parse_qs`` of its query); None when it is not a SigV4 presigned URL."""
    credential = (query.get("X-Amz-Credential") or [""])[0].split("/")
    if (query.get("X-Amz-Algorithm") or [ALGORITHM])[0] != ALGORITHM or len(credential) != 5:
        return None
    key, date, region, service, terminator = credential
    if terminator != "aws4_request" or not key:
        return None
    signed = (query.get("X-Amz-SignedHeaders") or ["host"])[0]
    return SigV4Authorization(
        access_key=key,
        date=date,
        region=region,
        service=service,
        signed_headers=tuple(signed.split(";")),
        signature=(query.get("X-Amz-Signature") or [""])[0],
    )
