"""S3's check of a presigned URL (``batch_gateway_dev.local.presigned_urls``, what the local S3 runs), on URLs boto3
makes, with the clock given: a URL holds for its request while it lasts, from 15 minutes before its date, and for
nothing else. (``tests/integration/test_local_presigned_urls.py`` sends them to the local S3.)"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from functools import cache
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

import boto3
import pytest
from botocore.config import Config
from botocore.credentials import Credentials

from batch_gateway_dev.local.presigned_urls import QueryAuthRequest, Refused, read, verify

KEYS = {"aws_access_key_id": "ASIAEXAMPLE", "aws_secret_access_key": "secret", "aws_session_token": "token/+="}
CREDENTIALS = Credentials("ASIAEXAMPLE", "secret", "token/+=")


@cache
def _s3() -> Any:
    """A client that only signs (nothing is sent): made once, as clients are slow to build."""
    make: Any = boto3.client
    config = Config(signature_version="s3v4")
    return make("s3", endpoint_url="http://127.0.0.1:4566", region_name="us-east-1", config=config, **KEYS)


def _presign(method: str = "get_object", expires: int = 60, **params: Any) -> str:
    url: str = _s3().generate_presigned_url(method, Params={"Bucket": "payloads", **params}, ExpiresIn=expires)
    return url


def _request(url: str, method: str = "GET", **headers: str) -> QueryAuthRequest:
    parts = urlsplit(url)
    return QueryAuthRequest(method, parts.netloc, parts.path, parts.query, [("Host", parts.netloc), *headers.items()])


def _signed_at(url: str) -> datetime:
    query = dict(pair.split("=", 1) for pair in urlsplit(url).query.split("&"))
    return datetime.strptime(query["X-Amz-Date"], "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)


def _check(request: QueryAuthRequest, now: datetime, region: str = "us-east-1") -> None:
    verify(request, read(request, region), CREDENTIALS, now)


@pytest.mark.parametrize("key", ["jobs/job_1/results.jsonl", "uploads/a b/c+d~e/ü(1)!*'.jsonl", "x%2Fy=z&w"])
def test_a_url_holds_for_its_own_request_whatever_its_key(key):
    url = _presign(Key=key)
    _check(_request(url), _signed_at(url))


def test_a_url_holds_from_15_minutes_before_its_date_until_its_expiry_and_not_after():
    url = _presign(expires=60, Key="k")
    signed_at = _signed_at(url)
    for now in (signed_at - timedelta(minutes=15), signed_at + timedelta(seconds=60)):
        _check(_request(url), now)
    with pytest.raises(Refused) as early:
        _check(_request(url), signed_at - timedelta(minutes=15, seconds=1))
    assert (early.value.status, early.value.code, early.value.message) == (
        403,
        "AccessDenied",
        "Request is not valid yet",
    )
    with pytest.raises(Refused) as late:
        _check(_request(url), signed_at + timedelta(seconds=61))
    assert (late.value.status, late.value.code, late.value.message) == (403, "AccessDenied", "Request has expired")


def test_another_method_or_a_signed_header_with_another_value_does_not_match():
    url = _presign("put_object", Key="uploads/u.jsonl", ContentLength=10)
    now = _signed_at(url)
    _check(_request(url, "PUT", **{"Content-Length": "10"}), now)
    for request in (_request(url, "PUT", **{"Content-Length": "11"}), _request(url, "PUT"), _request(url, "POST")):
        with pytest.raises(Refused) as refused:
            _check(request, now)
        assert (refused.value.status, refused.value.code) == (403, "SignatureDoesNotMatch")


def test_an_unsigned_x_amz_header_is_refused_before_the_signature_is_looked_at():
    url = _presign("put_object", Key="uploads/u.jsonl", ContentLength=10)
    request = _request(url, "PUT", **{"Content-Length": "10", "x-amz-meta-owner": "mallory"})
    with pytest.raises(Refused) as refused:
        _check(request, _signed_at(url))
    assert (refused.value.status, refused.value.code) == (403, "AccessDenied")


def _with(url: str, name: str, value: str) -> str:
    """``url`` with one query parameter replaced, nothing re-signed."""
    parts = urlsplit(url)
    query = [(k, value if k == name else v) for k, v in parse_qsl(parts.query)]
    return urlunsplit(parts._replace(query=urlencode(query, quote_via=quote)))


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        (
            "X-Amz-Credential",
            "ASIAEXAMPLE/{date}/eu-west-1/s3/aws4_request",
            "the region 'eu-west-1' is wrong; expecting 'us-east-1'",
        ),
        (
            "X-Amz-Credential",
            "ASIAEXAMPLE/{date}/us-east-1/sqs/aws4_request",
            'incorrect service "sqs". This endpoint belongs to "s3".',
        ),
        (
            "X-Amz-Credential",
            "ASIAEXAMPLE/{yesterday}/us-east-1/s3/aws4_request",
            'Invalid credential date "{yesterday}". This date is not the same as X-Amz-Date: "{date}".',
        ),
        ("X-Amz-Expires", "604801", "X-Amz-Expires must be less than a week"),
        ("X-Amz-Date", "{date}", "X-Amz-Date must be in the ISO8601 Long Format"),
    ],
)
def test_a_scope_a_date_or_an_expiry_s3_would_not_take_is_a_400(name, value, message):
    url = _presign(Key="k")
    day = _signed_at(url)
    dates = {"date": f"{day:%Y%m%d}", "yesterday": f"{day - timedelta(days=1):%Y%m%d}"}
    with pytest.raises(Refused) as refused:
        read(_request(_with(url, name, value.format(**dates))), "us-east-1")
    assert (refused.value.status, refused.value.code) == (400, "AuthorizationQueryParametersError")
    assert message.format(**dates) in refused.value.message
