"""The web console in the deployment (decision 0138): a private bucket behind CloudFront with origin access control, a
strict response headers policy, content-hashed immutable assets built at synth, config.json naming the API, the
ConsoleUrl output, and the key mount's CORS origin defaulting to the console's."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from aws_cdk import App, Stack
from aws_cdk import aws_s3 as s3

from batch_gateway import constants
from stacks.app_factory import synth_template
from stacks.console import ConsoleConstruct
from stacks.console_build import ConsoleBuildError, build

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self' https://{api}"
    ".execute-api.{region}.{suffix}; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
CACHING_OPTIMIZED = "658327ea-f89d-4fab-a63d-7e88639e58f6"  # CloudFront's managed cache policy: no query strings


def _one(synthesized, cfn_type: str) -> tuple[str, dict]:
    [(logical_id, resource)] = synthesized.of_type(cfn_type).items()
    return logical_id, resource["Properties"]


def _joined(value) -> str:
    """A ``Fn::Join`` as text, each Ref / GetAtt written ``{id}`` / ``{id.Attr}``."""
    if isinstance(value, str):
        return value
    if "Ref" in value:
        return "{" + value["Ref"] + "}"
    if "Fn::GetAtt" in value:
        return "{" + ".".join(value["Fn::GetAtt"]) + "}"
    separator, parts = value["Fn::Join"]
    return separator.join(_joined(part) for part in parts)


def test_the_console_bucket_is_private_tls_only_encrypted_and_logged(synthesized):
    bucket_id, bucket = synthesized.by_path("Console/Bucket/Resource")
    props = bucket["Properties"]
    assert bucket["DeletionPolicy"] == "Retain"
    assert props["PublicAccessBlockConfiguration"] == {
        "BlockPublicAcls": True,
        "BlockPublicPolicy": True,
        "IgnorePublicAcls": True,
        "RestrictPublicBuckets": True,
    }
    assert props["BucketEncryption"]["ServerSideEncryptionConfiguration"][0]["ServerSideEncryptionByDefault"] == {
        "SSEAlgorithm": "AES256"
    }
    logs_id, _ = synthesized.by_path("Storage/AccessLogsBucket/Resource")
    assert props["LoggingConfiguration"]["DestinationBucketName"] == {"Ref": logs_id}
    assert "WebsiteConfiguration" not in props  # not an S3 website: CloudFront reads it through OAC
    [policy] = [
        p["Properties"]
        for p in synthesized.of_type("AWS::S3::BucketPolicy").values()
        if p["Properties"]["Bucket"] == {"Ref": bucket_id}
    ]
    statements = policy["PolicyDocument"]["Statement"]
    assert any(
        s["Effect"] == "Deny" and s["Condition"] == {"Bool": {"aws:SecureTransport": "false"}} for s in statements
    )
    allows = [s for s in statements if s["Effect"] == "Allow"]
    # CloudFront alone, for this distribution alone, may read (and list, so a missing key is 404, not 403)
    distribution_id, _ = _one(synthesized, "AWS::CloudFront::Distribution")
    assert allows and all(s["Principal"] == {"Service": "cloudfront.amazonaws.com"} for s in allows)
    assert {a for s in allows for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])} == {
        "s3:GetObject",
        "s3:ListBucket",
    }
    for statement in allows:
        source = statement["Condition"]["StringEquals"]["AWS:SourceArn"]
        assert _joined(source).endswith(f"distribution/{{{distribution_id}}}")


def test_cloudfront_reads_the_bucket_through_origin_access_control_over_https_only(synthesized):
    oac_id, oac = _one(synthesized, "AWS::CloudFront::OriginAccessControl")
    assert oac["OriginAccessControlConfig"]["OriginAccessControlOriginType"] == "s3"
    assert oac["OriginAccessControlConfig"]["SigningBehavior"] == "always"
    _, distribution = _one(synthesized, "AWS::CloudFront::Distribution")
    config = distribution["DistributionConfig"]
    [origin] = config["Origins"]
    assert origin["OriginAccessControlId"] == {"Fn::GetAtt": [oac_id, "Id"]}
    assert origin["S3OriginConfig"] == {"OriginAccessIdentity": ""}  # no legacy OAI
    assert config["DefaultRootObject"] == "index.html"
    behavior = config["DefaultCacheBehavior"]
    assert behavior["ViewerProtocolPolicy"] == "https-only"
    assert behavior["AllowedMethods"] == ["GET", "HEAD"]
    assert behavior["CachePolicyId"] == CACHING_OPTIMIZED  # no query string reaches the bucket: no listing
    headers_id, _ = _one(synthesized, "AWS::CloudFront::ResponseHeadersPolicy")
    assert behavior["ResponseHeadersPolicyId"] == {"Ref": headers_id}


def test_every_answer_carries_the_strict_csp_hsts_nosniff_deny_and_no_referrer(synthesized):
    _, policy = _one(synthesized, "AWS::CloudFront::ResponseHeadersPolicy")
    security = policy["ResponseHeadersPolicyConfig"]["SecurityHeadersConfig"]
    api_id, _ = synthesized.by_path("Api/RestApi/Resource")
    csp = security["ContentSecurityPolicy"]
    assert csp["Override"] is True
    assert _joined(csp["ContentSecurityPolicy"]) == CSP.format(
        api="{" + api_id + "}", region="{AWS::Region}", suffix="{AWS::URLSuffix}"
    )
    assert "'unsafe-inline'" not in json.dumps(csp) and "'unsafe-eval'" not in json.dumps(csp)
    assert security["StrictTransportSecurity"] == {
        "AccessControlMaxAgeSec": 63072000,
        "IncludeSubdomains": True,
        "Override": True,
    }
    assert security["ContentTypeOptions"] == {"Override": True}
    assert security["FrameOptions"] == {"FrameOption": "DENY", "Override": True}
    assert security["ReferrerPolicy"] == {"ReferrerPolicy": "no-referrer", "Override": True}


def _deployments(synthesized) -> dict[str, dict]:
    return {
        logical_id: resource["Properties"]
        for logical_id, resource in synthesized.of_type("Custom::CDKBucketDeployment").items()
    }


def test_assets_are_immutable_and_the_page_and_config_are_revalidated_and_invalidated(synthesized):
    deployments = _deployments(synthesized)
    [(assets_id, assets)] = [(k, p) for k, p in deployments.items() if p["Include"] == ["assets/*"]]
    [(page_id, page)] = [(k, p) for k, p in deployments.items() if p["Include"] == ["index.html", "config.json"]]
    assert assets["SystemMetadata"] == {"cache-control": "public, max-age=31536000, immutable"}
    assert page["SystemMetadata"] == {"cache-control": "no-cache"}
    assert assets["Exclude"] == page["Exclude"] == ["*"]
    # never pruned: a page a browser cached before a deploy still finds its own assets
    assert assets["Prune"] is False and page["Prune"] is False
    distribution_id, _ = _one(synthesized, "AWS::CloudFront::Distribution")
    assert page["DistributionId"] == {"Ref": distribution_id}
    assert set(page["DistributionPaths"]) == {"/", "/index.html", "/config.json"}
    assert "DistributionId" not in assets  # new names need no invalidation
    # the page goes up after its assets, so it never names one that is not there yet
    assert assets_id in synthesized.resources[page_id].get("DependsOn", [])


def test_the_deployments_name_exactly_the_build_of_console(synthesized):
    """CDK's asset hash of a custom hash is its SHA-256: the template names the build's digest, nothing else."""
    made = build()
    key = f"{hashlib.sha256(made.digest.encode()).hexdigest()}.zip"
    for props in _deployments(synthesized).values():
        assert key in props["SourceObjectKeys"]


def test_config_json_names_the_apis_stage_url_without_a_trailing_slash(synthesized):
    page = next(p for p in _deployments(synthesized).values() if "config.json" in p["Include"])
    api_id, _ = synthesized.by_path("Api/RestApi/Resource")
    stage_id, _ = synthesized.by_path("Api/RestApi/DeploymentStage.v1/Resource")
    [markers] = [m for m in page["SourceMarkers"] if m]
    [value] = markers.values()
    assert _joined(value) == f'"https://{{{api_id}}}.execute-api.{{AWS::Region}}.{{AWS::URLSuffix}}/{{{stage_id}}}"'


def test_the_stack_outputs_the_console_url(synthesized):
    distribution_id, _ = _one(synthesized, "AWS::CloudFront::Distribution")
    output = synthesized.json["Outputs"]["ConsoleUrl"]
    assert _joined(output["Value"]) == f"https://{{{distribution_id}.DomainName}}/"


def _origin_token(synthesized) -> str:
    distribution_id, _ = _one(synthesized, "AWS::CloudFront::Distribution")
    return f"https://{{{distribution_id}.DomainName}}"


def test_the_key_mount_answers_cors_for_the_consoles_own_origin_by_default(synthesized):
    """No console_origin in the context: preflights, the functions' CONSOLE_ORIGIN and API Gateway's own refusals
    all name the distribution's https:// origin (a token resolved at deploy)."""
    origin = _origin_token(synthesized)
    preflights = [
        m["Properties"]
        for m in synthesized.of_type("AWS::ApiGateway::Method").values()
        if m["Properties"]["HttpMethod"] == "OPTIONS"
    ]
    assert len(preflights) == 14
    for props in preflights:
        [answer] = props["Integration"]["IntegrationResponses"]
        allowed = answer["ResponseParameters"]["method.response.header.Access-Control-Allow-Origin"]
        assert _joined(allowed) == f"'{origin}'"
    with_origin = {
        resource["Properties"]["Handler"]
        for resource in synthesized.of_type("AWS::Lambda::Function").values()
        if constants.ENV_CONSOLE_ORIGIN in resource["Properties"].get("Environment", {}).get("Variables", {})
    }
    assert with_origin == {
        constants.API_HANDLERS[f]
        for f in ("Create", "List", "Status", "Retrieve", "Cancel", "Keys", "Budgets", "Limits", "Webhooks", "Uploads")
    }
    for resource in synthesized.of_type("AWS::Lambda::Function").values():
        value = resource["Properties"].get("Environment", {}).get("Variables", {}).get(constants.ENV_CONSOLE_ORIGIN)
        assert value is None or _joined(value) == origin
    for response in synthesized.of_type("AWS::ApiGateway::GatewayResponse").values():
        header = response["Properties"]["ResponseParameters"]["gatewayresponse.header.Access-Control-Allow-Origin"]
        assert _joined(header) == f"'{origin}'"


@pytest.fixture(scope="module")
def other_origin() -> dict:
    return synth_template({"nag": False, "console_origin": "https://console.example.com"})


def test_a_console_origin_in_the_context_wins_over_the_consoles_own(other_origin):
    text = json.dumps(other_origin)
    assert "'https://console.example.com'" in text
    for resource in other_origin["Resources"].values():
        if resource["Type"] == "AWS::ApiGateway::GatewayResponse":
            assert resource["Properties"]["ResponseParameters"] == {
                "gatewayresponse.header.Access-Control-Allow-Origin": "'https://console.example.com'"
            }
    assert "ConsoleUrl" in other_origin["Outputs"]  # the console is still deployed


def test_console_false_leaves_the_console_out():
    template = synth_template({"nag": False, "console": False})
    types = {resource["Type"] for resource in template["Resources"].values()}
    assert not {t for t in types if t.startswith("AWS::CloudFront::") or t == "Custom::CDKBucketDeployment"}
    assert "ConsoleUrl" not in template["Outputs"]


def _console_files(root: Path, script: str = "console.log(1);\n") -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "index.html").write_text(
        '<!doctype html><link rel="stylesheet" href="style.css"><script src="app.js" defer></script>'
    )
    (root / "app.js").write_text(script)
    (root / "style.css").write_text("body { margin: 0; }\n")
    return root


def test_the_build_hashes_asset_names_and_rewrites_index_html(tmp_path):
    made = build(_console_files(tmp_path / "src"), tmp_path / "out")
    app_js, style = made.assets["app.js"], made.assets["style.css"]
    digest = hashlib.sha256(b"console.log(1);\n").hexdigest()[:16]
    assert app_js == f"assets/app.{digest}.js"
    assert style.startswith("assets/style.") and style.endswith(".css")
    html = (made.directory / "index.html").read_text()
    assert f'src="{app_js}"' in html and f'href="{style}"' in html
    assert '"app.js"' not in html and '"style.css"' not in html
    assert set(made.files()) == {"index.html", app_js, style}


def test_the_same_files_give_the_same_build_and_a_changed_file_a_new_name(tmp_path):
    first = build(_console_files(tmp_path / "a"), tmp_path / "out")
    again = build(_console_files(tmp_path / "b"), tmp_path / "out2")
    assert (again.digest, again.assets) == (first.digest, first.assets)
    changed = build(_console_files(tmp_path / "c", script="console.log(2);\n"), tmp_path / "out")
    assert changed.assets["app.js"] != first.assets["app.js"]
    assert changed.assets["style.css"] == first.assets["style.css"]  # only what changed gets a new name
    assert changed.digest != first.digest


def test_a_page_naming_a_missing_script_is_refused_at_build(tmp_path):
    root = _console_files(tmp_path / "src")
    (root / "app.js").unlink()
    with pytest.raises(ConsoleBuildError, match="app.js"):
        build(root, tmp_path / "out")


def _template_of(made_root: Path, out: Path) -> dict:
    app = App(context={"aws:cdk:bundling-stacks": []})
    stack = Stack(app, "ConsoleOnly")
    logs = s3.Bucket(stack, "Logs")
    console = ConsoleConstruct(stack, "Console", access_logs_bucket=logs, build_=build(made_root, out))
    console.connect_to("https://api.example.com")
    console.deploy("https://api.example.com/v1", ["anthropic"])
    return app.synth().get_stack_by_name("ConsoleOnly").template


def test_a_changed_script_changes_what_the_template_deploys(tmp_path):
    before = _template_of(_console_files(tmp_path / "a"), tmp_path / "out")
    same = _template_of(_console_files(tmp_path / "b"), tmp_path / "out")
    after = _template_of(_console_files(tmp_path / "c", script="console.log(2);\n"), tmp_path / "out")

    def keys(template: dict) -> list[str]:
        return sorted(
            key
            for r in template["Resources"].values()
            if r["Type"] == "Custom::CDKBucketDeployment"
            for key in r["Properties"]["SourceObjectKeys"]
        )

    assert keys(before) == keys(same)  # deterministic: same files, same template
    assert keys(after) != keys(before)
