"""Results out to NumPy / networkx / pandas (graphs in: `Graph.from_edges`, `from_networkx`,
`from_scipy`, in g2pl/graph/graph.py).

Out (a `Result` of `Program.run`)::

    res.ids                 # sorted original IDs, the order of every vertex array (as Graph.ids)
    res.array("Level")      # vertex graph -> values aligned with res.ids (the run's own array)
    res.array("S")          # vertex set  -> bool array aligned with res.ids
    res.edge_ids            # (u_ids, v_ids) of every edge, sorted; the order of every edge array
    res.array("M")          # edge set / edge graph -> aligned with res.edge_ids
    res.to_networkx()       # values as node / edge attributes (scalars in G.graph)
    res.to_pandas()         # one DataFrame: vertex values by id ("edge": by (u, v); "scalar": one row)

A run's `Result` keeps the returned values as arrays aligned with the graph it
ran on (returned.py), so these cost nothing or one pass over the arrays.
A `Result` can also be made from the JSON-shaped values of `--output` (docs/language.md,
"Output"). Those alone determine every vertex graph and edge graph
completely (they list every vertex / edge); a vertex *set* or edge *set*
lists only its members, so its bool array also needs the graph's full vertex
/ edge list. That comes, in this order, from the `graph=` argument, from
`Result.graph`, or from another vertex graph / edge graph in the same
result; otherwise a `G2PLError` says to pass `graph=`.

Orders: vertices ascend by original ID; edges ascend by (u, v), where on an
undirected graph u is the endpoint with the smaller original ID (docs/language.md, "Comprehensions") --
the same order as the JSON lists and as `Graph.src`/`Graph.dst`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from g2pl.errors import G2PLError
from g2pl.graph.graph import Graph

if TYPE_CHECKING:  # pragma: no cover
    from g2pl.api import Result

__all__ = [
    "result_ids",
    "result_edge_ids",
    "result_array",
    "result_to_networkx",
    "result_to_pandas",
    "result_summary",
    "value_heads",
]

_DTYPE = {"bool": np.bool_, "int": np.int64, "vid": np.int64, "float": np.float64}


# =========================================================================== results out


def _entry(res: Result, name: str) -> dict:
    for v in res.values:
        if v["name"] == name:
            return v
    names = ", ".join(v["name"] for v in res.values) or "nothing"
    raise KeyError(f"{name!r}: the result holds {names}")


def _label(res: Result) -> str:
    return f"result of `{res.entry}`"


def _graph(res: Result, graph: Graph | None) -> Graph | None:
    return graph if graph is not None else getattr(res, "graph", None)


def _frozen(arr: np.ndarray) -> np.ndarray:
    view = arr.view()
    view.flags.writeable = False
    return view


def _own(res: Result, name: str, graph: Graph | None) -> np.ndarray | None:
    """The run's own array of `name`, when the result holds arrays and `graph` is the one they are
    aligned with (None: answer from the JSON values, against `graph`)."""
    if res.returned is None or res.graph is None or (graph is not None and graph is not res.graph):
        return None
    for r in res.returned:
        if r.name == name:
            return r.data
    names = ", ".join(r.name for r in res.returned) or "nothing"
    raise KeyError(f"{name!r}: the result holds {names}")


class CallableIds(np.ndarray):
    """`Result.ids`: an array, as `Graph.ids` is; calling it (`res.ids()`, `res.ids(graph=g)`), the
    form from when it was a method, still works."""

    _res: Any = None

    @classmethod
    def wrap(cls, ids: np.ndarray, res: Result) -> CallableIds:
        out = ids.view(cls)
        out._res = res
        return out

    def __call__(self, graph: Graph | None = None) -> np.ndarray:
        if self._res is None:
            raise TypeError("'numpy.ndarray' object is not callable")
        return result_ids(self._res, graph)


class CallableEdgeIds(tuple):
    """`Result.edge_ids`: a (u_ids, v_ids) pair; calling it (`res.edge_ids(graph=g)`), the form from
    when it was a method, still works."""

    _res: Result

    def __new__(cls, pair: tuple[np.ndarray, np.ndarray], res: Result) -> CallableEdgeIds:
        out = super().__new__(cls, pair)
        out._res = res
        return out

    def __call__(self, graph: Graph | None = None) -> tuple[np.ndarray, np.ndarray]:
        return result_edge_ids(self._res, graph)

    def __reduce__(self):  # pickles as the plain pair
        return (tuple, (tuple(self),))


def _sorted_keys(d: dict) -> tuple[np.ndarray, np.ndarray]:
    """(ids ascending, positions of dict items in that order) for a JSON vertex-graph dict."""
    keys = np.fromiter((int(k) for k in d), dtype=np.int64, count=len(d))
    order = np.argsort(keys, kind="stable")
    return keys[order], order


def _values(vals: list, elem: str) -> np.ndarray:
    """JSON values -> a typed array ("inf"/"-inf"/"nan" strings become floats)."""
    if elem == "float":
        try:
            return np.asarray(vals, dtype=np.float64)
        except (TypeError, ValueError):
            return np.asarray(vals, dtype=object).astype(np.float64)  # float("inf") reads the strings
    return np.asarray(vals, dtype=_DTYPE[elem]).reshape(len(vals))


def _scalar(value: Any, elem: str) -> Any:
    return float(value) if elem == "float" else value


def result_ids(res: Result, graph: Graph | None = None) -> np.ndarray:
    """Every vertex's original ID, ascending: the order of vertex arrays (read-only)."""
    g = _graph(res, graph)
    if g is not None:
        return _frozen(np.asarray(g.ids, dtype=np.int64))
    for name, kind, elem in res.kinds():
        if kind == "vertex" and elem != "bool":
            return _sorted_keys(_entry(res, name)["value"])[0]
    raise G2PLError(
        "this result has no vertex graph listing every vertex; pass the graph: "
        "res.array(name, graph=g) / res.to_networkx(g) / res.to_pandas(graph=g), or set res.graph = g",
        file=_label(res)
    )


def result_edge_ids(res: Result, graph: Graph | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Every edge's endpoints (u_ids, v_ids), ascending by (u, v): the order of edge arrays."""
    g = _graph(res, graph)
    if g is not None:
        kept = res.__dict__.get("_edge_ids")
        if kept is not None and kept[0] is g:
            return kept[1]
        ids = np.asarray(g.ids, dtype=np.int64)
        pair = (_frozen(ids[g.src]), _frozen(ids[g.dst]))
        res.__dict__["_edge_ids"] = (g, pair)  # a gather over every edge: once per result and graph
        return pair
    for name, kind, elem in res.kinds():
        if kind == "edge" and elem != "bool":
            return _edge_graph_arrays(_entry(res, name))[:2]
    raise G2PLError(
        "this result has no edge graph listing every edge; pass the graph: "
        "res.array(name, graph=g) / res.to_networkx(g) / res.to_pandas(graph=g), or set res.graph = g",
        file=_label(res)
    )


def _edge_graph_arrays(v: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rows = v["value"]
    m = len(rows)
    u = np.fromiter((r[0] for r in rows), dtype=np.int64, count=m)
    w = np.fromiter((r[1] for r in rows), dtype=np.int64, count=m)
    x = _values([r[2] for r in rows], v["type"])
    if m > 1 and not bool(np.all((u[1:] > u[:-1]) | ((u[1:] == u[:-1]) & (w[1:] > w[:-1])))):
        order = np.lexsort((w, u))
        u, w, x = u[order], w[order], x[order]
    return u, w, x


def _edge_index(us: np.ndarray, vs: np.ndarray, qu: np.ndarray, qv: np.ndarray) -> np.ndarray:
    """Position of each query edge (qu, qv) in the edge list (us, vs); -1 if absent. Vectorized."""
    if us.size == 0:
        return np.full(qu.size, -1, dtype=np.int64)
    hi = int(max(us.max(), vs.max())) + 1
    if hi <= 3_037_000_499:  # (u, v) fits one int64 key
        key = us * hi + vs
        ok = (qu >= 0) & (qu < hi) & (qv >= 0) & (qv < hi)
        qkey = np.where(ok, qu, 0) * hi + np.where(ok, qv, 0)
    else:  # huge IDs: compare (u, v) records
        rec = np.dtype([("u", np.int64), ("v", np.int64)])
        key = np.empty(us.size, dtype=rec)
        key["u"], key["v"] = us, vs
        qkey = np.empty(qu.size, dtype=rec)
        qkey["u"], qkey["v"] = qu, qv
        ok = np.ones(qu.size, dtype=bool)
    if key.dtype.kind == "i" and bool(np.all(key[1:] > key[:-1])):  # edge lists come sorted
        order = None
        sk = key
    else:
        order = np.lexsort((vs, us))
        sk = key[order]
    pos = np.minimum(np.searchsorted(sk, qkey), sk.size - 1)
    found = ok & (sk[pos] == qkey)
    return np.where(found, pos if order is None else order[pos], -1)


def result_array(res: Result, name: str, graph: Graph | None = None) -> np.ndarray:
    """One returned value as a NumPy array.

    vertex graph -> values in `ids` order; vertex set -> bool membership in
    `ids` order; edge graph / edge set -> values / membership in
    `edge_ids` order; scalar -> a 0-d array. Types: bool, int64 (int and vid,
    -1 = no vertex), float64 (with inf / nan restored). A run's result answers with its own
    (read-only) array; one made from JSON converts the JSON values.
    """
    own = _own(res, name, graph)
    if own is not None:
        return own
    v = _entry(res, name)
    kind, elem, val = v["kind"], v["type"], v["value"]
    if kind == "scalar":
        return np.asarray(_scalar(val, elem), dtype=_DTYPE[elem])
    if kind == "vertex":
        if elem == "bool":
            ids = result_ids(res, graph)
            return np.isin(ids, np.asarray(val, dtype=np.int64))
        keys, order = _sorted_keys(val)
        out = _values(list(val.values()), elem)[order]
        g = _graph(res, graph)
        if g is not None and not np.array_equal(keys, g.ids):
            raise G2PLError(f"`{name}` does not cover the vertices of the graph given ({g.name})",
                            file=_label(res))
        return out
    us, vs = result_edge_ids(res, graph)
    if elem == "bool":
        pairs = np.asarray(val, dtype=np.int64).reshape(-1, 2)
        pos = _edge_index(us, vs, pairs[:, 0], pairs[:, 1])
        if bool((pos < 0).any()):
            i = int(np.argmax(pos < 0))
            raise G2PLError(f"`{name}` holds edge ({pairs[i, 0]}, {pairs[i, 1]}), which is not in the graph given",
                            file=_label(res))
        out = np.zeros(us.size, dtype=bool)
        out[pos] = True
        return out
    eu, ev, x = _edge_graph_arrays(v)
    if eu.size == us.size and np.array_equal(eu, us) and np.array_equal(ev, vs):
        return x
    raise G2PLError(f"`{name}` does not cover the edges of the graph given", file=_label(res))


def _optional(module: str, what: str) -> Any:
    """An optional package, or a G2PLError naming the command that installs it (the name `g2pl` on PyPI
    is another project, so the hint is never `pip install g2pl[...]`)."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise G2PLError(f"{what} needs {module}; install it with `pip install {module}`") from None


def _python(x: np.ndarray) -> list:
    return x.tolist()


def result_to_networkx(res: Result, graph: Graph | None = None) -> Any:
    """A networkx graph carrying the returned values as attributes.

    Vertex graphs / sets become node attributes (sets as True/False), edge
    graphs / sets edge attributes, scalars entries of `G.graph`. With a graph
    (argument or `Result.graph`) every vertex and edge is included and edges
    carry `weight` when the input had weights; without one, the nodes and
    edges are those the values list. Directed iff the run's graph was.
    """
    nx = _optional("networkx", "Result.to_networkx()")
    g = _graph(res, graph)
    directed = g.directed if g is not None else bool(res.stats.get("graph", {}).get("directed", False))
    G = nx.DiGraph() if directed else nx.Graph()
    G.graph["entry"] = res.entry
    if g is not None:
        G.graph["name"] = g.name
        G.add_nodes_from(_python(g.ids))
        us, vs = result_edge_ids(res, g)
        if g.weighted:
            G.add_weighted_edges_from(zip(_python(us), _python(vs), _python(g.weight)))
        else:
            G.add_edges_from(zip(_python(us), _python(vs)))
    else:  # the nodes and edges that the values list
        for name, kind, elem in res.kinds():
            if kind == "scalar":
                continue
            val = _entry(res, name)["value"]
            if kind == "vertex":
                G.add_nodes_from(int(x) for x in (val if elem == "bool" else val.keys()))
            else:
                G.add_edges_from((int(r[0]), int(r[1])) for r in val)
    for name, kind, elem in res.kinds():
        if kind == "scalar":
            G.graph[name] = result_array(res, name, g)[()].item()
        elif kind == "vertex":
            if g is None and elem == "bool":  # members True, the other nodes listed False
                members = set(_entry(res, name)["value"])
                attrs = {x: x in members for x in G.nodes}
            else:
                ids = result_ids(res, g) if g is not None else _sorted_keys(_entry(res, name)["value"])[0]
                attrs = dict(zip(_python(ids), _python(result_array(res, name, g))))
            nx.set_node_attributes(G, attrs, name)
        else:
            if g is None and elem == "bool":
                members = {(int(a), int(b)) for a, b in _entry(res, name)["value"]}
                attrs = {(a, b): ((a, b) if directed or a <= b else (b, a)) in members for a, b in G.edges}
            else:
                if g is not None:
                    us, vs = result_edge_ids(res, g)
                    x = result_array(res, name, g)
                else:
                    us, vs, x = _edge_graph_arrays(_entry(res, name))
                attrs = dict(zip(zip(_python(us), _python(vs)), _python(x)))
            nx.set_edge_attributes(G, attrs, name)
    return G


KINDS = ("vertex", "edge", "scalar")


def result_to_pandas(res: Result, kind: str | None = None, graph: Graph | None = None) -> Any:
    """The returned values of one kind as one pandas DataFrame.

    `"vertex"`: indexed by original ID (`id`), a column per vertex graph or set;
    `"edge"`: indexed by (`u`, `v`), a column per edge graph or set; `"scalar"`:
    one row (indexed by the procedure's name), a column per scalar. `kind=None`
    picks the first of those the result has (vertex values in most programs).
    """
    pd = _optional("pandas", "Result.to_pandas()")
    present = [k for k in KINDS if any(kd == k for _n, kd, _e in res.kinds())]
    if kind is None:
        kind = present[0] if present else "scalar"
    if kind not in KINDS:
        raise G2PLError(f"to_pandas: unknown kind {kind!r}; expected one of {', '.join(KINDS)}",
                        file=_label(res))
    names = [n for n, kd, _e in res.kinds() if kd == kind]
    cols = {n: result_array(res, n, graph) for n in names}
    if kind == "vertex":
        return pd.DataFrame(cols, index=pd.Index(result_ids(res, graph), name="id"))
    if kind == "edge":
        us, vs = result_edge_ids(res, graph)
        return pd.DataFrame(cols, index=pd.MultiIndex.from_arrays([us, vs], names=["u", "v"]))
    return pd.DataFrame({n: a.reshape(1) for n, a in cols.items()}, index=pd.Index([res.entry], name="entry"))


def value_heads(res: Result, limit: int) -> list[tuple[dict, int]]:
    """Per returned value: its --output entry with only the first `limit` entries of its value, and
    the number of entries the whole value lists -- what a summary shows, made without converting
    every value of a run's result to JSON."""
    out = []
    g = res.graph
    if res.returned is not None and g is not None and res.__dict__.get("_values") is None:
        for r in res.returned:
            out.append(({"name": r.name, "kind": r.kind, "type": r.type, "value": r.json_head(g, limit)},
                        r.count()))
        return out
    for v in res.values:
        val = v["value"]
        if v["kind"] == "scalar":
            out.append((v, 1))
        elif v["kind"] == "vertex" and v["type"] != "bool":
            out.append((dict(v, value=dict(list(val.items())[:limit])), len(val)))
        else:
            out.append((dict(v, value=val[:limit]), len(val)))
    return out


def result_summary(res: Result, limit: int = 6) -> str:
    """A few lines describing a result (used for the notebook display)."""
    lines = [f"<g2pl Result of `{res.entry}`>"]
    for v, count in value_heads(res, limit):
        kind, elem, name, val = v["kind"], v["type"], v["name"], v["value"]
        more = ", ..." if count > limit else ""
        if kind == "scalar":
            lines.append(f"  {name} ({elem}) = {val}")
        elif kind == "vertex" and elem == "bool":
            head = ", ".join(map(str, val[:limit])) + more
            lines.append(f"  {name} (vertex set) = {count} vertices {{{head}}}")
        elif kind == "vertex":
            head = ", ".join(f"{k}: {x}" for k, x in list(val.items())[:limit]) + more
            lines.append(f"  {name} (vertex graph of {elem}) = {{{head}}}")
        elif elem == "bool":
            head = ", ".join(f"({a},{b})" for a, b in val[:limit]) + more
            lines.append(f"  {name} (edge set) = {count} edges {{{head}}}")
        else:
            head = ", ".join(f"({a},{b}): {x}" for a, b, x in val[:limit]) + more
            lines.append(f"  {name} (edge graph of {elem}) = {{{head}}}")
    st = res.stats or {}
    if "supersteps" in st:
        lines.append(f"  stats: {st['supersteps']} supersteps, {st.get('messages', '?')} messages, "
                     f"{st.get('time_s', 0.0):.3f} s")
    return "\n".join(lines)
