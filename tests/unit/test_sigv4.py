"""One reader of SigV4 claims for the dev servers: a header botocore signed, and a presigned URL boto3 made, read the
same way (who signed, for which region and service, over which headers)."""

from urllib.parse import parse_qs, urlsplit

import boto3
import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.config import Config
from botocore.credentials import Credentials

from batch_gateway_dev.sigv4 import MalformedPresignedQuery, is_presigned, parse_authorization, read_presigned_query


def _signed_header(service: str = "execute-api", region: str = "eu-west-1") -> str:
    request = AWSRequest(method="GET", url="https://example.com/v1/batches", data=b"")
    SigV4Auth(Credentials("AKIDALICE", "secret"), service, region).add_auth(request)
    return request.headers["Authorization"]


def test_a_botocore_signature_names_its_key_region_service_and_signed_headers():
    claims = parse_authorization(_signed_header())
    assert claims is not None
    assert (claims.access_key, claims.region, claims.service) == ("AKIDALICE", "eu-west-1", "execute-api")
    assert "host" in claims.signed_headers and "x-amz-date" in claims.signed_headers
    assert parse_authorization(claims.header()) == claims


def test_anything_but_a_well_formed_sigv4_header_is_no_claim():
    good = _signed_header()
    for bad in (None, "", "Bearer abc", good + "\n", good.replace("aws4_request", "aws4"), good[:-1]):
        assert parse_authorization(bad) is None, bad


def test_a_presigned_url_reads_as_the_header_its_signer_would_have_sent():
    s3 = boto3.client(
        "s3",
        region_name="us-east-1",
        aws_access_key_id="AKIDBOB",
        aws_secret_access_key="secret",
        aws_session_token="token+/=",
        config=Config(signature_version="s3v4"),
    )
    url = s3.generate_presigned_url("get_object", Params={"Bucket": "b", "Key": "k"}, ExpiresIn=60)
    query = parse_qs(urlsplit(url).query)
    assert is_presigned(query)
    claims = read_presigned_query(query)
    found = claims.authorization
    assert (found.access_key, found.region, found.service, found.signed_headers) == (
        "AKIDBOB",
        "us-east-1",
        "s3",
        ("host",),
    )
    assert (claims.expires, claims.security_token, claims.amz_date[:8]) == ("60", "token+/=", found.date)
    assert parse_authorization(found.header()) == found


def test_a_query_without_sigv4_parameters_is_not_presigned_and_an_incomplete_one_is_malformed():
    assert not is_presigned({}) and not is_presigned({"versionId": ["1"]})
    incomplete = {"X-Amz-Credential": ["AKID/20261129/us-east-1/s3/aws4_request"]}
    assert is_presigned(incomplete)
    with pytest.raises(MalformedPresignedQuery, match="requires the X-Amz-Algorithm"):
        read_presigned_query(incomplete)
