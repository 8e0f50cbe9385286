"""Shared test setup: fake AWS credentials, no tracing, and the repo root importable (lambdas/, stacks/)."""

import os

from batch_gateway_dev.botocore_data import share_parsed_data
from batch_gateway_dev.local import moto_dynamodb

os.environ.update(
    {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_REGION": "us-east-1",
        "POWERTOOLS_TRACE_DISABLED": "1",
        "POWERTOOLS_SERVICE_NAME": "batch-gateway",
        "POWERTOOLS_METRICS_NAMESPACE": "BatchGateway",
        "POWERTOOLS_LOG_LEVEL": "WARNING",
        "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20",
        "CDK_DISABLE_CLI_TELEMETRY": "true",
    }
)
for _var in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "AWS_PROFILE", "AWS_ENDPOINT_URL"):
    os.environ.pop(_var, None)

# The suite builds botocore sessions again and again (each moto account, each handler's wiring); each would parse
# the same service models: parsed once per test process instead.
share_parsed_data()
# moto's DynamoDB as the local AWS process runs it: answers copied, transactions that keep only their own items.
moto_dynamodb.install()

# The fixtures every layer shares (one provider simulator, one emulated AWS account, the account Bedrock jobs read
# from), loaded after the environment above is set.
pytest_plugins = ["tests.support.fixtures", "tests.support.bedrock_account", "tests.support.bedrock_stubs"]
