"""Graph files as users have them: LDBC Graphalytics (NAME.v + NAME.e + NAME.properties), edge lists
with a vertex file or a header line, Matrix Market's 1-based indices, .npz `ids`, and SciPy matrices
whose direction follows from their symmetry.

Every loaded graph is compared with an independent reading: networkx graphs built from the text by
plain Python (or SciPy's own Matrix Market reader), on random graphs with non-contiguous IDs,
several components and isolated vertices, directed and undirected, weighted and not.  The same files
read on several in-process ranks (tests/runtime/thread_comm.py) give the parts the whole graph cuts
into, and the same errors on every rank.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import networkx as nx
import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp
from cli_util import ROOT, call, mpi_available, run_proc
from test_ingest import assert_same_parts
from thread_comm import run_ranks

from g2pl.cli import g2pl_main
from g2pl.errors import G2PLError
from g2pl.graph import Graph, load_graph, textblocks
from g2pl.graph.graphalytics import PROPERTIES_MAX_BYTES, read_properties
from g2pl.graph.loaders import edge_list_share, graphalytics_share, npz_share
from g2pl.runtime import ingest

FIXTURES = ROOT / "tests" / "fixtures" / "graphalytics"


# --------------------------------------------------------------------------- oracles


def nx_graph(ids, edges, directed: bool, weighted: bool) -> nx.Graph:
    """The graph the files describe, built by networkx: every listed ID a node, self-loops left out,
    the smallest weight of repeated edges kept (g2pl's documented rules)."""
    G = nx.DiGraph() if directed else nx.Graph()
    G.add_nodes_from(int(x) for x in ids)
    for e in edges:
        a, b = int(e[0]), int(e[1])
        G.add_nodes_from((a, b))
        if a == b:
            continue
        w = float(e[2]) if weighted else 1.0
        if not G.has_edge(a, b) or G[a][b]["weight"] > w:
            G.add_edge(a, b, weight=w)
    return G


def assert_same(g: Graph, G: nx.Graph, directed: bool, weighted: bool) -> None:
    assert g.directed == directed and g.weighted == weighted
    assert g.ids.tolist() == sorted(G.nodes)
    got = {(int(g.ids[a]), int(g.ids[b])): float(w) for a, b, w in zip(g.src, g.dst, g.weight, strict=True)}
    want = {}
    for a, b, w in G.edges(data="weight"):
        key = (a, b) if directed else (min(a, b), max(a, b))
        want[key] = float(w)
    assert got == want


def write_graphalytics(folder: Path, name: str, rng: np.random.Generator, directed: bool, weighted: bool,
                       props: bool = True, noise: bool = False):
    """A random Graphalytics graph NAME.v / NAME.e (/ NAME.properties) in `folder`: IDs spread over
    10^12, three components, isolated vertices; returns (ids, edges)."""
    ids = np.sort(rng.choice(10**12, 90, replace=False))
    comps = [ids[:40], ids[40:70], ids[70:80]]  # ids[80:] isolated
    edges = []
    for c in comps:
        for _ in range(3 * len(c)):
            a, b = rng.choice(c, 2)
            edges.append((int(a), int(b), round(float(rng.uniform(0.1, 9)), 3)))
    (folder / f"{name}.v").write_text("".join(f"{x}\n" for x in rng.permutation(ids)))
    lines = [f"{a} {b} {w}" if weighted else f"{a} {b}" for a, b, w in edges]
    if noise:  # comments and blank lines: line numbers count every physical line
        for k in sorted(rng.choice(len(lines), 15, replace=False), reverse=True):
            lines.insert(int(k), "# a comment" if k % 2 else "")
    (folder / f"{name}.e").write_text("\n".join(lines) + "\n")
    if props:
        text = [f"graph.{name}.vertex-file = {name}.v", f"graph.{name}.edge-file = {name}.e",
                f"graph.{name}.directed = {'true' if directed else 'false'}",
                f"graph.{name}.meta.vertices = {len(ids)}"]
        if weighted:
            text += [f"graph.{name}.edge-properties.names = weight", f"graph.{name}.edge-properties.types = real"]
        (folder / f"{name}.properties").write_text("\n".join(text) + "\n")
    return ids, edges


def expect(fn, *args, match: str, file=None, line=None, **kw) -> G2PLError:
    with pytest.raises(G2PLError) as ei:
        fn(*args, **kw)
    err = ei.value
    assert err.exit_status == 2
    assert match in err.message, err.message
    if file is not None:
        assert err.file == str(file), err.file
    if line is not None:
        assert err.line == line, (err.line, err.message)
        assert f":{line}: error:" in str(err)
    return err


def on_ranks(size: int, fn):
    got = run_ranks(size, fn)
    for g in got:
        if isinstance(g, BaseException) and not isinstance(g, G2PLError):
            raise g
    return got


def same_error_on_every_rank(size: int, fn, want: G2PLError) -> None:
    got = on_ranks(size, fn)
    assert all(isinstance(e, G2PLError) for e in got), got
    assert {(str(e), e.line) for e in got} == {(str(want), want.line)}


# --------------------------------------------------------------------------- Graphalytics


def _reference_graph(name: str):
    """A fixture graph read by plain Python: (ids, edges, directed, weighted) from its three files."""
    props = dict(line.split(" = ", 1) for line in (FIXTURES / f"{name}.properties").read_text().splitlines()
                 if " = " in line and not line.startswith("#"))
    directed = props[f"graph.{name}.directed"].strip() == "true"
    ids = [int(x) for x in (FIXTURES / f"{name}.v").read_text().split()]
    edges = [line.split() for line in (FIXTURES / f"{name}.e").read_text().splitlines() if line.strip()]
    weighted = all(len(e) == 3 for e in edges) and bool(edges)
    return ids, edges, directed, weighted


@pytest.mark.skipif(not FIXTURES.is_dir(), reason="Graphalytics fixtures not present")
def test_graphalytics_fixtures_load_as_their_files_say():
    names = sorted(p.stem for p in FIXTURES.glob("*.e"))
    assert len(names) >= 10
    for name in names:
        ids, edges, directed, weighted = _reference_graph(name)
        g = load_graph(str(FIXTURES / f"{name}.e"))  # direction from NAME.properties
        assert_same(g, nx_graph(ids, edges, directed, weighted), directed, weighted)
        assert g.info["format"] == "graphalytics" and g.info["vertex_file"].endswith(f"{name}.v")
        declared = g.info["declared"]
        assert declared["vertices"] == g.n and declared["edges"] == g.m


@pytest.mark.parametrize("directed", [False, True])
@pytest.mark.parametrize("weighted", [False, True])
def test_graphalytics_random_graphs(tmp_path, directed, weighted):
    rng = np.random.default_rng(7 + 2 * directed + weighted)
    ids, edges = write_graphalytics(tmp_path, "rnd", rng, directed, weighted, noise=True)
    path = str(tmp_path / "rnd.e")
    g = load_graph(path)
    G = nx_graph(ids, edges, directed, weighted)
    assert_same(g, G, directed, weighted)
    assert g.info["isolated_vertices"] == sum(1 for x in G if G.degree(x) == 0) >= 10
    assert load_graph(path, directed=directed).directed == directed  # saying what the file says is fine
    for size in (1, 2, 3, 5):
        dgs = on_ranks(size, lambda c: ingest.build(c, graphalytics_share(path, None, c.rank, c.size, c), None))
        assert_same_parts(g, size, None, False, dgs)


def test_graphalytics_direction_without_properties(tmp_path):
    rng = np.random.default_rng(3)
    ids, edges = write_graphalytics(tmp_path, "bare", rng, True, True, props=False)
    path = str(tmp_path / "bare.e")
    assert_same(load_graph(path), nx_graph(ids, edges, False, True), False, True)  # undirected unless said
    assert_same(load_graph(path, directed=True), nx_graph(ids, edges, True, True), True, True)
    assert load_graph(path).info["properties"] is None


def test_graphalytics_direction_contradicting_the_properties_names_both(tmp_path):
    rng = np.random.default_rng(4)
    write_graphalytics(tmp_path, "d", rng, True, False)
    write_graphalytics(tmp_path, "u", rng, False, False)
    props = tmp_path / "d.properties"
    err = expect(load_graph, str(tmp_path / "d.e"), directed=False, match="graph.d.directed = true here, but "
                 "--undirected (directed=False) was given", file=props, line=3)
    assert "leave the option out" in err.message
    expect(load_graph, str(tmp_path / "u.e"), directed=True, match="graph.u.directed = false here, but "
           "--directed (directed=True) was given", file=tmp_path / "u.properties", line=3)
    path = str(tmp_path / "d.e")
    same_error_on_every_rank(3, lambda c: graphalytics_share(path, False, c.rank, c.size, c), err)


def test_graphalytics_endpoint_missing_from_the_vertex_file(tmp_path, monkeypatch):
    rng = np.random.default_rng(5)
    ids, edges = write_graphalytics(tmp_path, "g", rng, True, True, noise=True)
    e_path = tmp_path / "g.e"
    lines = e_path.read_text().splitlines()
    lines.insert(len(lines) - 20, f"{ids[3]} 77 0.5")  # 77 is no vertex (the IDs are 10^12 wide)
    e_path.write_text("\n".join(lines) + "\n")
    want_line = len(lines) - 20
    err = expect(load_graph, str(e_path), match=f"edge {ids[3]} 77: vertex 77 is not in the vertex file "
                 f"{tmp_path / 'g.v'}", file=e_path, line=want_line)
    path = str(e_path)
    for size in (2, 3, 4):
        same_error_on_every_rank(size, lambda c: graphalytics_share(path, None, c.rank, c.size, c), err)
    # the row's line is found again by blocks: small blocks give the same line
    monkeypatch.setattr(textblocks, "BLOCK_BYTES", 256)
    expect(load_graph, path, match="vertex 77 is not in the vertex file", line=want_line)
    same_error_on_every_rank(3, lambda c: graphalytics_share(path, None, c.rank, c.size, c), err)
    # the first such edge in the file wins, whichever endpoint and rank
    lines.insert(2, f"88 {ids[5]} 1.0")
    e_path.write_text("\n".join(lines) + "\n")
    first = expect(load_graph, path, match=f"edge 88 {ids[5]}: vertex 88 is not", line=3)
    same_error_on_every_rank(4, lambda c: graphalytics_share(path, None, c.rank, c.size, c), first)


def test_graphalytics_vertex_files(tmp_path):
    rng = np.random.default_rng(6)
    ids, edges = write_graphalytics(tmp_path, "g", rng, False, False)
    (tmp_path / "g.v").rename(tmp_path / "elsewhere.txt")
    expect(load_graph, str(tmp_path / "g.e"), match=f"the vertex file {tmp_path / 'g.v'} is missing",
           file=tmp_path / "g.e")
    g = load_graph(str(tmp_path / "g.e"), vertices=str(tmp_path / "elsewhere.txt"))
    assert_same(g, nx_graph(ids, edges, False, False), False, False)
    # the properties file may name the vertex file (beside it, no directory part)
    props = tmp_path / "g.properties"
    text = props.read_text().replace("graph.g.vertex-file = g.v", "graph.g.vertex-file = elsewhere.txt")
    props.write_text(text)
    assert load_graph(str(tmp_path / "g.e")).n == g.n
    props.write_text(text.replace("= elsewhere.txt", "= ../elsewhere.txt"))
    expect(load_graph, str(tmp_path / "g.e"), match="expected the name of a file beside this one", file=props,
           line=1)
    props.write_text(text.replace("edge-file = g.e", "edge-file = other.e"))
    expect(load_graph, str(tmp_path / "g.e"), match="graph.g.edge-file = 'other.e', but the edge file given is "
           "'g.e'", file=props, line=2)


def test_graphalytics_bad_vertex_and_edge_lines(tmp_path):
    write_graphalytics(tmp_path, "g", np.random.default_rng(8), True, True)
    v = tmp_path / "g.v"
    good_v = v.read_text()
    v.write_text(good_v.replace("\n", "\n5 6\n", 3).replace("5 6\n", "", 2))
    expect(load_graph, str(tmp_path / "g.e"), match="expected 1 column (one vertex ID a line), found 2", file=v,
           line=4)
    v.write_text("id\n" + good_v)
    expect(load_graph, str(tmp_path / "g.e"), match="expected an integer vertex ID, found 'id'", file=v, line=1)
    v.write_text(good_v)
    e = tmp_path / "g.e"
    rows = e.read_text().splitlines()
    e.write_text("\n".join(r.rsplit(" ", 1)[0] for r in rows) + "\n")  # the declared weight column left out
    expect(load_graph, str(e), match="expected 3 columns (u v weight), found 2", file=e, line=1)
    e.write_text("\n".join(rows[:5] + [rows[5] + " 9"] + rows[6:]) + "\n")
    expect(load_graph, str(e), match="expected 3 columns ('u v weight'), found 4", file=e, line=6)
    e.write_text("src dst weight\n" + "\n".join(rows) + "\n")  # .e files have no header line
    err = expect(load_graph, str(e), match="looks like a header (it is not 'u v [weight]' numbers); start it with #",
                 file=e, line=1)
    assert "--header" not in err.message
    expect(load_graph, str(e), header=True, match="--header: the graph is a Graphalytics edge file")


def test_graphalytics_isolated_vertices_only(tmp_path):
    (tmp_path / "iso.v").write_text("5\n900\n17\n")
    (tmp_path / "iso.e").write_text("")
    g = load_graph(str(tmp_path / "iso.e"))
    assert g.ids.tolist() == [5, 17, 900] and g.m == 0
    (tmp_path / "none.v").write_text("")
    (tmp_path / "none.e").write_text("")
    expect(load_graph, str(tmp_path / "none.e"), match="the graph has no vertices")


def test_naming_the_vertex_or_properties_file_points_at_the_edge_file(tmp_path):
    for name in ("g.v", "g.properties"):
        expect(load_graph, str(tmp_path / name), match="a Graphalytics graph is named by its edge file: pass NAME.e")


# --------------------------------------------------------------------------- Java properties


def test_properties_syntax(tmp_path):
    p = tmp_path / "x.properties"
    p.write_bytes(
        b"# comment\n! also a comment\n"
        b"   graph.x.directed:true\n"
        b"graph.x.vertex-file   x.v\n"
        b"graph.x.edge-properties.names = \\\n    weight\n"
        b"graph.x.edge-properties.types=re\\u0061l\n"
        b"key\\ with\\=odd\\:chars = a\\tb\\\\\n"
        b"empty =\n"
    )
    got = read_properties(str(p))
    assert {k: v for k, (v, _) in got.items()} == {
        "graph.x.directed": "true", "graph.x.vertex-file": "x.v", "graph.x.edge-properties.names": "weight",
        "graph.x.edge-properties.types": "real", "key with=odd:chars": "a\tb\\", "empty": ""}
    assert got["graph.x.edge-properties.names"][1] == 5 and got["graph.x.edge-properties.types"][1] == 7


@pytest.mark.parametrize(("body", "match", "line"), [
    ("graph.g.directed = maybe\n", "graph.g.directed = 'maybe': expected true or false", 1),
    ("graph.g.directed = true\n\ngraph.g.directed = false\n", "given twice with different values (line 1", 3),
    ("graph.g.edge-properties.names = w, x\ngraph.g.edge-properties.types = real, real\n",
     "2 edge properties (w, x); g2pl reads one", 1),
    ("graph.g.edge-properties.names = w\n", "1 edge property names but 0 types", 1),
    ("graph.g.edge-properties.names = w\ngraph.g.edge-properties.types = text\n",
     "edge property type 'text'", 2),
    ("graph.g.vertex-properties.names = age\ngraph.g.directed = true\n", "vertex properties (age) are not read", 1),
    ("graph.other.directed = true\n", "no key starts with 'graph.g.' (it describes 'other')", None),
    ("graph.g.name = \\u12\n", "malformed \\uXXXX escape", 1),
    ("a = 1\0\n", "binary data (a NUL byte)", 1),
])
def test_bad_properties(tmp_path, body, match, line):
    write_graphalytics(tmp_path, "g", np.random.default_rng(1), False, False, props=False)
    props = tmp_path / "g.properties"
    props.write_text(body)
    expect(load_graph, str(tmp_path / "g.e"), match=match, file=props, line=line)


def test_properties_size_limit(tmp_path):
    write_graphalytics(tmp_path, "g", np.random.default_rng(1), False, False)
    props = tmp_path / "g.properties"
    props.write_text(props.read_text() + "# pad\n" * (PROPERTIES_MAX_BYTES // 6 + 1))
    expect(load_graph, str(tmp_path / "g.e"), match="the properties file is larger than 1 MiB", file=props)


# --------------------------------------------------------------------------- edge lists: --vertices, --header


def _random_edges(rng, directed_ids=False):
    ids = rng.choice(10**9, 60, replace=False)
    edges = [(int(a), int(b), round(float(rng.uniform(0.5, 5)), 2)) for a, b in
             (rng.choice(ids[k * 20:k * 20 + 15], 2) for k in rng.integers(0, 3, 150))]
    return ids, edges


@pytest.mark.parametrize("directed", [False, True])
def test_edge_list_with_a_vertex_file(tmp_path, directed):
    rng = np.random.default_rng(11)
    ids, edges = _random_edges(rng)
    el = tmp_path / "g.el"
    el.write_text("".join(f"{a}\t{b}\t{w}\n" for a, b, w in edges))
    vf = tmp_path / "ids.txt"
    vf.write_text("# every vertex\n" + "".join(f"{x}\n" for x in ids[::2]))
    g = load_graph(str(el), directed=directed, vertices=str(vf))
    assert_same(g, nx_graph(ids[::2], edges, directed, True), directed, True)  # listed or an endpoint
    for size in (2, 3):
        dgs = on_ranks(size, lambda c: ingest.build(c, edge_list_share(str(el), directed, c.rank, c.size, c,
                                                                       vertices=str(vf)), None))
        assert_same_parts(g, size, None, False, dgs)
    # an edge list without edges is a graph of its listed vertices
    (tmp_path / "none.txt").write_text("# nothing\n")
    assert load_graph(str(tmp_path / "none.txt"), vertices=str(vf)).n == len(ids[::2])
    vf.write_text("1\n2\nx\n")
    expect(load_graph, str(el), vertices=str(vf), match="expected an integer vertex ID, found 'x'", file=vf, line=3)


def test_csv_header_from_pandas(tmp_path):
    import pandas as pd

    rng = np.random.default_rng(12)
    ids, edges = _random_edges(rng)
    df = pd.DataFrame(edges, columns=["src", "dst", "weight"])
    csv = tmp_path / "g.csv"
    df.to_csv(csv, index=False)
    g = load_graph(str(csv), header=True)
    assert_same(g, nx_graph([], edges, False, True), False, True)
    err = expect(load_graph, str(csv), match="the first line 'src,dst,weight' looks like a header", file=csv, line=1)
    assert "--header" in err.message
    for size in (2, 4):
        dgs = on_ranks(size, lambda c: ingest.build(c, edge_list_share(str(csv), False, c.rank, c.size, c,
                                                                       header=True), None))
        assert_same_parts(g, size, None, False, dgs)
        same_error_on_every_rank(size, lambda c: edge_list_share(str(csv), False, c.rank, c.size, c), err)
    df.to_csv(csv)  # with the index: an unnamed first column
    expect(load_graph, str(csv), header=True, match="starts with an unnamed column (a pandas index?)", line=1)
    csv.write_text("# made by hand\nsrc,dst\n1,2,0.5\n")
    expect(load_graph, str(csv), header=True, match="the header (line 2) names 2 columns but the first edge has 3",
           line=3)
    csv.write_text("1,2\n2,3\n")
    expect(load_graph, str(csv), header=True, match="--header: line 1 is '1,2', numbers rather than a header",
           line=1)
    csv.write_text("src,dst\n")
    expect(load_graph, str(csv), header=True, match="the file has no edges")


def test_options_a_format_does_not_read_are_refused(tmp_path):
    mtx = tmp_path / "g.mtx"
    mtx.write_text("%%MatrixMarket matrix coordinate pattern general\n2 2 1\n1 2\n")
    el = tmp_path / "g.txt"
    el.write_text("1 2\n")
    expect(load_graph, str(mtx), header=True, match="--header: the graph is a Matrix Market file")
    expect(load_graph, str(el), mtx_base=0, match="--mtx-base: the graph is an edge list")
    expect(load_graph, "kron:4", vertices=str(el), match="--vertices: the graph is kron generator")
    expect(load_graph, str(mtx), mtx_base=2, match="--mtx-base 2: expected 0 or 1")


# --------------------------------------------------------------------------- Matrix Market, .npz


@pytest.mark.parametrize("symmetry", ["general", "symmetric"])
def test_mtx_ids_are_one_based_or_shifted(tmp_path, symmetry):
    rng = np.random.default_rng(13)
    n = 40
    A = sp.random(n, n, density=0.05, random_state=np.random.RandomState(2), format="coo")
    A.data = np.round(A.data * 10 + 1, 3)
    if symmetry == "symmetric":
        A = sp.coo_matrix(sp.triu(A) + sp.triu(A, 1).T)
    path = tmp_path / "a.mtx"
    scipy.io.mmwrite(str(path), A, symmetry=symmetry)
    ref = sp.coo_array(scipy.io.mmread(str(path)))  # SciPy's reading, 0-based
    directed = bool(rng.integers(0, 2)) or symmetry == "general"
    want = nx_graph(range(n), zip(ref.row, ref.col, ref.data, strict=True), directed, True)
    g0 = load_graph(str(path), directed=directed, mtx_base=0)
    assert_same(g0, want, directed, True)
    g1 = load_graph(str(path), directed=directed)  # as written: IDs 1..n
    assert_same(g1, nx.relabel_nodes(want, {x: x + 1 for x in range(n)}), directed, True)
    assert g0.info["base"] == 0 and g1.info["base"] == 1
    # on several ranks (rank 0 reads, deals the edges), the same parts
    from g2pl.graph.loaders import ReadOptions

    dgs = on_ranks(3, lambda c: ingest.load(c, str(path), directed=directed, renumber=None,
                                            read=ReadOptions(mtx_base=0)))
    counts = ("input_edges", "self_loops_dropped", "duplicates_merged")
    g0.info.update({k: dgs[0].info[k] for k in counts})  # dealt: counted again on the built graph's edges
    assert_same_parts(g0, 3, None, False, dgs)


def test_npz_ids_are_vertices_even_when_isolated(tmp_path):
    rng = np.random.default_rng(14)
    ids, edges = _random_edges(rng)
    arr = np.array([(a, b) for a, b, _ in edges])
    path = str(tmp_path / "g.npz")
    np.savez(path, src=arr[:, 0], dst=arr[:, 1], ids=ids)
    g = load_graph(path, directed=True)
    assert_same(g, nx_graph(ids, edges, True, False), True, False)
    assert g.info["isolated_vertices"] == len(set(ids.tolist()) - {x for e in edges for x in e[:2]})
    dgs = on_ranks(3, lambda c: ingest.build(c, npz_share(path, True, c.rank, c.size, c), None))
    assert_same_parts(g, 3, None, False, dgs)


# --------------------------------------------------------------------------- SciPy matrices


def test_from_scipy_direction_follows_symmetry():
    rng = np.random.default_rng(15)
    n = 25
    r, c = rng.integers(0, n, 60), rng.integers(0, n, 60)
    w = rng.uniform(1, 2, 60)
    A = sp.csr_array((w, (r, c)), shape=(n, n))
    S = A + A.T
    gs = Graph.from_scipy(S)
    assert not gs.directed
    su = sp.triu(S).tocoo()
    assert_same(gs, nx_graph(range(n), zip(su.row, su.col, su.data, strict=True), False, True), False, True)
    ga = Graph.from_scipy(A)
    assert ga.directed
    ac = A.tocoo()
    assert_same(ga, nx_graph(range(n), zip(ac.row, ac.col, ac.data, strict=True), True, True), True, True)
    gd = Graph.from_scipy(S, directed=True)  # a symmetric matrix may still be read as a directed graph
    assert gd.directed and gd.m == 2 * gs.m


@pytest.mark.parametrize(("matrix", "match"), [
    (sp.coo_array(([1.0], ([0], [1])), shape=(3, 3)), "A[0, 1] is stored but A[1, 0] is not"),
    (sp.coo_array(([1.0, 2.0], ([0, 1], [1, 0])), shape=(3, 3)), "A[0, 1] = 1.0 but A[1, 0] = 2.0"),
    (sp.coo_array(([0.0, 1.0, 1.0], ([2, 0, 1], [0, 1, 0])), shape=(3, 3)), "A[2, 0] is stored but A[0, 2] is not"),
    (sp.coo_array(([1.0], ([0], [1])), shape=(2, 3)), "it is 2 x 3, not square"),
])
def test_from_scipy_never_symmetrises_silently(matrix, match):
    err = expect(Graph.from_scipy, matrix, directed=False, match=match)
    assert "pass directed=True" in err.message
    assert Graph.from_scipy(matrix).directed


# --------------------------------------------------------------------------- the command line


def _json(path: Path) -> dict:
    return json.loads(path.read_text())


def test_cli_graphalytics_run_and_convert(tmp_path, capsys):
    """`--graph NAME.e`: SSSP on the Graphalytics example equals its reference output."""
    for name in ("example-directed.e", "example-directed.v", "example-directed.properties"):
        shutil.copy(FIXTURES / name, tmp_path / name)
    e = tmp_path / "example-directed.e"
    out = tmp_path / "o.json"
    rc, stdout, err = call(g2pl_main, ["run", ROOT / "programs" / "sssp.g2pl", "--graph", e, "--arg", "root=1",
                                       "--output", out, "--quiet"], capsys)
    assert rc == 0, err
    dist = _json(out)["values"][0]["value"]
    for line in (FIXTURES / "example-directed-SSSP").read_text().splitlines():
        vid, ref = line.split()
        assert dist[vid] == "inf" if ref == "Infinity" else abs(dist[vid] - float(ref)) < 1e-9
    rc, _, err = call(g2pl_main, ["run", ROOT / "programs" / "sssp.g2pl", "--graph", e, "--arg", "root=1",
                                  "--undirected"], capsys)
    assert rc == 2 and "example-directed.properties:12: error: graph.example-directed.directed = true" in err
    rc, _, err = call(g2pl_main, ["run", ROOT / "programs" / "sssp.g2pl", "--graph", e, "--arg", "root=1",
                                  "--directed", "--undirected"], capsys)
    assert rc == 2 and "not allowed with argument" in err
    rc, stdout, err = call(g2pl_main, ["convert", e, tmp_path / "g.g2g"], capsys)
    assert rc == 0 and "--graph" in stdout and stdout.rstrip().endswith("--directed"), stdout
    (tmp_path / "example-directed.v").unlink()
    rc, _, err = call(g2pl_main, ["run", ROOT / "programs" / "sssp.g2pl", "--graph", e, "--arg", "root=1"],
                      capsys)
    assert rc == 2 and "example-directed.v is missing" in err and "Traceback" not in err


def test_cli_edge_list_options(tmp_path, capsys):
    csv = tmp_path / "g.csv"
    csv.write_text("src,dst\n5,9\n9,12\n")
    vf = tmp_path / "v.txt"
    vf.write_text("5\n40\n")
    out = tmp_path / "o.json"
    prog = ROOT / "programs" / "wcc.g2pl"
    rc, _, err = call(g2pl_main, ["run", prog, "--graph", csv, "--output", out, "--quiet"], capsys)
    assert rc == 2 and "g.csv:1: error: the first line 'src,dst' looks like a header" in err and "--header" in err
    rc, _, err = call(g2pl_main, ["run", prog, "--graph", csv, "--header", "--vertices", vf, "--output", out,
                                  "--quiet"], capsys)
    assert rc == 0, err
    assert sorted(_json(out)["values"][0]["value"]) == ["12", "40", "5", "9"]
    mtx = tmp_path / "g.mtx"
    mtx.write_text("%%MatrixMarket matrix coordinate pattern general\n3 3 1\n1 2\n")
    rc, _, err = call(g2pl_main, ["run", prog, "--graph", mtx, "--mtx-base", "0", "--output", out, "--quiet"],
                      capsys)
    assert rc == 0, err
    assert sorted(_json(out)["values"][0]["value"]) == ["0", "1", "2"]
    rc, _, err = call(g2pl_main, ["run", prog, "--graph", mtx, "--header"], capsys)
    assert rc == 2 and "--header: the graph is a Matrix Market file" in err


@pytest.mark.skipif(not mpi_available(), reason="mpi4py/mpiexec not installed (pip install '.[mpi]')")
def test_cli_two_ranks_read_the_same_graphs(tmp_path):
    """`g2pl run --np 2`: each rank reads its byte ranges of .v/.e (and of an edge list with --header and
    --vertices); the output is byte for byte that of one rank."""
    csv = tmp_path / "h.csv"
    rng = np.random.default_rng(16)
    ids, edges = _random_edges(rng)
    csv.write_text("src,dst,weight\n" + "".join(f"{a},{b},{w}\n" for a, b, w in edges))
    vf = tmp_path / "v.txt"
    vf.write_text("".join(f"{x}\n" for x in ids))
    cases = [(["programs/sssp.g2pl", "--graph", str(FIXTURES / "example-directed.e"), "--arg", "root=1"]),
             (["programs/wcc.g2pl", "--graph", str(csv), "--header", "--vertices", str(vf)])]
    for args in cases:
        outs = []
        for n in (1, 2):
            out = tmp_path / f"o{n}.json"
            r = run_proc("g2pl", "run", *args, "--np", str(n), "--quiet", "--output", out, timeout=240)
            assert r.returncode == 0, r.stderr
            outs.append(out.read_bytes())
        assert outs[0] == outs[1], args


def test_outputs_never_overwrite_the_files_a_graph_is_read_from(tmp_path, capsys):
    """The vertex and properties files beside NAME.e and a --vertices file are inputs too."""
    (tmp_path / "g.e").write_text("1 2\n2 3\n")
    (tmp_path / "g.v").write_text("1\n2\n3\n4\n")
    (tmp_path / "g.properties").write_text("graph.g.directed = false\n")
    (tmp_path / "ids.txt").write_text("9\n")
    (tmp_path / "h.txt").write_text("1 2\n")
    bfs = str(ROOT / "programs" / "bfs.g2pl")
    for graph, extra, target in [("g.e", [], "g.v"), ("g.e", [], "g.properties"),
                                 ("h.txt", ["--vertices", str(tmp_path / "ids.txt")], "ids.txt")]:
        before = (tmp_path / target).read_text()
        rc, _, se = call(g2pl_main, ["run", bfs, "--graph", str(tmp_path / graph), *extra, "--arg", "root=1",
                                     "--output", str(tmp_path / target)], capsys)
        assert rc == 2 and "is an input of this command" in se, se
        assert (tmp_path / target).read_text() == before
