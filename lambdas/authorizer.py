"""The compatible doors' REQUEST authorizer (KeyAuthorizer): a gateway API key -> its owner (decision 0045)."""

from aws_lambda_powertools.utilities.typing import LambdaContext

from batch_gateway.edge.keys import authorize
from batch_gateway.edge.observability import logger


@logger.inject_lambda_context(log_event=False)
def handler(event: dict, context: LambdaContext) -> dict:
    return authorize(event)
