"""What S3 answers a request sent to a presigned URL, as far as its signature goes.

moto in process does not recompute a presigned URL's signature, so it accepts a body of any length whatever the URL
signed. S3 does (and so does the local stack's S3, with ``batch_gateway_dev.local.presigned_urls``, decision 0120): it
computes the signature over the request as sent, the headers the URL names in ``X-Amz-SignedHeaders`` with the values
the request carries, and refuses a mismatch (403 ``SignatureDoesNotMatch``). ``s3_accepts`` asks that same check about
a request of a given length.
"""

from __future__ import annotations

import hmac
from urllib.parse import parse_qs, urlsplit

from botocore.credentials import Credentials

from batch_gateway_dev.local.presigned_urls import QueryAuthRequest, expected_signature
from batch_gateway_dev.sigv4 import read_presigned_query


def s3_accepts(url: str, method: str, content_length: int, credentials: Credentials) -> bool:
    """Whether the signature in ``url`` matches a ``method`` request with ``Content-Length: content_length``, signed
    by ``credentials`` (what S3 checks before it reads the body)."""
    parts = urlsplit(url)
    sent = [("Host", parts.netloc), ("Content-Length", str(content_length))]
    request = QueryAuthRequest(method, parts.netloc, parts.path, parts.query, sent)
    claims = read_presigned_query(parse_qs(parts.query))
    return hmac.compare_digest(expected_signature(request, claims, credentials), claims.authorization.signature)
