"""The local S3 (``local/aws_server.py``, what the local stack runs) honours a presigned URL as S3 does: only the
request it was signed for, only while it lasts.

A tenant holds a result URL and an upload URL made by the service's own adapter (``S3PayloadStore``, signed by an
assumed role as the Lambda functions sign them). Editing another job's key into the result URL, or a longer
``X-Amz-Expires``, must not serve anything; nor may an upload carry another length than the one signed (decision
0113). S3 answers each with an XML error: 403 ``SignatureDoesNotMatch``, 403 ``AccessDenied`` "Request has expired",
400 ``AuthorizationQueryParametersError`` for parameters it cannot use. Decision 0120.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit
from xml.etree import ElementTree

import boto3
import botocore.auth
import pytest
import requests
from botocore.config import Config
from botocore.exceptions import ClientError

from batch_gateway.service.layout import results_key
from batch_gateway.store.payloads import S3PayloadStore
from batch_gateway_dev.local.resources import create_bucket
from tests.support.fixtures import REGION
from tests.support.local_aws import ALLOW_ALL, LocalAws, policy, start_local_aws, user_with_policy

BUCKET = "presigned-payloads"
JOB_A, JOB_B = "job_" + "a" * 26, "job_" + "b" * 26
A_RESULTS, B_RESULTS = b'{"id": "a", "text": "alice\'s results"}\n', b'{"id": "b", "text": "bob\'s results"}\n'
# what the Retrieve and Uploads roles may do, in one role: read results, write uploads
SIGNER_POLICY = policy(
    {"Effect": "Allow", "Action": "s3:GetObject", "Resource": f"arn:aws:s3:::{BUCKET}/jobs/*"},
    {"Effect": "Allow", "Action": "s3:PutObject", "Resource": f"arn:aws:s3:::{BUCKET}/uploads/*"},
)


@pytest.fixture(scope="module")
def local_aws() -> Iterator[LocalAws]:
    with start_local_aws() as aws:
        yield aws


@pytest.fixture(scope="module")
def principals(local_aws: LocalAws) -> dict[str, dict[str, str]]:
    """The account set up, then IAM enforced for the rest of the module: ``signer``, session credentials of a role
    as a Lambda function holds them (so every URL carries a session token), and ``operator``, who may look at
    everything."""
    s3, iam, sts = local_aws.client("s3"), local_aws.client("iam"), local_aws.client("sts")
    create_bucket(s3, BUCKET, REGION)
    s3.put_object(Bucket=BUCKET, Key=results_key(JOB_A), Body=A_RESULTS)
    s3.put_object(Bucket=BUCKET, Key=results_key(JOB_B), Body=B_RESULTS)
    trust = {"Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}, "Action": "sts:AssumeRole"}
    role = iam.create_role(RoleName="signer", AssumeRolePolicyDocument=policy(trust))["Role"]
    iam.put_role_policy(RoleName="signer", PolicyName="p", PolicyDocument=SIGNER_POLICY)
    keys = sts.assume_role(RoleArn=role["Arn"], RoleSessionName="retrieve")["Credentials"]
    operator = user_with_policy(iam, "operator", ALLOW_ALL)
    local_aws.enforce_iam()
    signer = {
        "aws_access_key_id": keys["AccessKeyId"],
        "aws_secret_access_key": keys["SecretAccessKey"],
        "aws_session_token": keys["SessionToken"],
    }
    return {"signer": signer, "operator": operator}


@pytest.fixture(scope="module")
def signer(principals: dict[str, dict[str, str]]) -> dict[str, str]:
    return principals["signer"]


@pytest.fixture(scope="module")
def operator(local_aws: LocalAws, principals: dict[str, dict[str, str]]) -> Any:
    """An S3 client that sees everything in the bucket."""
    return _s3(local_aws, principals["operator"])


def _s3(local_aws: LocalAws, keys: dict[str, str], region: str = REGION) -> Any:
    make: Any = boto3.client
    return make(
        "s3",
        endpoint_url=local_aws.endpoint,
        region_name=region,
        config=Config(signature_version="s3v4"),
        **keys,
    )


@pytest.fixture(scope="module")
def store(local_aws: LocalAws, signer: dict[str, str]) -> S3PayloadStore:
    return S3PayloadStore(_s3(local_aws, signer), BUCKET)


def _error(answer: requests.Response) -> tuple[int, str, str]:
    """(status, S3 error code, message) of an S3 XML error answer; no code for anything else (an object served)."""
    try:
        root = ElementTree.fromstring(answer.content)
    except ElementTree.ParseError:
        return answer.status_code, "", answer.text[:100]
    return answer.status_code, root.findtext("Code") or "", root.findtext("Message") or ""


def _edit(url: str, **params: str) -> str:
    """``url`` with some query parameters replaced (as a tenant would edit them), nothing re-signed."""
    parts = urlsplit(url)
    query = [(k, params.get(k, v)) for k, v in parse_qsl(parts.query, keep_blank_values=True)]
    return urlunsplit(parts._replace(query=urlencode(query)))


def _upload_key() -> str:
    return f"uploads/{uuid.uuid4().hex}/upl_{uuid.uuid4().hex}.jsonl"


def test_a_result_url_serves_its_object_and_upload_urls_take_the_declared_bytes(store, operator):
    got = requests.get(store.presign_get(results_key(JOB_A), 60), timeout=30)
    assert got.status_code == 200 and got.content == A_RESULTS, got.text

    key, data = _upload_key(), b'{"id": "q1", "request": "Hi"}\n'
    put = requests.put(store.presign_put(key, 60, len(data)), data=data, timeout=30)
    assert put.status_code == 200, put.text
    assert operator.get_object(Bucket=BUCKET, Key=key)["Body"].read() == data

    key = _upload_key()
    upload_id = operator.create_multipart_upload(Bucket=BUCKET, Key=key)["UploadId"]
    part = requests.put(store.presign_upload_part(key, upload_id, 1, 60, len(data)), data=data, timeout=30)
    assert part.status_code == 200, part.text
    xml = f"<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>{part.headers['ETag']}</ETag></Part>"
    complete = store.presign_complete_upload(key, upload_id, 60)
    done = requests.post(complete, data=xml + "</CompleteMultipartUpload>", timeout=30)
    assert done.status_code == 200 and b"<Error>" not in done.content, done.text
    assert operator.get_object(Bucket=BUCKET, Key=key)["Body"].read() == data


def test_another_jobs_key_edited_into_a_result_url_is_refused(store):
    url = store.presign_get(results_key(JOB_A), 60)
    stolen = requests.get(url.replace(JOB_A, JOB_B), timeout=30)
    assert _error(stolen)[:2] == (403, "SignatureDoesNotMatch"), stolen.text
    assert b"bob" not in stolen.content


def test_a_longer_expiry_edited_into_a_url_is_refused(store):
    url = store.presign_get(results_key(JOB_A), 60)
    extended = requests.get(_edit(url, **{"X-Amz-Expires": "604800"}), timeout=30)
    assert _error(extended)[:2] == (403, "SignatureDoesNotMatch"), extended.text


def test_an_expired_url_is_refused(store, monkeypatch):
    an_hour_ago = datetime.now(UTC).replace(tzinfo=None) - timedelta(hours=1)
    monkeypatch.setattr(botocore.auth, "get_current_datetime", lambda *args, **kwargs: an_hour_ago)
    url = store.presign_get(results_key(JOB_A), 60)  # signed an hour ago, valid for a minute
    monkeypatch.undo()
    late = requests.get(url, timeout=30)
    assert _error(late) == (403, "AccessDenied", "Request has expired"), late.text


def test_an_upload_of_another_length_than_signed_is_refused_and_nothing_is_stored(store, operator):
    """Decision 0113's binding, now held by the signature: 10 bytes declared, 18,000 put."""
    key = _upload_key()
    put = requests.put(store.presign_put(key, 60, 10), data=b"x" * 18_000, timeout=30)
    assert _error(put)[:2] == (403, "SignatureDoesNotMatch"), put.text
    with pytest.raises(ClientError) as absent:
        operator.head_object(Bucket=BUCKET, Key=key)
    assert absent.value.response["Error"]["Code"] == "404"

    upload_id = operator.create_multipart_upload(Bucket=BUCKET, Key=key)["UploadId"]
    part = requests.put(store.presign_upload_part(key, upload_id, 1, 60, 10), data=b"y" * 11, timeout=30)
    assert _error(part)[:2] == (403, "SignatureDoesNotMatch"), part.text
    assert operator.list_parts(Bucket=BUCKET, Key=key, UploadId=upload_id).get("Parts", []) == []


def test_a_url_signed_for_another_region_is_refused(local_aws, signer):
    url = S3PayloadStore(_s3(local_aws, signer, region="eu-west-1"), BUCKET).presign_get(results_key(JOB_A), 60)
    answer = requests.get(url, timeout=30)
    status, code, message = _error(answer)
    assert (status, code) == (400, "AuthorizationQueryParametersError"), answer.text
    assert "'eu-west-1' is wrong; expecting 'us-east-1'" in message


def test_a_url_valid_for_more_than_a_week_is_refused(store):
    answer = requests.get(store.presign_get(results_key(JOB_A), 7 * 24 * 3600 + 1), timeout=30)
    assert _error(answer)[:2] == (400, "AuthorizationQueryParametersError"), answer.text
    assert requests.get(store.presign_get(results_key(JOB_A), 7 * 24 * 3600), timeout=30).status_code == 200


@pytest.mark.parametrize(
    "edit",
    [
        {"X-Amz-Signature": None},
        {"X-Amz-Date": "yesterday"},
        {"X-Amz-Expires": "soon"},
        {"X-Amz-Expires": "-1"},
        {"X-Amz-Algorithm": "AWS4-HMAC-SHA512"},
        {"X-Amz-Credential": "AKIDONLY"},
    ],
    ids=lambda edit: "-".join(f"{k}={v}" for k, v in edit.items()),
)
def test_auth_parameters_s3_cannot_use_are_a_400_not_a_500(store, edit):
    parts = urlsplit(store.presign_get(results_key(JOB_A), 60))
    query = [(k, edit.get(k, v)) for k, v in parse_qsl(parts.query) if edit.get(k, v) is not None]
    answer = requests.get(urlunsplit(parts._replace(query=urlencode(query))), timeout=30)
    assert _error(answer)[:2] == (400, "AuthorizationQueryParametersError"), answer.text


def test_an_x_amz_header_the_url_did_not_sign_is_refused(store):
    key, data = _upload_key(), b'{"id": "q1", "request": "Hi"}\n'
    url = store.presign_put(key, 60, len(data))
    public = requests.put(url, data=data, headers={"x-amz-acl": "public-read"}, timeout=30)
    status, code, _ = _error(public)
    assert (status, code) == (403, "AccessDenied"), public.text


def test_a_url_signed_by_a_role_that_may_not_read_the_object_is_refused(store):
    """IAM still decides after the signature: the signer may write uploads, not read them."""
    key, data = _upload_key(), b"{}\n"
    assert requests.put(store.presign_put(key, 60, len(data)), data=data, timeout=30).status_code == 200
    answer = requests.get(store.presign_get(key, 60), timeout=30)
    assert _error(answer)[:2] == (403, "AccessDenied"), answer.text


def test_calls_signed_in_the_authorization_header_are_checked_as_before(local_aws, signer):
    assert _s3(local_aws, signer).get_object(Bucket=BUCKET, Key=results_key(JOB_A))["Body"].read() == A_RESULTS
    forged = {**signer, "aws_secret_access_key": "not-the-secret"}
    with pytest.raises(ClientError) as refused:
        _s3(local_aws, forged).get_object(Bucket=BUCKET, Key=results_key(JOB_A))
    assert refused.value.response["Error"]["Code"] == "SignatureDoesNotMatch"
    unknown = {"aws_access_key_id": "AKIAUNKNOWN000000000", "aws_secret_access_key": "x"}
    url = S3PayloadStore(_s3(local_aws, unknown), BUCKET).presign_get(results_key(JOB_A), 60)
    assert _error(requests.get(url, timeout=30))[:2] == (403, "InvalidAccessKeyId")
