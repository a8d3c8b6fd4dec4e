"""The package's layers: which part of kernelindex may import which, read from the source.

Every module under ``kernelindex/`` is parsed with ``ast``, so imports inside functions and
under ``if TYPE_CHECKING:`` count as much as those at the top. Each module belongs to a
package: ``kernelindex.store.run_queries`` to ``store``, ``kernelindex.compare`` to ``compare``.
The rules below say which other packages each may import; the package graph must have no
cycle; the web layer may hold a ``Session`` and map ``sqlalchemy.exc`` errors but builds no
SQL. The runner (``kernelindex.rerun``) is also checked at run time: loading it, every
implementation included, brings in nothing of the app.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "kernelindex"

# Leaves import nothing of the app, so every layer may use them.
LEAVES = frozenset(
    {
        "manifests",
        "ranking",
        "uncertainty",
        "slugs",
        "gpus",
        "gpu_specs",
        "paths",
        "settings",
        "urls",
        "figure_gate",
        "figures",
    }
)
# Pure domain modules over plain values, shared by the store and the pages.
DOMAIN = frozenset({"compare", "citations"})
# What each package may import besides itself. A package not named here is a failure of its own.
ALLOWED: dict[str, frozenset[str] | None] = {
    "kernelindex": frozenset(),  # kernelindex/__init__.py: the version only
    **{leaf: frozenset() for leaf in LEAVES},
    # Ranking speaks the manifests' vocabulary (a run's status); manifests import nothing, so no cycle.
    # and compares figures by their uncertainty (a leaf of plain arithmetic).
    "ranking": frozenset({"manifests", "uncertainty"}),
    "compare": LEAVES,
    "citations": LEAVES,
    "verify": LEAVES,  # checks a downloaded manifest; used by the command line only
    # A submitted run's document and its checks: pure, over the manifests and the figures' vocabulary.
    "submissions": LEAVES,
    # The GPU runner stands alone: it runs on a measurement machine without the app.
    "rerun": frozenset(),
    "db": LEAVES,
    "accounts": LEAVES | {"db"},
    # The store may verify bundles and read cases with the runner's pure pieces (no torch),
    # and hashes passwords with accounts.passwords (accounts imports only db and leaves).
    "store": LEAVES | DOMAIN | {"db", "rerun", "accounts", "submissions"},
    "ingest": LEAVES | {"store", "rerun"},
    # The rerun pages state the runner's own protocol constants, roofline assumption and
    # implementation registry; the runner imports nothing of the app, so this adds no cycle.
    "web": LEAVES | DOMAIN | {"store", "accounts", "rerun", "submissions"},
    # The client speaks the API's own models (``CLIENT_MODELS`` below), never the store's queries.
    "client": LEAVES | {"kernelindex", "store", "web"},
    # The query commands and the MCP server reach a registry through the client alone.
    "commands": LEAVES | {"client", "mcp_server"},
    "mcp_server": LEAVES | {"kernelindex", "client"},
    # The top: the command line and the app factory wire everything together.
    "cli": None,
    "app": None,
}


@dataclass(frozen=True)
class Import:
    """``from origin import name``, or ``import origin`` when ``name`` is None."""

    origin: str
    name: str | None

    @property
    def shown(self) -> str:
        return f"{self.origin}.{self.name}" if self.name else self.origin

    def target(self, known: Collection[str]) -> str:
        """The module imported: ``from kernelindex.web import accounts`` imports kernelindex.web.accounts."""
        return self.shown if self.name and self.shown in known else self.origin


def module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def modules() -> dict[str, Path]:
    return {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def package_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def imports_in(source: str, module: str, is_package: bool = False) -> list[Import]:
    """Every import in the source, wherever it stands (functions, ``if TYPE_CHECKING:``), made absolute."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [Import(alias.name, None) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            origin = node.module or ""
            if node.level:
                base = module.split(".")
                base = base[: len(base) - node.level + (1 if is_package else 0)]
                origin = ".".join([*base, node.module] if node.module else base)
            found += [Import(origin, alias.name) for alias in node.names]
    return found


@cache
def imports(module: str) -> list[Import]:
    path = modules()[module]
    return imports_in(path.read_text(encoding="utf-8"), module, path.name == "__init__.py")


def app_imports(module: str) -> Iterator[tuple[str, Import]]:
    """``(package, import)`` for each import of a kernelindex module."""
    for item in imports(module):
        target = item.target(modules())
        if target == "kernelindex" or target.startswith("kernelindex."):
            yield package_of(target), item


def test_imports_are_found_in_functions_and_under_type_checking() -> None:
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from kernelindex.db.tables import Run\n"
        "def f():\n"
        "    import kernelindex.ingest.runner\n"
        "    from ..store import reads\n"
        "    from . import format\n"
    )
    found = {item.shown for item in imports_in(source, "kernelindex.web.page")}
    assert found == {
        "typing.TYPE_CHECKING",
        "kernelindex.db.tables.Run",
        "kernelindex.ingest.runner",
        "kernelindex.store.reads",
        "kernelindex.web.format",
    }
    in_package = imports_in("from .tables import Run", "kernelindex.db", is_package=True)
    assert [item.shown for item in in_package] == ["kernelindex.db.tables.Run"]


def test_every_package_has_a_rule() -> None:
    packages = {package_of(module) for module in modules()}
    assert sorted(packages - ALLOWED.keys()) == []


def test_each_package_imports_only_the_layers_below_it() -> None:
    offending = []
    for module in modules():
        package = package_of(module)
        allowed = ALLOWED.get(package, frozenset())
        if allowed is None:
            continue
        offending += [
            f"{module}: {item.shown}"
            for target, item in app_imports(module)
            if target != package and target not in allowed
        ]
    assert offending == [], "imports across the layers:\n" + "\n".join(offending)


# The modules of the store and the web layer that define the models the API serves.
CLIENT_MODELS = frozenset(
    {
        "kernelindex.store.schemas",
        "kernelindex.store.workload_top",
        "kernelindex.web.api",
        "kernelindex.web.compare",
        "kernelindex.web.regressions",
    }
)


def test_the_client_imports_only_the_api_models_of_the_store_and_web() -> None:
    offending = [
        f"{module}: {item.shown}"
        for module in modules()
        if package_of(module) == "client"
        for target, item in app_imports(module)
        if target in {"store", "web"} and item.target(modules()) not in CLIENT_MODELS
    ]
    assert offending == [], "the client reaches past the API's models:\n" + "\n".join(offending)


def web_may_import(item: Import) -> bool:
    return (item.origin == "sqlalchemy.orm" and item.name == "Session") or (
        item.origin == "sqlalchemy.exc" or item.origin.startswith("sqlalchemy.exc.")
    )


def test_web_builds_no_sql() -> None:
    offending = [
        f"{module}: {item.shown}"
        for module in modules()
        if package_of(module) == "web"
        for item in imports(module)
        if item.origin.split(".")[0] == "sqlalchemy" and not web_may_import(item)
    ]
    assert offending == [], "SQLAlchemy beyond Session and sqlalchemy.exc in the web layer:\n" + "\n".join(offending)


@pytest.mark.parametrize(
    ("origin", "name", "allowed"),
    [
        ("sqlalchemy.orm", "Session", True),
        ("sqlalchemy.exc", "IntegrityError", True),
        ("sqlalchemy.exc", None, True),
        ("sqlalchemy.orm", "joinedload", False),
        ("sqlalchemy", "select", False),
        ("sqlalchemy", None, False),
    ],
)
def test_web_sqlalchemy_rule(origin: str, name: str | None, allowed: bool) -> None:
    assert web_may_import(Import(origin, name)) is allowed


def package_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {package_of(module): set() for module in modules()}
    for module in modules():
        package = package_of(module)
        graph[package] |= {target for target, _ in app_imports(module) if target != package}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one package (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for neighbour in sorted(graph.get(node, ())):
            if neighbour not in index:
                visit(neighbour)
                low[node] = min(low[node], low[neighbour])
            elif neighbour in stack:
                low[node] = min(low[node], index[neighbour])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_cycles_finds_a_loop_of_packages() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_packages_import_each_other_without_cycles() -> None:
    graph = package_graph()
    found = cycles(graph)
    described = [
        " ⇄ ".join(component)
        + ":\n    "
        + "\n    ".join(
            f"{module}: {item.shown}"
            for module in modules()
            if package_of(module) in component
            for target, item in app_imports(module)
            if target in component and target != package_of(module)
        )
        for component in found
    ]
    assert found == [], "import cycles between packages:\n" + "\n".join(described)


def test_runner_loads_nothing_from_the_app() -> None:
    code = (
        "import sys, kernelindex.rerun.measure, kernelindex.rerun.cli, kernelindex.rerun.bundle\n"
        "import kernelindex.rerun.ceilings, kernelindex.rerun.fma, kernelindex.rerun.timing\n"
        "from kernelindex.rerun.implementations import REGISTRY\n"
        "[impl.load() for impl in REGISTRY.values()]\n"
        "bad = [m for m in sys.modules if m.startswith('kernelindex.') and m.split('.')[1] != 'rerun']\n"
        "print(bad)\n"
    )
    env = dict(os.environ, PYTHONWARNINGS="error")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "[]"


def test_bundle_verification_loads_without_torch() -> None:
    code = "import sys, kernelindex.rerun.bundle, kernelindex.rerun.cli; print('torch' in sys.modules)"
    env = dict(os.environ, PYTHONWARNINGS="error")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "False", done.stderr  # the importer can verify bundles without torch
