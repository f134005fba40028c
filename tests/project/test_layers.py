"""The package's layers, read from the source with `ast` (nothing is imported):

    cli       g2pl.cli, g2pl.notebook (and the notebook's documented names g2pl.magic, g2pl.lexer)
    api       g2pl (the package itself), g2pl.api, g2pl.compile_cache, g2pl.results
    compiler  g2pl.compiler  |  runtime  g2pl.runtime    (peers: neither imports the other)
    graph     g2pl.graph
    io        g2pl.io
    base      g2pl.contract, g2pl.errors, g2pl._ctrl_c    (they import no other g2pl module)

A module imports only from its own layer or lower ones; module-level imports form no cycle; an import
inside a function (lazy: kept out of start-up time) appears only in the cli and api layers and only
reaches lower layers.  An import under `if TYPE_CHECKING:` runs never: it may name its own layer or
lower ones and is left out of the cycle check.  The reaper (g2pl/runtime/reaper.py) runs as a script
without the package on its path: it imports the standard library only.
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PKG = ROOT / "g2pl"

#: (layer, rank, module name prefixes): a module belongs to the layer of its longest matching prefix
LAYERS: tuple[tuple[str, int, tuple[str, ...]], ...] = (
    ("cli", 5, ("g2pl.cli", "g2pl.__main__", "g2pl.notebook", "g2pl.magic", "g2pl.lexer")),
    ("api", 4, ("g2pl", "g2pl.api", "g2pl.compile_cache", "g2pl.results")),
    ("compiler", 3, ("g2pl.compiler",)),
    ("runtime", 3, ("g2pl.runtime",)),
    ("graph", 2, ("g2pl.graph",)),
    ("io", 1, ("g2pl.io",)),
    ("base", 0, ("g2pl.contract", "g2pl.errors", "g2pl._ctrl_c")),
)
RANK = {name: rank for name, rank, _ in LAYERS}
BASE = ("g2pl.contract", "g2pl.errors", "g2pl._ctrl_c")
LAZY_LAYERS = ("cli", "api")



def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES: dict[str, Path] = {_module_name(p): p for p in sorted(PKG.rglob("*.py")) if "__pycache__" not in p.parts}


def layer_of(module: str) -> str:
    best, size = None, -1
    for name, _rank, prefixes in LAYERS:
        for pre in prefixes:
            if (module == pre or module.startswith(pre + ".")) and len(pre) > size:
                best, size = name, len(pre)
    if best is None or (best == "api" and size == len("g2pl") and module != "g2pl"):
        raise AssertionError(f"{module} is in no layer: add it to LAYERS in tests/project/test_layers.py")
    return best


@dataclass(frozen=True)
class Import:
    importer: str
    target: str  # a g2pl module
    kind: str  # "module" (runs at import), "lazy" (inside a function), "typing" (under TYPE_CHECKING)
    line: int

    def __str__(self) -> str:
        return f"{MODULES[self.importer].relative_to(ROOT)}:{self.line}: {self.kind} import of {self.target}"


def _resolve(importer: str, node: ast.Import | ast.ImportFrom) -> list[str]:
    """The g2pl modules an import statement names (`from P import m` names the module P.m when it is one)."""
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    else:
        base = node.module or ""
        if node.level:  # relative: from the importer's package
            pkg = importer if MODULES[importer].name == "__init__.py" else importer.rpartition(".")[0]
            for _ in range(node.level - 1):
                pkg = pkg.rpartition(".")[0]
            base = f"{pkg}.{base}" if base else pkg
        names = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]
    out = []
    for name in names:
        while name and name not in MODULES:  # `import g2pl.x.y` of a name inside a module
            name = name.rpartition(".")[0]
        if name.split(".")[0] == "g2pl" and name:
            out.append(name)
    return out


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def imports_of(module: str) -> list[Import]:
    tree = ast.parse(MODULES[module].read_text(), str(MODULES[module]))
    out: list[Import] = []

    def walk(node: ast.AST, kind: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                out.extend(Import(module, t, kind, child.lineno) for t in _resolve(module, child))
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                walk(child, "typing" if kind == "typing" else "lazy")
            elif isinstance(child, ast.If) and _is_type_checking(child.test):
                for stmt in child.body:
                    walk(ast.Module(body=[stmt], type_ignores=[]), "typing")
                for stmt in child.orelse:
                    walk(ast.Module(body=[stmt], type_ignores=[]), kind)
            else:
                walk(child, kind)

    walk(tree, "module")
    return out


ALL_IMPORTS: list[Import] = sorted({i for m in MODULES for i in imports_of(m) if i.target != i.importer},
                                  key=lambda i: (i.importer, i.line, i.target))


def _problem(imp: Import) -> str | None:
    """Why this import breaks the layering, or None."""
    src, dst = layer_of(imp.importer), layer_of(imp.target)
    if imp.importer in BASE:
        return f"{imp.importer} imports no other g2pl module"
    if imp.kind == "lazy":
        if src not in LAZY_LAYERS:
            return f"imports inside functions are for start-up time, in the cli and api layers only ({src})"
        if RANK[dst] >= RANK[src]:
            return f"a lazy import reaches only lower layers ({src} -> {dst})"
        return None
    if dst != src and RANK[dst] >= RANK[src]:
        return f"{src} may not import {dst}"
    return None


def test_every_module_is_in_a_layer() -> None:
    assert len(MODULES) > 50
    for m in MODULES:
        layer_of(m)


@pytest.mark.parametrize("kind", ["module", "typing", "lazy"])
def test_imports_go_down_the_layers(kind: str) -> None:
    bad = [f"{i}: {why}" for i in ALL_IMPORTS if i.kind == kind and (why := _problem(i))]
    assert not bad, "\n".join(bad)


def test_base_modules_import_no_g2pl_module() -> None:
    for m in BASE:
        assert [str(i) for i in ALL_IMPORTS if i.importer == m] == []


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def test_module_level_imports_form_no_cycle() -> None:
    edges: dict[str, set[str]] = {}
    for i in ALL_IMPORTS:
        if i.kind == "module":
            edges.setdefault(i.importer, set()).add(i.target)
    assert _cycles(edges) == []


def test_cycle_check_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_the_reaper_imports_only_the_standard_library() -> None:
    tree = ast.parse((PKG / "runtime" / "reaper.py").read_text())
    names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    names |= {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and not n.level}
    assert {n.split(".")[0] for n in names} - {"__future__"} <= set(sys.stdlib_module_names), names


def test_runtime_names_no_cli_and_graph_names_no_runtime() -> None:
    """The two breaches this layering was made to end: runtime/launch.py starting `g2pl.cli`, and
    graph/memory.py reading the runtime allocator's private state."""
    for i in ALL_IMPORTS:
        assert not (layer_of(i.importer) == "runtime" and layer_of(i.target) == "cli"), str(i)
        assert not (layer_of(i.importer) == "graph" and layer_of(i.target) in ("runtime", "compiler")), str(i)


def test_the_ctrl_c_hook_finds_the_guard_where_it_lives() -> None:
    """g2pl/_ctrl_c.py (base layer: it imports nothing) names the CLI's `guard` by module and function
    name; moving `guard` must move that name too."""
    import argparse

    from g2pl import _ctrl_c
    from g2pl.cli.guard import guard

    seen = []
    assert guard(lambda _a: seen.append(_ctrl_c._under_guard(sys._getframe())) or 0, argparse.Namespace()) == 0
    assert seen == [True]
    assert not _ctrl_c._under_guard(sys._getframe())
