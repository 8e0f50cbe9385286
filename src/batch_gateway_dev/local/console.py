"""The web console on the local stack (decision 0138): what the template's CloudFront distribution serves, on loopback.

Read from the synthesized template, as the rest of the local stack is: the ``Custom::CDKBucketDeployment`` resources
name the console build they deploy (their source object key is the SHA-256 of the build's digest, ``.zip``), which
of its files each deploys (``Include``/``Exclude``) and with which ``Cache-Control``; the distribution's default root
object answers ``/``; its response headers policy's security headers go on every answer, the Content-Security-Policy's
``connect-src`` naming this stack's API where the template names the deployed API's origin. ``config.json`` is the
one file written here, as the deployment writes it there: ``{"api_url": <the API's URL>, "version": <the build's>}``.

Like CloudFront in front of S3 with origin access control (and ``s3:ListBucket``): ``GET``/``HEAD`` of a deployed
file is ``200``; any other path ``404`` (no directory listing: a path is a key or nothing, ``..`` included); any
other method ``403``, as a distribution allowing only GET and HEAD answers.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import mimetypes
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urlsplit

from batch_gateway_dev.http_server import LoopbackServer, QuietHandler
from stacks.console_build import CONFIG, ConsoleBuild, console_config


@dataclass(frozen=True)
class Deployment:
    """One ``Custom::CDKBucketDeployment``: its sources' object keys, filters and ``Cache-Control``."""

    source_keys: tuple[str, ...]
    include: tuple[str, ...]
    exclude: tuple[str, ...]
    cache_control: str | None

    def deploys(self, name: str) -> bool:
        """``aws s3 sync``'s filters: every ``--exclude`` then every ``--include``, the last match wins."""
        chosen = True
        for pattern in self.exclude:
            if fnmatch.fnmatchcase(name, pattern):
                chosen = False
        for pattern in self.include:
            if fnmatch.fnmatchcase(name, pattern):
                chosen = True
        return chosen


@dataclass(frozen=True)
class ConsoleSite:
    """The template's console: the deployments, the default root object, the security headers (values as the
    template has them: strings or CloudFormation functions for the stack to resolve)."""

    deployments: tuple[Deployment, ...]
    root_object: str
    headers: dict[str, Any] = field(default_factory=dict)

    def names_build(self, build: ConsoleBuild) -> bool:
        """Whether the template deploys exactly ``build`` (CDK's asset hash of a custom hash is its SHA-256)."""
        key = f"{hashlib.sha256(build.digest.encode()).hexdigest()}.zip"
        return any(key in deployment.source_keys for deployment in self.deployments)


def security_headers(config: dict[str, Any]) -> dict[str, Any]:
    """A response headers policy's ``SecurityHeadersConfig`` (and custom headers) as the headers CloudFront sends."""
    security = config.get("SecurityHeadersConfig") or {}
    headers: dict[str, Any] = {}
    if "ContentSecurityPolicy" in security:
        headers["Content-Security-Policy"] = security["ContentSecurityPolicy"]["ContentSecurityPolicy"]
    if "StrictTransportSecurity" in security:
        hsts = security["StrictTransportSecurity"]
        value = f"max-age={hsts['AccessControlMaxAgeSec']}"
        value += "; includeSubDomains" if hsts.get("IncludeSubdomains") else ""
        value += "; preload" if hsts.get("Preload") else ""
        headers["Strict-Transport-Security"] = value
    if "ContentTypeOptions" in security:
        headers["X-Content-Type-Options"] = "nosniff"
    if "FrameOptions" in security:
        headers["X-Frame-Options"] = security["FrameOptions"]["FrameOption"]
    if "ReferrerPolicy" in security:
        headers["Referrer-Policy"] = security["ReferrerPolicy"]["ReferrerPolicy"]
    if "XSSProtection" in security:
        xss = security["XSSProtection"]
        headers["X-XSS-Protection"] = ("1" if xss.get("Protection") else "0") + (
            "; mode=block" if xss.get("ModeBlock") else ""
        )
    for item in (config.get("CustomHeadersConfig") or {}).get("Items") or []:
        headers[item["Header"]] = item["Value"]
    return headers


def local_headers(
    site: ConsoleSite, resolve: Callable[[Any], Any], deployed_api: str, local_api: str
) -> dict[str, str]:
    """``site``'s headers resolved (``resolve``: the stack's resolver of the template's functions), the deployed API's
    origin (``https://<id>.execute-api...``, as the stack resolves the ``ApiUrl`` output) replaced by the local one."""
    deployed, local = urlsplit(deployed_api), urlsplit(local_api)
    return {
        name: str(resolve(value)).replace(f"{deployed.scheme}://{deployed.netloc}", f"{local.scheme}://{local.netloc}")
        for name, value in site.headers.items()
    }


def console_site(resources: dict[str, dict[str, Any]]) -> ConsoleSite | None:
    """The console a template deploys, or None (``-c console=false``)."""
    deployments = [r["Properties"] for r in resources.values() if r["Type"] == "Custom::CDKBucketDeployment"]
    distributions = [r["Properties"] for r in resources.values() if r["Type"] == "AWS::CloudFront::Distribution"]
    if not deployments or len(distributions) != 1:
        return None
    config = distributions[0]["DistributionConfig"]
    policy_ref = config["DefaultCacheBehavior"].get("ResponseHeadersPolicyId") or {}
    policy = resources.get(policy_ref.get("Ref", "")) if isinstance(policy_ref, dict) else None
    headers = security_headers(policy["Properties"]["ResponseHeadersPolicyConfig"]) if policy else {}
    return ConsoleSite(
        deployments=tuple(
            Deployment(
                source_keys=tuple(str(key) for key in props.get("SourceObjectKeys") or []),
                include=tuple(props.get("Include") or ()),
                exclude=tuple(props.get("Exclude") or ()),
                cache_control=(props.get("SystemMetadata") or {}).get("cache-control"),
            )
            for props in deployments
        ),
        root_object=str(config.get("DefaultRootObject") or ""),
        headers=headers,
    )


@dataclass(frozen=True)
class _File:
    body: bytes
    content_type: str
    cache_control: str | None


class ConsoleServer:
    """The console's files on a loopback port. Bound when made (so its origin is known before the stack deploys the
    functions that name it); ``publish`` gives it the files and headers, ``start`` serves them."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self._files: dict[str, _File] = {}
        self._headers: dict[str, str] = {}
        self._root_object = ""
        console = self

        class _Handler(QuietHandler):
            def serve(self) -> None:
                status, headers, body = console.answer(self.command, self.path)
                self.send_bytes(status, b"" if self.command == "HEAD" else body, headers)

            def do_HEAD(self) -> None:
                self.serve()

            def do_OPTIONS(self) -> None:
                self.serve()

        self._server = LoopbackServer(_Handler, host, port)

    @property
    def origin(self) -> str:
        return self._server.origin

    @property
    def url(self) -> str:
        return f"{self.origin}/"

    def publish(
        self, site: ConsoleSite, build: ConsoleBuild, headers: dict[str, str], api_url: str, providers: list[str]
    ) -> None:
        """Serve what ``site``'s deployments put in the bucket from ``build``, plus the ``config.json`` the stack
        writes, naming ``api_url`` and ``providers`` (the deployment's); ``headers``: the site's security headers,
        resolved for this stack."""
        config = json.dumps(console_config(api_url, build.version, providers)).encode()
        files: dict[str, _File] = {}
        for deployment in site.deployments:
            for name, path in build.files().items():
                if deployment.deploys(name):
                    files[name] = _File(path.read_bytes(), _content_type(name), deployment.cache_control)
            if deployment.deploys(CONFIG):
                files[CONFIG] = _File(config, _content_type(CONFIG), deployment.cache_control)
        self._files, self._headers, self._root_object = files, dict(headers), site.root_object

    def start(self) -> ConsoleServer:
        self._server.start(name="console")
        return self

    def stop(self) -> None:
        self._server.stop()

    def answer(self, method: str, raw_path: str) -> tuple[int, dict[str, str], bytes]:
        headers = dict(self._headers)
        if method not in ("GET", "HEAD"):
            return (
                403,
                {**headers, "Content-Type": "text/plain"},
                b"This distribution is not configured to allow the HTTP request method.",
            )
        path = unquote(urlsplit(raw_path).path)
        key = self._root_object if path == "/" else path[1:]
        found = self._files.get(key)
        if found is None:
            return 404, {**headers, "Content-Type": "text/plain"}, b"Not Found"
        headers["Content-Type"] = found.content_type
        if found.cache_control:
            headers["Cache-Control"] = found.cache_control
        headers["ETag"] = f'"{hashlib.md5(found.body, usedforsecurity=False).hexdigest()}"'
        return 200, headers, found.body


def _content_type(name: str) -> str:
    """What ``aws s3 sync`` (the deployment's handler) guesses."""
    return mimetypes.guess_type(name)[0] or "binary/octet-stream"
