"""What the local stack's redeploy may change (decision 0121): the functions' code and configuration, the roles and
the state machine are replaced in place; a template that would change what the stack made once at its start (the
table, bucket, queues, secrets, ...) is refused by name before anything changes, and so is another tree's lock."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from batch_gateway_dev.local import stack as local_stack
from batch_gateway_dev.local.checkout import CheckoutError, check_runnable, newest_release
from batch_gateway_dev.local.stack import LocalStack, RedeployError
from batch_gateway_dev.local.template import REPO_ROOT, Template

DEPLOYED = {
    "Resources": {
        "Table": {"Type": "AWS::DynamoDB::Table", "Properties": {"BillingMode": "PAY_PER_REQUEST"}},
        "Queue": {"Type": "AWS::SQS::Queue", "Properties": {"VisibilityTimeout": 30}},
        "Alarm": {"Type": "AWS::CloudWatch::Alarm", "Properties": {"Threshold": 1}},
        "Bucket": {
            "Type": "AWS::S3::Bucket",
            "Properties": {"VersioningConfiguration": {"Status": "Enabled"}, "LifecycleConfiguration": {"Rules": []}},
        },
    }
}


class _Untouchable:
    """Stands for the running stack's clients and front: any use means the redeploy changed something."""

    def __getattr__(self, name: str):
        raise AssertionError(f"the refused redeploy used {name}")


@pytest.fixture
def deployed(monkeypatch):
    stack = LocalStack()
    stack._template = Template(copy.deepcopy(DEPLOYED))
    stack.front = _Untouchable()  # type: ignore[assignment]
    monkeypatch.setattr(stack, "client", lambda *_: _Untouchable())
    return stack


def _redeploy_with(monkeypatch, stack: LocalStack, template: dict) -> None:
    monkeypatch.setattr(local_stack, "synthesized_template", lambda context, root: template)
    stack.redeploy(REPO_ROOT)


@pytest.mark.parametrize(
    ("change", "named"),
    [
        (lambda r: r["Table"]["Properties"].update(BillingMode="PROVISIONED"), "Table"),
        (lambda r: r.pop("Queue"), "Queue"),
        (lambda r: r.update(Other={"Type": "AWS::DynamoDB::Table", "Properties": {}}), "Other"),
        (lambda r: r["Bucket"]["Properties"].update(VersioningConfiguration={"Status": "Suspended"}), "Bucket"),
    ],
)
def test_a_template_that_changes_what_the_stack_made_at_start_is_refused_by_name(deployed, monkeypatch, change, named):
    template = copy.deepcopy(DEPLOYED)
    change(template["Resources"])
    with pytest.raises(RedeployError, match=f"not these resources: \\['{named}'\\]"):
        _redeploy_with(monkeypatch, deployed, template)
    assert deployed.code_root == REPO_ROOT and deployed._template.raw == DEPLOYED


def test_another_tree_runs_only_on_the_same_locked_dependencies_whatever_its_own_version(tmp_path: Path):
    lock = (REPO_ROOT / "uv.lock").read_text()
    ours = 'name = "batch-gateway"\nversion = "'
    assert lock.count(ours) == 1
    (tmp_path / "uv.lock").write_text(lock.replace(ours, ours + "9.9.9-was-"))  # a release bumps only its own
    check_runnable(tmp_path)
    (tmp_path / "uv.lock").write_text(lock.replace('name = "boto3"\nversion = "', 'name = "boto3"\nversion = "0.'))
    with pytest.raises(CheckoutError, match="locks other dependencies"):
        check_runnable(tmp_path)


def test_a_tree_locked_before_a_dev_only_package_was_added_still_runs_on_this_venv(tmp_path: Path):
    """The previous release's lock lacks packages ours added for our own tests (playwright and its greenlet, for the
    console's browser tests): everything it pins is pinned alike here, so its functions and CDK app run on what they
    were locked to. A package it pins that ours pins otherwise, or lacks, is still refused."""
    blocks = (REPO_ROOT / "uv.lock").read_text().split("\n[[package]]\n")
    older = [b for b in blocks if not b.startswith(('name = "playwright"\n', 'name = "greenlet"\n'))]
    assert len(older) == len(blocks) - 2
    (tmp_path / "uv.lock").write_text("\n[[package]]\n".join(older))
    check_runnable(tmp_path)
    extra = 'name = "left-out-here"\nversion = "1.0"\nsource = { registry = "https://pypi.org/simple" }\n'
    (tmp_path / "uv.lock").write_text("\n[[package]]\n".join([*older, extra]))
    with pytest.raises(CheckoutError, match="locks other dependencies"):
        check_runnable(tmp_path)


def test_the_previous_release_is_the_newest_released_entry_of_the_changelog(tmp_path: Path):
    changelog = tmp_path / "CHANGELOG.md"
    changelog.write_text(
        "# Changelog\n\n## 0.3.0 (unreleased)\n\nCommit: to be written.\n\n"
        "## 0.2.0\n\nCommit: `abc1234` (2027-01-01)\n\n## 0.1.0\n\nCommit: `6a6fc98`\n"
    )
    assert newest_release(changelog) == ("0.2.0", "abc1234")
    assert newest_release()[0] != ""  # the repository's own CHANGELOG names one


class _Recorder:
    """An AWS client that records each call and answers every one (IAM: the role's policies are those put on it)."""

    def __init__(self, calls: list) -> None:
        self.calls = calls
        self.policies: dict[str, set[str]] = {}

    def __getattr__(self, name: str):
        def call(**kwargs):
            self.calls.append((name, kwargs.get("RoleName") or kwargs.get("FunctionName")))
            if name == "put_role_policy":
                self.policies.setdefault(kwargs["RoleName"], set()).add(kwargs["PolicyName"])
            if name == "delete_role_policy":
                self.policies[kwargs["RoleName"]].discard(kwargs["PolicyName"])
            if name == "list_role_policies":
                return {"PolicyNames": sorted(self.policies.get(kwargs["RoleName"], set()))}
            return {}

        return call


def _recorded_steps(monkeypatch, deployed) -> list[str]:
    """The redeploy's steps and the API front's deploy, stubbed to record their names in order."""
    steps: list[str] = []
    for step in ("_name_resources", "_deploy_roles", "_deploy_functions", "_deploy_state_machine"):
        monkeypatch.setattr(deployed, step, lambda *_, name=step: steps.append(name))
    monkeypatch.setattr(Template, "routes", lambda self: [])
    monkeypatch.setattr(Template, "gateway_responses", lambda self, *_: [])

    class _Front:
        def deploy(self, routes, responses, preflights) -> None:
            steps.append("front")

    deployed.front = _Front()  # type: ignore[assignment]
    return steps


def _role(name: str) -> dict:
    return {
        "Type": "AWS::IAM::Role",
        "Properties": {
            "AssumeRolePolicyDocument": {"Statement": []},
            "Policies": [{"PolicyName": name, "PolicyDocument": {}}],
        },
    }


def test_a_role_a_redeploy_left_behind_is_updated_not_made_again_when_a_later_template_has_it_again(monkeypatch):
    """Deploying a release without a function (and its role) and then one with it again, as the redeploy test does
    around a release that added a function: the role the older template did not name is still in the account."""
    stack = LocalStack()
    calls: list = []
    iam = _Recorder(calls)
    monkeypatch.setattr(stack, "client", lambda *_: iam)
    newer = Template({"Resources": {"OldRole": _role("old"), "NewRole": _role("new")}})
    older = Template({"Resources": {"OldRole": _role("old")}})
    stack._name_resources = lambda template: stack._refs.update({k: k for k in template.resources})  # type: ignore[method-assign]

    for before, template in ((None, newer), (newer, older), (older, newer)):
        stack._name_resources(template)
        stack._deploy_roles(before, template)

    assert [name for name, role in calls if role == "NewRole" and name == "create_role"] == ["create_role"]
    assert ("update_assume_role_policy", "NewRole") in calls and iam.policies["NewRole"] == {"new"}


def test_a_bucket_whose_lifecycle_rules_alone_change_is_redeployed_not_refused(deployed, monkeypatch):
    """S3 changes a bucket's lifecycle rules in place, and the local stack applies none (moto runs no lifecycle):
    a release that adds rules (decision 0125's expiring door files) redeploys over the running stack."""
    template = copy.deepcopy(DEPLOYED)
    rule = {"Id": "expire-door-files-after-1d", "Status": "Enabled", "ExpirationInDays": 1}
    template["Resources"]["Bucket"]["Properties"]["LifecycleConfiguration"]["Rules"].append(rule)
    steps = _recorded_steps(monkeypatch, deployed)
    _redeploy_with(monkeypatch, deployed, template)
    assert steps == ["_name_resources", "_deploy_roles", "_deploy_functions", "_deploy_state_machine", "front"]
    assert deployed._template.raw == template


def test_a_secret_and_a_rule_a_release_adds_are_made_and_a_secrets_description_alone_changes_nothing(
    deployed, monkeypatch
):
    """CloudFormation creates what a template gains: a provider's webhook secret, a rule for its events (decision
    0135); a secret's description changes in place on AWS, and the local stack makes secrets without one."""
    before = copy.deepcopy(DEPLOYED)
    before["Resources"]["Kept"] = {"Type": "AWS::SecretsManager::Secret", "Properties": {"Name": "kept"}}
    deployed._template = Template(before)
    template = copy.deepcopy(before)
    template["Resources"]["Kept"]["Properties"]["Description"] = "now described"
    template["Resources"]["NewSecret"] = {"Type": "AWS::SecretsManager::Secret", "Properties": {"Name": "new-secret"}}
    template["Resources"]["NewRule"] = {"Type": "AWS::Events::Rule", "Properties": {"EventPattern": {"source": ["x"]}}}
    steps = _recorded_steps(monkeypatch, deployed)
    monkeypatch.setattr(
        deployed, "_create_secret", lambda _client, logical_id, _r: steps.append(f"secret {logical_id}")
    )
    monkeypatch.setattr(deployed, "_create_rule", lambda _client, logical_id, _p: steps.append(f"rule {logical_id}"))
    monkeypatch.setattr(deployed, "client", lambda *_: None)
    _redeploy_with(monkeypatch, deployed, template)
    assert steps == [
        "_name_resources",
        "secret NewSecret",  # before the functions whose environment names it
        "_deploy_roles",
        "_deploy_functions",
        "rule NewRule",  # after the functions it may deliver to
        "_deploy_state_machine",
        "front",
    ]


def test_a_bucket_a_release_adds_is_made_and_one_it_changes_is_still_refused(deployed, monkeypatch):
    """The console's bucket (decision 0138) is new in the release that adds the console: a redeploy from an older
    release makes it, as CloudFormation creates it; the buckets made at start still may not change."""
    template = copy.deepcopy(DEPLOYED)
    template["Resources"]["ConsoleBucket"] = {"Type": "AWS::S3::Bucket", "Properties": {}}
    steps = _recorded_steps(monkeypatch, deployed)
    monkeypatch.setattr(deployed, "_create_bucket", lambda logical_id: steps.append(f"bucket {logical_id}"))
    _redeploy_with(monkeypatch, deployed, template)
    assert steps[:2] == ["_name_resources", "bucket ConsoleBucket"]

    changed = copy.deepcopy(template)
    changed["Resources"]["ConsoleBucket"]["Properties"] = {"VersioningConfiguration": {"Status": "Suspended"}}
    with pytest.raises(RedeployError, match="ConsoleBucket"):
        _redeploy_with(monkeypatch, deployed, changed)
