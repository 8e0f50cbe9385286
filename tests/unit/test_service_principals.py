"""Who the local Bedrock stand-in may assume: a role's trust policy read the way AWS reads it for a service."""

import json

from batch_gateway_dev.local.service_principals import trusts

ACCOUNT = "123456789012"
JOB = f"arn:aws:bedrock:us-east-1:{ACCOUNT}:model-invocation-job/abc123def456"
CONTEXT = {"aws:SourceAccount": ACCOUNT, "aws:SourceArn": JOB}


def trust(service="bedrock.amazonaws.com", effect="Allow", **condition):
    statement = {"Effect": effect, "Principal": {"Service": service}, "Action": "sts:AssumeRole"}
    if condition:
        statement["Condition"] = condition
    return json.dumps({"Version": "2012-10-17", "Statement": [statement]})


CDK_LIKE = trust(
    StringEquals={"aws:SourceAccount": ACCOUNT},
    ArnLike={"aws:SourceArn": f"arn:aws:bedrock:us-east-1:{ACCOUNT}:model-invocation-job/*"},
)


def test_a_role_trusting_bedrock_for_this_account_and_its_jobs_may_be_assumed():
    assert trusts(CDK_LIKE, "bedrock.amazonaws.com", CONTEXT)


def test_another_service_may_not_assume_it():
    assert not trusts(CDK_LIKE, "lambda.amazonaws.com", CONTEXT)


def test_a_job_of_another_account_may_not_assume_it():
    other = {"aws:SourceAccount": "999999999999", "aws:SourceArn": JOB.replace(ACCOUNT, "999999999999")}
    assert not trusts(CDK_LIKE, "bedrock.amazonaws.com", other)


def test_a_condition_without_its_context_key_refuses():
    assert not trusts(CDK_LIKE, "bedrock.amazonaws.com", {"aws:SourceAccount": ACCOUNT})


def test_a_role_trusting_only_lambda_may_not_be_assumed_by_bedrock():
    assert not trusts(trust("lambda.amazonaws.com"), "bedrock.amazonaws.com", CONTEXT)


def test_a_deny_statement_wins():
    document = json.loads(CDK_LIKE)
    document["Statement"].append(json.loads(trust(effect="Deny"))["Statement"][0])
    assert not trusts(document, "bedrock.amazonaws.com", CONTEXT)


def test_an_unknown_condition_operator_refuses():
    assert not trusts(trust(NumericEquals={"aws:SourceAccount": ACCOUNT}), "bedrock.amazonaws.com", CONTEXT)
