"""Distributed ingestion (g2pl/runtime/ingest.py): parts built from shares, on P ranks at once in one
process, are array for array the parts `partition.partition` cuts from the whole graph."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from thread_comm import run_ranks

from g2pl.errors import G2PLError
from g2pl.graph import generators as gen
from g2pl.graph.graph import build_graph
from g2pl.graph.loaders import edge_list_share, load_edge_list
from g2pl.graph.share import EdgeShare
from g2pl.runtime import ingest
from g2pl.runtime.partition import partition

ROUTES = ("nv_send_idx", "nv_send_counts", "nv_recv_ghost", "nv_recv_counts")


def built(size: int, shares: list[EdgeShare], renumber, routes: bool) -> list[ingest.DistributedGraph]:
    got = run_ranks(size, lambda c: ingest.build(c, copy.copy(shares[c.rank]), renumber, entry_routes=routes))
    for g in got:
        if isinstance(g, BaseException):
            raise g
    return got


def assert_same_parts(graph, size: int, renumber, routes: bool, dgs: list[ingest.DistributedGraph]) -> None:
    parts = partition(graph, size, renumber)
    for r, (p, dg) in enumerate(zip(parts, dgs, strict=True)):
        q = dg.part
        for k, v in vars(p).items():
            if k in ("cache", "m_owned") or k.startswith("_") or (k in ROUTES and not routes):
                continue
            w = getattr(q, k)
            if isinstance(v, np.ndarray):
                assert np.array_equal(v, np.asarray(w)), (r, k)
            else:
                assert v == w, (r, k)
        assert (dg.n, dg.m) == (graph.n, graph.m)
        for k in ("input_edges", "self_loops_dropped", "duplicates_merged", "isolated_vertices"):
            assert dg.info[k] == graph.info[k], k
        if not routes:
            assert q.nv_send_idx is None


def random_case(seed: int, size: int, directed: bool, weighted: bool):
    """Edges over non-contiguous IDs (several components, self-loops, duplicates, isolated vertices),
    cut into `size` shares at random places."""
    rng = np.random.default_rng(seed)
    ids = rng.choice(10**12, 120, replace=False)
    comps = [ids[:60], ids[60:100], ids[100:115]]
    s = np.concatenate([rng.choice(c, 3 * len(c)) for c in comps])
    d = np.concatenate([rng.choice(c, 3 * len(c)) for c in comps])
    w = rng.integers(1, 5, len(s)).astype(float) if weighted else None
    extra = ids[115:]
    graph = build_graph(s, d, w, directed=directed, name="t", extra_ids=extra)
    cut = np.concatenate([[0], np.sort(rng.integers(0, len(s), size - 1)), [len(s)]])
    xcut = np.concatenate([[0], np.sort(rng.integers(0, len(extra), size - 1)), [len(extra)]])
    shares = [EdgeShare(s[cut[r]:cut[r + 1]], d[cut[r]:cut[r + 1]], None if w is None else w[cut[r]:cut[r + 1]],
                        extra[xcut[r]:xcut[r + 1]], directed, "t") for r in range(size)]
    return graph, shares


@pytest.mark.parametrize("size", [1, 2, 3, 5])
@pytest.mark.parametrize("directed", [False, True])
@pytest.mark.parametrize("renumber", [None, "degree"])
def test_parts_equal_the_partition_of_the_whole_graph(size, directed, renumber):
    for seed, weighted in ((1, False), (2, True)):
        graph, shares = random_case(seed + size, size, directed, weighted)
        for routes in (False, True):
            assert_same_parts(graph, size, renumber, routes, built(size, shares, renumber, routes))


def test_small_rounds_and_sorted_grouping(monkeypatch):
    """Bounded rounds of a few edges, and destination grouping by sorting (as with many ranks)."""
    monkeypatch.setattr(ingest, "_CHUNK", 3)
    monkeypatch.setattr(ingest, "_MASKED_RANKS", 0)
    graph, shares = random_case(7, 4, False, True)
    assert_same_parts(graph, 4, "degree", True, built(4, shares, "degree", True))
    graph, shares = random_case(8, 3, True, False)
    assert_same_parts(graph, 3, None, True, built(3, shares, None, True))


@pytest.mark.parametrize("spec", ["kron:9", "ws:700:6:0.3", "er:300:900", "er:40:700", "er:30:435"])
def test_generator_shares_make_the_generated_graph(spec):
    """The shares of any number of ranks are the graph `generate` builds (counter-based draws)."""
    for directed in (False, True):
        graph = gen.generate(spec, directed=directed, seed=5)
        for size in (1, 3, 4):
            shares = run_ranks(size, lambda c, d=directed: gen.generate_share(spec, d, 5, c))
            assert sum(len(x.src) for x in shares) == graph.info["input_edges"]
            dgs = built(size, shares, "auto", False)
            assert_same_parts(graph, size, dgs[0].renumber, False, dgs)


def test_generator_blocks_do_not_depend_on_the_split():
    lo, hi = gen.GEN_BLOCK, 3 * gen.GEN_BLOCK  # kron:14 has 4 blocks
    part = gen.kronecker_edges(14, 16, 3, lo, hi)
    full = gen.kronecker_edges(14, 16, 3)
    assert len(full[0]) == 4 * gen.GEN_BLOCK
    assert np.array_equal(part[0], full[0][lo:hi]) and np.array_equal(part[1], full[1][lo:hi])
    other = gen.kronecker_edges(14, 16, 4)
    assert not np.array_equal(other[0], full[0])  # the seed matters


def test_permuted_labels_are_a_permutation():
    a = np.arange(1 << 10, dtype=np.int32)
    gen._permute_labels(a, 10, 9)
    assert np.array_equal(np.sort(a), np.arange(1 << 10)) and not np.array_equal(a, np.arange(1 << 10))


def _edge_list(tmp_path, lines: list[str], name: str = "g.txt"):
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def test_edge_list_byte_ranges(tmp_path):
    rng = np.random.default_rng(3)
    ids = rng.choice(10**9, 50, replace=False)
    lines = ["# comment", "% another", ""]
    for _ in range(300):
        a, b = rng.choice(ids, 2)
        lines.append(f"{a} {b} {rng.integers(1, 9)}")
        if rng.random() < 0.1:
            lines.append("   # a comment line")
    path = _edge_list(tmp_path, lines)
    graph = load_edge_list(path, True)
    for size in (1, 2, 3, 6):
        dgs = run_ranks(size, lambda c: ingest.build(c, edge_list_share(path, True, c.rank, c.size, c), None))
        assert_same_parts(graph, size, None, False, dgs)


@pytest.mark.parametrize("bad", ["1 x", "1 2 3 4", "-5 3", "7,8"])
def test_edge_list_errors_name_the_files_line_on_every_rank(tmp_path, bad):
    lines = [f"{i} {i + 1}" for i in range(200)]
    lines.insert(150, bad)
    path = _edge_list(tmp_path, ["# header"] + lines)
    with pytest.raises(G2PLError) as want:
        load_edge_list(path)
    for size in (2, 4):
        got = run_ranks(size, lambda c: edge_list_share(path, False, c.rank, c.size, c))
        assert all(isinstance(e, G2PLError) for e in got)
        assert {(str(e), e.line) for e in got} == {(str(want.value), want.value.line)}


def test_edge_list_bom_and_crlf(tmp_path):
    path = tmp_path / "g.txt"
    path.write_bytes(b"\xef\xbb\xbf# c\r\n1 2\r\n2 3\r\n3 1\r\n")
    graph = load_edge_list(str(path))
    dgs = run_ranks(3, lambda c: ingest.build(c, edge_list_share(str(path), False, c.rank, c.size, c), None))
    assert_same_parts(graph, 3, None, False, dgs)


def test_id_lookup_span_and_digest():
    graph, shares = random_case(4, 3, False, True)
    probe = np.array([int(graph.ids[5]), 12345, int(graph.ids[-1])])

    def ask(c):
        dg = ingest.build(c, copy.copy(shares[c.rank]), "degree")
        return dg.id_to_index(probe), dg.id_span(), dg.digest()

    got = run_ranks(3, ask)
    for idx, span, _ in got:
        assert idx.tolist() == [5, -1, graph.n - 1]
        assert span == (int(graph.ids[0]), int(graph.ids[-1]))
    _, shares2 = random_case(4, 2, False, True)
    one = run_ranks(2, lambda c: ingest.build(c, copy.copy(shares2[c.rank]), None).digest())
    assert len({d for _, _, d in got} | set(one)) == 1  # the content, whatever the ranks


def test_id_lookup_on_ranks_without_vertices():
    """More ranks than vertices, renumbered by degree: ranks owning none answer too (a `vid` argument
    is checked this way on every rank)."""
    graph = build_graph([7, 9], [9, 40], directed=False, name="t")
    parts = partition(graph, 5, "degree")

    def ask(c):
        dg = ingest.DistributedGraph(c, parts[c.rank], graph.n, graph.m, False, False, "t", "degree")
        return dg.id_to_index(np.array([40, 8, 7])).tolist()

    assert run_ranks(5, ask) == [[2, -1, 0]] * 5


def test_edge_ends_rebuilt_from_the_adjacency():
    """A part keeps its edge endpoints out until read; rebuilt, they are the partition's."""
    for directed in (False, True):
        graph, shares = random_case(9, 3, directed, False)
        dgs = built(3, shares, "degree", False)
        assert all("src" not in vars(dg.part) for dg in dgs)
        assert_same_parts(graph, 3, "degree", False, dgs)


# ---------------------------------------------------------------------------- whole runs under mpiexec

ROOT = Path(__file__).resolve().parents[2]


def _have_mpi() -> bool:
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return False
    from g2pl.runtime.launch import find_mpiexec

    return find_mpiexec() is not None


def _run(tmp_path, n: int, *args: str) -> tuple[dict, dict]:
    out, stats = tmp_path / f"o{n}.json", tmp_path / f"s{n}.json"
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "-m", "g2pl", "run", *args, "--np", str(n), "--quiet",
                        "--output", str(out), "--stats", str(stats)], env=env, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    return json.loads(out.read_text()), json.loads(stats.read_text())


@pytest.mark.skipif(not _have_mpi(), reason="mpi4py/mpiexec not installed (pip install '.[mpi]')")
@pytest.mark.parametrize("opt", ["-O0", "-O2"])
def test_generated_graphs_give_the_same_answers_on_any_number_of_ranks(tmp_path, opt):
    """No rank loads the whole graph: every rank draws its own edge blocks and builds its part."""
    cases = [("cc.g2pl", "kron:9", ()), ("bfs.g2pl", "ws:600:4:0.2", ("--arg", "root=5", "--directed")),
             ("kcore.g2pl", "kron:8", ("--arg", "k=3"))]
    for prog, spec, extra in cases:
        args = (str(ROOT / "programs" / prog), opt, "--graph", spec, "--seed", "4", *extra)
        one, s1 = _run(tmp_path, 1, *args)
        for n in (2, 3):
            got, sn = _run(tmp_path, n, *args)
            assert got == one, (prog, n)
            assert sn["graph"]["m"] == s1["graph"]["m"] and sn["graph"]["n"] == s1["graph"]["n"]
            assert sum(r["edges_owned"] for r in sn["per_rank"]) == s1["graph"]["m"]
            assert all(r["graph_load_s"] > 0 and r["peak_rss_bytes"] > 0 for r in sn["per_rank"])
            if opt == "-O0":
                assert sn["bytes"] > 0


@pytest.mark.parametrize("compressed", [False, True])
def test_npz_slices(tmp_path, compressed):
    from g2pl.graph.loaders import load_npz, npz_share

    rng = np.random.default_rng(5)
    ids = rng.choice(10**10, 80, replace=False)
    s, d = rng.choice(ids[:70], 300), rng.choice(ids[:70], 300)
    w = rng.random(300)
    path = str(tmp_path / "g.npz")
    (np.savez_compressed if compressed else np.savez)(path, src=s, dst=d, weight=w, ids=ids)
    graph = load_npz(path, True)
    for size in (1, 3, 4):
        dgs = run_ranks(size, lambda c: ingest.build(c, npz_share(path, True, c.rank, c.size, c), None))
        assert_same_parts(graph, size, None, False, dgs)
    s[250] = -3
    np.savez(path, src=s, dst=d)
    with pytest.raises(G2PLError) as want:
        load_npz(path)
    got = run_ranks(3, lambda c: npz_share(path, False, c.rank, c.size, c))
    assert {str(e) for e in got} == {str(want.value)}


def test_mtx_parts_keep_the_whole_graph_s_counts(tmp_path):
    """A Matrix Market file read by byte ranges: the parts' summary still counts
    the self-loops, duplicates and isolated vertices of the file, as one rank does."""
    from g2pl.graph.loaders import load_graph

    rows = ["%%MatrixMarket matrix coordinate pattern general", "9 9 8"]
    rows += ["1 2", "2 3", "3 3", "4 4", "2 1", "1 2", "5 6", "7 7"]
    path = tmp_path / "g.mtx"
    path.write_text("\n".join(rows) + "\n")
    whole = load_graph(str(path), directed=True)
    keys = ("input_edges", "self_loops_dropped", "duplicates_merged", "isolated_vertices")
    want = {k: whole.info[k] for k in keys}
    assert want["self_loops_dropped"] == 3 and want["duplicates_merged"] == 1
    for size in (2, 3):
        dgs = run_ranks(size, lambda c: ingest.load(c, str(path), directed=True))
        assert all({k: g.info[k] for k in keys} == want for g in dgs)
