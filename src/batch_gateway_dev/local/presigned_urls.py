"""S3's check of a presigned URL (SigV4 query-string authentication), for the local S3.

moto's server verifies only signatures sent in the ``Authorization`` header, so a presigned URL (the result and upload
URLs the API hands out) was honoured for any key, any length and for as long as its holder cared to edit
``X-Amz-Expires``. S3 checks, and so does this module (decision 0120):

1. the parameters (``read``): all six present, the algorithm, the credential's shape (``sigv4.read_presigned_query``),
   the date's format, ``X-Amz-Expires`` a number of seconds up to a week, the credential's date that of
   ``X-Amz-Date``, its Region the bucket's and its service ``s3``; else 400 ``AuthorizationQueryParametersError``;
2. the access key (and session token) is one the account knows: moto's own check, made by the caller between the two;
3. (``verify``) every ``x-amz-*`` header the request carries is signed, else 403 ``AccessDenied``;
4. the signature over the canonical request (method, path, the query without the signature, the signed headers with
   the values this request carries, ``UNSIGNED-PAYLOAD``), recomputed by botocore's ``S3SigV4QueryAuth`` with the
   key's secret; else 403 ``SignatureDoesNotMatch``. A signed ``content-length`` (decision 0113) thus holds an
   upload to its declared size;
5. the time: not more than 15 minutes before ``X-Amz-Date`` (403 ``AccessDenied`` "Request is not valid yet"), not
   after ``X-Amz-Date + X-Amz-Expires`` (403 ``AccessDenied`` "Request has expired").

The signer's IAM policies decide last (moto's check, by the caller).
"""

from __future__ import annotations

import hmac
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from urllib.parse import parse_qs, parse_qsl, quote, unquote, urlencode

from botocore.auth import S3SigV4QueryAuth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from batch_gateway_dev.sigv4 import MalformedPresignedQuery, PresignedClaims, read_presigned_query

A_WEEK_SECONDS = 7 * 24 * 3600  # the longest a SigV4 presigned URL may last
CLOCK_SKEW = timedelta(minutes=15)
_AMZ_DATE = re.compile(r"\A\d{8}T\d{6}Z\Z")


class Refused(Exception):
    """S3's answer to a presigned request it does not honour."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


def _malformed(message: str) -> Refused:
    return Refused(400, "AuthorizationQueryParametersError", message)


@dataclass(frozen=True)
class QueryAuthRequest:
    """A request as S3 received it."""

    method: str
    host: str  # the Host header
    path: str  # percent-encoded, as sent
    query: str  # as sent
    headers: Sequence[tuple[str, str]]


def read(request: QueryAuthRequest, region: str) -> PresignedClaims:
    """The URL's claims, if S3 (in ``region``, the bucket's) can use them; ``Refused`` otherwise."""
    try:
        claims = read_presigned_query(parse_qs(request.query, keep_blank_values=True))
    except MalformedPresignedQuery as exc:
        raise _malformed(str(exc)) from None
    scope = claims.authorization
    if not _AMZ_DATE.match(claims.amz_date):
        raise _malformed("X-Amz-Date must be in the ISO8601 Long Format \"yyyyMMdd'T'HHmmss'Z'\"")
    if scope.date != claims.amz_date[:8]:
        raise _malformed(
            f'Invalid credential date "{scope.date}". This date is not the same as X-Amz-Date: "{claims.amz_date[:8]}".'
        )
    if scope.region != region:
        raise _malformed(
            f"Error parsing the X-Amz-Credential parameter; the region '{scope.region}' is wrong; expecting '{region}'"
        )
    if scope.service != "s3":
        raise _malformed(
            f'Error parsing the X-Amz-Credential parameter; incorrect service "{scope.service}". '
            'This endpoint belongs to "s3".'
        )
    try:
        expires = int(claims.expires)
    except ValueError:
        raise _malformed("X-Amz-Expires should be a number") from None
    if expires < 0:
        raise _malformed("X-Amz-Expires must be non-negative")
    if expires > A_WEEK_SECONDS:
        raise _malformed(
            "X-Amz-Expires must be less than a week (in seconds); that is, the given X-Amz-Expires must be less "
            f"than {A_WEEK_SECONDS} seconds"
        )
    return claims


def verify(request: QueryAuthRequest, claims: PresignedClaims, credentials: Credentials, now: datetime) -> None:
    """``Refused`` unless ``request`` is the one the signer of ``credentials`` presigned, and still in time."""
    scope = claims.authorization
    unsigned = sorted(
        {name.lower() for name, _ in request.headers if name.lower().startswith("x-amz-")} - set(scope.signed_headers)
    )
    if unsigned:
        raise Refused(403, "AccessDenied", "There were headers present in the request which were not signed")
    if not hmac.compare_digest(expected_signature(request, claims, credentials), scope.signature):
        raise Refused(
            403,
            "SignatureDoesNotMatch",
            "The request signature we calculated does not match the signature you provided. "
            "Check your key and signing method.",
        )
    signed_at = datetime.strptime(claims.amz_date, "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)
    if signed_at - now > CLOCK_SKEW:
        raise Refused(403, "AccessDenied", "Request is not valid yet")
    if now > signed_at + timedelta(seconds=int(claims.expires)):
        raise Refused(403, "AccessDenied", "Request has expired")


def expected_signature(request: QueryAuthRequest, claims: PresignedClaims, credentials: Credentials) -> str:
    """The signature S3 computes for ``request`` with the signer's key: botocore's own signer over the canonical
    request it would have signed (the path and query URI-encoded as SigV4 says, the signed headers' values as sent)."""
    scope = claims.authorization
    values: dict[str, list[str]] = {}
    for name, value in request.headers:
        if name.lower() in scope.signed_headers:
            values.setdefault(name.lower(), []).append(value)
    unsigned = [(k, v) for k, v in parse_qsl(request.query, keep_blank_values=True) if k != "X-Amz-Signature"]
    path, query = quote(unquote(request.path), safe="/~"), urlencode(unsigned, quote_via=quote, safe="~")
    aws_request = AWSRequest(
        method=request.method,
        url=f"http://{request.host}{path}?{query}",
        headers={name: ",".join(sent) for name, sent in values.items()},
    )
    aws_request.context["timestamp"] = claims.amz_date
    signer = S3SigV4QueryAuth(credentials, scope.service, scope.region, expires=int(claims.expires))
    canonical = signer.canonical_request(aws_request)
    return str(signer.signature(signer.string_to_sign(aws_request, canonical), aws_request))
