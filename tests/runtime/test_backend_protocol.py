"""The Backend protocol (g2pl/runtime/backend.py) is exact: both backends implement every member with a
compatible signature, every member the runtime asks of a backend is declared, every declared member
is used, and the two backends answer a few calls of each member alike.

Without a GPU the CuPy backend runs over the strict NumPy stand-in for `cupy` (tests/strict_cupy, as
in tests/runtime/test_cupy_backend.py).
"""

from __future__ import annotations

import ast
import importlib.util
import inspect
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from g2pl.runtime import backend as B
from g2pl.runtime.array_kernels import HostOps
from g2pl.runtime.cupy_backend import CuPyBackend
from g2pl.runtime.numpy_backend import NumPyBackend

ROOT = Path(__file__).resolve().parents[2]
RUNTIME = ROOT / "g2pl" / "runtime"
STANDIN = Path(__file__).resolve().parents[1] / "strict_cupy"

#: how the runtime names a backend object: `bk`, `self.bk`, `rt.bk`, `self._bk`, `backend`; the shared
#: kernels (array_kernels.py) and the engine's generated-code handle call it `ops`
BACKEND_NAMES = {"bk", "_bk", "backend", "ops"}
#: the implementations themselves (their backend is `self`)
IMPLEMENTATIONS = {"numpy_backend.py", "cupy_backend.py"}
#: CuPy-only helpers: their backend object is a CuPyBackend (typed so), not any Backend
CUPY_ONLY = {"cupy_comm.py", "cupy_kernels.py"}
#: the kernels written once for any array module: their `ops` is a backend or HostOps (KernelOps)
SHARED_KERNELS = {"array_kernels.py"}


def _standin():
    spec = importlib.util.spec_from_file_location("strict_cupy_activate", STANDIN / "activate.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.standin


standin = _standin()


def members(proto: type) -> dict[str, Any]:
    """Name -> the protocol's declaration (a function, a property, or None for a plain attribute), over
    the protocol and the protocols it extends."""
    out: dict[str, Any] = {}
    for klass in reversed(proto.__mro__):
        if not getattr(klass, "_is_protocol", False) or klass.__module__ != B.__name__:
            continue
        for name in getattr(klass, "__annotations__", {}):
            out.setdefault(name, None)
        for name, value in vars(klass).items():
            if not name.startswith("__") and (inspect.isfunction(value) or isinstance(value, property)):
                out[name] = value
    return out


BACKEND = members(B.Backend)
KERNEL_OPS = members(B.KernelOps)
OPS = members(B.Ops)
SEGMENTS = members(B.Segments)
ROW_BLOCKS = members(B.RowBlocks)


@pytest.fixture(scope="module")
def numpy_bk() -> NumPyBackend:
    return NumPyBackend()


@pytest.fixture(scope="module")
def cupy_bk():
    with standin():
        yield CuPyBackend()


@pytest.fixture(params=["numpy", "cupy"])
def bk(request, numpy_bk, cupy_bk):
    if request.param == "numpy":
        yield numpy_bk
    else:
        with standin():
            yield cupy_bk


def _params(fn: Callable) -> list[inspect.Parameter]:
    ps = list(inspect.signature(fn).parameters.values())
    return ps[1:] if ps and ps[0].name in ("self", "cls") else ps


def _compatible(declared: Callable, implemented: Callable) -> str | None:
    """Why `implemented` (bound, or a static function) cannot stand for `declared`, or None: the same
    parameters in the same order, of the same kind and with the same defaults; any further parameters
    optional."""
    want, got = _params(declared), list(inspect.signature(implemented).parameters.values())
    if len(got) < len(want):
        return f"takes {len(got)} parameters, the protocol {len(want)}"
    for w, g in zip(want, got):
        if (w.name, w.kind) != (g.name, g.kind):
            return f"parameter {g.name} ({g.kind.name}) where the protocol has {w.name} ({w.kind.name})"
        if w.default is not inspect.Parameter.empty and w.default != g.default:
            return f"parameter {g.name} defaults to {g.default!r}, the protocol's to {w.default!r}"
    extra = [g.name for g in got[len(want):] if g.default is inspect.Parameter.empty and g.kind not in (
        inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)]
    return f"parameters {extra} the protocol does not pass" if extra else None


def _conforms(obj: object, decl: dict[str, Any]) -> list[str]:
    bad = []
    for name, d in decl.items():
        if not hasattr(obj, name):
            bad.append(f"{name}: missing")
        elif inspect.isfunction(d) and (why := _compatible(d, getattr(obj, name))):
            bad.append(f"{name}: {why}")
    return bad


# ---------------------------------------------------------------- (a) both backends implement every member


def test_the_protocol_declares_what_the_runtime_needs() -> None:
    assert {"graph_part", "staged", "host_int64", "rows_with_any", "xp", "name", "entry_block"} <= set(BACKEND)
    assert "row_any" not in BACKEND
    assert set(OPS) | set(KERNEL_OPS) <= set(BACKEND)


def test_numpy_backend_implements_every_member(numpy_bk) -> None:
    assert _conforms(numpy_bk, BACKEND) == []


def test_cupy_backend_implements_every_member(cupy_bk) -> None:
    with standin():
        assert _conforms(cupy_bk, BACKEND) == []


def test_host_ops_implement_what_the_shared_kernels_ask() -> None:
    assert _conforms(HostOps, KERNEL_OPS) == []


def test_segments_of_both_backends(bk) -> None:
    seg = bk.segments(bk.from_host(np.array([0, 2, 2, 5], dtype=np.int64)))
    assert _conforms(seg, SEGMENTS) == []
    if bk.entry_block:  # then the neighbourhood cuts rows in blocks
        assert _conforms(seg, ROW_BLOCKS) == []


# ---------------------------------------------------------------- (b) what the runtime calls is declared


def _attribute_uses(path: Path) -> dict[str, list[int]]:
    """Attribute name -> lines where it is read off a backend object (see BACKEND_NAMES)."""
    out: dict[str, list[int]] = {}
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Attribute):
            base = node.value
            name = base.id if isinstance(base, ast.Name) else base.attr if isinstance(base, ast.Attribute) else None
            if name in BACKEND_NAMES:
                out.setdefault(node.attr, []).append(node.lineno)
    return out


def _runtime_uses(files: set[str] | None = None, skip: set[str] = frozenset()) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for path in sorted(RUNTIME.glob("*.py")):
        if path.name in skip or (files is not None and path.name not in files):
            continue
        for attr, lines in _attribute_uses(path).items():
            out.setdefault(attr, []).extend(f"{path.name}:{n}" for n in lines)
    return out


def test_the_scan_sees_backend_calls() -> None:
    uses = _runtime_uses(skip=IMPLEMENTATIONS | CUPY_ONLY)
    assert {"nonzero", "item", "graph_part", "staged", "host_int64", "rows_with_any"} <= set(uses)


def test_every_member_the_runtime_calls_is_declared() -> None:
    uses = _runtime_uses(skip=IMPLEMENTATIONS | CUPY_ONLY | SHARED_KERNELS)
    undeclared = {a: w for a, w in uses.items() if a not in BACKEND}
    assert not undeclared, f"called on a backend but not in the Backend protocol: {undeclared}"


def test_the_shared_kernels_ask_only_kernel_ops() -> None:
    uses = _runtime_uses(files=SHARED_KERNELS)
    assert uses and set(uses) <= set(KERNEL_OPS), sorted(set(uses) - set(KERNEL_OPS))


def test_cupy_only_helpers_call_what_the_cupy_backend_has(cupy_bk) -> None:
    uses = _runtime_uses(files=CUPY_ONLY)
    with standin():
        assert [a for a in uses if not hasattr(cupy_bk, a)] == []


def test_every_declared_member_is_used() -> None:
    """By the runtime, or (the `Ops`) by generated code, which calls them as `ops.NAME`."""
    used = set(_runtime_uses(skip=IMPLEMENTATIONS))
    assert sorted(set(BACKEND) - used - set(OPS)) == []


# ---------------------------------------------------------------- (c) the backends answer alike


def _host(bk, x: Any) -> Any:
    if isinstance(x, (tuple, list)):
        return type(x)(_host(bk, v) for v in x)
    if isinstance(x, dict):
        return {k: _host(bk, v) for k, v in x.items()}
    return bk.to_host(x) if bk.is_array(x) or hasattr(x, "ndim") and not isinstance(x, np.generic) else x


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, (tuple, list)):
        return type(a) is type(b) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b, equal_nan=a.dtype.kind == "f")
    if isinstance(a, float) and isinstance(b, float) and np.isnan(a):
        return np.isnan(b)
    return type(a) is type(b) and a == b


def _graph_part(bk):
    from g2pl.graph import Graph
    from g2pl.runtime.partition import whole

    part = bk.graph_part(whole(Graph.from_edges([1, 1, 2, 7], [2, 3, 3, 1], weight=[1.0, 2.0, 0.5, 4.0])))
    return part.n, part.m, part.in_indptr, part.in_nbr, part.ids, part.weight, part.send_counts


def _staged(bk):
    from g2pl.runtime.comm import SingleComm

    comm = bk.staged(SingleComm())
    got, counts = comm.alltoallv(bk.from_host(np.array([4, 5, 6], dtype=np.int64)), np.array([3], dtype=np.int64))
    return got, counts


def _records(bk, a):
    rows = bk.pack_records([a([1, -2, 3]), a([True, False, True]), a([0.5, 1.5, -2.0])],
                           [(0, "int"), (8, "bool"), (9, "float")], 17, a([2, 0]))
    return rows, bk.unpack_field(rows, 0, "int"), bk.unpack_field(rows, 8, "bool"), bk.unpack_field(rows, 9, "float")


def _bits(bk, a):
    vals = a([True, False, True, True, False, False, True, True, True, False, True])
    counts = np.array([3, 0, 8], dtype=np.int64)
    data, nbytes = bk.packbits_segments(vals, counts)
    return data, nbytes, bk.unpackbits_segments(data, nbytes, counts)


def _segments(bk, a):
    seg = bk.segments(a([0, 2, 2, 5, 6]))
    vals = a([3.0, 1.0, 4.0, np.nan, 5.0, 9.0])
    mask = a([True, False, True, True, False, True])
    xp = bk.xp
    return (seg.n, seg.counts, seg.owner, seg.sum(vals), seg.count(mask), seg.reduce(xp.maximum, a([3, 1, 4, 1, 5, 9]), -1),
            seg.gather_reduce(xp.minimum, a([10, 20, 30, 40]), a([3, 1, 0, 2, 2, 1]), 99))


IDX = [3, 1, 0, 2, 2, 1]
INDPTR = [0, 2, 2, 5, 6]

#: member -> one or more calls of it, each `f(bk, a)` with `a(list)` making an array of the backend
CASES: dict[str, Callable[[Any, Callable], Any]] = {
    "xp": lambda bk, a: bk.xp.zeros(3, dtype=bk.xp.int64),
    "name": lambda bk, a: bk.name in ("numpy", "cupy"),
    "entry_block": lambda bk, a: bk.entry_block >= 0,
    "select": lambda bk, a: bk.select(a([True, False, True]), a([1.0, 2.0, 3.0]), a([-1.0, -2.0, -3.0])),
    "select_into": lambda bk, a: (bk.select_into(a([True, False, True]), a([1.0, 2.0, 3.0]), a([-1.0, -2.0, -3.0])),
                                  bk.select_into(a([False, True]), np.int64(7), a([1, 2]))),
    "to_int": lambda bk, a: (bk.to_int(a([1.5, -2.7, np.nan, 1e30, -1e30])), bk.to_int(a([True, False])),
                             bk.to_int(np.float64(-3.9))),
    "to_float": lambda bk, a: (bk.to_float(a([1, -2])), bk.to_float(np.int64(3))),
    "to_float32": lambda bk, a: (bk.to_float32(a([0.1, 1e39, -1e39, np.nan, 16777217.0])), bk.to_float32(a([True])),
                                 bk.to_float32(np.float64(0.1)), bk.to_float32(a([2**62 + 1]))),
    "narrow32": lambda bk, a: (bk.narrow32(a([0.1, 1e39, 5.0])), bk.narrow32(a([3]))),
    "mod": lambda bk, a: bk.mod(a([7, -7, 7, -2**63]), a([3, 3, 0, -1])),
    "idiv": lambda bk, a: bk.idiv(a([7, -7, 7, -2**63]), a([3, 3, 0, -1])),
    "bitand": lambda bk, a: bk.bitand(a([12, -1]), a([10, 5])),
    "bitor": lambda bk, a: bk.bitor(a([12, -1]), a([10, 5])),
    "bitxor": lambda bk, a: bk.bitxor(a([12, -1]), a([10, 5])),
    "bitnot": lambda bk, a: bk.bitnot(a([0, -1, 5])),
    "shl": lambda bk, a: bk.shl(a([1, -3, 5, 5]), a([3, 2, 64, -1])),
    "shr": lambda bk, a: bk.shr(a([-8, 8, -5, 5]), a([1, 70, 64, -2])),
    "dtype": lambda bk, a: [bk.dtype(e) for e in ("bool", "int", "float", "vid")],
    "is_array": lambda bk, a: (bk.is_array(a([1, 2])), bk.is_array(3), bk.is_array(np.int64(3))),
    "int64": lambda bk, a: (bk.int64(2**63), bk.int64(-5)),
    "graph_part": lambda bk, a: _graph_part(bk),
    "segments": _segments,
    "csr_matrix": lambda bk, a: bk.csr_matrix(a(INDPTR), a(IDX), 4, "f") @ a([1.0, 2.0, 4.0, 8.0]),
    # (rows in the columns' ID order; too few columns for blocks: the product as without them)
    "column_blocks": lambda bk, a: bk.csr_matrix(a(INDPTR), a(IDX), 4, "f",
                                                 bk.column_blocks(a(INDPTR), a(IDX), a([10, 40, 30, 5])))
                                   @ a([1.0, 2.0, 4.0, 8.0]),
    "transpose": lambda bk, a: bk.transpose(a(INDPTR), a(IDX), a([0, 1, 2, 3, 4, 5]), 4),
    "expand_ranges": lambda bk, a: bk.expand_ranges(a([5, 0, 9]), a([2, 0, 3])),
    # a compiled kernel's answer, or None where the backend has none: either is right
    "oriented_triangles": lambda bk, a: [_none_or(bk.oriented_triangles(a([0, 3, 5, 6, 6]), a([1, 2, 3, 2, 3, 3]), c), w)  # K4
                                         for c, w in ((True, [[2, 2, 2, 2, 2, 2]]),
                                                      (False, [[0, 0, 1, 3], [1, 2, 2, 4], [3, 4, 5, 5]]))],
    "scatter_argmin": lambda bk, a: _none_or(bk.scatter_argmin(a([[0, 2, 0, -1], [1, 0, 2, 2]]), a([3.0, 1.0, 1.0, 0.0]),
                                                               a([0, 1, 2, 3]), a([5, 4, 4, 9]), a([0, 0, 0, 0]), 4),
                                             [[0, 1, 2], [1, 0, 3]]),
    "plus_edge_reduce": lambda bk, a: [
        _none_or(bk.plus_edge_reduce(op, a(INDPTR), a(IDX), a([1.0, 2.0, 4.0, 8.0]), a([True, False, True, True]),
                                     a([0.5, 1.0, 2.0, 3.0, 4.0, 5.0]), eid, "float"), want)
        for op, eid, want in (("min", None, [[8.5, math.inf, 3.0, math.inf]]),
                              ("max", a([5, 4, 3, 2, 1, 0]), [[13.0, -math.inf, 6.0, -math.inf]]))],
    "pull_modes": lambda bk, a: [_none_or(bk.pull_modes(a(INDPTR), a(IDX), a([7, 5, 7, 9]), sent, "vid"), want)
                                 for sent, want in ((None, [[5, -1, 7, 5]]),
                                                    (a([True, True, True, False]), [[5, -1, 7, 5]]),
                                                    (a([False, True, False, False]), [[5, -1, -1, 5]]))],
    # senders 2 and 3 of the transposed CSR (INDPTR over 4 senders, receivers IDX, edges 5..0) push; none
    # reaches receiver 3
    "push_plus_edge": lambda bk, a: [
        _none_or(bk.push_plus_edge(op, a(INDPTR), a(IDX), a([5, 4, 3, 2, 1, 0]), a([2, 3]), a([1.0, 2.0, 4.0, 8.0]),
                                   a([0.5, 1.0, 2.0, 3.0, 4.0, 5.0]), 4, "float"), want)
        for op, want in (("min", [[7.0, 8.5, 5.0, math.inf]]), ("max", [[7.0, 8.5, 6.0, -math.inf]]))],
    "gather": lambda bk, a: bk.gather(a([10.0, 20.0, 30.0, 40.0]), a(IDX)),
    "take_into": lambda bk, a: _into(bk, a),
    "seg_reduce": lambda bk, a: [bk.seg_reduce(bk.segments(a(INDPTR)), op, a([3, 1, 4, 1, 5, 9]),
                                               a([True, True, False, True, True, True]), "int",
                                               a([30, 10, 0, 20, 20, 10]))
                                 for op in ("min", "max", "sum", "count", "avg", "argmin", "argmax", "mode")],
    "scatter_reduce": lambda bk, a: [bk.scatter_reduce(op, a([2, 0, 2, 1, 2]), a([5, 3, 1, 7, 1]),
                                                       a([True, True, True, False, True]), 4, "int",
                                                       a([50, 30, 10, 70, 11]))
                                     for op in ("min", "max", "sum", "count", "argmin")],
    "any_pull": lambda bk, a: (bk.any_pull(bk.segments(a(INDPTR)), a(IDX), a([False, False, True, False])),
                               bk.any_pull(bk.segments(a(INDPTR)), a(IDX), a([True, False, False, False]),
                                           rows=a([0, 3]))),
    "rows_with_any": lambda bk, a: bk.rows_with_any(a(INDPTR), a([0, 1, 3]), a(IDX), a([False, False, True, False])),
    "mean": lambda bk, a: bk.mean(a([3.0, 0.0, 5.0]), a([2, 0, 5])),
    "identity": lambda bk, a: [bk.identity(op, np.dtype(t)) for op in ("min", "max", "sum") for t in ("int64", "float64")],
    "empty_value": lambda bk, a: [bk.empty_value(op, e) for op in ("min", "max", "sum", "avg", "argmin", "and")
                                  for e in ("int", "float", "vid")],
    "value_counts": lambda bk, a: bk.value_counts(a([3, 1, 3, 2, 3, 1]), a([True, True, True, False, True, True])),
    "packbits_segments": _bits,
    "unpackbits_segments": _bits,
    "pack_records": _records,
    "unpack_field": _records,
    "partial": lambda bk, a: [bk.partial(op, a([2.0, -1.0, 5.0, -1.0]), a([True, True, False, True]), "float",
                                         a([40, 30, 20, 10]), "f")
                              for op in ("sum", "min", "max", "avg", "count", "argmin", "argmax", "pick")],
    "value_kind": lambda bk, a: [bk.value_kind(op, a([1.5]), "float") for op in ("sum", "count", "avg", "min")],
    "finish": lambda bk, a: bk.finish("avg", "float", "f", bk.partial("avg", a([2.0, 4.0]), None, "float", None, "f")),
    "host_int64": lambda bk, a: bk.host_int64([[1, 2], np.array([3, 4], dtype=np.int64)]),
    "uniform": lambda bk, a: (bk.uniform(7, 3, 0, a([0, 1, 2, 99])), bk.uniform(7, 3, 1, a([0, 1]), a([5, 6]))),
    "to_host": lambda bk, a: (bk.to_host(a([1, 2])), bk.to_host(5)),
    "from_host": lambda bk, a: bk.to_host(bk.from_host(np.array([1.5, 2.5]))),
    "staged": lambda bk, a: _staged(bk),
    "synchronize": lambda bk, a: bk.synchronize(),
    "memory_info": lambda bk, a: isinstance(bk.memory_info(), dict) and "device" in bk.memory_info(),
    "reset": lambda bk, a: bk.reset(),
    "item": lambda bk, a: (bk.item(a([4, 5]).sum()), bk.item(np.float64(1.5))),
    "nonzero": lambda bk, a: bk.nonzero(a([False, True, True, False, True])),
    "bincount": lambda bk, a: bk.bincount(a([1, 3, 3, 0]), minlength=6),
    "repeat": lambda bk, a: bk.repeat(a([7, 8, 9]), a([2, 0, 3])),
    "put_where": lambda bk, a: _put_where(bk, a),
    "at_minmax": lambda bk, a: _at_minmax(bk, a),
    "narrow_int32": lambda bk, a: (bk.narrow_int32(a([5, -7, 2**40, 3]), a([True, True, False, True]), 2**31 - 1),
                                   bk.narrow_int32(a([5, -7, 2**40]), None, 2**31 - 1) is None,
                                   bk.narrow_int32(a([5, -(2**31)]), a([True, True]), -(2**31)) is None),
    "widen_int32": lambda bk, a: bk.widen_int32(a(np.array([1, 2**31 - 1, -4, 2**31 - 1], dtype=np.int32)), 2**31 - 1,
                                                2**63 - 1),
}


def _none_or(got, want) -> bool:
    """`got` is None, or its arrays are `want`."""
    if got is None:
        return True
    if not isinstance(got, tuple):
        got = (got,)
    return [np.asarray(x).tolist() for x in got] == want


def _into(bk, a):
    out = a([0.0, 0.0, 0.0])
    bk.take_into(a([10.0, 20.0, 30.0, 40.0]), a([3, 0, 3]), out)
    return out


def _put_where(bk, a):
    arr = a([1, 2, 3, 4])
    bk.put_where(arr, a([True, False, True, False]), -1)
    return arr


def _at_minmax(bk, a):
    lo, hi = a([5.0, 5.0, 5.0]), a([1, 1, 1])
    bk.at_minmax("min", lo, a([0, 0, 2, 1]), a([3.0, 1.0, np.nan, 7.0]))
    bk.at_minmax("max", hi, a([0, 2, 2]), a([4, 9, 2]))
    return lo, hi


def test_every_member_has_a_case() -> None:
    assert sorted(set(BACKEND) - set(CASES)) == []


def _run(bk, case: Callable) -> Any:
    def a(values):
        return bk.from_host(np.array(values))

    return _host(bk, case(bk, a))


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # NaN in min/max and casts: on purpose
@pytest.mark.parametrize("name", sorted(CASES))
def test_both_backends_answer_alike(name: str, numpy_bk, cupy_bk) -> None:
    want = _run(numpy_bk, CASES[name])
    with standin():
        got = _run(cupy_bk, CASES[name])
    assert _same(want, got), (name, want, got)
