"""What S3 answers a request sent to a presigned URL, as far as its signature goes.

moto (in process and in the local stack) does not recompute a presigned URL's signature, so it accepts a body of
any length whatever the URL signed. S3 does: it computes the signature over the request as sent, the headers the
URL names in ``X-Amz-SignedHeaders`` with the values the request carries, and refuses a mismatch (403
``SignatureDoesNotMatch``). ``s3_accepts`` recomputes it with botocore's own signer for a request of a given length.
"""

from __future__ import annotations

from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

from botocore.auth import S3SigV4QueryAuth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials


def signed_headers(url: str) -> list[str]:
    return dict(parse_qsl(urlsplit(url).query))["X-Amz-SignedHeaders"].split(";")


def s3_accepts(url: str, method: str, content_length: int, credentials: Credentials) -> bool:
    """Whether the signature in ``url`` matches a ``method`` request with ``Content-Length: content_length``, signed
    by ``credentials`` (what S3 checks before it reads the body)."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    params = dict(query)
    sent = {"host": parts.netloc, "content-length": str(content_length)}
    headers = {name: value for name, value in sent.items() if name in signed_headers(url)}
    unsigned = [(k, v) for k, v in query if k != "X-Amz-Signature"]
    _, _, region, service, _ = params["X-Amz-Credential"].split("/")
    signer = S3SigV4QueryAuth(credentials, service, region, int(params["X-Amz-Expires"]))
    request = AWSRequest(
        method=method, url=urlunsplit(parts._replace(query=urlencode(unsigned, quote_via=quote))), headers=headers
    )
    request.context["timestamp"] = params["X-Amz-Date"]
    canonical = signer.canonical_request(request)
    return signer.signature(signer.string_to_sign(request, canonical), request) == params["X-Amz-Signature"]
