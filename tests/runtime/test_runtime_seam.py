"""The runtime seam: generated code speaks the runtime's verbs, the verbs speak the Backend protocol, and a
backend passed to the runtime is the one every verb uses."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import numpy as np
import pytest

import g2pl
from g2pl.runtime.numpy_backend import NumPyBackend

ROOT = Path(__file__).resolve().parents[2]
RUNTIME = ROOT / "g2pl" / "runtime"
PROGRAMS = sorted((ROOT / "programs").glob("*.g2pl"))

VERBS = {"vmap", "nbr_combine", "endpoints", "mark", "aggregate", "remote_request", "remote_reply", "rand",
         "barrier", "collect", "resume", "checkpoint", "common", "keyed"}
DATA = {"xp", "ops", "ids", "src_ids", "dst_ids", "ext_ids", "weight"}
VERB_MODULES = ("engine.py", "neighbourhood.py", "edges.py", "transport.py", "remote.py", "adjacency.py", "stats.py",
                "common_neighbours.py", "keyed.py")


@pytest.mark.parametrize("opt", [0, 1, 2])
def test_generated_code_calls_only_the_verbs(opt: int) -> None:
    """Every `rt.X` of generated code is a verb (or data), every verb is a method of the runtime, and
    the architecture document's verb table lists exactly them."""
    from g2pl.runtime.engine import Runtime

    used: set[str] = set()
    for path in PROGRAMS:
        code = g2pl.compile(path, opt=opt).python()
        used |= set(re.findall(r"\brt\.(\w+)", code))
    assert used - DATA <= VERBS, sorted(used - DATA - VERBS)
    assert all(callable(getattr(Runtime, v, None)) for v in VERBS)
    table = (ROOT / "docs" / "architecture.md").read_text().split("runtime verbs:")[1].split("Data the code reads")[0]
    first_cells = re.findall(r"^\| (.*?) \|", table, re.M)[1:]  # after the header
    assert VERBS == {v for cell in first_cells for v in re.findall(r"`(\w+)\(", cell)}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            out |= {f"{node.module}.{a.name}" for a in node.names} | {node.module or ""}
    return out


def _is_kernels(name: str) -> bool:
    """An import of the NumPy kernels (g2pl.runtime.kernels or a name from it)."""
    return name == "g2pl.runtime.kernels" or name.startswith("g2pl.runtime.kernels.")


@pytest.mark.parametrize("name", VERB_MODULES)
def test_verb_modules_name_no_array_library(name: str) -> None:
    """Only the backend knows NumPy: the verbs use `bk.xp` and the Backend's methods."""
    path = RUNTIME / name
    imports = _imports(path)
    assert not {i for i in imports if i.split(".")[0] in ("numpy", "scipy", "cupy")}, imports
    assert not {i for i in imports if _is_kernels(i)}, imports
    assert not re.search(r"\bnp\.", path.read_text())


def test_numpy_backend_is_the_only_runtime_importer_of_the_numpy_kernels() -> None:
    importers = {p.name for p in RUNTIME.glob("*.py") if any(_is_kernels(i) for i in _imports(p))}
    assert importers == {"numpy_backend.py"}, importers


class _Probe(NumPyBackend):
    """The NumPy backend, counting the primitives the verbs ask of it."""

    def __init__(self) -> None:
        self.calls: dict[str, int] = {}

    def __getattribute__(self, name: str):
        if not name.startswith("_") and name not in ("calls", "xp", "name"):
            calls = object.__getattribute__(self, "calls")
            calls[name] = calls.get(name, 0) + 1
        return object.__getattribute__(self, name)


@pytest.mark.parametrize("program, args", [("matching", {}), ("sssp", {"root": 14}), ("pagerank", {"iters": 5, "damping": 0.85})])
def test_a_backend_given_to_the_runtime_carries_every_run(program: str, args: dict) -> None:
    from g2pl.api import parse_args
    from g2pl.runtime.engine import Runtime

    g = g2pl.load_graph("ws:600:6:0.3", seed=2)
    prog = g2pl.compile(ROOT / "programs" / f"{program}.g2pl")
    argv = parse_args(prog.params(), {k: (int(g.ids[v]) if k == "root" else v) for k, v in args.items()},
                      prog.entry_name())
    mod = prog.load()
    want = mod.run(Runtime(g, mod, seed=3), argv)
    probe = _Probe()
    rt = Runtime(g, mod, seed=3, backend=probe)
    got = mod.run(rt, argv)
    assert [(n, k, e) for n, k, e, _v in got] == [(n, k, e) for n, k, e, _v in want]
    for (_n, _k, _e, a), (_n2, _k2, _e2, b) in zip(got, want):
        assert np.array_equal(np.asarray(a), np.asarray(b), equal_nan=np.asarray(a).dtype.kind == "f")
    assert rt.ops is probe and {"seg_reduce", "scatter_reduce", "dtype", "is_array"} & set(probe.calls)


@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: p.stem)
def test_a_finished_run_leaves_no_reference_cycles(path: Path) -> None:
    """The runtime, and every array it holds (presence bitmaps, views, buffers), is freed when the run
    returns, not at some later full garbage collection: a cycle left each run's arrays on the heap
    for the next runs to allocate around (repeated API runs on kron:18 grew the heap 19 MB a run and
    page-faulted fresh memory into their supersteps)."""
    import gc

    from program_args import program_args

    g = g2pl.load_graph("ws:300:6:0.3", seed=4)
    prog = g2pl.compile(path)
    args = program_args(path, int(g.ids[5]))
    prog.run(g, args=args, seed=1)
    gc.collect()
    gc.disable()
    try:
        gc.set_debug(gc.DEBUG_SAVEALL)
        prog.run(g, args=args, seed=1)
        gc.collect()
        left = [type(o).__name__ for o in gc.garbage]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
    assert left == []
