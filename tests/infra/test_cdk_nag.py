"""cdk-nag AwsSolutions: synth with nag on raises nothing, and every acknowledgment answers a real finding."""

from __future__ import annotations

from cdk_nag import AwsSolutionsChecks

from batch_gateway import constants
from stacks import nag
from stacks.app_factory import SKIP_BUNDLING, build_app


def _findings(scope) -> list[tuple[str, str]]:
    report = AwsSolutionsChecks().validate_scope(scope)
    return sorted(
        (violation.rule_name, resource.construct_path)
        for violation in report.violations
        for resource in violation.violating_resources
    )


def test_synth_with_cdk_nag_aws_solutions_raises_nothing(synthesized):
    assert synthesized.nag_error is None, f"cdk-nag failed the synth: {synthesized.nag_error}"


def test_cdk_nag_reports_zero_unacknowledged_findings(synthesized):
    assert _findings(synthesized.stack) == []


def test_every_nag_acknowledgment_has_a_reason_and_matches_a_real_finding(monkeypatch):
    recorded: list[tuple[str, str, str]] = []
    monkeypatch.setattr(nag, "acknowledge", lambda c, finding, reason: recorded.append((c.node.path, finding, reason)))
    app = build_app({**SKIP_BUNDLING, "nag": False})
    findings = _findings(app.node.find_child(constants.STACK_NAME))

    def covers(ack_path: str, finding_path: str) -> bool:
        return finding_path == ack_path or finding_path.startswith(ack_path + "/")

    unexplained = [
        (rule, path)
        for rule, path in findings
        if not any(rule == finding and covers(ack_path, path) for ack_path, finding, _ in recorded)
    ]
    stale = [
        (ack_path, finding)
        for ack_path, finding, _ in recorded
        if not any(rule == finding and covers(ack_path, path) for rule, path in findings)
    ]
    assert unexplained == [], "findings without an acknowledgment"
    assert stale == [], "acknowledgments that match no finding (remove them)"
    assert all(len(reason) > 40 for _, _, reason in recorded)
