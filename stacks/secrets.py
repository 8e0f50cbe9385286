"""Provider API keys: one Secrets Manager secret per enabled provider, its value set by the operator after deploy."""

from __future__ import annotations

from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_secretsmanager as secretsmanager
from constructs import Construct

from batch_gateway import constants
from batch_gateway.provider_specs import BY_NAME
from stacks import nag


def _secret_env(provider: str) -> str:
    variable = BY_NAME[provider].secret_env
    if variable is None:
        raise ValueError(f"provider {provider!r} takes no API key")
    return variable


def secret_name(provider: str) -> str:
    return f"{constants.SERVICE_NAME}/{provider}-api-key"


class SecretsConstruct(Construct):
    def __init__(
        self, scope: Construct, construct_id: str, *, providers: tuple[str, ...], key: kms.IKey | None = None
    ) -> None:
        """``key``: the customer-managed key (``-c kms=customer``), else Secrets Manager's AWS-managed key."""
        super().__init__(scope, construct_id)
        self.secrets: dict[str, secretsmanager.Secret] = {}
        for provider in providers:
            secret = secretsmanager.Secret(
                self,
                f"{provider.capitalize()}ApiKey",
                secret_name=secret_name(provider),
                description=(
                    f"{provider} API key for Batch Gateway. The stack creates a random placeholder: put the real "
                    f"key here after deploy (aws secretsmanager put-secret-value --secret-id {secret_name(provider)})."
                ),
                generate_secret_string=secretsmanager.SecretStringGenerator(
                    password_length=32, exclude_punctuation=True
                ),
                encryption_key=key,  # grant_read then adds kms:Decrypt through Secrets Manager only
            )
            nag.acknowledge(
                secret,
                "AwsSolutions-SMG4",
                f"The {provider} API key is issued and rotated at the provider by the operator, who then puts the "
                "new value here; Secrets Manager has no way to rotate a third-party key.",
            )
            self.secrets[provider] = secret

    def environment(self) -> dict[str, str]:
        """Each enabled keyed provider's ``secret_env`` (``ANTHROPIC_SECRET_ARN``, ...): its secret's ARN."""
        return {_secret_env(provider): secret.secret_arn for provider, secret in self.secrets.items()}

    def grant_read(self, grantee: iam.IGrantable) -> None:
        for secret in self.secrets.values():
            secret.grant_read(grantee)
