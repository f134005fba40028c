"""Float min/max on the CuPy backend are exact, as on the NumPy backend.

CuPy's own float64 `minimum.at`/`maximum.at` round every update through float32 (its atomicMin on
double calls fminf) and drop NaN; the strict stand-in reproduces that rounding, so a runtime path
that still relied on them would give wrong answers here.  The weights below differ only past
float32's 24-bit mantissa (1 + k * 2**-40): any float32 rounding makes them equal, changes which
edge wins, and shows up as an exact mismatch with the NumPy backend.
"""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import numpy as np
import pytest

import g2pl

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parents[1]  # tests/


def _standin():
    spec = importlib.util.spec_from_file_location("strict_cupy_activate", HERE / "strict_cupy" / "activate.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.standin


standin = _standin()


def _graph(directed: bool = False):
    """Non-contiguous IDs, two components, weights 1 + k * 2**-40 (equal in float32)."""
    rng = np.random.default_rng(11)
    ids = rng.choice(10**9, 160, replace=False)
    src, dst = [], []
    for part in (ids[:100], ids[100:150]):
        m = 4 * len(part)
        src += rng.choice(part, m).tolist()
        dst += rng.choice(part, m).tolist()
    w = 1.0 + rng.integers(0, 4096, len(src)) * 2.0**-40
    assert len(np.unique(w.astype(np.float32))) == 1  # float32 cannot tell them apart
    return g2pl.Graph.from_edges(np.array(src), np.array(dst), w, ids=ids, directed=directed), int(ids[0])


def _exact(a, b) -> bool:
    """Equal values, NaN equal to NaN, no tolerance."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_exact(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_exact(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    return a == b


MINMAX = """
main() {
  Lo = { min [ Weight[e] | (u, e) <- nvals v ] | v <- V };
  Hi = { max [ 0.0 - Weight[e] | (u, e) <- nvals v ] | v <- V };
  Arg = { argmin [ Weight[e] | (u, e) <- nvals v ] | v <- V };
  Key = min [ Weight[e] | (u, e, v) <- E ] by u;
  Light = argmin [ Weight[e] | (u, e, v) <- E ] by u;
  return Lo, Hi, Arg, Key, Light;
}
"""


@pytest.mark.parametrize("opt", [0, 2])
@pytest.mark.parametrize("name", ["sssp", "widest", "mst", "minmax"])
def test_float_min_max_on_the_standin_equal_numpy_exactly(name: str, opt: int) -> None:
    g, root = _graph()
    prog = g2pl.compile(MINMAX, opt=opt) if name == "minmax" else g2pl.compile(ROOT / "programs" / f"{name}.g2pl", opt=opt)
    args = {"root": root} if name in ("sssp", "widest") else {}
    want = prog.run(g, args=args, seed=3).output()["values"]
    with standin():
        got = prog.run(g, args=args, seed=3, backend="cupy", max_supersteps=10_000).output()["values"]
    assert _exact(got, want), name


def _backend(cp):
    from g2pl.runtime.cupy_backend import CuPyBackend

    bk = object.__new__(CuPyBackend)  # the stand-in has no device to pick: only the array module matters
    bk.xp, bk.syncs = cp, 0
    return bk


@pytest.mark.parametrize("op", ["min", "max"])
def test_at_minmax_is_exact_and_propagates_nan(op: str) -> None:
    rng = np.random.default_rng(2)
    vals = 1.0 + rng.integers(0, 64, 500) * 2.0**-40
    vals[rng.choice(500, 20, replace=False)] *= -1.0
    vals[:3] = [np.nan, -0.0, 0.0]
    vals[3:6] = [np.inf, -np.inf, 2.0**-1074]
    idx = rng.integers(0, 40, 500)
    idx[:3] = 7  # NaN, -0.0 and 0.0 at one receiver: NaN wins
    start = np.full(41, np.inf if op == "min" else -np.inf)
    want = start.copy()
    with np.errstate(invalid="ignore"):
        (np.minimum if op == "min" else np.maximum).at(want, idx, vals)
    with standin() as cp:
        out = cp.asarray(start)
        _backend(cp).at_minmax(op, out, cp.asarray(idx), cp.asarray(vals))
        got = out.get()
    assert np.array_equal(got, want, equal_nan=True)
    assert math.isnan(got[7]) and got[40] == start[40]


def test_the_standin_rounds_float_atomics_as_cupy_does() -> None:
    """The trap the runtime avoids: CuPy's float64 minimum.at goes through float32 and drops NaN."""
    with standin() as cp:
        out = cp.asarray(np.array([np.inf, np.inf, 5.0]))
        cp.minimum.at(out, cp.asarray(np.array([0, 1, 1])), cp.asarray(np.array([1.0 + 2.0**-40, np.nan, 3.0])))
        assert out.get().tolist() == [1.0, 3.0, 5.0]  # rounded; NaN dropped; the untouched kept
        ints = cp.asarray(np.array([2**60 + 1, 9], dtype=np.int64))
        cp.minimum.at(ints, cp.asarray(np.array([0])), cp.asarray(np.array([2**60 + 3], dtype=np.int64)))
        assert ints.get().tolist() == [2**60 + 1, 9]  # int64 atomics are exact


NAN_PROGRAM = """
main() {
  X = { (imod(id, 5) == 2) ? 0.0 / 0.0 : float(imod(id * 7, 11)) | v <- V };
  Few = { imod(id, 13) == 2 || imod(id, 13) == 3 | v <- V };
  Lo = { min [ X[x] | x <- nvals v ] | v <- V };
  Hi = { max [ X[x] | x <- nvals v, x in Few ] | v <- V };
  A = { argmin [ X[x] | x <- nvals v ] | v <- V };
  B = { argmax [ X[x] | x <- nvals v, x in Few ] | v <- V };
  return Lo, Hi, A, B;
}
"""


def _nan_reference(g) -> dict:
    """min/max propagate NaN; argmin/argmax: NaN values never win, ties to the smaller ID."""
    ids = [int(i) for i in g.ids]
    x = {i: (math.nan if i % 5 == 2 else float((i * 7) % 11)) for i in ids}
    few = {i for i in ids if i % 13 in (2, 3)}
    nbrs = {i: set() for i in ids}
    for a, b in zip(g.ids[g.src].tolist(), g.ids[g.dst].tolist()):
        nbrs[a].add(b)
        nbrs[b].add(a)

    def agg(vals, fn, empty):
        vals = list(vals)
        if not vals:
            return empty
        return math.nan if any(math.isnan(v) for v in vals) else fn(vals)

    def arg(cands, sign):
        good = [(sign * x[u], u) for u in cands if not math.isnan(x[u])]
        return min(good)[1] if good else -1

    return {
        "Lo": {str(i): agg((x[u] for u in nbrs[i]), min, math.inf) for i in ids},
        "Hi": {str(i): agg((x[u] for u in nbrs[i] if u in few), max, -math.inf) for i in ids},
        "A": {str(i): arg(nbrs[i], 1) for i in ids},
        "B": {str(i): arg([u for u in nbrs[i] if u in few], -1) for i in ids},
    }


@pytest.mark.parametrize("opt", [0, 2])
def test_nan_propagates_through_min_max_and_never_wins_an_argmin(opt: int) -> None:
    rng = np.random.default_rng(4)
    ids = rng.choice(10**6, 120, replace=False)
    src, dst = rng.choice(ids, 300), rng.choice(ids, 300)
    g = g2pl.Graph.from_edges(src, dst, ids=ids)
    prog = g2pl.compile(NAN_PROGRAM, opt=opt)
    want = _nan_reference(g)

    def values(res):
        return {v["name"]: {k: (math.nan if x == "nan" else math.inf if x == "inf" else -math.inf if x == "-inf" else x)
                            for k, x in v["value"].items()} for v in res.output()["values"]}

    assert _exact(values(prog.run(g)), want)
    with standin():
        assert _exact(values(prog.run(g, backend="cupy")), want)
