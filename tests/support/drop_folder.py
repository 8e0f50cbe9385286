"""The drop folder as its tests drive it: a file put in the bucket and the SQS event Ingest gets for it, the
receipt it writes, the jobs it started."""

from __future__ import annotations

import json

import boto3

from tests.support.events import load_event


def drop_event(key: str, body: bytes) -> dict:
    s3 = boto3.client("s3")
    s3.put_object(Bucket="payloads", Key=key, Body=body)
    event = load_event("sqs_drop_folder.json")
    message = json.loads(event["Records"][0]["body"])
    message["Records"][0]["s3"]["object"]["key"] = key.replace(" ", "+")
    message["Records"][0]["s3"]["object"].pop("eTag")
    event["Records"][0]["body"] = json.dumps(message)
    return event


def receipt(name: str) -> dict:
    return json.loads(
        boto3.client("s3").get_object(Bucket="payloads", Key=f"outbox/{name}.receipt.json")["Body"].read()
    )


def job_count() -> int:
    return boto3.client("dynamodb").scan(
        TableName="jobs", Select="COUNT", FilterExpression="sk = :j", ExpressionAttributeValues={":j": {"S": "JOB"}}
    )["Count"]
