"""Price overrides (decision 0060): one SSM String parameter of price rows laid over the code's ``prices.json``, so a
deployment changes a price without a redeploy. Its initial value is CDK context ``price_overrides`` (default ``{}``);
only the functions that price may read it, and they find it by ``PRICE_OVERRIDES_PARAMETER``."""

from __future__ import annotations

from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_ssm as ssm
from constructs import Construct

from batch_gateway import constants


class PricingConstruct(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, overrides: str) -> None:
        super().__init__(scope, construct_id)
        self.parameter = ssm.StringParameter(
            self,
            "PriceOverrides",
            string_value=overrides or "{}",
            description=(
                'Batch Gateway price rows over prices.json: {"version": "...", "rows": [{"provider", "model", '
                '"input", "output", "cache_write", "cache_read" (batch USD per million tokens), "sync": {...}}]}. '
                "Read within 5 minutes; a bad value is logged and ignored (docs/pricing.md)."
            ),
            tier=ssm.ParameterTier.STANDARD,
        )

    def grant_read(self, *functions: lambda_.Function) -> None:
        """The parameter's name in the function's environment and read on it (nothing else in SSM)."""
        for function in functions:
            function.add_environment(constants.ENV_PRICE_OVERRIDES_PARAMETER, self.parameter.parameter_name)
            self.parameter.grant_read(function)
