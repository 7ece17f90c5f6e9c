"""Dependencies inside a package point one way: no import cycle among its modules.

Every import counts, wherever it is written (a function's body, an `if TYPE_CHECKING:`
block): a cycle hidden in either is still two modules that need each other."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

GATE = Path(__file__).resolve().parent.parent / "gate"
ACYCLIC = ("screen", "audit")


def imports(path: Path, name: str, known: set[str]) -> set[str]:
    """The modules of `known` that module `name` (at `path`) imports (a package's
    submodules, not the package, when `from package import submodule` names them)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name in known)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            subs = {f"{module}.{a.name}" for a in node.names} & known
            out.update(subs)
            if module in known and len(subs) < len(node.names):
                out.add(module)
    return out - {name}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The graph's strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            part = []
            while (w := stack.pop()) != v:
                part.append(w)
            if part:
                found.append(sorted([v, *part]))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def graph_of(package: Path) -> dict[str, set[str]]:
    """Each module under `package` (a folder inside a source root) → the ones it imports."""
    files = {}
    for path in package.rglob("*.py"):
        parts = path.relative_to(package.parent.parent).with_suffix("").parts
        files[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return {name: imports(path, name, set(files)) for name, path in files.items()}


@pytest.mark.parametrize("package", ACYCLIC)
def test_no_import_cycle(package: str) -> None:
    found = cycles(graph_of(GATE / package))
    assert not found, f"modules of gate/{package} that import each other: {found}"


def test_a_cycle_is_found(tmp_path: Path) -> None:
    """The check sees a cycle written in a function's body or under TYPE_CHECKING."""
    pkg = tmp_path / "gate" / "demo"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("def f():\n    from gate.demo import b\n")
    (pkg / "b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from gate.demo.a import f\n"
    )
    (pkg / "c.py").write_text("from . import a\n")
    assert cycles(graph_of(pkg)) == [["gate.demo.a", "gate.demo.b"]]
