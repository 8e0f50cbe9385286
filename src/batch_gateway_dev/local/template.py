"""The synthesized CloudFormation template, read the way CloudFormation would deploy it.

The local stack runs exactly what CDK deploys: the state machine definition, the Lambda handlers and their
environment, and the API routes all come from ``cdk synth`` (bundling skipped), cached by a hash of the CDK code;
another checkout's template (a redeploy's, ``LocalStack.redeploy``) comes from that checkout's own CDK app.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from batch_gateway.provider_specs import PROVIDERS

REPO_ROOT = Path(__file__).resolve().parents[3]
CACHE_DIR = REPO_ROOT / ".local"
# The local stack enables every provider (provider_specs.PROVIDERS) unless its context says otherwise: Bedrock needs
# no key, and the simulators stand in for all of them.
# Webhook URLs may use plain http to loopback here (decision 0071): the test receivers listen on 127.0.0.1.
LOCAL_CONTEXT: dict[str, Any] = {
    "nag": False,
    "providers": ",".join(PROVIDERS),
    "webhook_loopback_http": True,
}


def _fingerprint(context: dict[str, Any], root: Path = REPO_ROOT) -> str:
    """What the template of ``root`` (a checkout) depends on: the context, the CDK app's code and what it reads, and
    the locked CDK libraries."""
    digest = hashlib.sha256(json.dumps(context, sort_keys=True).encode())
    sources = [root / "cdk.json", root / "uv.lock", root / "src/batch_gateway/constants.py"]
    sources += [root / "src/batch_gateway/provider_specs.py"]  # the CDK app reads it too
    sources += sorted((root / "stacks").glob("*.py"))
    sources += sorted((root / "console").glob("*"))  # the console's build is named in the template (decision 0138)
    for path in sources:
        if path.is_file():  # a checkout from before provider_specs.py (or before console/)
            digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


# Synthesizes another checkout's CDK app (its stacks/ and cdk.json, its constants) in a process of its own, with this
# venv's interpreter and libraries: checkout.check_runnable holds its uv.lock to ours first.
_SYNTH_ELSEWHERE = """
import json, sys
from stacks.app_factory import synth_template
json.dump(synth_template(json.loads(sys.argv[1])), sys.stdout)
"""


def synthesized_template(context: dict[str, Any], root: Path = REPO_ROOT) -> dict[str, Any]:
    """Synthesize (about 5-10 s) or reuse the cached template for this exact CDK code and context (over
    ``LOCAL_CONTEXT``). ``root``: the checkout whose CDK app to synthesize (another release's, for a redeploy);
    every checkout's templates share this repository's cache."""
    context = {**LOCAL_CONTEXT, **context}
    root = Path(root).resolve()
    cache = CACHE_DIR / f"template-{_fingerprint(context, root)}.json"
    if cache.exists():
        cached: dict[str, Any] = json.loads(cache.read_text())
        return cached
    CACHE_DIR.mkdir(exist_ok=True)
    # One process synthesizes a template at a time; one that waited here reads what the other wrote (test workers
    # and local stacks starting together on a fresh clone each synthesized the same template).
    with open(cache.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if cache.exists():
            cached = json.loads(cache.read_text())
            return cached
        os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
        os.environ.setdefault("CDK_DISABLE_CLI_TELEMETRY", "true")
        if root == REPO_ROOT.resolve():
            from stacks.app_factory import synth_template  # importable in the dev venv: see dev-mode-dirs in pyproject

            template = synth_template(context)
        else:
            template = _synthesize_elsewhere(context, root)
        tmp = cache.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(template))
        tmp.replace(cache)
    return template


def _synthesize_elsewhere(context: dict[str, Any], root: Path) -> dict[str, Any]:
    from batch_gateway_dev.local.checkout import check_runnable

    check_runnable(root)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), str(root / "src")])}
    done = subprocess.run(
        [sys.executable, "-c", _SYNTH_ELSEWHERE, json.dumps(context)],
        cwd=root,
        env=env,
        capture_output=True,
        check=False,
    )
    if done.returncode:
        raise RuntimeError(f"cdk synth of {root} failed:\n{done.stderr.decode(errors='replace')[-4000:]}")
    template: dict[str, Any] = json.loads(done.stdout)
    return template


def _as_is(value: Any) -> Any:
    return value


@dataclass
class Function:
    logical_id: str
    handler: str
    environment: dict[str, Any]


@dataclass(frozen=True)
class GatewayResponse:
    """An ``AWS::ApiGateway::GatewayResponse``: what API Gateway answers instead of its default for one kind of its
    own errors (``status``: None keeps the default code; ``template``: the ``application/json`` body, None keeps
    the default body)."""

    status: int | None
    template: str | None
    headers: dict[str, str] = field(default_factory=dict)  # its static response headers (decision 0134)


@dataclass
class Preflight:
    """An ``OPTIONS`` method with a ``MOCK`` integration (CDK's ``add_cors_preflight``, decision 0134): its path, and
    the status and static headers of its integration response."""

    path: str
    status: int
    headers: dict[str, str]

    def match(self, path: str) -> bool:
        return Route("OPTIONS", self.path, "").match("OPTIONS", path) is not None


@dataclass
class Route:
    method: str  # or ANY
    path: str  # e.g. /batches/{id}/results, /openai/v1/{proxy+}
    function: str  # logical id
    authorization: str = "AWS_IAM"  # the method's AuthorizationType: AWS_IAM, CUSTOM or NONE
    authorizer: str | None = None  # CUSTOM: the authorizer function's logical id

    def match(self, method: str, path: str) -> dict[str, str] | None:
        """Path parameters when the request is this route's; ``{name+}`` is greedy (one or more segments)."""
        if self.method not in (method, "ANY"):
            return None
        pattern = re.escape(self.path)
        pattern = re.sub(r"\\{(\w+)\\\+\\}", r"(?P<\1>.+)", pattern)
        pattern = re.sub(r"\\{(\w+)\\}", r"(?P<\1>[^/]+)", pattern)
        found = re.match(r"\A" + pattern + r"\Z", path)
        return found.groupdict() if found else None

    @property
    def specificity(self) -> tuple[int, int, int]:
        """API Gateway picks the most specific route: literal paths before parameters before greedy ``{proxy+}``,
        and an exact method before ANY."""
        return ("+}" in self.path, self.path.count("{"), self.method == "ANY")


class Template:
    def __init__(self, template: dict[str, Any]) -> None:
        self.raw = template
        self.resources: dict[str, dict[str, Any]] = template["Resources"]

    def of_type(self, kind: str) -> dict[str, dict[str, Any]]:
        return {k: v for k, v in self.resources.items() if v["Type"] == kind}

    def functions(self) -> list[Function]:
        return [
            Function(k, v["Properties"]["Handler"], v["Properties"].get("Environment", {}).get("Variables", {}))
            for k, v in self.of_type("AWS::Lambda::Function").items()
            if str(v["Properties"].get("Handler", "")).startswith("lambdas.")
        ]

    def state_machine(self) -> tuple[str, Any]:
        [(logical_id, resource)] = self.of_type("AWS::StepFunctions::StateMachine").items()
        props = resource["Properties"]
        definition: str = props.get("DefinitionString") or json.dumps(props["Definition"])
        return logical_id, definition

    def gateway_responses(self, resolve: Callable[[Any], Any] = _as_is) -> dict[str, GatewayResponse]:
        """Response type (``AUTHORIZER_CONFIGURATION_ERROR``, ``DEFAULT_4XX``, ...) -> the API's gateway response;
        ``resolve``: the stack's resolver of the header values (a console origin is the distribution's domain)."""
        responses = {}
        for resource in self.of_type("AWS::ApiGateway::GatewayResponse").values():
            props = resource["Properties"]
            status = props.get("StatusCode")
            template = (props.get("ResponseTemplates") or {}).get("application/json")
            headers = {
                name.removeprefix("gatewayresponse.header."): str(resolve(value)).strip("'")
                for name, value in (props.get("ResponseParameters") or {}).items()
                if name.startswith("gatewayresponse.header.")
            }
            responses[str(props["ResponseType"])] = GatewayResponse(int(status) if status else None, template, headers)
        return responses

    def _path_of(self, ref: Any) -> str:
        api_resources = self.of_type("AWS::ApiGateway::Resource")
        if isinstance(ref, dict) and "Ref" in ref and ref["Ref"] in api_resources:
            props = api_resources[ref["Ref"]]["Properties"]
            return f"{self._path_of(props['ParentId'])}/{props['PathPart']}"
        return ""  # the API's root resource

    def preflights(self, resolve: Callable[[Any], Any] = _as_is) -> list[Preflight]:
        """The API's CORS preflight methods: ``OPTIONS`` with a ``MOCK`` integration whose one integration response
        sets static headers (``method.response.header.X: "'value'"``, resolved by ``resolve``)."""
        found = []
        for method in self.of_type("AWS::ApiGateway::Method").values():
            props = method["Properties"]
            integration = props.get("Integration") or {}
            if props["HttpMethod"] != "OPTIONS" or integration.get("Type") != "MOCK":
                continue
            [answer] = integration["IntegrationResponses"]
            headers = {
                name.removeprefix("method.response.header."): str(resolve(value)).strip("'")
                for name, value in (answer.get("ResponseParameters") or {}).items()
            }
            found.append(Preflight(self._path_of(props["ResourceId"]) or "/", int(answer["StatusCode"]), headers))
        return found

    def routes(self) -> list[Route]:
        path_of = self._path_of

        authorizers = self.of_type("AWS::ApiGateway::Authorizer")
        routes = []
        for method in self.of_type("AWS::ApiGateway::Method").values():
            props = method["Properties"]
            if props["HttpMethod"] == "OPTIONS":
                continue
            function = _function_in(props.get("Integration", {}).get("Uri"))
            if function:
                authorizer = (
                    props.get("AuthorizerId", {}).get("Ref") if isinstance(props.get("AuthorizerId"), dict) else None
                )
                authorizer_function = (
                    _function_in(authorizers[authorizer]["Properties"].get("AuthorizerUri"))
                    if authorizer in authorizers
                    else None
                )
                routes.append(
                    Route(
                        props["HttpMethod"],
                        path_of(props["ResourceId"]) or "/",
                        function,
                        authorization=str(props.get("AuthorizationType") or "NONE"),
                        authorizer=authorizer_function,
                    )
                )
        return sorted(routes, key=lambda route: route.specificity)


def _function_in(value: Any) -> str | None:
    """The Lambda logical id an integration URI points at."""
    if isinstance(value, dict):
        if "Fn::GetAtt" in value and value["Fn::GetAtt"][1] == "Arn":
            logical_id: str = value["Fn::GetAtt"][0]
            return logical_id
        for item in value.values():
            found = _function_in(item)
            if found:
                return found
    if isinstance(value, list):
        for item in value:
            found = _function_in(item)
            if found:
                return found
    return None


def resolve(value: Any, refs: dict[str, str], attrs: dict[tuple[str, str], str], pseudo: dict[str, str]) -> Any:
    """Resolve Ref, Fn::GetAtt, Fn::Join, Fn::Select, Fn::Split and Fn::Sub against the local resources."""
    if isinstance(value, list):
        return [resolve(v, refs, attrs, pseudo) for v in value]
    if not isinstance(value, dict):
        return value
    if "Ref" in value:
        name = value["Ref"]
        return pseudo.get(name) or refs.get(name) or f"local-{name}"
    if "Fn::GetAtt" in value:
        logical_id, attribute = value["Fn::GetAtt"]
        return attrs.get((logical_id, attribute)) or refs.get(logical_id) or f"local-{logical_id}-{attribute}"
    if "Fn::Join" in value:
        separator, parts = value["Fn::Join"]
        return separator.join(str(resolve(p, refs, attrs, pseudo)) for p in parts)
    if "Fn::Select" in value:  # CDK names an execution ARN's state machine with Select(6, Split(":", arn))
        index, items = value["Fn::Select"]
        return resolve(items, refs, attrs, pseudo)[int(index)]
    if "Fn::Split" in value:
        separator, text = value["Fn::Split"]
        return str(resolve(text, refs, attrs, pseudo)).split(separator)
    if "Fn::Sub" in value:
        text = value["Fn::Sub"] if isinstance(value["Fn::Sub"], str) else value["Fn::Sub"][0]
        return re.sub(
            r"\$\{([^}]+)\}",
            lambda m: str(
                pseudo.get(m.group(1)) or refs.get(m.group(1)) or attrs.get(tuple(m.group(1).split(".", 1)), "")
            ),
            text,
        )
    return {k: resolve(v, refs, attrs, pseudo) for k, v in value.items()}
