"""One provider, one place (decision 0104): a provider's name is written as a string in its description
(``src/batch_gateway/provider_specs.py``), its adapter (``src/batch_gateway/providers/``), the CDK app's
configuration (``stacks/config.py``: the default context) and the tests, nowhere else. Every other table reads the
specs (``SPECS``, ``BY_NAME``, ``PROVIDERS``, ``ANTHROPIC.name``, ...), so a provider is added, or a table found, in
one place.

Checked on the syntax tree of every module of ``src/`` (the runtime and the dev tools: simulators, local stack),
``lambdas/``, ``stacks/`` and ``app.py``: a string constant that *is* a provider's name (``"openai"``), or that
quotes one (``"use provider 'anthropic'"``: a message citing it as a value). Docstrings and comments may name
providers. A name inside a longer string is not flagged: those are the outside world's spellings (``/openai/v1``, the
doors' paths; ``ANTHROPIC_BASE_URL``, an SDK's variable; ``anthropic.claude-...``, Bedrock's model ids; messages in
prose). ``bench/`` is not checked: like the tests, a benchmark names the provider it measures.
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Iterator
from pathlib import Path

from batch_gateway.provider_specs import PROVIDERS

ROOT = Path(__file__).resolve().parents[2]
SCANNED = ("src", "lambdas", "stacks", "app.py")
ALLOWED_PLACES = (
    "src/batch_gateway/provider_specs.py",  # each provider's one description
    "src/batch_gateway/providers/",  # the adapters: each speaks its provider's API
    "stacks/config.py",  # the CDK app's configuration (the default `providers` context)
)
# (file, where, string): a string equal to a provider's name that is not that name, and why. `where` is the enclosing
# function or class (dotted), or the name a module-level statement assigns.
NOT_PROVIDER_NAMES = {
    ("src/batch_gateway_dev/simulators/bedrock.py", "SIGNING_NAME", "bedrock"): "AWS's SigV4 signing name of the "
    "Bedrock APIs, which the Bedrock simulator checks a request's credential scope against: AWS's wire format, equal "
    "to our registration name by origin, not by reference",
    ("src/batch_gateway_dev/local/lambda_zygote.py", "SHARED_MODELS", "bedrock"): "botocore's service name of the "
    "Bedrock control plane, whose model the local Lambda workers' zygote parses once: an AWS service, like its "
    "neighbours dynamodb and s3 in that list",
}


def _modules() -> Iterator[Path]:
    for entry in SCANNED:
        path = ROOT / entry
        paths = [path] if path.is_file() else sorted(path.rglob("*.py"))
        for module in paths:
            if not {"__pycache__", ".venv", ".cache"} & set(module.relative_to(ROOT).parts):
                yield module


def _allowed_place(relative: str) -> bool:
    return any(relative == place or (place.endswith("/") and relative.startswith(place)) for place in ALLOWED_PLACES)


_QUOTED = re.compile(rf"(['\"])({'|'.join(map(re.escape, PROVIDERS))})\1")


def _names_in(value: str) -> set[str]:
    """The provider names a string constant is, or quotes."""
    found = {value} & set(PROVIDERS)
    found |= {match.group(2) for match in _QUOTED.finditer(value)}
    return found


class _Finder(ast.NodeVisitor):
    """Every string constant naming a provider, with where it is, docstrings (string statements) left out."""

    def __init__(self) -> None:
        self.found: list[tuple[int, str, str]] = []  # (line, where, name)
        self._where: list[str] = []

    def _scoped(self, name: str, node: ast.AST) -> None:
        self._where.append(name)
        self.generic_visit(node)
        self._where.pop()

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self._scoped(node.name, node)

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        self._scoped(node.name, node)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self._scoped(node.name, node)

    def visit_Module(self, node: ast.Module) -> None:
        for statement in node.body:
            targets: list[ast.expr] = []
            if isinstance(statement, ast.Assign):
                targets = statement.targets
            elif isinstance(statement, ast.AnnAssign):
                targets = [statement.target]
            name = ",".join(ast.unparse(target) for target in targets)
            if name:
                self._scoped(name, statement)
            else:
                self.visit(statement)

    def visit_Expr(self, node: ast.Expr) -> None:
        if not (isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)):  # not a docstring
            self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        value = node.value.decode(errors="replace") if isinstance(node.value, bytes) else node.value
        if isinstance(value, str):
            for name in sorted(_names_in(value)):
                self.found.append((node.lineno, ".".join(self._where), name))


@functools.cache  # two tests read it
def provider_literals() -> tuple[list[str], set[tuple[str, str, str]]]:
    """(``file:line: ...`` for each provider name written outside its places, the allowed exceptions met)."""
    offending: list[str] = []
    met: set[tuple[str, str, str]] = set()
    for module in _modules():
        relative = module.relative_to(ROOT).as_posix()
        if _allowed_place(relative):
            continue
        finder = _Finder()
        finder.visit(ast.parse(module.read_text(), filename=relative))
        for line, where, name in finder.found:
            if (relative, where, name) in NOT_PROVIDER_NAMES:
                met.add((relative, where, name))
            else:
                offending.append(f"{relative}:{line}: {name!r} in {where or 'the module'}")
    return offending, met


def test_no_provider_name_is_written_outside_its_spec_its_adapter_and_the_stack_configuration():
    offending, _ = provider_literals()
    assert offending == [], (
        "a provider's name written as a string; read it from batch_gateway.provider_specs (SPECS, BY_NAME, "
        "PROVIDERS, ANTHROPIC.name, ...) or put what it keys into the provider's spec:\n" + "\n".join(offending)
    )


def test_every_exception_is_still_needed():
    _, met = provider_literals()
    assert set(NOT_PROVIDER_NAMES) - met == set()


def test_the_check_sees_a_name_as_a_value_a_quoted_name_and_a_name_in_an_f_string_but_not_a_docstring():
    source = '''
"""The anthropic provider's module docstring: 'openai' is fine here."""
TABLE = {"openai": 1}


def check(provider):
    """'bedrock' in a docstring is fine."""
    if provider == b"google":
        raise ValueError(f"use provider 'anthropic' or \\"openai\\" for {provider}")
    return "/openai/v1", "ANTHROPIC_BASE_URL", "anthropic.claude-3", "an OpenAI model", "'bedrock\\""
'''
    finder = _Finder()
    finder.visit(ast.parse(source))
    assert finder.found == [
        (3, "TABLE", "openai"),
        (8, "check", "google"),
        (9, "check", "anthropic"),
        (9, "check", "openai"),
    ]
