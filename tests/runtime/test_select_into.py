"""`ops.select_into`: `X = { c ? e : x | x <- X }` written into X's own array only where nothing else
holds it, with `select`'s bits either way; the generated code that asks for it; programs whose old
value is still held elsewhere (a copy, a returned value, a checkpoint) keep it unchanged."""

from __future__ import annotations

import numpy as np
import pytest
from oracles import random_graph
from select_operands import operand

import g2pl
from g2pl.runtime import kernels as K
from g2pl.runtime.numpy_backend import NumPyBackend

OPS = NumPyBackend()
N = 3 * K.SELECT_BLOCK + 123  # several blocks and a short last one


def into(cond, a, box: list):
    """The generated code's call, `box`'s array (taken out of it) held by this frame's variable alone
    (or also by whoever else holds it)."""
    v_x = box.pop()
    return OPS.select_into(cond, a, v_x)


def addr(x: np.ndarray) -> int:
    return x.__array_interface__["data"][0]


def bits(x: np.ndarray) -> np.ndarray:
    return x.view(np.bool_) if x.dtype == np.bool_ else x.view(f"i{x.dtype.itemsize}")


@pytest.mark.parametrize("numba", ["0", "1"])
@pytest.mark.parametrize("density", [0.0, 0.001, 0.05, 0.3, 0.5, 0.97, 0.999, 1.0])
@pytest.mark.parametrize("kinds", [("s", "i8"), ("si", "i8"), ("i8", "i8"), ("sf", "f8"), ("snan", "f8"),
                                   ("f8", "f8"), ("i8", "f8"), ("s", "i4")])
def test_in_place_has_the_bits_of_where(monkeypatch, density, kinds, numba):
    """Every balance of the mask (the three ways of select, or the compiled conditional moves on
    threads where numba serves), scalar and array values, NaN payloads and signed zeros: the old array
    itself comes back, holding np.where's bits."""
    monkeypatch.setenv("G2PL_NUMBA", numba)
    monkeypatch.setenv("G2PL_THREADS", "3")
    rng = np.random.default_rng(int(density * 1000) + len(kinds[0]))
    cond = rng.random(N) < density
    a, x = operand(rng, kinds[0], N), operand(rng, kinds[1], N)
    want = np.where(cond, a, x)
    same_type, at = want.dtype == x.dtype, addr(x)
    got = into(cond, a, [x])  # x still held here: a new array
    assert addr(got) != at
    box = [x]
    del x
    got = into(cond, a, box)
    assert (addr(got) == at) == same_type
    assert got.dtype == want.dtype and np.array_equal(bits(got), bits(want))


def test_chains_of_updates_stay_in_place():
    """The select's own result (a view of its integer bits for floats) is updated in place next time."""
    rng = np.random.default_rng(5)
    v = K.select(rng.random(N) < 0.5, operand(rng, "f8", N), operand(rng, "f8", N))  # the blended path
    ref = v.copy()
    for density in (0.4, 0.002, 0.06, 0.5):
        cond = rng.random(N) < density
        vals = operand(rng, "f8", N)
        ref = np.where(cond, vals, ref)
        at, box = addr(v), [v]
        del v
        v = into(cond, vals, box)
        assert addr(v) == at and np.array_equal(bits(v), bits(ref))


def test_held_elsewhere_is_never_written():
    """Another variable, a view of it, a base it shares, a read-only or strided array: a new array, and
    the old one unchanged."""
    rng = np.random.default_rng(2)
    cond = rng.random(N) < 0.3

    def check(x: np.ndarray, keep: np.ndarray | None) -> None:
        """x held by a list and by `keep` (or x's memory under keep)."""
        old, at, kept = x.copy(), addr(x), None if keep is None else keep.copy()
        box = [x]
        del x
        got = into(cond, np.int64(9), box)
        assert addr(got) != at and np.array_equal(got, np.where(cond, 9, old))
        assert keep is None or np.array_equal(keep, kept)

    x = rng.integers(0, 5, N)
    check(x, x)  # a second variable
    x = rng.integers(0, 5, N)
    check(x, x[:10])  # a view of it
    del x
    whole = rng.integers(0, 5, 2 * N)
    check(whole[:N], whole)  # part of a larger array
    base = rng.integers(0, 5, N)
    check(base.view(np.int64), base.view(np.int64))  # a base another view shares
    del base
    ro = rng.integers(0, 5, N)
    ro.flags.writeable = False
    box = [ro]
    del ro
    got = into(cond, np.int64(9), box)
    assert not got.flags.writeable or got.base is None
    check(rng.integers(0, 5, 2 * N)[::2], None)  # strided


def test_other_types_and_shapes_get_a_new_array():
    rng = np.random.default_rng(3)
    cond = rng.random(N) < 0.3
    for a, x in [(2.5, rng.integers(0, 5, N)),  # a float into ints: the result is float
                 (True, rng.random(N) < 0.5),  # bools (edges.Members knows bool arrays by identity)
                 (np.arange(N - 1), rng.integers(0, 5, N))]:
        old, at = x.copy(), addr(x)
        box = [x]
        del x
        if np.ndim(a) and len(a) != N:
            with pytest.raises(ValueError):
                into(cond, a, box)
        else:
            got = into(cond, a, box)
            assert addr(got) != at and np.array_equal(got, np.where(cond, a, old))


BFS = "bfs(root: vid) {\n  F = { id == root | v <- V };\n  Seen = F;\n  Level = { (id == root) ? 0 : -1 | v <- V };\n" \
      "  d = 0;\n  while (F != empty) {\n    d = d + 1;\n    F = { or [ true | u <- nvals v, u in F ] | v <- V } \\ Seen;\n" \
      "    Seen = Seen || F;\n    Level = { (l in F) ? d : l | l <- Level };\n  }\n  return Level;\n}\n"


def test_generated_code_asks_for_it_from_O1():
    """`Level = { (l in F) ? d : l | l <- Level }`: select_into at -O1 and -O2, select at -O0; the
    mirrored form `X = c ? X : e` negates the condition; a select into another variable does not."""
    py = {opt: g2pl.compile(BFS, opt=opt, file="bfs.g2pl").python() for opt in (0, 1, 2)}
    assert "ops.select_into(v_F, v_d, v_Level)" in py[2] and "ops.select_into(v_F, v_d, v_Level)" in py[1]
    assert "select_into" not in py[0] and "ops.select(v_F, v_d, v_Level)" in py[0]
    src = "m(t: int) {\n  X = { int(id) | v <- V };\n  X = { x > t ? x : 0 | x <- X };\n" \
          "  Y = { x > t ? 1 : x | x <- X };\n  return X, Y;\n}\n"
    py = g2pl.compile(src, file="m.g2pl").python()
    assert "v_X = rt.vmap(ops.select_into(xp.logical_not((v_X > v_t)), np.int64(0), v_X)" in py
    assert "v_Y = rt.vmap(ops.select(" in py


ALIASED = """\
alias(k: int) {
  L = { int(id) | v <- V };
  Keep = L;
  Before = L;
  Grown = { false | v <- V };
  i = 0;
  while (i < k) {
    Before = L;
    L = { (x % 3 == i % 3) ? x * 2 + i : x | x <- L };
    Grown = { L[v] > Before[v] | v <- V };
    i = i + 1;
  }
  return Keep, L, Before, Grown;
}
"""


def _alias_oracle(ids: np.ndarray, k: int) -> tuple:
    L = ids.astype(np.int64)
    keep, before, grown = L, L, np.zeros(len(L), bool)
    for i in range(k):
        before = L
        L = np.where(L % 3 == i % 3, L * 2 + i, L)
        grown = L > before
    return keep, L, before, grown


@pytest.mark.parametrize("opt", [0, 2])
def test_values_held_by_other_variables_keep_their_old_contents(opt):
    """`Keep = L` and `Before = L` hold L's array when L is updated: they must not change with it."""
    g = random_graph(4, n=400, n_pieces=3).g
    res = g2pl.compile(ALIASED, opt=opt, file="alias.g2pl").run(g, {"k": 5})
    want = _alias_oracle(np.asarray(g.ids), 5)
    for name, w in zip(("Keep", "L", "Before", "Grown"), want):
        assert np.array_equal(res.array(name), w), name


def test_bfs_levels_with_updates_in_place(monkeypatch):
    """BFS, whose Level is updated in place, against networkx (the shipped programs on several ranks:
    tests/runtime/test_column_blocks.py and the equivalence tests)."""
    import networkx as nx

    rg = random_graph(7, n=3000, n_pieces=4)
    g = rg.g
    root = int(g.ids[0])
    blend, in_place = K._blend, []

    def seen(cond, a, b, out, dt):
        in_place.append(out is b)
        return blend(cond, a, b, out, dt)

    monkeypatch.setattr(K, "_blend", seen)
    res = g2pl.compile(BFS, file="bfs.g2pl").run(g, {"root": root})
    assert sum(in_place) >= 3  # every level after the first
    dist = nx.single_source_shortest_path_length(rg.G, root)
    want = np.array([dist.get(int(v), -1) for v in np.asarray(g.ids)])
    assert np.array_equal(res.array("Level"), want)
