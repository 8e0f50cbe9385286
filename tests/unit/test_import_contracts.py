"""The import rules of docs/architecture.md are contracts import-linter checks (`.importlinter`); `make test` runs
them here so CI refuses a change that breaks a layer, imports a provider SDK outside its adapter, lets the SDK load
server code, lets runtime code load dev tooling, or lets the CDK app load runtime code."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_every_import_contract_is_kept():
    lint_imports = Path(sys.executable).with_name("lint-imports")
    done = subprocess.run([str(lint_imports), "--no-cache"], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout


def test_the_contracts_cover_every_runtime_package():
    """A new top-level runtime package must be placed in the layers (or named as a leaf) on purpose."""
    config = (REPO / ".importlinter").read_text()
    runtime = REPO / "src" / "batch_gateway"
    packages = {p.stem for p in runtime.iterdir() if (p.is_dir() and (p / "__init__.py").exists()) or p.suffix == ".py"}
    packages -= {"__init__"}
    missing = {name for name in packages if f"batch_gateway.{name}" not in config}
    assert missing == set()


def _cycles(graph, package: str) -> list[list[str]]:
    """The strongly connected components of more than one module among ``package``'s modules (Tarjan, iterative)."""
    modules = sorted(m for m in graph.modules if m == package or m.startswith(package + "."))
    edges = {m: sorted(i for i in graph.find_modules_directly_imported_by(m) if i in modules) for m in modules}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in modules:
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            node, child = work.pop()
            if child == 0:
                index[node] = low[node] = len(index)
                stack.append(node)
                on_stack.add(node)
            if child < len(edges[node]):
                work.append((node, child + 1))
                nxt = edges[node][child]
                if nxt not in index:
                    work.append((nxt, 0))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return found


def test_no_module_of_the_runtime_is_in_an_import_cycle():
    """No import cycle anywhere in src/batch_gateway, counting imports inside functions too (grimp sees them): a
    cycle held together by a function-level import is still a cycle."""
    import grimp  # a test-only dependency, loaded by this test alone

    graph = grimp.build_graph("batch_gateway", include_external_packages=False)
    assert _cycles(graph, "batch_gateway") == []


def test_the_cycle_finder_finds_a_cycle():
    class Graph:
        modules = {"p", "p.a", "p.b", "p.c", "p.d"}
        imports = {"p.a": {"p.b"}, "p.b": {"p.c"}, "p.c": {"p.a"}, "p.d": {"p.a"}}

        def find_modules_directly_imported_by(self, module):
            return self.imports.get(module, set())

    assert _cycles(Graph(), "p") == [["p.a", "p.b", "p.c"]]
