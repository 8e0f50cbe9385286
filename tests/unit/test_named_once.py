"""What is named twice drifts apart: the table schema, the Lambda context fake, the dev HTTP servers' plumbing, the
SigV4 header reader, test helpers and the simulator and AWS-account fixtures each have one definition."""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEV = ROOT / "src" / "batch_gateway_dev"


@functools.cache  # several tests read the same folders: each file is read once per worker
def _python(*folders: str) -> dict[str, str]:
    return {
        str(path.relative_to(ROOT)): path.read_text()
        for folder in folders
        for path in sorted((ROOT / folder).rglob("*.py"))
        # our code only: not what `make bench` or the venvs unpack below these folders (third-party packages)
        if path != Path(__file__).resolve() and not {".cache", "__pycache__", ".venv"} & set(path.parts)
    }


@functools.cache
def _tree(text: str) -> ast.Module:
    return ast.parse(text)


def _holding(pattern: str, *folders: str) -> set[str]:
    return {name for name, text in _python(*folders).items() if re.search(pattern, text)}


def test_the_table_schema_is_written_only_by_the_cdk_stack():
    """The local stack, the integration tests and the benchmarks create the table from the synthesized template."""
    assert _holding(r"\bKeyType\b|\bAttributeType\b", "src", "bench", "tests/integration", "tests/support") == set()


def test_one_lambda_context_fake():
    """The tests and benchmarks share one fake (a test may subclass it for a clock that runs out); the local stack's
    worker has the runtime's own context object."""
    contexts = [
        f"{name}::{node.name}"
        for name, text in _python("src", "bench", "tests").items()
        if "get_remaining_time_in_millis" in text  # a class that defines it names it: parse only those files
        for node in ast.walk(_tree(text))
        if isinstance(node, ast.ClassDef)
        and any(isinstance(f, ast.FunctionDef) and f.name == "get_remaining_time_in_millis" for f in node.body)
        and "FakeLambdaContext" not in map(ast.unparse, node.bases)
    ]
    assert contexts == [
        "src/batch_gateway_dev/local/lambda_worker.py::LambdaContext",
        "tests/support/lambda_context.py::FakeLambdaContext",
    ]
    assert _holding(r"\baws_request_id\s*=", "bench", "tests") == {"tests/support/lambda_context.py"}


def test_one_module_holds_the_dev_http_servers_plumbing():
    importing = _holding(r"(?m)^\s*(from http\.server import|import http\.server)", "src", "bench", "tests")
    assert importing == {"src/batch_gateway_dev/http_server.py"}


def test_one_reader_of_sigv4_credentials():
    readers = _holding(r"Credential=", "src", "tests/support", "bench")
    assert readers == {"src/batch_gateway_dev/sigv4.py"}, f"{readers}: use batch_gateway_dev.sigv4.parse_authorization"


def test_tests_import_helpers_from_the_support_package_not_from_conftest_or_other_tests():
    importing = _holding(
        r"from (tests\.[\w.]*)?conftest import|from \.conftest import|from tests\.\w+\.test_\w+ import", "tests"
    )
    assert importing == set(), importing
    helpers = {
        name: [node.name for node in _tree(text).body if isinstance(node, ast.ClassDef)]
        for name, text in _python("tests").items()
        if name.endswith("conftest.py")
    }
    assert {name: classes for name, classes in helpers.items() if classes} == {}


def _calls(node: ast.AST, callee: str) -> bool:
    return any(isinstance(c, ast.Call) and ast.unparse(c.func) == callee for c in ast.walk(node))


def _fixtures_calling(callee: str) -> list[str]:
    return [
        f"{name}::{node.name}"
        for name, text in _python("tests").items()
        for node in ast.walk(_tree(text))
        if isinstance(node, ast.FunctionDef)
        and any("fixture" in ast.unparse(d) for d in node.decorator_list)
        and _calls(node, callee)
    ]


# Test modules whose simulator or account is set up differently from the shared one, and why.
OWN_SETUP = {
    "tests/unit/test_simulator_bedrock.py::server": "a simulator that runs Bedrock jobs in a moto server",
    "tests/support/bedrock_stubs.py::stubbed_s3": "an empty account per test, for botocore Stubbers",
    "tests/unit/test_bedrock_planner.py::s3": "an empty account per test with only the staging bucket",
    "tests/unit/test_simulator_webhooks.py::pushing": "a simulator whose webhook push survives resets, so not "
    "the shared one",
}


def test_one_simulator_fixture_and_one_aws_account_fixture():
    """Every layer shares ``simulator``/``sim`` and ``moto_account`` (tests/support/fixtures.py, registered by the
    root conftest); no conftest and no test module starts its own, except the few set up differently on purpose."""
    simulators = [f for f in _fixtures_calling("SimulatorServer") if f not in OWN_SETUP]
    accounts = [f for f in _fixtures_calling("mock_aws") if f not in OWN_SETUP]
    assert simulators == ["tests/support/fixtures.py::simulator"]
    assert accounts == ["tests/support/fixtures.py::moto_account"]


def test_one_starter_of_the_local_aws_process_and_one_maker_of_iam_users_with_keys_in_the_tests():
    """Tests start moto's server (``batch_gateway_dev.local.aws_server``) and make IAM users with access keys through
    ``tests/support/local_aws.py``; the Bedrock service role and the stand-in for bedrock.amazonaws.com are made by
    ``tests/support/bedrock_account.py``. (The local stack in ``src`` starts its own, with the Lambda runtime.)"""
    # the process started as a module (`-m`): a test may still import the server's functions (its command parser)
    started = r"\"-m\",\s*\"batch_gateway_dev\.local\.aws_server\""
    assert _holding(started, "tests", "bench") == {"tests/support/local_aws.py"}
    assert _holding(r"\bcreate_access_key\(", "tests", "bench") == {"tests/support/local_aws.py"}
    assert _holding(r"service_user_name\(", "tests", "bench") == {"tests/support/bedrock_account.py"}
