"""The ports (``batch_gateway.ports``) in memory, for tests and ``bench/``: the same semantics as the DynamoDB and S3
stores where the service relies on them (the store contract tests in ``tests/integration`` run the same assertions
against both). Never in the wheel or a Lambda bundle: runtime code cannot import them (``.importlinter``)."""
