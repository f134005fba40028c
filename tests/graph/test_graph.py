"""Tests for g2pl.graph: canonical Graph building, file formats, generators, and input errors.

Small random graphs are checked against a plain-Python reference (and networkx
for adjacency), so the vectorized code paths (dense and sparse relabelling,
weighted and unweighted merging, undirected and directed CSR) are all covered.
"""

from __future__ import annotations

import os
from pathlib import Path

import networkx as nx
import numpy as np
import pytest
from cli_util import write as write_file

from g2pl.errors import G2PLError
from g2pl.graph import (
    MAX_VERTEX_ID,
    Graph,
    build_graph,
    load_graph,
    loaders,
    parse_graph_spec,
)
from g2pl.graph.graph import index_dtype

# --------------------------------------------------------------------------- helpers


def check_invariants(g: Graph) -> None:
    """Structural invariants every Graph must satisfy (interface contract)."""
    assert g.ids.dtype == g.in_indptr.dtype == g.out_indptr.dtype == np.int64
    vt, et = index_dtype(g.n), index_dtype(g.m)  # int32 whenever the indices fit
    for a in (g.src, g.dst, g.in_nbr, g.out_nbr):
        assert a.dtype == vt
    assert g.in_eid.dtype == g.out_eid.dtype == et
    assert g.weight.dtype == np.float64
    assert (
        g.ids.shape == (g.n,) and g.src.shape == (g.m,) and g.dst.shape == (g.m,) and g.weight.shape == (g.m,)
    )
    assert np.all(np.diff(g.ids) > 0), "ids strictly ascending"
    if g.m:
        key = g.src * g.n + g.dst
        assert np.all(np.diff(key) > 0), "edges sorted by (src, dst) and unique"
        assert np.all(g.src != g.dst), "no self-loops"
        if not g.directed:
            assert np.all(g.src < g.dst)
    if not g.directed:
        assert g.in_indptr is g.out_indptr and g.in_nbr is g.out_nbr and g.in_eid is g.out_eid
        assert g.in_indptr[-1] == 2 * g.m
    else:
        assert g.in_indptr[-1] == g.m and g.out_indptr[-1] == g.m
    for indptr, nbr, eid, incoming in (
        (g.in_indptr, g.in_nbr, g.in_eid, True),
        (g.out_indptr, g.out_nbr, g.out_eid, False),
    ):
        assert indptr.shape == (g.n + 1,) and indptr[0] == 0 and np.all(np.diff(indptr) >= 0)
        for r in range(g.n):
            row = nbr[indptr[r] : indptr[r + 1]]
            es = eid[indptr[r] : indptr[r + 1]]
            assert np.all(np.diff(row) > 0), "neighbours sorted within each row"
            for x, e in zip(row.tolist(), es.tolist(), strict=True):
                s, d = int(g.src[e]), int(g.dst[e])
                if not g.directed:
                    assert {s, d} == {r, x}
                elif incoming:
                    assert (s, d) == (x, r)
                else:
                    assert (s, d) == (r, x)


def reference(edges: list[tuple[int, int, float]], directed: bool, extra: tuple[int, ...] = ()) -> dict:
    """Plain-Python model of build_graph: {(u_id, v_id): min weight}, vertex IDs, counts."""
    vertices = set(extra)
    merged: dict[tuple[int, int], float] = {}
    loops = 0
    for u, v, w in edges:
        vertices.update((u, v))
        if u == v:
            loops += 1
            continue
        k = (u, v) if directed else (min(u, v), max(u, v))
        merged[k] = min(w, merged.get(k, float("inf")))
    return {
        "ids": sorted(vertices),
        "edges": merged,
        "loops": loops,
        "dups": len(edges) - loops - len(merged),
    }


def graph_edges(g: Graph) -> dict[tuple[int, int], float]:
    return {(int(g.ids[s]), int(g.ids[d])): float(w) for s, d, w in zip(g.src, g.dst, g.weight, strict=True)}


def write(tmp_path: Path, name: str, text: str | bytes) -> str:
    return str(write_file(tmp_path, name, text))  # as a str: the messages quote it


def expect_error(fn, *args, match: str, line: int | None = None, file: str | None = None, **kw) -> G2PLError:
    with pytest.raises(G2PLError) as ei:
        fn(*args, **kw)
    err = ei.value
    assert err.exit_status == 2
    assert match.lower() in err.message.lower(), err.message
    rendered = str(err)
    if file is not None:
        assert err.file == file
        assert os.path.basename(file) in rendered
    if line is not None:
        assert err.line == line, (err.line, err.message)
        assert f":{line}:" in rendered
    return err


# --------------------------------------------------------------------------- build_graph


def test_relabel_non_contiguous_ids() -> None:
    g = build_graph([5, 1000, 77], [1000, 77, 5], directed=False, name="t")
    check_invariants(g)
    assert g.ids.tolist() == [5, 77, 1000]
    assert g.n == 3 and g.m == 3
    assert g.src.tolist() == [0, 0, 1] and g.dst.tolist() == [1, 2, 2]
    assert g.id_to_index(np.array([77, 5, 6, 1000, -1, 2**62])).tolist() == [1, 0, -1, 2, -1, -1]
    assert g.id_to_index([77.0, 5.5, np.nan, 1e300]).tolist() == [1, -1, -1, -1]
    assert g.id_to_index(np.array([1000, 2**63 + 5], dtype=np.uint64)).tolist() == [2, -1]
    assert g.weighted is False and np.all(g.weight == 1.0)
    assert g.in_nbr.tolist() == [1, 2, 0, 2, 0, 1]


def test_self_loops_and_duplicates_counted_min_weight_kept() -> None:
    src = [1, 2, 3, 3, 2, 1, 4]
    dst = [2, 1, 3, 3, 1, 2, 1]
    w = [5.0, 2.0, 1.0, 1.0, 7.0, 3.0, 0.0]
    g = build_graph(src, dst, w, directed=False, name="t")
    check_invariants(g)
    assert g.info["self_loops_dropped"] == 2
    assert g.info["duplicates_merged"] == 3  # (2,1), (2,1), (1,2) all merge into (1,2)
    assert g.info["input_edges"] == 7
    assert graph_edges(g) == {(1, 2): 2.0, (1, 4): 0.0}
    assert g.ids.tolist() == [1, 2, 3, 4]  # 3 only had a self-loop but is still a vertex
    assert g.info["isolated_vertices"] == 1
    assert (
        g.summary()
        == "t: 4 vertices, 2 edges (undirected, weighted), 2 self-loops dropped, 3 duplicates merged"
    )

    d = build_graph(src, dst, w, directed=True, name="t")
    check_invariants(d)
    assert graph_edges(d) == {(1, 2): 3.0, (2, 1): 2.0, (4, 1): 0.0}
    assert d.info["duplicates_merged"] == 2


def test_summary_singular() -> None:
    g = build_graph([1, 1], [2, 1], directed=True, name="x.txt")
    assert g.summary() == "x.txt: 2 vertices, 1 edge (directed), 1 self-loop dropped, 0 duplicates merged"


@pytest.mark.parametrize("directed", [False, True])
@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("weighted", [False, True])
def test_random_graphs_match_reference(directed: bool, sparse: bool, weighted: bool) -> None:
    rng = np.random.default_rng(123 + directed + 2 * sparse + 4 * weighted)
    for trial in range(12):
        nv = int(rng.integers(1, 25))
        ne = int(rng.integers(0, 80))
        pool = rng.choice(MAX_VERTEX_ID - 1 if sparse else 3 * nv + 1, size=nv, replace=False)
        src = pool[rng.integers(0, nv, ne)]
        dst = pool[rng.integers(0, nv, ne)]
        w = rng.integers(0, 4, ne).astype(float) if weighted else None
        extra = tuple(int(x) for x in pool[:2]) if trial % 3 == 0 else ()
        if ne == 0 and not extra:
            extra = (int(pool[0]),)
        g = build_graph(src, dst, w, directed=directed, name="r", extra_ids=np.array(extra, dtype=np.int64))
        check_invariants(g)
        ws = w.tolist() if w is not None else [1.0] * ne
        ref = reference(list(zip(src.tolist(), dst.tolist(), ws, strict=True)), directed, extra)
        assert g.ids.tolist() == ref["ids"]
        assert graph_edges(g) == ref["edges"]
        assert g.info["self_loops_dropped"] == ref["loops"]
        assert g.info["duplicates_merged"] == ref["dups"]
        # Adjacency against networkx.
        G = nx.DiGraph() if directed else nx.Graph()
        G.add_nodes_from(ref["ids"])
        G.add_edges_from(ref["edges"])
        for i, vid in enumerate(g.ids.tolist()):
            innb = g.ids[g.in_nbr[g.in_indptr[i] : g.in_indptr[i + 1]]].tolist()
            outnb = g.ids[g.out_nbr[g.out_indptr[i] : g.out_indptr[i + 1]]].tolist()
            if directed:
                assert innb == sorted(G.predecessors(vid))
                assert outnb == sorted(G.successors(vid))
            else:
                assert innb == outnb == sorted(G.neighbors(vid))


def test_build_graph_rejects_bad_arrays() -> None:
    expect_error(build_graph, [1, -2], [3, 4], directed=False, name="arr", match="negative vertex ID")
    expect_error(build_graph, [1.5], [3], directed=False, name="arr", match="integer vertex IDs")
    expect_error(build_graph, [1, 2], [3], directed=False, name="arr", match="different lengths")
    expect_error(
        build_graph, [1], [2], [float("nan")], directed=False, name="arr", match="finite non-negative"
    )
    expect_error(build_graph, [1], [2], [-1.0], directed=False, name="arr", match="finite non-negative")
    expect_error(build_graph, [2**62], [2], directed=False, name="arr", match="too large")
    expect_error(build_graph, [], [], directed=False, name="arr", match="no vertices")


def test_isolated_only_graph() -> None:
    g = build_graph([], [], directed=False, name="iso", extra_ids=[3, 1, 3])
    check_invariants(g)
    assert g.n == 2 and g.m == 0 and g.ids.tolist() == [1, 3]
    assert g.in_indptr.tolist() == [0, 0, 0]


# --------------------------------------------------------------------------- file formats


def test_edge_list_whitespace_comments_and_relabel(tmp_path: Path) -> None:
    text = "# SNAP header\n% another\n\n5 1000\n1000\t77\n  77   5  \n77 77\n5 1000 # dup\n"
    p = write(tmp_path, "g.txt", text)
    g = load_graph(p)
    check_invariants(g)
    assert g.name == p
    assert g.ids.tolist() == [5, 77, 1000]
    assert g.m == 3 and not g.weighted
    assert g.info["self_loops_dropped"] == 1 and g.info["duplicates_merged"] == 1


@pytest.mark.parametrize("ext", [".txt", ".el", ".tsv", ".csv", ".edges"])
@pytest.mark.parametrize("directed", [False, True])
def test_edge_list_round_trip_weighted(tmp_path: Path, ext: str, directed: bool) -> None:
    rng = np.random.default_rng(7)
    src = rng.integers(0, 50, 200) * 1000 + 3
    dst = rng.integers(0, 50, 200) * 1000 + 3
    w = np.round(rng.random(200) * 10, 3)
    sep = "," if ext == ".csv" else ("\t" if ext == ".tsv" else " ")
    body = "".join(f"{a}{sep}{b}{sep}{c}\n" for a, b, c in zip(src, dst, w, strict=True))
    p = write(tmp_path, "g" + ext, "% comment\n" + body)
    g = load_graph(p, directed=directed)
    check_invariants(g)
    ref = reference(list(zip(src.tolist(), dst.tolist(), w.tolist(), strict=True)), directed)
    assert g.weighted
    assert graph_edges(g) == ref["edges"]
    assert g.info["format"] == "edgelist"


def test_edge_list_crlf_bom_and_percent_comments_below_header(tmp_path: Path) -> None:
    text = "\ufeff1 2\r\n% mid comment\r\n2 3 % trailing\r\n\r\n3 4\r\n"
    p = write(tmp_path, "g.txt", text.encode("utf-8"))
    g = load_graph(p)
    check_invariants(g)
    assert g.ids.tolist() == [1, 2, 3, 4] and g.m == 3


def test_edge_list_lone_cr_line_ends(tmp_path: Path) -> None:
    p = write(tmp_path, "mac.txt", b"# old mac\r1 2\r2 3\r\r3 -4\r")
    expect_error(load_graph, p, match="negative vertex ID -4", file=p, line=5)
    q = write(tmp_path, "mac2.txt", b"1 2\r2 3\r")
    assert load_graph(q).m == 2


def test_edge_list_big_ids_sparse(tmp_path: Path) -> None:
    big = 2**62 - 1
    p = write(tmp_path, "g.txt", f"{big} 0\n{big} 12345678901234\n")
    g = load_graph(p)
    assert g.ids.tolist() == [0, 12345678901234, big]
    assert g.id_to_index([big]).tolist() == [2]


def test_mtx_round_trip(tmp_path: Path) -> None:
    text = (
        "%%MatrixMarket matrix coordinate real general\n% comment\n"
        "6 5 5\n1 2 0.5\n2 1 0.25\n3 3 9\n4 5 2\n5 4 1.5\n"
    )
    p = write(tmp_path, "g.mtx", text)
    g = load_graph(p)
    check_invariants(g)
    assert g.ids.tolist() == [1, 2, 3, 4, 5, 6]  # isolated 6 (and 3, only a self-loop) included
    assert graph_edges(g) == {(1, 2): 0.25, (4, 5): 1.5}
    assert g.info["self_loops_dropped"] == 1 and g.info["duplicates_merged"] == 2
    d = load_graph(p, directed=True)
    assert graph_edges(d) == {(1, 2): 0.5, (2, 1): 0.25, (4, 5): 2.0, (5, 4): 1.5}


def test_mtx_symmetric_pattern_and_integer(tmp_path: Path) -> None:
    p = write(tmp_path, "s.mtx", "%%MatrixMarket matrix coordinate pattern symmetric\n4 4 3\n2 1\n3 1\n4 3\n")
    g = load_graph(p)
    assert not g.weighted and g.m == 3 and g.n == 4
    d = load_graph(p, directed=True)
    check_invariants(d)
    assert set(graph_edges(d)) == {(2, 1), (1, 2), (3, 1), (1, 3), (4, 3), (3, 4)}
    q = write(tmp_path, "i.mtx", "%%MatrixMarket matrix coordinate integer general\n3 3 1\n1 3 7\n")
    gi = load_graph(q)
    assert gi.weighted and graph_edges(gi) == {(1, 3): 7.0} and gi.n == 3
    e = write(tmp_path, "e.mtx", "%%MatrixMarket matrix coordinate pattern general\n3 3 0\n")
    ge = load_graph(e)
    assert ge.n == 3 and ge.m == 0


def test_npz_round_trip(tmp_path: Path) -> None:
    p = str(tmp_path / "g.npz")
    np.savez(
        p,
        src=np.array([10, 20, 20]),
        dst=np.array([20, 30, 10]),
        weight=np.array([1.5, 2.0, 0.5]),
        ids=np.array([99]),
    )
    g = load_graph(p)
    check_invariants(g)
    assert g.ids.tolist() == [10, 20, 30, 99]
    assert graph_edges(g) == {(10, 20): 0.5, (20, 30): 2.0}
    assert g.weighted
    q = str(tmp_path / "u.npz")
    np.savez(q, src=np.array([1], dtype=np.int32), dst=np.array([2], dtype=np.uint16))
    gu = load_graph(q, directed=True)
    assert not gu.weighted and graph_edges(gu) == {(1, 2): 1.0}


# --------------------------------------------------------------------------- generators


def test_kron_counts_and_determinism() -> None:
    g = load_graph("kron:10", seed=1)
    check_invariants(g)
    assert g.n == 1024 and g.ids.tolist() == list(range(1024))
    assert g.info["input_edges"] == 16 * 1024
    assert g.m + g.info["self_loops_dropped"] + g.info["duplicates_merged"] == 16 * 1024
    assert g.m > 8000
    g2 = load_graph("kron:10", seed=1)
    assert np.array_equal(g.src, g2.src) and np.array_equal(g.dst, g2.dst)
    g3 = load_graph("kron:10", seed=2)
    assert not (g3.m == g.m and np.array_equal(g.src, g3.src) and np.array_equal(g.dst, g3.dst))
    h = load_graph("kron:8:4", directed=True)
    check_invariants(h)
    assert h.n == 256 and h.info["input_edges"] == 1024
    # Skewed degrees (heavy-tailed): the max degree is far above the mean.
    deg = np.diff(g.in_indptr)
    assert deg.max() > 10 * deg.mean()


def test_ws_counts_and_determinism() -> None:
    g = load_graph("ws:100:4:0", seed=3)
    check_invariants(g)
    assert g.n == 100 and g.m == 200 and np.all(np.diff(g.in_indptr) == 4)
    r = load_graph("ws:1000:10:0.3", seed=3)
    check_invariants(r)
    assert r.n == 1000 and r.info["input_edges"] == 5000
    assert r.m + r.info["self_loops_dropped"] + r.info["duplicates_merged"] == 5000
    r2 = load_graph("ws:1000:10:0.3", seed=3)
    r3 = load_graph("ws:1000:10:0.3", seed=4)
    assert np.array_equal(r.src, r2.src) and np.array_equal(r.dst, r2.dst)
    assert not (np.array_equal(r.src, r3.src) and np.array_equal(r.dst, r3.dst))


@pytest.mark.parametrize("directed", [False, True])
def test_er_exact_m_and_determinism(directed: bool) -> None:
    g = load_graph("er:2000:5000", directed=directed, seed=5)
    check_invariants(g)
    assert g.n == 2000 and g.m == 5000
    assert g.info["self_loops_dropped"] == 0 and g.info["duplicates_merged"] == 0
    assert np.array_equal(g.src, load_graph("er:2000:5000", directed=directed, seed=5).src)
    assert not np.array_equal(g.src, load_graph("er:2000:5000", directed=directed, seed=6).src)
    # Dense request: every possible pair.
    full = 10 * 9 if directed else 45
    c = load_graph(f"er:10:{full}", directed=directed)
    check_invariants(c)
    assert c.m == full
    expect_error(load_graph, f"er:10:{full + 1}", directed=directed, match="exceeds")


def test_er_isolated_vertices_present() -> None:
    g = load_graph("er:50:3")
    assert g.n == 50 and g.m == 3 and g.info["isolated_vertices"] >= 44


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("spec", "match"),
    [
        ("kron:x", "SCALE must be a non-negative integer"),
        ("kron:", "SCALE must be a non-negative integer"),
        ("kron:31", "between 1 and 30"),
        ("kron:0", "between 1 and 30"),
        ("kron:10:0", "EDGEFACTOR must be at least 1"),
        ("kron:1:2:3", "expected kron:SCALE[:EDGEFACTOR]"),
        ("ws:10:3:0.5", "K must be an even integer"),
        ("ws:10:10:0.5", "2 <= K < N"),
        ("ws:10:4:1.5", "P must be a probability in [0, 1]"),
        ("ws:10:4:nan", "P must be a probability"),
        ("ws:10:4:x", "P must be a probability"),
        ("ws:10:4", "expected ws:N:K:P"),
        ("er:5", "expected er:N:M"),
        ("er:0:0", "N must be between 1"),
        ("er:5:-1", "M must be a non-negative integer"),
        ("foo:1:2", "unknown graph generator 'foo'"),
    ],
)
def test_bad_generator_specs(spec: str, match: str) -> None:
    expect_error(parse_graph_spec, spec, match=match)
    expect_error(load_graph, spec, match=match)


def test_parse_graph_spec_kinds(tmp_path: Path) -> None:
    s = parse_graph_spec("kron:12")
    assert s.kind == "generator" and s.format == "kron" and s.params == {"scale": 12, "edgefactor": 16}
    f = parse_graph_spec("data/x.CSV")
    assert f.kind == "file" and f.format == "edgelist" and f.path == "data/x.CSV"
    assert parse_graph_spec("a.mtx").format == "mtx" and parse_graph_spec("a.npz").format == "npz"


def test_unsupported_extension(tmp_path: Path) -> None:
    p = write(tmp_path, "g.json", "{}")
    err = expect_error(load_graph, p, match="unsupported graph file", file=p)
    for ext in (".txt", ".el", ".tsv", ".csv", ".edges", ".mtx", ".npz", "kron:"):
        assert ext in err.message


def test_missing_file_and_directory(tmp_path: Path) -> None:
    p = str(tmp_path / "nope.txt")
    expect_error(load_graph, p, match="not found", file=p)
    expect_error(load_graph, str(tmp_path / "nope.mtx"), match="not found")
    expect_error(load_graph, str(tmp_path / "nope.npz"), match="not found")
    d = tmp_path / "dir.txt"
    d.mkdir()
    expect_error(load_graph, str(d), match="directory", file=str(d))


def test_binary_and_non_utf8(tmp_path: Path) -> None:
    p = write(tmp_path, "b.txt", b"1 2\n3 4\n\x00\x01\x02")
    expect_error(load_graph, p, match="binary", file=p, line=3)
    q = write(tmp_path, "u.txt", b"1 2\n# caf\xe9\n")
    expect_error(load_graph, q, match="not UTF-8", file=q, line=2)
    r = write(tmp_path, "u.mtx", b"%%MatrixMarket matrix coordinate pattern general\n\xff\n")
    expect_error(load_graph, r, match="not UTF-8", line=2)


@pytest.mark.parametrize(
    ("body", "line", "match"),
    [
        ("1 2\n3 4\n5\n", 3, "expected 2 columns"),
        ("1 2\n3 4 5\n", 2, "expected 2 columns"),
        ("1 2 1.0\n3 4\n", 2, "expected 3 columns"),  # mixed weighted/unweighted rows
        ("1 2\n3 x\n", 2, "expected an integer vertex ID, found 'x'"),
        ("1 2\n3 -4\n", 2, "negative vertex ID -4"),
        ("1 2\n3 4.5\n", 2, "'4.5' is not an integer"),
        ("1 2\n3 99999999999999999999\n", 2, "too large"),
        (f"1 2\n3 {2**62}\n", 2, "too large"),
        ("1 2 0.5\n3 4 abc\n", 2, "bad weight 'abc'"),
        ("1 2 0.5\n3 4 nan\n", 2, "not a finite number"),
        ("1 2 0.5\n# c\n3 4 inf\n", 3, "not a finite number"),
        ("1 2 0.5\n3 4 1e400\n", 2, "not a finite number"),
        ("1 2 0.5\n3 4 -2\n", 2, "negative weight -2"),
        ("1 2 3 4\n", 1, "expected 2 or 3"),
        ("src dst\n1 2\n", 1, "looks like a header (it is not 'u v [weight]' numbers); pass --header"),
        ("1 2\n% c\n3 -1\n", 3, "negative vertex ID"),  # '%' below the header: BytesIO path
        ("1 2\n3,4\n", 2, "do not mix comma and whitespace"),
    ],
)
def test_bad_edge_list_lines(tmp_path: Path, body: str, line: int, match: str) -> None:
    p = write(tmp_path, "bad.txt", "# header\n" + body)
    expect_error(load_graph, p, match=match, file=p, line=line + 1)


def test_bad_csv_lines(tmp_path: Path) -> None:
    p = write(tmp_path, "bad.csv", "1,2\n3,,4\n")
    expect_error(load_graph, p, match="expected 2 comma-separated columns", file=p, line=2)
    q = write(tmp_path, "bad2.csv", "1,2\n3,\n")
    expect_error(load_graph, q, match="expected an integer vertex ID, found ''", file=q, line=2)


@pytest.mark.parametrize("leaf", [None, 64])
def test_bad_line_far_down_a_larger_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, leaf: int | None
) -> None:
    """The chunked slow tier (small leaves force several levels of splitting) names the right line."""
    if leaf is not None:
        monkeypatch.setattr(loaders, "_LEAF_BYTES", leaf)
    lines = [f"{i} {i + 1}" for i in range(5000)]
    lines[4321] = "4321 -7"
    lines[4900] = "4900 x"
    lines[100] = "# comment"
    p = write(tmp_path, "big.el", "\n".join(lines) + "\n")
    expect_error(load_graph, p, match="negative vertex ID -7", file=p, line=4322)
    lines[4321] = "4321 7"
    p = write(tmp_path, "big.el", "\n".join(lines) + "\n")
    expect_error(load_graph, p, match="found 'x'", file=p, line=4901)
    lines[4900] = "   "  # whitespace-only lines are fine (NumPy rejects them in CSV; the slow tier parses)
    q = write(tmp_path, "big.csv", "\n".join(lines).replace(" ", ",").replace(",,,", "   ") + "\n")
    g = load_graph(q, directed=True)
    assert g.n == 5001 and g.m == 4998
    assert set(graph_edges(g)) == {(i, i + 1) for i in range(5000) if i not in (100, 4321, 4900)} | {
        (4321, 7)
    }


@pytest.mark.parametrize("name", ["empty.txt", "comments.csv"])
def test_empty_graph(tmp_path: Path, name: str) -> None:
    p = write(tmp_path, name, "" if name == "empty.txt" else "# nothing\n\n% here\n")
    expect_error(load_graph, p, match="no vertices", file=p)


@pytest.mark.parametrize(
    ("text", "line", "match"),
    [
        ("", 1, "malformed Matrix Market header"),
        ("1 2\n", 1, "malformed Matrix Market header"),
        ("%%MatrixMarket matrix coordinate real\n1 1 0\n", 1, "malformed Matrix Market header"),
        ("%%MatrixMarket matrix array real general\n1 1\n1\n", 1, "expected 'coordinate'"),
        ("%%MatrixMarket matrix coordinate complex general\n1 1 0\n", 1, "field 'complex'"),
        ("%%MatrixMarket matrix coordinate real hermitian\n1 1 0\n", 1, "symmetry 'hermitian'"),
        ("%%MatrixMarket vector coordinate real general\n1 1 0\n", 1, "object 'vector'"),
        ("%%MatrixMarket matrix coordinate real general\n% c\n", 2, "missing the size line"),
        ("%%MatrixMarket matrix coordinate real general\n3 3\n", 2, "malformed Matrix Market size line"),
        ("%%MatrixMarket matrix coordinate real general\n0 0 0\n", 2, "no vertices"),
        ("%%MatrixMarket matrix coordinate real general\n3 3 2\n1 2 1\n", 2, "declares 2 entries"),
        (
            "%%MatrixMarket matrix coordinate real general\n3 3 1\n1 2 1\n2 3 1\n",
            4,
            "more entries than the 1",
        ),
        ("%%MatrixMarket matrix coordinate real general\n3 3 0\n1 2 1\n", 3, "more entries than the 0"),
        (
            "%%MatrixMarket matrix coordinate real general\n3 3 2\n1 2 1\n4 1 1\n",
            4,
            "row index 4 is out of range 1..3",
        ),
        (
            "%%MatrixMarket matrix coordinate real general\n3 2 1\n1 3 1\n",
            3,
            "column index 3 is out of range",
        ),
        ("%%MatrixMarket matrix coordinate real general\n3 3 1\n0 1 1\n", 3, "row index 0 is out of range"),
        ("%%MatrixMarket matrix coordinate real general\n3 3 2\n1 2 1\n2 3\n", 4, "expected 3 columns"),
        ("%%MatrixMarket matrix coordinate pattern general\n3 3 1\n1 2 5\n", 3, "expected 2 columns"),
        ("%%MatrixMarket matrix coordinate real general\n3 3 1\n1 2 -5\n", 3, "negative value -5"),
    ],
)
def test_bad_mtx(tmp_path: Path, text: str, line: int, match: str) -> None:
    p = write(tmp_path, "bad.mtx", text)
    expect_error(load_graph, p, match=match, file=p, line=line)


def test_bad_npz(tmp_path: Path) -> None:
    p = str(tmp_path / "a.npz")
    np.savez(p, src=np.array([1, 2]))
    expect_error(load_graph, p, match="missing array 'dst'", file=p)
    np.savez(p, src=np.array([1.0]), dst=np.array([2]))
    expect_error(load_graph, p, match="'src' must be integer", file=p)
    np.savez(p, src=np.array([1, 2]), dst=np.array([2]))
    expect_error(load_graph, p, match="different lengths", file=p)
    np.savez(p, src=np.array([1, 2]), dst=np.array([2, 3]), weight=np.array([1.0]))
    expect_error(load_graph, p, match="'weight' has 1 values", file=p)
    np.savez(p, src=np.array([1, 2]), dst=np.array([2, 3]), weight=np.array(["a", "b"]))
    expect_error(load_graph, p, match="must be numeric", file=p)
    np.savez(p, src=np.array([[1, 2]]), dst=np.array([[2, 3]]))
    expect_error(load_graph, p, match="must be 1-D", file=p)
    np.savez(p, src=np.array([1, -2]), dst=np.array([2, 3]))
    expect_error(load_graph, p, match="negative vertex ID", file=p)
    np.savez(p, src=np.array([1, 2]), dst=np.array([2, 3]), weight=np.array([1.0, np.inf]))
    expect_error(load_graph, p, match="finite non-negative", file=p)
    np.savez(p, src=np.array([], dtype=np.int64), dst=np.array([], dtype=np.int64))
    expect_error(load_graph, p, match="no vertices", file=p)
    q = write(tmp_path, "junk.npz", b"this is not a zip file")
    expect_error(load_graph, q, match="not a valid .npz", file=q)
    r = str(tmp_path / "single.npz")
    with open(r, "wb") as f:
        np.save(f, np.arange(3))
    expect_error(load_graph, r, match="single .npy array", file=r)
    o = str(tmp_path / "obj.npz")
    np.savez(o, src=np.array([1, None], dtype=object), dst=np.array([2, 3]))
    expect_error(load_graph, o, match="not a valid .npz", file=o)


def test_no_raw_exceptions_on_garbage(tmp_path: Path) -> None:
    """Random printable junk must always end in a G2PLError, never a Python traceback."""
    rng = np.random.default_rng(0)
    alphabet = list("0123456789 ,\t\n#%-+.eEnaNxX")
    for i in range(150):
        text = "".join(rng.choice(alphabet, size=int(rng.integers(0, 60))))
        for ext in (".txt", ".csv", ".mtx"):
            p = write(
                tmp_path,
                f"j{i}{ext}",
                ("%%MatrixMarket matrix coordinate real general\n" if ext == ".mtx" and i % 2 else "") + text,
            )
            try:
                g = load_graph(p)
            except G2PLError as e:
                assert e.file == p
            else:
                check_invariants(g)


def _reference_parse(text: str) -> tuple[list[tuple[int, int, float]], bool] | int:
    """Independent model of the edge-list rules: parsed rows, or the first bad line number."""
    rows: list[tuple[int, int, float]] = []
    ncols = None
    comma = False
    weighted = False
    for lineno, raw in enumerate(text.replace("\r\n", "\n").split("\n"), 1):
        body = raw.split("#")[0].split("%")[0]
        if not body.strip():
            continue
        if ncols is None:
            comma = "," in body
        toks = [t.strip() for t in body.split(",")] if comma else body.split()
        if ncols is None:
            ncols = len(toks)
            weighted = ncols == 3
            if ncols not in (2, 3):
                return lineno
        if len(toks) != ncols:
            return lineno
        ids = []
        for t in toks[:2]:
            digits = t[1:] if t[:1] in "+-" else t
            if not digits.isdigit() or not digits.isascii() or (t[0] == "-" and int(digits) != 0):
                return lineno
            if int(digits) >= 2**62:
                return lineno
            ids.append(int(digits))
        w = 1.0
        if weighted:
            t = toks[2]
            if "_" in t or t.lower().lstrip("+-") in ("nan", "inf", "infinity"):
                return lineno
            try:
                w = float(t)
            except ValueError:
                return lineno
            if not np.isfinite(w) or w < 0:
                return lineno
        rows.append((ids[0], ids[1], w))
    if not rows:
        return -1
    return rows, weighted


@pytest.mark.parametrize("leaf", [None, 16])
def test_fast_and_slow_tiers_agree_with_reference(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, leaf: int | None
) -> None:
    """Mostly-valid random files: success must match an independent parser, failures its first bad line."""
    if leaf is not None:
        monkeypatch.setattr(loaders, "_LEAF_BYTES", leaf)
    rng = np.random.default_rng(42)
    bad_tokens = [
        "-3",
        "1.5",
        "x",
        "",
        "nan",
        "-0",
        "+4",
        "1e3",
        "99999999999999999999",
        str(2**62),
        "0x1",
        "1_0",
    ]
    bad_weights = ["-1", "nan", "inf", "abc", "", "1e400", "+2.5", ".5", "5.", "1_0", "-0.0"]
    for i in range(120):
        comma = i % 3 == 0
        weighted = i % 2 == 0
        sep = "," if comma else rng.choice([" ", "\t", "  "])
        lines = []
        for _ in range(int(rng.integers(1, 12))):
            kind = rng.random()
            if kind < 0.1:
                lines.append(rng.choice(["# c", "% c", "", "   "]))
                continue
            toks = [str(int(rng.integers(0, 30))), str(int(rng.integers(0, 30)))]
            if weighted:
                toks.append(f"{rng.random() * 5:.3f}")
            r = rng.random()
            if r < 0.08:
                toks[int(rng.integers(0, 2))] = str(rng.choice(bad_tokens))
            elif r < 0.14 and weighted:
                toks[2] = str(rng.choice(bad_weights))
            elif r < 0.18:
                toks = toks[:-1] if len(toks) > 2 else toks + ["1"]
            line = sep.join(toks)
            if rng.random() < 0.1:
                line += " # tail" if rng.random() < 0.5 else " % tail"
            lines.append(line)
        text = ("\r\n" if i % 7 == 0 else "\n").join(lines) + "\n"
        p = write(tmp_path, f"f{i}.csv" if comma else f"f{i}.txt", text)
        ref = _reference_parse(text)
        try:
            g = load_graph(p, directed=True)
        except G2PLError as e:
            assert isinstance(ref, int), (text, e.render())
            if ref == -1:
                assert "no vertices" in e.message
            else:
                assert e.line == ref, (text, e.render())
            continue
        assert not isinstance(ref, int), (text, ref)
        rows, w = ref
        assert g.weighted == w
        assert graph_edges(g) == reference(rows, True)["edges"]
