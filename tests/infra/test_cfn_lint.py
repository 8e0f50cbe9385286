"""cfn-lint finds nothing in the synthesized template (W3005, CDK's own redundant DependsOn, is ignored)."""

from __future__ import annotations

import json

from cfnlint.api import ManualArgs, lint


def test_template_passes_cfn_lint(synthesized):
    matches = lint(json.dumps(synthesized.json), config=ManualArgs(ignore_checks=["W3005"], regions=["us-east-1"]))
    assert [str(match) for match in matches] == []
