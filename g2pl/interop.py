"""Interoperability: graphs in from NumPy / networkx / SciPy, results out to NumPy / networkx / pandas.

In::

    g = Graph.from_edges([10, 10, 42], [42, 7, 7])          # original IDs, any non-negative ints
    g = Graph.from_networkx(nx_graph)                         # int nodes; isolated nodes kept
    g = Graph.from_scipy(adjacency)                           # row/col index = vertex ID, value = weight

Out (a `Result` of `Program.run`)::

    res.ids()               # sorted original IDs, the order of every vertex array
    res.array("Level")      # vertex graph -> values aligned with res.ids()
    res.array("S")          # vertex set  -> bool array aligned with res.ids()
    res.edge_ids()          # (u_ids, v_ids) of every edge, sorted; the order of every edge array
    res.array("M")          # edge set / edge graph -> aligned with res.edge_ids()
    res.to_networkx(graph)  # values as node / edge attributes (scalars in G.graph)
    res.to_pandas()         # {"vertex": DataFrame, "edge": DataFrame, "scalar": Series}

A `Result` holds the JSON-shaped values of `--output` (docs/language.md, "Output"). Those
alone determine every vertex graph and edge graph completely (they list every
vertex / edge); a vertex *set* or edge *set* lists only its members, so its
bool array also needs the graph's full vertex / edge list. That comes, in this
order, from the `graph=` argument, from `Result.graph` (set by `Program.run`
when it passes the graph), or from another vertex graph / edge graph in the
same result; otherwise a `G2PLError` says to pass `graph=`.

Orders: vertices ascend by original ID; edges ascend by (u, v), where on an
undirected graph u is the endpoint with the smaller original ID (docs/language.md, "Comprehensions") --
the same order as the JSON lists and as `Graph.src`/`Graph.dst`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from g2pl.errors import G2PLError
from g2pl.graph.graph import Graph, build_graph

if TYPE_CHECKING:  # pragma: no cover
    from g2pl.api import Result

__all__ = [
    "from_edges",
    "from_networkx",
    "from_scipy",
    "result_ids",
    "result_edge_ids",
    "result_array",
    "result_to_networkx",
    "result_to_pandas",
    "result_summary",
]

_DTYPE = {"bool": np.bool_, "int": np.int64, "vid": np.int64, "float": np.float64}


# =========================================================================== graphs in


def from_edges(src: Any, dst: Any, weight: Any = None, directed: bool = False, name: str = "edges",
               ids: Any = None) -> Graph:
    """A `Graph` from two arrays (or lists) of original vertex IDs, one entry per edge.

    `weight` is an optional array of non-negative weights (one per edge);
    `ids` optionally lists extra vertices that exist even if isolated.
    Self-loops are dropped and duplicates merged (smallest weight kept), and
    counted in `graph.info`, exactly as for files.
    """
    s = _id_list(src)
    d = _id_list(dst)
    w = None if weight is None else np.asarray(weight)
    extra = None if ids is None else _id_list(ids)
    return build_graph(s, d, w, directed=directed, name=name, extra_ids=extra, info={"format": "arrays"})


def _id_list(a: Any) -> np.ndarray:
    arr = np.asarray(a)
    if arr.size == 0 and arr.ndim == 1:
        return np.zeros(0, dtype=np.int64)  # [] is float64 to NumPy; an empty edge list is fine
    return arr


def from_networkx(G: Any, weight: str | None = "weight", name: str | None = None) -> Graph:
    """A `Graph` from a networkx graph whose nodes are non-negative integers (the original IDs).

    Every node becomes a vertex (isolated ones too); the graph is directed iff
    `G.is_directed()`. Edge weights come from the `weight` attribute when every
    edge has it (pass `weight=None` to ignore weights); otherwise the graph is
    unweighted. Multigraph parallel edges are merged like duplicate edges.
    """
    label = name or (str(G.graph.get("name")) if G.graph.get("name") else "networkx")
    nodes = list(G.nodes)
    bad = [x for x in nodes if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, np.integer)) or x < 0]
    if bad:
        raise G2PLError(
            f"networkx node {bad[0]!r} is not a non-negative integer; G2PL vertex IDs are non-negative ints "
            "(relabel first, e.g. nx.convert_node_labels_to_integers(G, label_attribute='label'))",
            file=label,
        )
    if not nodes:
        raise G2PLError("the networkx graph has no nodes", file=label)
    edges = list(G.edges(data=weight, default=None)) if weight else list(G.edges())
    m = len(edges)
    src = np.fromiter((e[0] for e in edges), dtype=np.int64, count=m)
    dst = np.fromiter((e[1] for e in edges), dtype=np.int64, count=m)
    w = None
    if weight and m and all(e[2] is not None for e in edges):
        try:
            w = np.asarray([float(e[2]) for e in edges], dtype=np.float64)
        except (TypeError, ValueError):
            raise G2PLError(f"edge attribute `{weight}` must be numeric to be used as a weight", file=label) from None
    ids = np.asarray(nodes, dtype=np.int64)
    return build_graph(src, dst, w, directed=bool(G.is_directed()), name=label, extra_ids=ids,
                       info={"format": "networkx"})


def from_scipy(matrix: Any, directed: bool = False, name: str = "scipy") -> Graph:
    """A `Graph` from a (sparse) adjacency matrix: entry (i, j) = edge i -> j with weight A[i, j].

    Every row and column index 0..max(rows, cols)-1 is a vertex ID (isolated
    ones too). Stored entries are edges (an explicitly stored 0 is an edge of
    weight 0); a bool matrix gives an unweighted graph. For an undirected graph
    a symmetric matrix stores each edge twice; only the upper triangle is used
    then, so nothing is counted as a duplicate.
    """
    import scipy.sparse as sp

    if not sp.issparse(matrix):
        arr = np.asarray(matrix)
        if arr.ndim != 2:
            raise G2PLError(f"expected a 2-D (sparse) matrix, got shape {arr.shape}", file=name)
        matrix = sp.coo_array(arr)
    coo = sp.coo_array(matrix)
    nv = max(coo.shape)
    if nv == 0:
        raise G2PLError(f"the matrix is {coo.shape[0]} x {coo.shape[1]}, so the graph has no vertices", file=name)
    row = np.asarray(coo.row, dtype=np.int64)
    col = np.asarray(coo.col, dtype=np.int64)
    data = np.asarray(coo.data)
    weighted = data.dtype.kind != "b"
    if not directed and coo.shape[0] == coo.shape[1] and coo.nnz:
        csr = sp.csr_array(matrix)
        if (csr != csr.T).nnz == 0:
            keep = row <= col
            row, col, data = row[keep], col[keep], data[keep]
    return build_graph(row, col, data if weighted else None, directed=directed, name=name,
                       extra_ids=np.arange(nv, dtype=np.int64), info={"format": "scipy"})


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
    """Every vertex's original ID, ascending: the order of vertex arrays."""
    g = _graph(res, graph)
    if g is not None:
        return np.asarray(g.ids, dtype=np.int64)
    for v in res.values:
        if v["kind"] == "vertex" and v["type"] != "bool":
            return _sorted_keys(v["value"])[0]
    raise G2PLError(
        "this result has no vertex graph listing every vertex; pass the graph: "
        "res.ids(graph=g) / res.array(name, graph=g) / res.to_networkx(g)", file=_label(res)
    )


def result_edge_ids(res: Result, graph: Graph | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Every edge's endpoints (u_ids, v_ids), ascending by (u, v): the order of edge arrays."""
    g = _graph(res, graph)
    if g is not None:
        return g.ids[g.src].astype(np.int64), g.ids[g.dst].astype(np.int64)
    for v in res.values:
        if v["kind"] == "edge" and v["type"] != "bool":
            return _edge_graph_arrays(v)[:2]
    raise G2PLError(
        "this result has no edge graph listing every edge; pass the graph: "
        "res.edge_ids(graph=g) / res.array(name, graph=g) / res.to_networkx(g)", file=_label(res)
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

    vertex graph -> values in `ids()` order; vertex set -> bool membership in
    `ids()` order; edge graph / edge set -> values / membership in
    `edge_ids()` order; scalar -> a 0-d array. Types: bool, int64 (int and vid,
    -1 = no vertex), float64 (with inf / nan restored).
    """
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
    import networkx as nx

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
        for v in res.values:
            kind, val = v["kind"], v["value"]
            if kind == "vertex":
                G.add_nodes_from(int(x) for x in (val if v["type"] == "bool" else val.keys()))
            elif kind == "edge":
                G.add_edges_from((int(r[0]), int(r[1])) for r in val)
    for v in res.values:
        kind, elem, name, val = v["kind"], v["type"], v["name"], v["value"]
        if kind == "scalar":
            G.graph[name] = _scalar(val, elem)
        elif kind == "vertex":
            if g is None and elem == "bool":  # members True, the other nodes listed False
                members = set(val)
                attrs = {x: x in members for x in G.nodes}
            else:
                ids = result_ids(res, g) if g is not None else _sorted_keys(val)[0]
                attrs = dict(zip(_python(ids), _python(result_array(res, name, g))))
            nx.set_node_attributes(G, attrs, name)
        else:
            if g is None and elem == "bool":
                members = {(int(a), int(b)) for a, b in val}
                attrs = {(a, b): ((a, b) if directed or a <= b else (b, a)) in members for a, b in G.edges}
            else:
                if g is not None:
                    us, vs = result_edge_ids(res, g)
                    x = result_array(res, name, g)
                else:
                    us, vs, x = _edge_graph_arrays(v)
                attrs = dict(zip(zip(_python(us), _python(vs)), _python(x)))
            nx.set_edge_attributes(G, attrs, name)
    return G


def result_to_pandas(res: Result, graph: Graph | None = None) -> dict[str, Any]:
    """The returned values as pandas objects, one per kind present.

    `"vertex"`: a DataFrame indexed by original ID (`id`), a column per vertex
    graph or set; `"edge"`: a DataFrame indexed by (`u`, `v`), a column per edge
    graph or set; `"scalar"`: a Series indexed by value name.
    """
    import pandas as pd

    out: dict[str, Any] = {}
    vertex = [v for v in res.values if v["kind"] == "vertex"]
    edge = [v for v in res.values if v["kind"] == "edge"]
    scalar = [v for v in res.values if v["kind"] == "scalar"]
    if vertex:
        idx = pd.Index(result_ids(res, graph), name="id")
        out["vertex"] = pd.DataFrame({v["name"]: result_array(res, v["name"], graph) for v in vertex}, index=idx)
    if edge:
        us, vs = result_edge_ids(res, graph)
        idx = pd.MultiIndex.from_arrays([us, vs], names=["u", "v"])
        out["edge"] = pd.DataFrame({v["name"]: result_array(res, v["name"], graph) for v in edge}, index=idx)
    if scalar:
        out["scalar"] = pd.Series({v["name"]: _scalar(v["value"], v["type"]) for v in scalar}, name=res.entry,
                                  dtype=object)
    return out


def result_summary(res: Result, limit: int = 6) -> str:
    """A few lines describing a result (used for the notebook display)."""
    lines = [f"<g2pl Result of `{res.entry}`>"]
    for v in res.values:
        kind, elem, name, val = v["kind"], v["type"], v["name"], v["value"]
        if kind == "scalar":
            lines.append(f"  {name} ({elem}) = {val}")
        elif kind == "vertex" and elem == "bool":
            head = ", ".join(map(str, val[:limit])) + (", ..." if len(val) > limit else "")
            lines.append(f"  {name} (vertex set) = {len(val)} vertices {{{head}}}")
        elif kind == "vertex":
            items = list(val.items())[:limit]
            head = ", ".join(f"{k}: {x}" for k, x in items) + (", ..." if len(val) > limit else "")
            lines.append(f"  {name} (vertex graph of {elem}) = {{{head}}}")
        elif elem == "bool":
            head = ", ".join(f"({a},{b})" for a, b in val[:limit]) + (", ..." if len(val) > limit else "")
            lines.append(f"  {name} (edge set) = {len(val)} edges {{{head}}}")
        else:
            head = ", ".join(f"({a},{b}): {x}" for a, b, x in val[:limit]) + (", ..." if len(val) > limit else "")
            lines.append(f"  {name} (edge graph of {elem}) = {{{head}}}")
    st = res.stats or {}
    if "supersteps" in st:
        lines.append(f"  stats: {st['supersteps']} supersteps, {st.get('messages', '?')} messages, "
                     f"{st.get('time_s', 0.0):.3f} s")
    return "\n".join(lines)
