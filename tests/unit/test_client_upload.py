"""``client.upload``: the parts go to the presigned URLs, a part S3 fails once is sent again with backoff, a 4xx is
not retried, and progress is reported after each part (decision 0131). S3 is a loopback stand-in that can fail."""

from __future__ import annotations

import pytest

from batch_gateway.client import APIConnectionError, BatchGatewayClient, BatchGatewayError, InternalServerError
from tests.support.fake_s3 import FakeS3, multipart_upload
from tests.support.replay_gateway import FAKE_AWS_ENV, ReplayGateway, answer

PART = 5


@pytest.fixture(autouse=True)
def aws_env(monkeypatch):
    for name, value in FAKE_AWS_ENV.items():
        monkeypatch.setenv(name, value)


@pytest.fixture
def s3():
    fake = FakeS3()
    fake.server.start(name="fake-s3", poll_interval=0.02)
    yield fake
    fake.server.stop()


@pytest.fixture
def gateway(s3):
    with ReplayGateway() as server:
        server.script("POST", "/uploads", answer(201, multipart_upload(s3, PART, 3)))
        yield server


@pytest.fixture
def data_file(tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_bytes(b"aaaaabbbbbcc")  # parts of 5, 5 and 2 bytes
    return path


def client_of(gateway: ReplayGateway, waits: list[float], **kwargs) -> BatchGatewayClient:
    client = BatchGatewayClient(gateway.url, **kwargs)
    client._transport._sleep = waits.append  # backoff recorded, not waited
    client._transport._random = lambda: 1.0
    return client


def test_a_part_that_fails_once_with_503_and_one_whose_connection_drops_are_sent_again(gateway, s3, data_file):
    s3.faults = {"/part2": [503], "/part3": ["drop"]}
    waits: list[float] = []
    progress: list[tuple[int, int]] = []

    upload_id = client_of(gateway, waits, backoff_base=0.5).upload(data_file, on_progress=lambda *a: progress.append(a))

    assert upload_id == "upl_1"
    assert s3.parts == {"/part1": b"aaaaa", "/part2": b"bbbbb", "/part3": b"cc"}
    assert s3.hits == {"/part1": 1, "/part2": 2, "/part3": 2, "/complete": 1}
    assert waits == [0.5, 0.5]  # one backoff per failed part (attempt 1 of each)
    assert progress == [(5, 12), (10, 12), (12, 12)]
    assert s3.completed is not None and b'<PartNumber>3</PartNumber><ETag>"etag-3"</ETag>' in s3.completed


def test_a_part_s3_keeps_failing_raises_after_max_attempts_and_nothing_is_completed(gateway, s3, data_file):
    s3.faults = {"/part2": [503, 503, 503]}
    waits: list[float] = []

    with pytest.raises(InternalServerError) as caught:
        client_of(gateway, waits, max_attempts=3).upload(data_file)

    assert caught.value.status_code == 503
    assert s3.hits["/part2"] == 3 and "/part3" not in s3.hits
    assert s3.completed is None
    assert len(waits) == 2


def test_a_4xx_from_s3_is_not_retried(gateway, s3, data_file):
    s3.faults = {"/part1": [403]}
    with pytest.raises(BatchGatewayError) as caught:
        client_of(gateway, []).upload(data_file)
    assert caught.value.status_code == 403
    assert s3.hits["/part1"] == 1


def test_a_connection_that_drops_on_every_attempt_is_an_api_connection_error(gateway, s3, data_file):
    s3.faults = {"/part1": ["drop", "drop"]}
    with pytest.raises(APIConnectionError):
        client_of(gateway, [], max_attempts=2).upload(data_file)
    assert s3.hits["/part1"] == 2


def test_a_complete_that_answers_200_with_an_error_body_is_retried(gateway, s3, data_file):
    s3.faults = {"/complete": [200]}  # S3's "200 with <Error>" on a complete
    waits: list[float] = []
    assert client_of(gateway, waits).upload(data_file) == "upl_1"
    assert s3.hits["/complete"] == 2 and len(waits) == 1
