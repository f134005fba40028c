"""A run's Result keeps its values as arrays: JSON only on demand, byte-identical to the contract.

The oracle for the JSON shapes is written here from docs/language.md, "Output", alone (not with
g2pl.runtime.output), and the arrays are checked against networkx answers and
against a Result rebuilt from the JSON (the other code path of `array`).
"""

from __future__ import annotations

import json
import math
import pickle
from pathlib import Path

import networkx as nx
import numpy as np
import pytest
from oracles import random_graph, ref_bfs, ref_components

import g2pl
from g2pl import Graph, Result
from g2pl.cli.commands import _summarize
from g2pl.results.interop import result_summary, value_heads

PROGRAMS = Path(__file__).resolve().parents[2] / "programs"

MIXED = """
mixed(t: float) {
  Deg = { sum [ 1 | u <- nvals v ] | v <- V };
  Big = { d >= 2 | d <- Deg };
  H = { Weight[e] > t | (u, e, v) <- E };
  W = { Weight[e] * 2.0 | e <- E };
  R = { (d == 0) ? inf : 1.0 / d | d <- Deg };
  Z = { (d == 1) ? inf - inf : -inf | d <- Deg };
  P = { id | v <- V };
  n = count [ v | v <- V ];
  f = sum [ 1.5 | v <- V ];
  b = n > 3;
  return Deg, Big, H, W, R, Z, P, n, f, b;
}
"""


def _num(x, elem: str):
    if elem == "bool":
        return bool(x)
    if elem == "float":
        f = float(x)
        return "nan" if math.isnan(f) else ("inf" if f == math.inf else ("-inf" if f == -math.inf else f))
    return int(x)


def _spec_json(g: Graph, name: str, kind: str, elem: str, arr) -> dict:
    """Spec section 8, written out independently: sets as sorted ID lists / sorted pairs, graphs as
    {"id": value} / sorted [u, v, value] rows, non-finite floats as strings."""
    ids = [int(x) for x in g.ids]
    if kind == "scalar":
        value = _num(arr[()], elem)
    elif kind == "vertex":
        value = sorted(i for i, x in zip(ids, arr) if x) if elem == "bool" else \
            {str(i): _num(x, elem) for i, x in sorted(zip(ids, arr))}
    else:
        rows = sorted((ids[s], ids[d], x) for s, d, x in zip(g.src.tolist(), g.dst.tolist(), arr.tolist()))
        value = [[u, v] for u, v, x in rows if x] if elem == "bool" else [[u, v, _num(x, elem)] for u, v, x in rows]
    return {"name": name, "kind": kind, "type": elem, "value": value}


@pytest.fixture(scope="module")
def mixed():
    return g2pl.compile(MIXED)


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("directed", [False, True])
def test_arrays_and_json_match_the_spec(mixed, seed, directed):
    rg = random_graph(seed, 120, directed=directed, weighted=True)
    g = rg.g
    res = mixed.run(g, args={"t": 2.0})
    assert res.__dict__.get("_values") is None  # nothing converted yet
    kinds = res.kinds()
    assert [k[0] for k in kinds] == ["Deg", "Big", "H", "W", "R", "Z", "P", "n", "f", "b"]
    want = [_spec_json(g, n, k, e, res.array(n)) for n, k, e in kinds]
    assert json.dumps(res.output(), indent=1) == json.dumps({"entry": "mixed", "values": want}, indent=1)
    # the arrays against networkx, independently of g2pl's graph arrays
    G = rg.G
    deg = res.array("Deg")
    assert deg.dtype == np.int64 and deg.tolist() == [G.in_degree(int(i)) if directed else G.degree(int(i))
                                                      for i in res.ids]
    assert res.array("P").tolist() == sorted(G.nodes) == res.ids.tolist()
    assert res.array("n").shape == () and int(res.array("n")) == G.number_of_nodes()
    assert res.array("f").dtype == np.float64 and float(res.array("f")) == 1.5 * G.number_of_nodes()
    # the JSON path of `array` (a Result rebuilt from --output JSON) gives the same arrays
    back = Result(res.entry, json.loads(json.dumps(res.values)), res.stats, graph=g)
    for n, _k, _e in kinds:
        a, b = res.array(n), back.array(n)
        assert a.dtype == b.dtype and a.shape == b.shape, n
        np.testing.assert_array_equal(a, b, err_msg=n)
    assert back == res


def test_array_is_the_runs_own_array_and_read_only(mixed):
    g = Graph.from_edges([10, 10, 20, 30], [20, 30, 30, 40], weight=[1.0, 3.0, 5.0, 0.5])
    res = mixed.run(g, args={"t": 2.0})
    a = res.array("Deg")
    assert np.shares_memory(a, res.array("Deg"))  # no copy, no conversion
    assert not a.flags.writeable
    with pytest.raises(ValueError):
        a[0] = 7
    assert not res.ids.flags.writeable and not res.edge_ids[0].flags.writeable
    res.to_pandas()
    res.to_pandas("edge")
    result_summary(res)
    assert res.__dict__.get("_values") is None  # none of these made the JSON
    assert res["Deg"] == {"10": 2, "20": 2, "30": 3, "40": 1}
    assert set(res.__dict__["_json"]) == {"Deg"}  # `res[name]` converts that value only
    with pytest.raises(KeyError):
        res["nope"]
    with pytest.raises(KeyError, match="the result holds Deg"):
        res.array("nope")


def test_ids_is_an_attribute_as_on_graph(mixed):
    g = Graph.from_edges([10, 10, 20, 30], [20, 30, 30, 40], weight=[1.0, 3.0, 5.0, 0.5], ids=[99])
    res = mixed.run(g, args={"t": 2.0})
    np.testing.assert_array_equal(res.ids, g.ids)
    assert res.ids.dtype == np.int64 and res.ids.tolist() == [10, 20, 30, 40, 99]
    u, v = res.edge_ids
    assert u.tolist() == [10, 10, 20, 30] and v.tolist() == [20, 30, 30, 40]
    # the older method forms still work
    np.testing.assert_array_equal(res.ids(), g.ids)
    np.testing.assert_array_equal(res.ids(graph=g), g.ids)
    assert [x.tolist() for x in res.edge_ids(graph=g)] == [u.tolist(), v.tolist()]
    with pytest.raises(TypeError):
        (res.ids + 1)()  # a derived array is a plain array, not callable


def test_pickle(mixed):
    g = Graph.from_edges([10, 10, 20, 30], [20, 30, 30, 40], weight=[1.0, 3.0, 5.0, 0.5])
    res = mixed.run(g, args={"t": 2.0})
    assert len(res.edge_ids) == 2  # caches made before pickling do not get in the way
    back = pickle.loads(pickle.dumps(res))
    assert back == res and back.output() == res.output()
    np.testing.assert_array_equal(back.array("W"), res.array("W"))
    np.testing.assert_array_equal(back.ids, res.ids)
    pair = pickle.loads(pickle.dumps(res.edge_ids))
    assert type(pair) is tuple and [x.tolist() for x in pair] == [x.tolist() for x in res.edge_ids]


def test_summaries_from_arrays_equal_those_from_json():
    """The CLI summary and the notebook display read only the first entries of each array; they must
    show what the full JSON shows (the JSON-made Result is the oracle)."""
    for seed, directed in ((4, False), (5, True)):
        g = random_graph(seed, 150, directed=directed, weighted=True).g
        res = g2pl.compile(MIXED).run(g, args={"t": 1.0})
        fresh = g2pl.compile(MIXED).run(g, args={"t": 1.0})
        bare = Result(res.entry, res.values, fresh.stats, graph=g)  # the same run time in both summaries
        for limit in (0, 1, 3, 8, 1000):
            assert value_heads(fresh, limit) == value_heads(bare, limit), limit
        assert [_summarize(v, c) for v, c in value_heads(fresh, 8)] == [_summarize(v, c) for v, c in
                                                                        value_heads(bare, 8)]
        assert result_summary(fresh) == result_summary(bare)
        assert fresh.__dict__.get("_values") is None


@pytest.mark.parametrize("prog,seed", [("bfs", 11), ("cc", 12), ("matching", 13)])
def test_program_arrays_against_networkx(prog, seed):
    rg = random_graph(seed, 200)
    g, G = rg.g, rg.G
    root = int(g.ids[g.src[0]])
    res = g2pl.compile(PROGRAMS / f"{prog}.g2pl").run(g, args={"root": root} if prog == "bfs" else {})
    if prog == "bfs":
        ref = ref_bfs(G, root)
        assert res.array("Level").tolist() == [ref.get(int(i), -1) for i in res.ids]
    elif prog == "cc":
        ref = ref_components(G)
        assert res.array("L").tolist() == [ref[int(i)] for i in res.ids]
    else:
        u, v = res.edge_ids
        M = {(a, b) for a, b, on in zip(u.tolist(), v.tolist(), res.array("M").tolist()) if on}
        assert nx.is_maximal_matching(G, M)
        assert sorted(list(e) for e in M) == res["M"]
