"""Integer functions (`idiv`, `imod`/`%`, `bitand`, `bitor`, `bitxor`, `bitnot`, `shl`, `shr`) and the
`mode` aggregation, against direct Python answers: on random graphs (sparse IDs, several components,
isolated vertices, directed too) at every -O level, on 1, 2 and 3 ranks and on the CuPy stand-in."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from oracles import random_graph, vdict
from test_cupy_backend import same, standin
from test_mpi import HAVE_MPI

import g2pl
from g2pl.runtime import intops

ROOT = Path(__file__).resolve().parents[2]
I64 = 2**64


def wrap(x: int) -> int:
    """`x` as an int64 (two's complement, modulo 2**64)."""
    x %= I64
    return x - I64 if x >= 2**63 else x


def ref_idiv(a: int, b: int) -> int:
    return 0 if b == 0 else wrap(a // b)


def ref_mod(a: int, b: int) -> int:
    return a if b == 0 else a % b


def ref_shl(a: int, n: int) -> int:
    return wrap(a << min(n, 64)) if n >= 0 else a >> min(-n, 64)  # past 64 bits: all shifted out


def ref_shr(a: int, n: int) -> int:
    return a >> n if n >= 0 else ref_shl(a, -n)


EXTREMES = [0, 1, -1, 2, -2, 3, -7, 7, 63, 64, 65, -64, 2**62, 2**63 - 1, -(2**63), -(2**63) + 1]


@pytest.mark.parametrize("name", ["idiv", "mod", "shl", "shr", "bitand", "bitor", "bitxor"])
def test_int_functions_against_python_integers(name: str) -> None:
    rng = np.random.default_rng(3)
    a = np.array(EXTREMES + rng.integers(-(2**63), 2**63 - 1, 200, dtype=np.int64).tolist(), dtype=np.int64)
    bs = np.array(EXTREMES + list(range(-70, 71)) + rng.integers(-1000, 1000, 50).tolist(), dtype=np.int64)
    A, B = np.meshgrid(a, bs)
    got = intops.FUNCS[name](np, A.ravel(), B.ravel())
    ref = {"idiv": ref_idiv, "mod": ref_mod, "shl": ref_shl, "shr": ref_shr,
           "bitand": lambda x, y: x & y, "bitor": lambda x, y: x | y, "bitxor": lambda x, y: x ^ y}[name]
    want = [ref(int(x), int(y)) for x, y in zip(A.ravel(), B.ravel())]
    assert got.dtype == np.int64 and got.tolist() == want


def test_division_identity_and_bitnot() -> None:
    a = np.array(EXTREMES, dtype=np.int64)
    for b in EXTREMES:
        q = intops.idiv(np, a, b)
        r = intops.mod(np, a, b)
        assert (q * np.int64(b) + r == a).all()  # int64 arithmetic: wraps as the language does
    assert intops.bitnot(np, a).tolist() == [~int(x) for x in a]


INT_PROG = """
main(k: int) {
  Q = { idiv(id - 500, k) | v <- V };
  R = { imod(id - 500, k) | v <- V };
  P = { (id - 500) % k | v <- V };
  B = { bitxor(bitand(id, 255), bitor(shl(id, k), shr(id, k))) + bitnot(k) | v <- V };
  s = idiv(-7, 2) + 10 * (-7 % 2) + 100 * idiv(5, 0) + 1000 * imod(5, 0);
  return Q, R, P, B, s;
}
"""


@pytest.mark.parametrize("k", [3, -4, 0, 1, 70, -70])
@pytest.mark.parametrize("opt", [0, 2])
def test_int_functions_in_a_program(k: int, opt: int) -> None:
    t = random_graph(7, 200)
    res = g2pl.compile(INT_PROG, opt=opt).run(t.g, {"k": k})
    ids = sorted(t.G.nodes)
    assert vdict(res["Q"]) == {i: ref_idiv(i - 500, k) for i in ids}
    assert vdict(res["R"]) == {i: ref_mod(i - 500, k) for i in ids} == vdict(res["P"])
    assert vdict(res["B"]) == {i: wrap(((i & 255) ^ (ref_shl(i, k) | ref_shr(i, k))) + ~k) for i in ids}
    assert res["s"] == -4 + 10 * 1 + 0 + 1000 * 5


MODE_PROG = """
main() {
  S = { imod(id, 3) != 0 | v <- V };
  C = { imod(id, 7) | v <- V };
  M = { mode [ u | u <- nvals c ] | c <- C };
  F = { mode [ u | u <- nvals c, u in S ] | c <- C };
  B = { mode [ u > 3 | u <- nvals c ] | c <- C };
  O = { mode [ id[u] | u <- outnvals c ] | c <- C };
  g = mode [ c | c <- C ];
  h = mode [ c | c <- C, c > 100 ];
  e = mode [ C[u] * 10 + C[w] | (u, w) <- E ];
  r = min [ id | v <- V ];
  K = mode [ imod(u, 5) | (u, w) <- E ] by { r | v <- V }[u];
  T = mode [ imod(id, 4) | x <- V ] by [C[x], r];
  return M, F, B, O, g, h, e, K, T;
}
"""


def ref_mode(values, default):
    """Most frequent, ties to the smaller; `default` for none."""
    cnt = Counter(values)
    return min(cnt, key=lambda x: (-cnt[x], x)) if cnt else default


def mode_answers(G) -> dict:
    C = {v: v % 7 for v in G.nodes}
    S = {v: v % 3 != 0 for v in G.nodes}
    ins = G.predecessors if G.is_directed() else G.neighbors
    outs = G.successors if G.is_directed() else G.neighbors
    edges = [(a, b) if G.is_directed() else (min(a, b), max(a, b)) for a, b in G.edges]
    return {
        "M": {v: ref_mode([C[u] for u in ins(v)], 0) for v in G.nodes},
        "F": {v: ref_mode([C[u] for u in ins(v) if S[u]], 0) for v in G.nodes},
        "B": {v: ref_mode([C[u] > 3 for u in ins(v)], False) for v in G.nodes},
        "O": {v: ref_mode(list(outs(v)), -1) for v in G.nodes},
        "g": ref_mode(C.values(), 0),
        "h": 0,
        "e": ref_mode([C[a] * 10 + C[b] for a, b in edges], 0),
        # keyed: every edge's imod(u, 5) at the least ID (ties common: a mode of per-rank modes is wrong);
        # each vertex's imod(id, 4) at both its keys (C[x] names the vertex of that ID, if any)
        "K": {v: ref_mode([a % 5 for a, _ in edges], 0) if v == min(G.nodes) else 0 for v in G.nodes},
        "T": {v: ref_mode([x % 4 for x in G.nodes if v in (C[x], min(G.nodes))], 0) for v in G.nodes},
    }


def _check_mode(res, want) -> None:
    for name, w in want.items():
        got = res[name]
        if isinstance(got, list):  # a vertex set: its members
            assert sorted(got) == sorted(v for v, b in w.items() if b), name
            continue
        assert (vdict(got) if isinstance(w, dict) else got) == w, name


@pytest.mark.parametrize("directed", [False, True], ids=["undirected", "directed"])
@pytest.mark.parametrize("opt", [0, 1, 2])
def test_mode_against_direct_counting(opt: int, directed: bool) -> None:
    for seed in (1, 2):
        t = random_graph(seed + 60, 400, directed=directed)
        res = g2pl.compile(MODE_PROG, opt=opt).run(t.g)
        _check_mode(res, mode_answers(t.G))


def test_mode_runs_in_one_superstep_per_aggregation() -> None:
    prog = "main() { C = { imod(id, 5) | v <- V }; M = { mode [ u | u <- nvals c ] | c <- C }; return M; }"
    t = random_graph(3, 100)
    assert g2pl.compile(prog, opt=0).run(t.g).stats["supersteps"] == 2


def test_mode_on_the_cupy_standin_matches_numpy() -> None:
    t = random_graph(64, 300, directed=True)
    prog = g2pl.compile(MODE_PROG + INT_PROG.replace("main(", "ints("), opt=2)
    want = prog.run(t.g, entry="main")
    wi = prog.run(t.g, {"k": -3}, entry="ints")
    with standin():
        got = prog.run(t.g, entry="main", backend="cupy")
        gi = prog.run(t.g, {"k": -3}, entry="ints", backend="cupy")
    assert same(got.output()["values"], want.output()["values"])
    assert same(gi.output()["values"], wi.output()["values"])


@pytest.mark.skipif(not HAVE_MPI, reason="mpi4py/mpiexec not installed")
@pytest.mark.parametrize("n", [2, 3])
def test_mode_and_int_functions_across_ranks(tmp_path: Path, n: int) -> None:
    t = random_graph(65, 300)
    graph = tmp_path / "g.txt"
    graph.write_text("".join(f"{a} {b}\n" for a, b in t.G.edges))
    src = tmp_path / "p.g2pl"
    src.write_text(MODE_PROG)
    out = tmp_path / "o.json"
    for opt in ("-O0", "-O2"):
        subprocess.run([sys.executable, "-m", "g2pl.cli", "run", str(src), "--graph", str(graph), "--np", str(n),
                        opt, "--quiet", "--output", str(out)], check=True, cwd=ROOT)
        got = {v["name"]: v["value"] for v in json.loads(out.read_text())["values"]}
        G = t.G.subgraph([v for v in t.G.nodes if t.G.degree(v) > 0])  # the file has no isolated vertices
        _check_mode(got, mode_answers(G))


def test_the_tutorials_label_propagation_is_programs_lpa() -> None:
    import re

    text = (ROOT / "docs" / "tutorial.md").read_text()
    src = re.search(r"Save as `tut/lpa.g2pl`:\n\n```g2pl\n(.*?)```", text, re.S).group(1)
    g = g2pl.Graph.from_edges([1, 1, 2, 3, 4, 5, 6, 7, 7], [2, 3, 3, 4, 5, 6, 7, 4, 8])
    for rounds in (1, 2, 5):
        want = g2pl.compile(ROOT / "programs" / "lpa.g2pl").run(g, {"rounds": rounds})["L"]
        assert g2pl.compile(src).run(g, {"rounds": rounds})["L"] == want
    assert g2pl.compile(src).run(g, {"rounds": 1})["L"] == {  # as printed in the tutorial
        "1": 2, "2": 1, "3": 1, "4": 3, "5": 4, "6": 5, "7": 4, "8": 7}


@pytest.mark.parametrize("wide", [False, True], ids=["packed-keys", "two-sorts"])
def test_group_mode_kernel_against_counting(wide: bool) -> None:
    """Both paths of the kernel (one sort of packed keys; two stable sorts when values span too much)."""
    from g2pl.runtime.array_kernels import HostOps, group_mode

    rng = np.random.default_rng(4)
    n, k = 50, 2000
    owner = rng.integers(0, n - 5, k).astype(np.int64)  # the last receivers get nothing
    vals = rng.integers(-4, 5, k).astype(np.int64)
    if wide:
        vals = np.where(vals > 2, np.iinfo(np.int64).max - vals, np.where(vals < -2, np.iinfo(np.int64).min + 4 + vals, vals))
    mask = rng.random(k) < 0.8
    got = group_mode(HostOps, owner, vals, mask, n, "int")
    want = [ref_mode(vals[(owner == r) & mask].tolist(), 0) for r in range(n)]
    assert got.tolist() == want
    assert group_mode(HostOps, owner, vals > 0, None, n, "bool").tolist() == [
        ref_mode((vals[owner == r] > 0).tolist(), False) for r in range(n)]


def test_plan_and_explain_show_how_mode_is_reduced(tmp_path: Path, capsys) -> None:
    from g2pl.cli import g2pl_main

    src = tmp_path / "m.g2pl"
    src.write_text("main() {\n  M = { mode [ u | u <- nvals v ] | v <- V };\n  g = mode [ id | v <- V ];\n"
                   "  return M, g;\n}\n")
    assert g2pl_main(["plan", str(src)]) == 0
    plan = capsys.readouterr().out
    assert "M = mode of" in plan and "no combiner: each receiver counts its neighbours' values" in plan
    assert g2pl_main(["explain", str(src), "-O0"]) == 0
    text = capsys.readouterr().out
    assert "mode over in-neighbours -> M" in text and "no combiner: values counted per receiver" in text
    assert "each rank's (value, count) pairs, gathered by every rank and merged" in text
