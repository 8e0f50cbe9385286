"""docs/operations.md is held to the template: every CloudWatch alarm the stack creates is described in its Alarms
section, every resource kept by ``cdk destroy`` (``DeletionPolicy: Retain``) is named in its teardown section, and
every secret (deleted with the stack) is named there too.

The alarms set no ``AlarmName`` (CloudFormation names them ``<stack>-<logical id>-<suffix>``), so the logical id is
the stable name. Two templates are read: the default one and one with every provider and the customer-managed key,
which add resources (the Google secret, the KMS key) that the default does not have."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from stacks.app_factory import synth_template

DOC = Path(__file__).resolve().parents[2] / "docs" / "operations.md"
ALARM_TYPE = "AWS::CloudWatch::Alarm"
SECRET_TYPE = "AWS::SecretsManager::Secret"


def _section(title: str) -> str:
    """The text under the ``## <title>`` heading of docs/operations.md, up to the next ``## `` heading."""
    sections = re.split(r"^## ", DOC.read_text(), flags=re.MULTILINE)
    found = [s for s in sections if s.startswith(title)]
    assert len(found) == 1, f"docs/operations.md has no single '## {title}' section"
    return found[0]


@pytest.fixture(scope="module")
def templates(synthesized) -> list[dict[str, Any]]:
    everything = synth_template({"kms": "customer", "providers": "anthropic,openai,bedrock,google", "nag": False})
    return [synthesized.json, everything]


def _resources(templates: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {logical_id: r for t in templates for logical_id, r in t["Resources"].items()}


def test_every_alarm_of_the_template_is_described_in_the_alarms_section(templates):
    alarms = {k: r for k, r in _resources(templates).items() if r["Type"] == ALARM_TYPE}
    assert len(alarms) >= 8  # the stack's alarms are found at all
    section = _section("Alarms")
    missing = []
    for logical_id, alarm in alarms.items():
        name = alarm["Properties"].get("AlarmName")  # none today; if one is set, the doc must name it too
        construct_id = alarm["Metadata"]["aws:cdk:path"].split("/")[-2]  # BatchGatewayStack/Alarms/<id>/Resource
        rows = [line for line in section.splitlines() if logical_id in line]
        if not rows or f"`{construct_id}`" not in rows[0] or (name and name not in section):
            missing.append(f"{construct_id} ({logical_id})")
    assert not missing, f"alarms not described in docs/operations.md's Alarms table: {missing}"


def test_the_alarms_section_names_no_alarm_the_template_does_not_have(templates):
    alarms = {k for k, r in _resources(templates).items() if r["Type"] == ALARM_TYPE}
    named = set(re.findall(r"\bAlarms[A-Za-z0-9]+[0-9A-F]{8}\b", _section("Alarms")))
    assert named - alarms == set(), "docs/operations.md describes alarms the stack no longer creates"


def test_every_resource_kept_by_cdk_destroy_is_named_in_the_teardown_section(templates):
    kept = {k: r["Type"] for k, r in _resources(templates).items() if r.get("DeletionPolicy") == "Retain"}
    assert {"AWS::S3::Bucket", "AWS::DynamoDB::Table", "AWS::KMS::Key", "AWS::Logs::LogGroup"} <= set(kept.values())
    section = _section("Tearing down")
    missing = sorted(f"{logical_id} ({cfn_type})" for logical_id, cfn_type in kept.items() if logical_id not in section)
    assert not missing, f"retained resources not named in docs/operations.md's teardown section: {missing}"


def test_every_secret_is_named_in_the_teardown_section_with_what_becomes_of_it(templates):
    secrets = {r["Properties"]["Name"] for r in _resources(templates).values() if r["Type"] == SECRET_TYPE}
    section = _section("Tearing down")
    assert sorted(s for s in secrets if f"`{s}`" not in section) == []
