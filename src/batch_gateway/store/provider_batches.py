"""Which job holds a provider batch (decision 0073, ``ports.ProviderBatchIndex``): a query of the table's sparse
``by-provider-batch`` index, keys only. Chunk items carry ``provider_batch_id`` once Submit recorded (or adopted) their
batch, so the index needs no write of its own and has no window between a batch's creation and its pointer."""

from __future__ import annotations

from typing import TYPE_CHECKING

from batch_gateway.constants import PROVIDER_BATCH_INDEX, PROVIDER_BATCH_INDEX_PK

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


class DynamoDBProviderBatchIndex:
    def __init__(self, dynamodb_client: DynamoDBClient, table: str) -> None:
        self._db = dynamodb_client
        self.table = table

    def job_for(self, batch_id: str) -> str | None:
        """The id of the job whose chunk holds ``batch_id``, or None (eventually consistent: a batch recorded a
        moment ago may not show yet, which costs only the push; the poll still finds the end)."""
        response = self._db.query(
            TableName=self.table,
            IndexName=PROVIDER_BATCH_INDEX,
            KeyConditionExpression="#batch = :batch",
            ExpressionAttributeNames={"#batch": PROVIDER_BATCH_INDEX_PK},
            ExpressionAttributeValues={":batch": {"S": batch_id}},
            Limit=1,
        )
        for item in response.get("Items", []):
            return item["pk"]["S"].removeprefix("JOB#")
        return None
