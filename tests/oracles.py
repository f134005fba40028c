"""Test oracles: random graphs with awkward IDs, and independent reference implementations.

Everything here is written from the algorithm descriptions (docs/language.md, the
papers' Fig. 1 and Fig. 4, Luby's MIS), in plain Python / NumPy over networkx
graphs keyed by ORIGINAL vertex IDs, never from the G2PL programs or the
compiler's output, so a disagreement points at the compiler or the runtime.

Random graphs are deliberately unfriendly: vertex IDs are sparse and shuffled
(sampled from 0..10^9), the graph is a union of 2-4 differently shaped pieces
(each its own component or group of components) plus isolated vertices, and
the raw input contains self-loops and duplicate edges that the loader must drop
and merge (keeping the smallest weight).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import networkx as nx
import numpy as np

from g2pl.graph import Graph, build_graph
from g2pl.runtime.kernels import uniform

ID_SPACE = 10**9
INT_MAX = 2**63 - 1
INT_MIN = -(2**63)


# --------------------------------------------------------------------------- graphs


@dataclass
class RandGraph:
    """A g2pl `Graph` plus the same graph built independently as a networkx graph."""

    g: Graph
    G: nx.Graph
    directed: bool
    weighted: bool
    pieces: list[list[int]] = field(default_factory=list)

    @property
    def ids(self) -> list[int]:
        return sorted(self.G.nodes)


def _sparse_ids(rng: np.random.Generator, k: int) -> np.ndarray:
    """k distinct IDs from 0..10^9, in random order."""
    out: set[int] = set()
    while len(out) < k:
        out.update(int(x) for x in rng.integers(0, ID_SPACE, size=2 * k))
    arr = np.array(sorted(out)[:k], dtype=np.int64)
    rng.shuffle(arr)
    return arr


def _piece_edges(rng: np.random.Generator, size: int, shape: str) -> list[tuple[int, int]]:
    """Edges (local indices 0..size-1) of one piece of the given shape."""
    e: list[tuple[int, int]] = []
    if size < 2:
        return e
    if shape == "tree":  # random recursive tree plus a few chords: connected, many leaves
        for i in range(1, size):
            e.append((i, int(rng.integers(0, i))))
        for _ in range(size // 4):
            e.append((int(rng.integers(0, size)), int(rng.integers(0, size))))
    elif shape == "sparse":  # Erdos-Renyi, average degree ~2: usually several components
        for _ in range(size):
            e.append((int(rng.integers(0, size)), int(rng.integers(0, size))))
    elif shape == "dense":  # average degree ~8: a good k-core / densest candidate
        for _ in range(4 * size):
            e.append((int(rng.integers(0, size)), int(rng.integers(0, size))))
    elif shape == "cycle":  # a long cycle with a tail (large diameter)
        c = max(3, size * 2 // 3)
        e.extend((i, (i + 1) % c) for i in range(c))
        e.extend((i, i + 1) for i in range(c - 1, size - 1))
    elif shape == "clique":
        c = min(size, 12)
        e.extend((i, j) for i in range(c) for j in range(i + 1, c))
        e.extend((i, int(rng.integers(0, i))) for i in range(c, size))
    else:  # pragma: no cover - programming error in a test
        raise ValueError(shape)
    return e


SHAPES = ("tree", "sparse", "dense", "cycle", "clique")


def random_graph(
    seed: int,
    n: int = 300,
    *,
    directed: bool = False,
    weighted: bool = False,
    n_pieces: int | None = None,
    n_isolated: int | None = None,
    shapes: tuple[str, ...] | None = None,
) -> RandGraph:
    """A union of 2-4 random pieces on ~n vertices plus isolated vertices, sparse shuffled IDs.

    The raw edge list also holds self-loops, repeated edges and (undirected)
    reversed repeats with different weights; the networkx twin is built from it
    independently (self-loops dropped, duplicates merged keeping the smallest weight).
    """
    rng = np.random.default_rng(seed)
    k = int(rng.integers(2, 5)) if n_pieces is None else n_pieces
    iso = int(rng.integers(1, 6)) if n_isolated is None else n_isolated
    sizes = 3 + rng.multinomial(n - 3 * k, rng.dirichlet(np.ones(k)))
    ids = _sparse_ids(rng, n + iso)
    src: list[int] = []
    dst: list[int] = []
    pieces: list[list[int]] = []
    start = 0
    for i, sz in enumerate(sizes):
        shape = shapes[i % len(shapes)] if shapes else SHAPES[int(rng.integers(0, len(SHAPES)))]
        local = ids[start : start + sz]
        pieces.append(sorted(int(x) for x in local))
        for a, b in _piece_edges(rng, int(sz), shape):
            if rng.random() < 0.5:
                a, b = b, a
            src.append(int(local[a]))
            dst.append(int(local[b]))
        start += sz
    # A few self-loops (on isolated vertices too: they must stay vertices) and duplicates.
    for _ in range(5):
        v = int(ids[rng.integers(0, ids.size)])
        src.append(v)
        dst.append(v)
    m0 = len(src)
    for _ in range(max(1, m0 // 10)):
        j = int(rng.integers(0, m0))
        a, b = src[j], dst[j]
        if not directed and rng.random() < 0.5:
            a, b = b, a
        src.append(a)
        dst.append(b)
    order = rng.permutation(len(src))
    s = np.array(src, dtype=np.int64)[order]
    d = np.array(dst, dtype=np.int64)[order]
    w = rng.integers(1, 400, size=s.size) / 16.0 if weighted else None  # exact binary fractions
    g = build_graph(s, d, w, directed=directed, name=f"rand{seed}", extra_ids=ids)

    G: nx.Graph = nx.DiGraph() if directed else nx.Graph()
    G.add_nodes_from(int(x) for x in ids)
    ww = w.tolist() if w is not None else [1.0] * s.size
    for a, b, x in zip(s.tolist(), d.tolist(), ww):
        if a == b:
            continue
        if G.has_edge(a, b):
            G[a][b]["weight"] = min(G[a][b]["weight"], x)
        else:
            G.add_edge(a, b, weight=x)
    return RandGraph(g, G, directed, weighted, pieces)


def to_nx(g: Graph) -> nx.Graph:
    """networkx twin of an already built `Graph` (for the built-in generators)."""
    G: nx.Graph = nx.DiGraph() if g.directed else nx.Graph()
    G.add_nodes_from(g.ids.tolist())
    for a, b, x in zip(g.ids[g.src].tolist(), g.ids[g.dst].tolist(), g.weight.tolist()):
        G.add_edge(a, b, weight=x)
    return G


def from_edges(edges, *, directed: bool = False, isolated=(), weights=None, name: str = "hand") -> Graph:
    """A small hand-made graph from (u, v) pairs of original IDs."""
    s = np.array([a for a, _ in edges], dtype=np.int64)
    d = np.array([b for _, b in edges], dtype=np.int64)
    w = None if weights is None else np.array(weights, dtype=np.float64)
    return build_graph(s, d, w, directed=directed, name=name,
                       extra_ids=np.array(list(isolated), dtype=np.int64) if isolated else None)


# --------------------------------------------------------------------------- JSON helpers


def num(x) -> float:
    """A JSON float value (possibly "inf"/"-inf"/"nan") as a Python float."""
    return float(x) if isinstance(x, str) else x


def vdict(value) -> dict[int, object]:
    """A vertex-graph JSON value ({"id": v}) keyed by int original ID."""
    return {int(k): v for k, v in value.items()}


# --------------------------------------------------------------------------- references


def ref_components(G: nx.Graph) -> dict[int, int]:
    """Each vertex -> the smallest original ID in its (weakly) connected component."""
    comps = nx.weakly_connected_components(G) if G.is_directed() else nx.connected_components(G)
    return {v: min(c) for c in comps for v in c}


def ref_bfs(G: nx.Graph, root: int) -> dict[int, int]:
    lv = nx.single_source_shortest_path_length(G, root)
    return {v: lv.get(v, -1) for v in G.nodes}


def ref_sssp(G: nx.Graph, root: int) -> dict[int, float]:
    d = nx.single_source_dijkstra_path_length(G, root, weight="weight")
    return {v: d.get(v, math.inf) for v in G.nodes}


def ref_pagerank_numpy(G: nx.Graph, iters: int, damping: float) -> dict[int, float]:
    """Direct power iteration; rank of vertices without out-edges spread evenly over all vertices."""
    nodes = sorted(G.nodes)
    n = len(nodes)
    at = {v: i for i, v in enumerate(nodes)}
    pairs = [(at[a], at[b]) for a, b in G.edges]
    if not G.is_directed():
        pairs += [(b, a) for a, b in pairs]
    src = np.array([a for a, _ in pairs], dtype=np.int64)
    dst = np.array([b for _, b in pairs], dtype=np.int64)
    outdeg = np.bincount(src, minlength=n).astype(float)
    pr = np.full(n, 1.0 / n)
    for _ in range(iters):
        dangling = pr[outdeg == 0].sum()
        contrib = np.zeros(n)
        np.add.at(contrib, dst, pr[src] / outdeg[src])
        pr = (1.0 - damping) / n + damping * (contrib + dangling / n)
    return dict(zip(nodes, pr.tolist()))


def ref_pagerank_ordered(G: nx.Graph, iters: int, damping: float, single: bool = False) -> dict[int, float]:
    """Power iteration to the bit of docs/language.md's float rules: each receiver adds its senders'
    shares one by one in the senders' original-ID order from +0.0, the dangling rank is the correctly
    rounded sum (math.fsum); `single`: each share rounded to single precision first (`float32(...)`)."""
    nodes = sorted(G.nodes)
    n = len(nodes)
    into: dict[int, list[int]] = {v: [] for v in nodes}
    outdeg = {v: 0 for v in nodes}
    for a, b in G.edges:
        pairs = [(a, b)] if G.is_directed() else [(a, b), (b, a)]
        for u, w in pairs:
            into[w].append(u)
            outdeg[u] += 1
    pr = {v: 1.0 / n for v in nodes}
    for _ in range(iters):
        dangling = math.fsum(pr[v] for v in nodes if outdeg[v] == 0)
        share = {u: pr[u] / outdeg[u] for u in nodes if outdeg[u]}
        if single:
            share = {u: float(np.float32(x)) for u, x in share.items()}
        new = {}
        for v in nodes:
            s = 0.0
            for u in sorted(into[v]):
                s += share[u]
            new[v] = (1.0 - damping) / n + damping * (s + dangling / n)
        pr = new
    return pr


def ref_kcore(G: nx.Graph, k: int) -> set[int]:
    """Plain peeling: repeatedly delete vertices with fewer than k remaining neighbours."""
    S = set(G.nodes)
    while True:
        low = {v for v in S if sum(1 for u in G[v] if u in S) < k}
        if not low:
            return S
        S -= low


def ref_matching(G: nx.Graph) -> list[list[int]]:
    """Greedy maximal matching (paper Fig. 4), simulated round by round.

    Each unmatched vertex proposes to its unmatched neighbour of least degree
    among unmatched vertices, ties to the smaller original ID; mutual proposals
    are matched. Stops when no vertex is unmatched or a round matches nothing.
    """
    unmatched = set(G.nodes)
    matched: list[list[int]] = []
    while unmatched:
        deg = {v: sum(1 for u in G[v] if u in unmatched) for v in unmatched}
        prop = {}
        for v in unmatched:
            cands = [u for u in G[v] if u in unmatched]
            if cands:
                prop[v] = min(cands, key=lambda u: (deg[u], u))
        new = [(v, u) for v, u in prop.items() if v < u and prop.get(u) == v]
        if not new:
            break
        for v, u in new:
            matched.append([v, u])
            unmatched.discard(v)
            unmatched.discard(u)
    return sorted(matched)


def _density(G: nx.Graph, S: set[int]) -> float:
    if not S:
        return math.nan
    m = sum(1 for a, b in G.edges if a in S and b in S)
    return m / len(S)


def ref_densest(G: nx.Graph, eps: float = 0.01) -> list[int]:
    """Densest subgraph by peeling (paper Fig. 1).

    S = R = V; while S is not empty: remove at once every vertex whose degree
    inside S is <= 2(1+eps)*density(S); if density(S) > density(R) (strictly)
    then R = S. density(X) = |E(X)| / |X|.
    """
    S = set(G.nodes)
    R = set(S)
    dR = _density(G, R)
    while S:
        theta = 2.0 * (1.0 + eps) * _density(G, S)
        S = {v for v in S if sum(1 for u in G[v] if u in S) > theta}
        dS = _density(G, S)
        if dS > dR:  # nan (empty S) compares false
            R, dR = set(S), dS
    return sorted(R)


def ref_mis(G: nx.Graph, seed: int) -> list[int]:
    """Luby's MIS with the runtime's counter-based RNG (site 0, count = round, key = original ID).

    Each round every vertex gets priority uniform(seed, 0, round, id); a candidate
    joins when its (priority, id) is smaller than that of every candidate
    neighbour; winners and their neighbours stop being candidates.
    """
    nodes = sorted(G.nodes)
    keys = np.array(nodes, dtype=np.int64)
    C = set(nodes)
    indep: set[int] = set()
    rnd = 0
    while C:
        pr = dict(zip(nodes, uniform(seed, 0, rnd, keys).tolist()))
        win = {v for v in C if all((pr[v], v) < (pr[u], u) for u in G[v] if u in C)}
        indep |= win
        C -= win
        C -= {u for v in win for u in G[v]}
        rnd += 1
    return sorted(indep)


# --------------------------------------------------------------------------- properties


def is_independent(G: nx.Graph, S) -> bool:
    S = set(S)
    return all(not (a in S and b in S) for a, b in G.edges)


def is_maximal_independent(G: nx.Graph, S) -> bool:
    S = set(S)
    return is_independent(G, S) and all(v in S or any(u in S for u in G[v]) for v in G.nodes)


def is_matching(G: nx.Graph, M) -> bool:
    ends = [x for e in M for x in e]
    return len(ends) == len(set(ends)) and all(G.has_edge(a, b) for a, b in M)


def is_maximal_matching(G: nx.Graph, M) -> bool:
    covered = {x for e in M for x in e}
    return is_matching(G, M) and all(a in covered or b in covered for a, b in G.edges)


def ref_scc(G: nx.Graph) -> dict[int, int]:
    """Each vertex -> the smallest original ID in its strongly connected component."""
    comps = nx.strongly_connected_components(G) if G.is_directed() else nx.connected_components(G)
    return {v: min(c) for c in comps for v in c}


def ref_hits(G: nx.Graph, iters: int) -> tuple[dict[int, float], dict[int, float]]:
    """(hubs, authorities) after `iters` rounds of the unnormalised updates, each normalised to sum 1."""
    nodes = sorted(G.nodes)
    A = nx.to_numpy_array(G, nodelist=nodes, weight=None)  # A[i, j] = 1 for an edge i -> j
    hub = np.ones(len(nodes))
    auth = hub
    for _ in range(iters):
        auth = A.T @ hub
        auth = auth / auth.sum()
        hub = A @ auth
        hub = hub / hub.sum()
    return dict(zip(nodes, hub.tolist())), dict(zip(nodes, auth.tolist()))


def ref_widest(G: nx.Graph, root: int) -> dict[int, float]:
    """Maximum bottleneck width of a path from root (inf at root, 0.0 if unreachable): a max-heap Dijkstra."""
    import heapq

    best = {v: 0.0 for v in G.nodes}
    if root not in best:
        return best
    best[root] = math.inf
    heap = [(-math.inf, root)]
    succ = G.successors if G.is_directed() else G.neighbors
    while heap:
        b, x = heapq.heappop(heap)
        if -b < best[x]:
            continue
        for y in succ(x):
            w = min(-b, G[x][y]["weight"])
            if w > best[y]:
                best[y] = w
                heapq.heappush(heap, (-w, y))
    return best


def is_proper_coloring(G: nx.Graph, color: dict[int, int]) -> bool:
    return all(color[v] >= 0 for v in G.nodes) and all(color[a] != color[b] for a, b in G.edges)


def ref_lpa(G: nx.Graph, rounds: int) -> dict[int, int]:
    """Synchronous label propagation, directly: labels start as the IDs; each round every vertex takes
    the most frequent label among its (in-)neighbours, ties to the smallest, and keeps its own without."""
    label = {v: v for v in G.nodes}
    nbrs = G.predecessors if G.is_directed() else G.neighbors
    for _ in range(rounds):
        new = {}
        for v in G.nodes:
            counts: dict[int, int] = {}
            for u in nbrs(v):
                counts[label[u]] = counts.get(label[u], 0) + 1
            new[v] = min(counts, key=lambda x: (-counts[x], x)) if counts else label[v]
        label = new
    return label
