"""The synthesized CDK template, read for the infra tests: the resource at a construct path, a function's role and
grants, the state machine's definition, and the handler and scope of each of our functions."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from aws_cdk import App, Stack
from aws_cdk.assertions import Template

from batch_gateway import constants
from stacks.app_factory import SKIP_BUNDLING, build_app

ALL_HANDLERS = {
    **constants.API_HANDLERS,
    **constants.WORKFLOW_HANDLERS,
    "Ingest": constants.INGEST_HANDLER,
    "Sweeper": constants.SWEEPER_HANDLER,
    "KeyAuthorizer": constants.AUTHORIZER_HANDLER,
    "WebhookDeliveries": constants.WEBHOOK_DELIVERY_HANDLER,
    "Park": constants.PARK_HANDLER,
    "OpenAIWebhook": constants.PROVIDER_WEBHOOK_HANDLER,
}
FUNCTION_SCOPES = {
    **{f: "Api" for f in constants.API_HANDLERS},
    **{f: "Workflow" for f in constants.WORKFLOW_HANDLERS},
    "Ingest": "DropFolder",
    "Sweeper": "Sweeper",
    "KeyAuthorizer": "Api",
    "WebhookDeliveries": "Webhooks",
    "Park": "Workflow",
    "OpenAIWebhook": "OpenAIPush",
}
# CDK's singleton custom resource that writes the bucket's notification configuration at deploy time.
CDK_NOTIFICATIONS_HANDLER = "BucketNotificationsHandler050a0587b7544547bf325f094a3db834"
# CDK's singleton handler of the console's BucketDeployments (decision 0138), which copies its files at deploy time.
CDK_BUCKET_DEPLOYMENT_HANDLER = "CustomCDKBucketDeployment8693BB64968944B69AAFB0CC9EB8756C"


@dataclass
class Synthesized:
    app: App
    stack: Stack
    template: Template
    json: dict[str, Any]
    nag_error: Exception | None

    @property
    def resources(self) -> dict[str, dict[str, Any]]:
        return self.json["Resources"]

    def of_type(self, cfn_type: str) -> dict[str, dict[str, Any]]:
        return {k: v for k, v in self.resources.items() if v["Type"] == cfn_type}

    def by_path(self, path: str) -> tuple[str, dict[str, Any]]:
        """The resource whose ``aws:cdk:path`` is ``BatchGatewayStack/<path>``."""
        full = f"{constants.STACK_NAME}/{path}"
        found = [(k, v) for k, v in self.resources.items() if v.get("Metadata", {}).get("aws:cdk:path") == full]
        assert len(found) == 1, f"expected one resource at {full}, found {[k for k, _ in found]}"
        return found[0]

    def function(self, function_id: str) -> tuple[str, dict[str, Any]]:
        return self.by_path(f"{FUNCTION_SCOPES[function_id]}/{function_id}/Resource")

    def our_functions(self) -> dict[str, dict[str, Any]]:
        """Our Lambdas (not CDK's own deploy-time custom resource handler for bucket notifications)."""
        return {
            k: v
            for k, v in self.of_type("AWS::Lambda::Function").items()
            if str(v["Properties"].get("Handler", "")).startswith("lambdas.")
        }

    def role_actions(self, function_id: str) -> set[str]:
        """Every IAM action granted to the function's role (all policies attached to it)."""
        role_id = self.function(function_id)[1]["Properties"]["Role"]["Fn::GetAtt"][0]
        actions: set[str] = set()
        for policy in self.of_type("AWS::IAM::Policy").values():
            if {"Ref": role_id} in policy["Properties"]["Roles"]:
                for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
                    found = statement["Action"]
                    actions.update([found] if isinstance(found, str) else found)
        return actions

    def statements(self, function_id: str) -> list[dict[str, Any]]:
        role_id = self.function(function_id)[1]["Properties"]["Role"]["Fn::GetAtt"][0]
        return [
            statement
            for policy in self.of_type("AWS::IAM::Policy").values()
            if {"Ref": role_id} in policy["Properties"]["Roles"]
            for statement in policy["Properties"]["PolicyDocument"]["Statement"]
        ]

    def object_grants(self, function_id: str) -> dict[str, set[str]]:
        """S3 action -> the key patterns of the payload bucket it is granted on ("*" for the bucket itself)."""
        grants: dict[str, set[str]] = {}
        for statement in self.statements(function_id):
            actions = [statement["Action"]] if isinstance(statement["Action"], str) else statement["Action"]
            resources = statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
            for action in (a for a in actions if a.startswith("s3:")):
                for resource in resources:
                    text = resolve_join(resource)
                    key = text.split(".Arn}", 1)[1].lstrip("/") if ".Arn}" in text else text
                    grants.setdefault(action, set()).add(key or "*")
        return grants

    def routes(self) -> dict[tuple[str, str], dict[str, Any]]:
        """(HTTP method, full resource path) -> the API method's properties; the key mount's CORS preflights
        (``OPTIONS``, a static ``MOCK`` answer and no function: decisions 0134, 0138) are not routes."""
        resources = self.of_type("AWS::ApiGateway::Resource")

        def path_of(ref: dict[str, Any]) -> str:
            if "Ref" not in ref:
                return ""  # the API's root resource
            props = resources[ref["Ref"]]["Properties"]
            return f"{path_of(props['ParentId'])}/{props['PathPart']}"

        return {
            (m["Properties"]["HttpMethod"], path_of(m["Properties"]["ResourceId"])): m["Properties"]
            for m in self.of_type("AWS::ApiGateway::Method").values()
            if m["Properties"]["HttpMethod"] != "OPTIONS"
        }

    def state_machine_definition(self) -> dict[str, Any]:
        """The ASL, with ``Fn::GetAtt [<id>, Arn]`` written as ``${<id>.Arn}`` and ``Ref`` as ``${<name>}``."""
        (state_machine,) = self.of_type("AWS::StepFunctions::StateMachine").values()
        return json.loads(resolve_join(state_machine["Properties"]["DefinitionString"]))


def resolve_join(value: Any) -> str:
    """Render an ``Fn::Join`` for reading: references become ``${LogicalId}`` / ``${LogicalId.Attr}``."""
    if isinstance(value, str):
        return value
    if "Fn::Join" in value:
        separator, parts = value["Fn::Join"]
        return separator.join(resolve_join(part) for part in parts)
    if "Ref" in value:
        return "${" + value["Ref"] + "}"
    if "Fn::GetAtt" in value:
        return "${" + ".".join(value["Fn::GetAtt"]) + "}"
    raise AssertionError(f"unexpected intrinsic {value}")


# Functions that screen requests for personal data (decision 0124), and some that never do: the deployment tests of
# guardrails and of provider headers (decision 0129) read both lists.
SCREENERS = ("Create", "AnthropicCompat", "OpenAICompat", "Ingest", "Plan")
OTHERS = ("Status", "List", "Cancel", "Submit", "Poll", "Finalize", "Sweeper")


def synth_with(tmp_path: Any, **context: Any) -> Synthesized:
    """The stack synthesized with ``context`` (bundling skipped, cdk-nag on), as its JSON template."""
    app = build_app({**SKIP_BUNDLING, "nag": True, **context}, outdir=str(tmp_path))
    template = json.loads(json.dumps(app.synth().get_stack_by_name(constants.STACK_NAME).template))
    return Synthesized(app=app, stack=None, template=None, json=template, nag_error=None)
