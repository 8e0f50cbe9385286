"""checkov (CloudFormation) reports 0 failed checks on the synthesized template, with the default context and with
``kms=customer``; every check that does not fit is suppressed in the template metadata with a one-line reason, and
every suppression answers a real finding (a check that passes is never suppressed).

checkov pins boto3 below the project's pins, so it runs from its own environment, ``.venv-lint`` (``make lint`` or
``make install`` builds it from uv.lock), never from the dev venv. It runs with downloads off: no network.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from batch_gateway import constants
from stacks.app_factory import synth_template

ROOT = Path(__file__).resolve().parents[2]
CHECKOV = ROOT / ".venv-lint" / "bin" / "checkov"
# Offline: no Prisma Cloud mappings or guidelines, no PyPI update check.
CHECKOV_ENV = {"BC_SKIP_MAPPING": "TRUE", "CKV_SKIP_PACKAGE_UPDATE_CHECK": "true"}
CONTEXTS = {"default": {}, "kms-customer": {"kms": "customer", "providers": "anthropic,openai,bedrock,google"}}

Finding = tuple[str, str]  # (logical id, check id)


def run_checkov(templates: list[Path]) -> list[dict[str, Any]]:
    """The failed checks of one checkov run over ``templates`` (as ``make lint`` runs it, plus JSON output)."""
    assert CHECKOV.is_file(), f"{CHECKOV} is missing: run `make install` (it builds .venv-lint from uv.lock)"
    args = [str(CHECKOV), "--framework", "cloudformation", "--skip-download", "--quiet", "-o", "json"]
    for template in templates:
        args += ["-f", str(template)]
    done = subprocess.run(args, capture_output=True, text=True, env={**os.environ, **CHECKOV_ENV}, timeout=300)
    assert done.stdout.strip(), f"checkov printed nothing (exit {done.returncode}): {done.stderr[-2000:]}"
    reports = json.loads(done.stdout)
    reports = reports if isinstance(reports, list) else [reports]
    assert all(r.get("summary", {}).get("parsing_errors", 0) == 0 for r in reports), "checkov could not parse"
    return [check for report in reports for check in report.get("results", {}).get("failed_checks", [])]


def _findings(failed: list[dict[str, Any]], template: Path) -> set[Finding]:
    return {
        (check["resource"].split(".", 1)[1], check["check_id"])
        for check in failed
        if Path(check["file_abs_path"]).name == template.name
    }


def suppressions(template: dict[str, Any]) -> dict[Finding, str]:
    """``Metadata.checkov.skip`` of every resource: (logical id, check id) -> comment."""
    return {
        (logical_id, skip["id"]): skip["comment"]
        for logical_id, resource in template["Resources"].items()
        for skip in resource.get("Metadata", {}).get("checkov", {}).get("skip", [])
    }


def _without_suppressions(template: dict[str, Any]) -> dict[str, Any]:
    stripped = copy.deepcopy(template)
    for resource in stripped["Resources"].values():
        resource.get("Metadata", {}).pop("checkov", None)
    return stripped


@pytest.fixture(scope="module")
def scans(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """One checkov run over four templates: each context as synthesized, and with its suppressions taken out."""
    outdir = tmp_path_factory.mktemp("checkov")
    scans: dict[str, dict[str, Any]] = {}
    for name, context in CONTEXTS.items():
        template = synth_template(context)
        as_synthesized = outdir / f"{name}.{constants.STACK_NAME}.template.json"
        unsuppressed = outdir / f"{name}.unsuppressed.template.json"
        as_synthesized.write_text(json.dumps(template))
        unsuppressed.write_text(json.dumps(_without_suppressions(template)))
        scans[name] = {"template": template, "file": as_synthesized, "unsuppressed_file": unsuppressed}
    failed = run_checkov([path for scan in scans.values() for path in (scan["file"], scan["unsuppressed_file"])])
    for scan in scans.values():
        scan["failed"] = _findings(failed, scan["file"])
        scan["unsuppressed_failed"] = _findings(failed, scan["unsuppressed_file"])
    return scans


@pytest.mark.parametrize("context", sorted(CONTEXTS))
def test_checkov_reports_zero_failed_checks(scans, context):
    assert sorted(scans[context]["failed"]) == []


@pytest.mark.parametrize("context", sorted(CONTEXTS))
def test_every_checkov_suppression_has_a_one_line_reason_and_answers_a_real_finding(scans, context):
    scan = scans[context]
    suppressed = suppressions(scan["template"])
    stale = sorted(set(suppressed) - scan["unsuppressed_failed"])
    assert stale == [], "suppressions of checks that pass (remove them)"
    # With the suppressions taken out, what fails is exactly what was suppressed: nothing is fixed by a skip alone.
    assert sorted(scan["unsuppressed_failed"] - set(suppressed)) == []
    for finding, reason in suppressed.items():
        assert len(reason) > 40 and "\n" not in reason, finding


def test_customer_key_leaves_no_encryption_check_suppressed(scans):
    """With ``kms=customer`` the encryption checks are fixed, not skipped: bucket, table, queues, logs, secrets."""
    encryption_checks = {"CKV_AWS_27", "CKV_AWS_119", "CKV_AWS_149", "CKV_AWS_158", "CKV_AWS_26"}
    default = {check for _, check in suppressions(scans["default"]["template"])}
    customer = {check for _, check in suppressions(scans["kms-customer"]["template"])}
    assert encryption_checks & default  # the default deployment uses AWS-managed encryption and says why
    assert encryption_checks & customer == set()
