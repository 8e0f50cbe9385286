"""Create the stack's table and bucket in an (emulated) AWS account, from the synthesized template.

The schema is written once, in ``stacks/`` (StorageConstruct): the local stack, the integration tests and the
benchmarks all create the table from the template's ``AWS::DynamoDB::Table`` resource (keys, indexes, time to live).
"""

from __future__ import annotations

from typing import Any

from batch_gateway_dev.local.template import Template, synthesized_template


def template_table(template: Template | None = None) -> dict[str, Any]:
    """The properties of the template's one table (synthesized with the default context when no template is given;
    the synth is cached, see ``synthesized_template``)."""
    template = template or Template(synthesized_template({}))
    (table,) = template.of_type("AWS::DynamoDB::Table").values()
    return dict(table["Properties"])


def create_table(dynamodb: Any, name: str, properties: dict[str, Any] | None = None) -> None:
    """Create ``name`` as the template's table deploys: keys, indexes, on-demand billing and time to live."""
    props = properties if properties is not None else template_table()
    spec: dict[str, Any] = {
        "TableName": name,
        "BillingMode": props.get("BillingMode", "PAY_PER_REQUEST"),
        "AttributeDefinitions": props["AttributeDefinitions"],
        "KeySchema": props["KeySchema"],
    }
    if props.get("GlobalSecondaryIndexes"):
        spec["GlobalSecondaryIndexes"] = props["GlobalSecondaryIndexes"]
    dynamodb.create_table(**spec)
    ttl = props.get("TimeToLiveSpecification")
    if ttl and ttl.get("Enabled"):
        dynamodb.update_time_to_live(
            TableName=name, TimeToLiveSpecification={"Enabled": True, "AttributeName": ttl["AttributeName"]}
        )


def create_bucket(s3: Any, name: str, region: str) -> None:
    if region == "us-east-1":
        s3.create_bucket(Bucket=name)
    else:
        s3.create_bucket(Bucket=name, CreateBucketConfiguration={"LocationConstraint": region})
    s3.put_bucket_versioning(Bucket=name, VersioningConfiguration={"Status": "Enabled"})
