"""The local stack's console server (decision 0138) on the synthesized template's console: the files its
BucketDeployments deploy, with their Cache-Control, the response headers policy's headers on every answer (the CSP's
connect-src naming the local API), config.json naming the local API, and nothing else: no listing, no traversal."""

from __future__ import annotations

import json
from typing import Any

import pytest
import requests

from batch_gateway_dev.local.console import ConsoleServer, console_site, local_headers
from batch_gateway_dev.local.stack import PSEUDO_PARAMETERS
from batch_gateway_dev.local.template import resolve, synthesized_template
from stacks.console_build import CONSOLE_SOURCE, IMMUTABLE, NO_CACHE, build

LOCAL_API = "http://127.0.0.1:4567/v1"  # where a local stack's API would be
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self' http://127.0.0.1:4567; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
SECURITY = {
    "Content-Security-Policy": CSP,
    "Strict-Transport-Security": "max-age=63072000; includeSubDomains",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
}


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    return synthesized_template({})  # the local stack's own template (cached by the CDK code's hash)


@pytest.fixture(scope="module")
def console(template):
    site = console_site(template["Resources"])
    assert site is not None
    made = build()
    assert site.names_build(made)
    api = next(k for k, v in template["Resources"].items() if v["Type"] == "AWS::ApiGateway::RestApi")

    def res(value: Any) -> Any:
        return resolve(value, {api: "local"}, {}, PSEUDO_PARAMETERS)

    deployed_api = res(template["Outputs"]["ApiUrl"]["Value"])
    server = ConsoleServer()
    headers = local_headers(site, res, deployed_api, LOCAL_API)
    server.publish(site, made, headers, api_url=LOCAL_API, providers=["anthropic", "openai"])
    server.start()
    yield server, made
    server.stop()


def _get(server: ConsoleServer, path: str, method: str = "GET") -> requests.Response:
    return requests.request(method, server.origin + path, timeout=10, allow_redirects=False)


def test_the_page_is_the_built_index_html_with_the_policys_headers(console):
    server, made = console
    for path in ("/", "/index.html"):
        page = _get(server, path)
        assert page.status_code == 200, path
        assert page.content == (made.directory / "index.html").read_bytes()
        assert {name: page.headers[name] for name in SECURITY} == SECURITY
        assert page.headers["Cache-Control"] == NO_CACHE
        assert page.headers["Content-Type"] == "text/html"
    html = _get(server, "/").text
    for name in made.assets.values():
        assert name in html  # index.html names the hashed assets, never app.js or style.css


def test_assets_are_served_under_their_hashed_names_immutable_with_the_same_headers(console):
    server, made = console
    assert set(made.assets) >= {"app.js", "style.css"}
    for source, name in made.assets.items():
        asset = _get(server, f"/{name}")
        assert asset.status_code == 200, name
        assert asset.content == (CONSOLE_SOURCE / source).read_bytes()
        assert asset.headers["Cache-Control"] == IMMUTABLE
        assert {header: asset.headers[header] for header in SECURITY} == SECURITY
        # the source name is not deployed: only the hashed one exists
        assert _get(server, f"/{source}").status_code == 404
    assert _get(server, "/" + made.assets["app.js"]).headers["Content-Type"] in (
        "text/javascript",
        "application/javascript",
    )


def test_the_csp_lets_the_page_fetch_its_own_config_json_and_the_api_alone(console):
    """The page fetches ``config.json`` (a relative URL, its own origin) before anything: ``connect-src`` must allow
    ``'self'`` as well as the API, and nothing else."""
    server, _ = console
    directives = dict(
        (d.split()[0], d.split()[1:]) for d in _get(server, "/").headers["Content-Security-Policy"].split("; ")
    )
    assert directives["connect-src"] == ["'self'", "http://127.0.0.1:4567"]
    assert directives["script-src"] == directives["style-src"] == ["'self'"]


def test_config_json_names_the_local_api_and_the_build(console):
    server, made = console
    config = _get(server, "/config.json")
    assert config.status_code == 200
    answer = config.json()
    assert {k: answer[k] for k in ("api_url", "version", "providers")} == {
        "api_url": LOCAL_API,
        "version": made.version,
        "providers": ["anthropic", "openai"],
    }
    # the page's model choices: the price table's model names of each provider
    assert set(answer["models"]) == {"anthropic", "openai"}
    assert "claude-sonnet-4" in answer["models"]["anthropic"] and "gpt-4o-mini" in answer["models"]["openai"]
    assert config.headers["Cache-Control"] == NO_CACHE
    assert config.headers["Content-Type"] == "application/json"


@pytest.mark.parametrize(
    "path",
    [
        "/nothing-here",
        "/assets/",
        "/assets",
        "/index.html/",
        "/../pyproject.toml",
        "/%2e%2e/pyproject.toml",
        "/assets/../../stacks/console.py",
        "/assets/%2e%2e/index.html",
        "//etc/passwd",
        "/console/app.js",
    ],
)
def test_anything_but_a_deployed_file_is_404_with_no_listing(console, path):
    server, _ = console
    answer = _get(server, path)
    assert answer.status_code == 404, path
    assert b"assets/" not in answer.content and b"index.html" not in answer.content  # no listing
    assert answer.headers["Content-Security-Policy"] == CSP  # CloudFront adds the policy's headers to errors too


def test_only_get_and_head_are_allowed_and_a_query_string_changes_nothing(console):
    server, _ = console
    for method in ("POST", "PUT", "DELETE", "OPTIONS"):
        assert _get(server, "/index.html", method).status_code == 403, method
    head = _get(server, "/", "HEAD")
    assert head.status_code == 200 and head.content == b""
    assert _get(server, "/?list-type=2").content == _get(server, "/").content


def test_the_local_headers_are_the_templates_policy(template):
    """Every security header of the response headers policy, and nothing made up: the server sends what the
    template's policy says (the CSP's API origin localised)."""
    site = console_site(template["Resources"])
    assert site is not None
    [policy] = [r for r in template["Resources"].values() if r["Type"] == "AWS::CloudFront::ResponseHeadersPolicy"]
    security = policy["Properties"]["ResponseHeadersPolicyConfig"]["SecurityHeadersConfig"]
    assert set(site.headers) == {
        "Content-Security-Policy",
        "Strict-Transport-Security",
        "X-Content-Type-Options",
        "X-Frame-Options",
        "Referrer-Policy",
    }
    assert len(security) == len(site.headers)
    assert json.dumps(site.headers["Content-Security-Policy"]) == json.dumps(
        security["ContentSecurityPolicy"]["ContentSecurityPolicy"]
    )
