"""botocore's data parsed once per process (``batch_gateway_dev.botocore_data``, called by the root conftest and the
local stack's Lambda zygote): a later session parses nothing an earlier one did, a loader with a search path of its
own parses for itself, and a client built either way is the same."""

from __future__ import annotations

import boto3
import botocore.session
import pytest

from tests.support.lambda_probe import parsed_files


def test_a_new_session_parses_nothing_an_earlier_session_of_the_process_parsed():
    earlier = boto3.session.Session().client("kinesis", region_name="us-east-1")
    with parsed_files() as parsed:
        later = boto3.session.Session().client("kinesis", region_name="us-east-1")
        plain = botocore.session.get_session().create_client("kinesis", region_name="us-east-1")
    assert parsed == []
    assert later.meta.service_model.operation_names == earlier.meta.service_model.operation_names
    assert plain.meta.service_model.operation_names == earlier.meta.service_model.operation_names


def test_a_loader_with_a_search_path_of_its_own_parses_for_itself(monkeypatch: pytest.MonkeyPatch, tmp_path):
    boto3.session.Session().client("kinesis", region_name="us-east-1")
    monkeypatch.setenv("AWS_DATA_PATH", str(tmp_path))
    with parsed_files() as parsed:
        own = boto3.session.Session().client("kinesis", region_name="us-east-1")
    assert any("/kinesis/" in path for path in parsed), parsed
    assert "PutRecord" in own.meta.service_model.operation_names
