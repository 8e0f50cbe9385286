"""The web console (decision 0138): ``console/``'s build in a private S3 bucket behind CloudFront with origin access
control, a strict response headers policy, and ``config.json`` naming the API, written at deploy.

Two steps, because the API and the console name each other: ``ConsoleConstruct`` (bucket, headers policy,
distribution) comes before the API, whose key mount answers CORS for ``origin`` (a token of the distribution's domain);
``deploy(api_url)`` comes after it. The headers policy's ``connect-src`` names the API's origin, set by ``connect_to``
once the API exists (a lazy value, so the policy can be made first). CloudFormation's order has no cycle:
RestApi <- headers policy <- distribution <- the key mount's methods and the functions' CONSOLE_ORIGIN.
"""

from __future__ import annotations

from collections.abc import Sequence

import jsii
from aws_cdk import Annotations, Duration, IStableStringProducer, Lazy, RemovalPolicy, Stack
from aws_cdk import aws_cloudfront as cloudfront
from aws_cdk import aws_cloudfront_origins as origins
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_s3_deployment as s3deploy
from constructs import Construct

from stacks import nag
from stacks.console_build import (
    ASSETS_PREFIX,
    CONFIG,
    IMMUTABLE,
    INDEX,
    NO_CACHE,
    ConsoleBuild,
    build,
    console_config,
)

# The Content-Security-Policy; ``{api}`` is the API's origin. ``connect-src`` has ``'self'`` too: the page's first
# request is ``fetch("config.json")``, on its own origin, which ``connect-src <api>`` alone would block.
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self' {api}; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
HSTS_SECONDS = 63072000  # two years, as hstspreload.org asks


@jsii.implements(IStableStringProducer)
class _Later:
    """A value given after the construct that uses it is made (``Lazy.string``)."""

    def __init__(self, what: str) -> None:
        self.what = what
        self.value: str | None = None

    def produce(self) -> str | None:
        if self.value is None:
            raise ValueError(f"the console's {self.what} was never set")
        return self.value


class ConsoleConstruct(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        access_logs_bucket: s3.IBucket,
        log_retention: logs.RetentionDays = logs.RetentionDays.ONE_MONTH,
        build_: ConsoleBuild | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        self.build = build_ or build()
        self._log_retention = log_retention
        self._api_origin = _Later("API origin")

        self.bucket = s3.Bucket(
            self,
            "Bucket",
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            encryption=s3.BucketEncryption.S3_MANAGED,  # CloudFront's OAC reads SSE-S3 objects with no key grant
            enforce_ssl=True,
            minimum_tls_version=1.2,
            versioned=True,
            server_access_logs_bucket=access_logs_bucket,
            server_access_logs_prefix="console-bucket/",
            lifecycle_rules=[
                s3.LifecycleRule(id="expire-noncurrent-versions", noncurrent_version_expiration=Duration.days(30))
            ],
            removal_policy=RemovalPolicy.RETAIN,
        )
        self.headers_policy = cloudfront.ResponseHeadersPolicy(
            self,
            "Headers",
            comment="Batch Gateway console: strict CSP, HSTS, nosniff, no framing, no referrer",
            security_headers_behavior=cloudfront.ResponseSecurityHeadersBehavior(
                content_security_policy=cloudfront.ResponseHeadersContentSecurityPolicy(
                    content_security_policy=CSP.format(api=Lazy.string(self._api_origin)), override=True
                ),
                strict_transport_security=cloudfront.ResponseHeadersStrictTransportSecurity(
                    access_control_max_age=Duration.seconds(HSTS_SECONDS), include_subdomains=True, override=True
                ),
                content_type_options=cloudfront.ResponseHeadersContentTypeOptions(override=True),
                frame_options=cloudfront.ResponseHeadersFrameOptions(
                    frame_option=cloudfront.HeadersFrameOption.DENY, override=True
                ),
                referrer_policy=cloudfront.ResponseHeadersReferrerPolicy(
                    referrer_policy=cloudfront.HeadersReferrerPolicy.NO_REFERRER, override=True
                ),
            ),
        )
        self.distribution = cloudfront.Distribution(
            self,
            "Distribution",
            comment="Batch Gateway web console",
            default_root_object=INDEX,
            default_behavior=cloudfront.BehaviorOptions(
                # READ and LIST: with s3:ListBucket, S3 answers a missing key 404 (not 403). No listing can leak:
                # "/" is the default root object and the cache policy forwards no query string to the bucket.
                origin=origins.S3BucketOrigin.with_origin_access_control(
                    self.bucket, origin_access_levels=[cloudfront.AccessLevel.READ, cloudfront.AccessLevel.LIST]
                ),
                viewer_protocol_policy=cloudfront.ViewerProtocolPolicy.HTTPS_ONLY,
                allowed_methods=cloudfront.AllowedMethods.ALLOW_GET_HEAD,
                cache_policy=cloudfront.CachePolicy.CACHING_OPTIMIZED,
                response_headers_policy=self.headers_policy,
                compress=True,
            ),
            http_version=cloudfront.HttpVersion.HTTP2_AND_3,
            price_class=cloudfront.PriceClass.PRICE_CLASS_100,
        )
        Annotations.of(self.distribution.node.find_child("Origin1")).acknowledge_warning(
            "@aws-cdk/aws-cloudfront-origins:listBucketSecurityRisk",
            "The default root object is index.html and the cache policy forwards no query string: no listing.",
        )
        self.origin = f"https://{self.distribution.distribution_domain_name}"
        self.url = f"{self.origin}/"
        self._acknowledge()

    def connect_to(self, api_origin: str) -> None:
        """The API's origin (``https://<id>.execute-api.<region>.<suffix>``): the CSP's ``connect-src``."""
        self._api_origin.value = api_origin

    def deploy(self, api_url: str, providers: Sequence[str]) -> None:
        """The build's files and ``config.json`` into the bucket: the hashed assets first (kept for a year by
        browsers, and never pruned, so a page cached before a deploy still finds its own), then index.html and
        config.json (``no-cache``), whose deployment invalidates them at CloudFront. CDK's deployment handler logs to
        a log group of the stack's retention (its own default keeps logs two years)."""
        log_group = logs.LogGroup(self, "DeploymentLogs", retention=self._log_retention)
        assets = s3deploy.BucketDeployment(
            self,
            "Assets",
            sources=[self._asset()],
            destination_bucket=self.bucket,
            include=[f"{ASSETS_PREFIX}*"],
            exclude=["*"],
            cache_control=[s3deploy.CacheControl.from_string(IMMUTABLE)],
            prune=False,
            memory_limit=256,
            log_group=log_group,
        )
        page = s3deploy.BucketDeployment(
            self,
            "Page",
            sources=[
                self._asset(),
                s3deploy.Source.json_data(CONFIG, console_config(api_url, self.build.version, providers)),
            ],
            destination_bucket=self.bucket,
            include=[INDEX, CONFIG],
            exclude=["*"],
            cache_control=[s3deploy.CacheControl.from_string(NO_CACHE)],
            prune=False,
            memory_limit=256,
            log_group=log_group,
            distribution=self.distribution,
            distribution_paths=["/", f"/{INDEX}", f"/{CONFIG}"],
        )
        page.node.add_dependency(assets)
        self._acknowledge_deployment_handler()

    def _asset(self) -> s3deploy.ISource:
        # The build's digest is the asset's hash: the template names exactly this build (the local stack checks it).
        return s3deploy.Source.asset(str(self.build.directory), asset_hash=self.build.digest)

    def _acknowledge_deployment_handler(self) -> None:
        """cdk-nag's findings on CDK's own BucketDeployment handler (one per stack), which this stack does not shape
        beyond its memory; the console bucket's object grant is named by the bucket's logical id."""
        stack = Stack.of(self)
        [handler] = [c for c in stack.node.children if c.node.id.startswith("Custom::CDKBucketDeployment")]
        reasons = {
            **_DEPLOYMENT_HANDLER_REASONS,
            f"AwsSolutions-IAM5[Resource::{nag.arn_token(self.bucket)}/*]": "CDK's BucketDeployment writes the "
            "console's files into the console bucket, whose object keys are the build's.",
        }
        for finding, reason in reasons.items():
            nag.acknowledge(handler, finding, reason)

    def _acknowledge(self) -> None:
        nag.acknowledge(
            self.distribution,
            "AwsSolutions-CFR1",
            "The console is static files anyone may load; every API call still needs a gateway key. Geo restriction "
            "is the operator's choice.",
        )
        nag.acknowledge(
            self.distribution,
            "AwsSolutions-CFR2",
            "A WAF web ACL is an account-level choice (e.g. Firewall Manager) the operator can attach; the "
            "distribution serves static files only.",
        )
        nag.acknowledge(
            self.distribution,
            "AwsSolutions-CFR3",
            "CloudFront standard logs need an ACL-enabled bucket, which this stack keeps none of; the files are "
            "public static assets and the API's own access log records every call the console makes.",
        )
        nag.acknowledge(
            self.distribution,
            "AwsSolutions-CFR4",
            "The distribution uses CloudFront's default *.cloudfront.net certificate, whose security policy "
            "CloudFront fixes; use a custom domain and certificate to set TLSv1.2_2021.",
        )


_DEPLOYMENT_HANDLER_REASONS = {
    "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]": "CDK's "
    "BucketDeployment handler (a singleton of aws-cdk-lib) writes its logs with the basic execution role.",
    "AwsSolutions-IAM5[Action::s3:GetBucket*]": "CDK's BucketDeployment reads the CDK asset bucket and the console "
    "bucket's metadata to sync; no other bucket.",
    "AwsSolutions-IAM5[Action::s3:GetObject*]": "CDK's BucketDeployment reads the console's build from the CDK asset "
    "bucket and the console bucket's objects to sync.",
    "AwsSolutions-IAM5[Action::s3:List*]": "CDK's BucketDeployment lists the console bucket to sync it.",
    "AwsSolutions-IAM5[Action::s3:Abort*]": "CDK's BucketDeployment may abort its own multipart uploads into the "
    "console bucket.",
    "AwsSolutions-IAM5[Action::s3:DeleteObject*]": "CDK's BucketDeployment may delete from the console bucket (this "
    "stack deploys with prune off, so it deletes nothing).",
    "AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:s3:::cdk-hnb659fds-assets-<AWS::AccountId>-<AWS::Region>/*]": ""
    "CDK's BucketDeployment reads the console's build from the bootstrap asset bucket, where cdk deploy put it.",
    "AwsSolutions-IAM5[Resource::*]": "CDK's BucketDeployment creates and reads CloudFront invalidations, which IAM "
    "grants on * only in its policy (the handler invalidates the console's distribution alone).",
    "AwsSolutions-L1": "CDK's BucketDeployment handler's runtime is chosen by aws-cdk-lib and follows its upgrades.",
}


def api_origin(stack: Stack, rest_api_id: str) -> str:
    """The API's origin as browsers see it (its URL without the stage)."""
    return f"https://{rest_api_id}.execute-api.{stack.region}.{stack.url_suffix}"
