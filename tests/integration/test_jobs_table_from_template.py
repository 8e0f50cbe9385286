"""The jobs table the integration tests (and the benchmarks) run on is the one CDK deploys: the same keys, indexes
and time-to-live, read from the synthesized template, so a schema change in the stack reaches every test at once."""

from __future__ import annotations

import boto3

from batch_gateway_dev.local.template import Template, synthesized_template


def _template_table() -> dict:
    (table,) = Template(synthesized_template({})).of_type("AWS::DynamoDB::Table").values()
    return table["Properties"]


def test_the_jobs_table_has_the_templates_keys_indexes_and_time_to_live(aws):
    expected = _template_table()
    dynamodb = boto3.client("dynamodb")
    table = dynamodb.describe_table(TableName=aws.settings.table)["Table"]

    assert table["KeySchema"] == expected["KeySchema"]
    assert sorted(table["AttributeDefinitions"], key=str) == sorted(expected["AttributeDefinitions"], key=str)
    indexes = {i["IndexName"]: (i["KeySchema"], i["Projection"]) for i in table["GlobalSecondaryIndexes"]}
    assert indexes == {i["IndexName"]: (i["KeySchema"], i["Projection"]) for i in expected["GlobalSecondaryIndexes"]}
    ttl = dynamodb.describe_time_to_live(TableName=aws.settings.table)["TimeToLiveDescription"]
    assert ttl == {"TimeToLiveStatus": "ENABLED", "AttributeName": expected["TimeToLiveSpecification"]["AttributeName"]}
