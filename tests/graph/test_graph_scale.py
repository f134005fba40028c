"""Graphs at scale: index widths, the one-rank degree view taking over the graph's arrays, and the
`.g2g` binary format (`g2pl convert`), including every way an untrusted .g2g file can be malformed.

Oracles: the graph built in memory (arrays compared entry by entry), networkx for BFS levels, and
results of the same program on the source graph.
"""

from __future__ import annotations

import json
import pickle
import struct

import networkx as nx
import numpy as np
import pytest
from cli_util import call

import g2pl
from g2pl.cli import g2pl_main
from g2pl.errors import G2PLError
from g2pl.graph import build_graph, load_graph
from g2pl.graph import graph as graph_mod
from g2pl.graph.binary import MAGIC, load_binary, save_graph
from g2pl.runtime.partition import partition, whole_by_degree

ARRAYS = ("ids", "src", "dst", "weight", "in_indptr", "in_nbr", "in_eid", "out_indptr", "out_nbr", "out_eid")
BFS = g2pl.compile_file("programs/bfs.g2pl")
SSSP = g2pl.compile_file("programs/sssp.g2pl")


def random_graph(seed: int, directed: bool, weighted: bool):
    """Several components, non-contiguous IDs, duplicates and self-loops."""
    rng = np.random.default_rng(seed)
    blocks = []
    for c in range(3):
        k = int(rng.integers(5, 40))
        ids = np.sort(rng.choice(10**9, size=k, replace=False)) + c * 10**9
        e = int(rng.integers(k, 4 * k))
        blocks.append((ids[rng.integers(0, k, e)], ids[rng.integers(0, k, e)]))
    u = np.concatenate([b[0] for b in blocks])
    v = np.concatenate([b[1] for b in blocks])
    w = rng.integers(1, 9, u.size).astype(float) if weighted else None
    return build_graph(u, v, w, directed=directed, name=f"random{seed}")


def same_graph(a, b) -> None:
    assert (a.n, a.m, a.directed, a.weighted) == (b.n, b.m, b.directed, b.weighted)
    for k in ARRAYS:
        x, y = getattr(a, k), getattr(b, k)
        assert x.dtype == y.dtype and np.array_equal(x, y), k


CASES = [(s, d, w) for s in range(4) for d in (False, True) for w in (False, True)]


# --------------------------------------------------------------------------- index widths


@pytest.mark.parametrize("directed", [False, True])
def test_int64_indices_give_the_same_graph(monkeypatch, directed):
    """Above 2^31 vertices or edges the indices are int64; lowering the limit takes that path on a small
    graph, which must be the same graph value for value."""
    narrow = random_graph(7, directed, True)
    monkeypatch.setattr(graph_mod, "INDEX32_LIMIT", 8)
    wide = random_graph(7, directed, True)
    assert narrow.src.dtype == np.int32 and wide.src.dtype == wide.in_nbr.dtype == wide.in_eid.dtype == np.int64
    for k in ARRAYS:
        assert np.array_equal(getattr(narrow, k), getattr(wide, k)), k
    assert narrow.info == wide.info


def test_unit_weights_take_no_memory():
    g = load_graph("kron:8", seed=1)
    assert g.weight.strides == (0,) and g.weight.shape == (g.m,) and float(g.weight[3]) == 1.0
    assert not g.weight.flags.writeable


def test_generated_graphs_use_32_bit_endpoints():
    g = load_graph("kron:10", seed=2)
    assert g.src.dtype == g.in_nbr.dtype == g.in_eid.dtype == np.int32
    ws = load_graph("ws:300:4:0.2", seed=2)
    assert ws.src.dtype == np.int32


# --------------------------------------------------------------------------- the degree view hands over


@pytest.mark.parametrize("directed,weighted", [(False, False), (True, True), (False, True), (True, False)])
def test_degree_view_takes_over_and_rebuilds(directed, weighted):
    """After whole_by_degree the graph no longer holds its edge arrays; reading one rebuilds exactly the
    original, and the view equals what the general partitioner makes for one rank."""
    ref = random_graph(3, directed, weighted)
    g = random_graph(3, directed, weighted)
    want = partition(ref, 1, "degree")[0]
    lg = whole_by_degree(g)
    for k in ("src", "dst", "in_nbr", "in_eid", "out_nbr", "out_eid"):
        assert k not in g.__dict__, k
    for k in ("in_nbr", "in_eid", "src", "dst", "in_indptr"):
        a, b = getattr(want, k), getattr(lg, k)
        assert a.dtype == b.dtype and np.array_equal(a, b), k
    same_graph(ref, g)  # every array rebuilt on access
    if not directed:
        assert g.in_nbr is g.out_nbr and g.in_eid is g.out_eid


def test_graph_pickles_after_hand_over():
    ref = random_graph(5, False, True)
    g = random_graph(5, False, True)
    whole_by_degree(g)
    same_graph(ref, pickle.loads(pickle.dumps(g)))


def test_runs_agree_across_renumberings_on_one_graph():
    """One Graph object used by a degree-ordered run, then an ID-order run (which rebuilds the arrays)."""
    g = load_graph("kron:9", seed=4)
    G = nx.Graph()
    G.add_nodes_from(g.ids.tolist())
    G.add_edges_from(zip(g.ids[g.src].tolist(), g.ids[g.dst].tolist(), strict=True))
    root = int(g.ids[g.src[0]])
    want = nx.single_source_shortest_path_length(G, root)
    for renumber in ("degree", "none", "degree"):
        got = BFS.run(g, args={"root": root}, renumber=renumber).output()["values"][0]["value"]
        assert got == {str(v): want.get(v, -1) for v in G.nodes}


# --------------------------------------------------------------------------- the .g2g format


@pytest.mark.parametrize("seed,directed,weighted", CASES)
def test_binary_round_trip(tmp_path, seed, directed, weighted):
    g = random_graph(seed, directed, weighted)
    path = tmp_path / "g.g2g"
    save_graph(g, path)
    h = load_binary(str(path), directed)
    same_graph(g, h)
    for k in ("input_edges", "self_loops_dropped", "duplicates_merged", "isolated_vertices"):
        assert h.info[k] == g.info[k]
    assert h.summary().split(":", 1)[1] == g.summary().split(":", 1)[1]
    if not directed:
        assert h.in_nbr is h.out_nbr


@pytest.mark.parametrize("directed", [False, True])
def test_binary_graph_runs_like_its_source(tmp_path, directed):
    g = random_graph(11, directed, True)
    path = tmp_path / "g.g2g"
    save_graph(g, path)
    h = load_graph(str(path), directed=directed)
    root = int(g.ids[g.src[0]])
    for renumber in ("none", "degree"):
        a = SSSP.run(g, args={"root": root}, renumber=renumber).output()
        b = SSSP.run(h, args={"root": root}, renumber=renumber).output()
        assert a == b


def test_cli_convert_and_run(tmp_path, capsys):
    out = tmp_path / "k.g2g"
    rc, so, se = call(g2pl_main, ["convert", "kron:9", out, "--seed", "3"], capsys)
    assert rc == 0 and "wrote" in so and out.exists(), se
    res = {}
    for name, graph in (("gen", "kron:9"), ("bin", out)):
        target = tmp_path / f"{name}.json"
        rc, so, se = call(g2pl_main, ["run", "programs/bfs.g2pl", "--graph", graph, "--seed", "3", "--arg",
                                      "root=1", "--quiet", "--output", target], capsys)
        assert rc == 0, se
        res[name] = json.loads(target.read_text())
    assert res["gen"] == res["bin"]
    rc, so, se = call(g2pl_main, ["run", "programs/bfs.g2pl", "--graph", out, "--directed", "--arg", "root=1"],
                      capsys)
    assert rc == 2 and "holds an undirected graph; run without --directed" in se and "Traceback" not in se


def test_cli_convert_refuses_bad_outputs(tmp_path, capsys):
    rc, _, se = call(g2pl_main, ["convert", "kron:5", tmp_path / "x.txt"], capsys)
    assert rc == 2 and "must end in .g2g" in se
    src = tmp_path / "a.g2g"
    save_graph(random_graph(1, False, False), src)
    rc, _, se = call(g2pl_main, ["convert", src, src], capsys)
    assert rc == 2 and "is an input of this command" in se
    rc, _, se = call(g2pl_main, ["convert", "nope:3", tmp_path / "y.g2g"], capsys)
    assert rc == 2 and "unknown graph generator" in se


# --------------------------------------------------------------------------- untrusted .g2g files


def _saved(tmp_path, directed=False, weighted=True):
    g = random_graph(2, directed, weighted)
    path = tmp_path / "g.g2g"
    save_graph(g, path)
    return path, bytearray(path.read_bytes())


def _header(blob: bytearray) -> tuple[dict, int]:
    (hlen,) = struct.unpack("<Q", bytes(blob[8:16]))
    return json.loads(bytes(blob[16:16 + hlen])), hlen


def _with_header(blob: bytearray, head: dict, hlen: int) -> bytearray:
    text = json.dumps(head).encode()
    assert len(text) <= hlen + 200
    out = bytearray(blob)
    out[8:16] = struct.pack("<Q", len(text))
    out[16:16 + len(text)] = text
    return out


def _array(blob: bytearray, head: dict, name: str) -> np.ndarray:
    dt, off, count = head["arrays"][name]
    return np.frombuffer(blob, dtype=dt, count=count, offset=off)


def _expect(tmp_path, blob, message, directed=False):
    path = tmp_path / "bad.g2g"
    path.write_bytes(bytes(blob))
    with pytest.raises(G2PLError) as e:
        load_binary(str(path), directed)
    assert message in str(e.value), str(e.value)


def test_bad_signature_version_and_truncation(tmp_path):
    path, blob = _saved(tmp_path)
    _expect(tmp_path, b"", "the file is empty")
    _expect(tmp_path, b"hello world, not a graph", "does not start with the g2pl graph signature")
    _expect(tmp_path, MAGIC[:7] + b"\x09" + bytes(blob[8:]), "format version 9 is not supported")
    _expect(tmp_path, blob[: len(blob) // 2], "lies outside the")
    big = bytearray(blob)
    big[8:16] = struct.pack("<Q", 1 << 40)
    _expect(tmp_path, big, "header length")
    junk = bytearray(blob)
    junk[16:20] = b"\xff\xfe{["
    _expect(tmp_path, junk, "the header is not valid JSON")


@pytest.mark.parametrize("edit,message", [
    (lambda h: h.update(n="7"), "header field 'n' is missing or not a int"),
    (lambda h: h.update(directed=1), "header field 'directed'"),
    (lambda h: h.update(m=-1), "out of range"),
    (lambda h: h["arrays"].update(evil=["|O", 64, 1]), "unexpected array 'evil'"),
    (lambda h: h["arrays"].pop("in_eid"), "array 'in_eid' is missing"),
    (lambda h: h["arrays"]["src"].__setitem__(0, "|O"), "has type '|O'"),
    (lambda h: h["arrays"]["dst"].__setitem__(0, ">i4"), "has type '>i4'"),
    (lambda h: h["arrays"]["in_nbr"].__setitem__(2, 3), "has 3 entries"),
    (lambda h: h["arrays"]["ids"].__setitem__(1, 1 << 40), "lies outside the"),
    (lambda h: h["arrays"]["ids"].__setitem__(1, 3), "lies outside the"),
    (lambda h: h["info"].update(duplicates_merged=-4), "header count 'duplicates_merged'"),
])
def test_bad_headers(tmp_path, edit, message):
    _, blob = _saved(tmp_path)
    head, hlen = _header(blob)
    edit(head)
    _expect(tmp_path, _with_header(blob, head, hlen), message)


@pytest.mark.parametrize("directed", [False, True])
@pytest.mark.parametrize("name,pos,value,message", [
    ("ids", 1, -5, "not strictly ascending"),
    ("ids", 0, -1, "between 0 and 2^62"),
    ("src", 0, 10**6, "outside 0.."),
    ("dst", 3, -2, "outside 0.."),
    ("in_indptr", 2, 10**6, "row pointers do not match"),
    ("in_indptr", 0, 1, "row pointers do not match"),
    ("in_nbr", 5, 10**6, "name a vertex or edge out of range"),
    ("in_eid", 4, -1, "name a vertex or edge out of range"),
    ("weight", 1, np.nan, "is not a finite non-negative number"),
    ("weight", 2, -3.0, "is not a finite non-negative number"),
])
def test_bad_contents(tmp_path, directed, name, pos, value, message):
    _, blob = _saved(tmp_path, directed=directed)
    head, _ = _header(blob)
    arr = _array(blob, head, name)
    dt, off, _count = head["arrays"][name]
    blob[off + pos * arr.itemsize: off + (pos + 1) * arr.itemsize] = np.array([value], dtype=dt).tobytes()
    _expect(tmp_path, blob, message, directed)


def test_unsorted_or_looping_edges(tmp_path):
    _, blob = _saved(tmp_path)
    head, _ = _header(blob)
    src, dst = _array(blob, head, "src").copy(), _array(blob, head, "dst").copy()
    for s, d, message in ((src[::-1], dst[::-1], "not sorted by (src, dst)"),
                          (src, src, "self-loop or not stored as (smaller, larger)")):
        b = bytearray(blob)
        for name, arr in (("src", s), ("dst", d)):
            _, off, _ = head["arrays"][name]
            b[off:off + arr.nbytes] = np.ascontiguousarray(arr).tobytes()
        _expect(tmp_path, b, message)


def test_random_corruption_never_crashes(tmp_path):
    """Flipped bytes anywhere: a clean error, or a file that still passes every check and then runs."""
    path, blob = _saved(tmp_path)
    rng = np.random.default_rng(0)
    bad = tmp_path / "flip.g2g"
    for _ in range(150):
        b = bytearray(blob)
        for i in rng.integers(0, len(b), size=int(rng.integers(1, 4))):
            b[i] ^= int(rng.integers(1, 256))
        bad.write_bytes(bytes(b))
        try:
            g = load_binary(str(bad), False)
        except G2PLError:
            continue
        root = int(g.ids[0])
        BFS.run(g, args={"root": root})


# --------------------------------------------------------------------------- memory estimates


def test_memory_estimates_follow_the_layout(tmp_path, monkeypatch):
    from g2pl.graph import memory
    from g2pl.graph.loaders import parse_graph_spec

    k24 = memory.estimate_bytes(parse_graph_spec("kron:24"))
    assert 8 * 2**30 < k24 < 12 * 2**30  # was 40.8 GiB with int64 indices and copies
    path = tmp_path / "g.g2g"
    save_graph(random_graph(1, False, True), path)
    assert memory.estimate_bytes(parse_graph_spec(str(path))) >= path.stat().st_size
    monkeypatch.setattr(memory, "available_memory", lambda: 2**30)
    with pytest.raises(G2PLError, match="needs about 1[0-9].[0-9] GiB to load, but only 1.0 GiB"):
        load_graph("kron:24")


def test_edge_programs_after_the_degree_view(tmp_path):
    """Programs that read edge endpoints on a degree-ordered run build the deferred endpoints; the
    answers equal the ID-order run's on directed and undirected graphs."""
    prog = g2pl.compile("""
    main() {
      Deg = { count [ 1 | u <- nvals v ] | v <- V };
      D = { id[u] + 2 * Deg[v] | (u, e, v) <- E };
      return D;
    }
    """)
    for directed in (False, True):
        g = random_graph(9, directed, False)
        a = prog.run(g, renumber="none").output()
        b = prog.run(g, renumber="degree").output()
        assert a == b


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_build_graph_leaves_its_inputs_alone(dtype):
    rng = np.random.default_rng(3)
    u = rng.integers(0, 50, 400).astype(dtype)
    v = rng.integers(0, 50, 400).astype(dtype)
    u0, v0 = u.copy(), v.copy()
    build_graph(u, v, None, directed=False, name="x")
    assert np.array_equal(u, u0) and np.array_equal(v, v0)


def test_kronecker_bits_match_a_direct_per_level_draw() -> None:
    """The vectorized bit gathering equals the plain rule: per edge and level one 32-bit uniform r
    from the edge block's stream, row bit = r >= A+B (quadrant C or D), column bit = quadrant B or D;
    then the label permutation (a bijection of 0..2^scale-1)."""
    from g2pl.graph import generators as gen

    for scale, ef, seed in [(1, 1, 0), (5, 3, 1), (9, 2, 7), (13, 9, 3)]:
        u, v = gen.kronecker_edges(scale, ef, seed)
        n, m = 1 << scale, ef << scale
        t = [int(x * 2**32) for x in (gen.KRON_A, gen.KRON_A + gen.KRON_B, gen.KRON_A + gen.KRON_B + gen.KRON_C)]
        chunk = gen.GEN_BLOCK
        ru, rv = [], []
        for start in range(0, m, chunk):
            k = min(chunk, m - start)
            stream = gen._stream(seed, start // chunk)
            draws = stream.bit_generator.random_raw((scale * k + 1) // 2).view(np.uint32)[: scale * k]
            for e in range(0, k, max(1, k // 300)):  # a sample of each block's edges
                a = b = 0
                for lvl in range(scale):
                    r = int(draws[e * scale + lvl])
                    quadrant = (r >= t[0]) + (r >= t[1]) + (r >= t[2])  # 0 A, 1 B, 2 C, 3 D
                    a |= (quadrant >= 2) << lvl
                    b |= (quadrant in (1, 3)) << lvl
                ru.append((start + e, a))
                rv.append((start + e, b))
        perm = np.arange(n, dtype=np.int32)
        gen._permute_labels(perm, scale, seed)
        assert np.array_equal(np.sort(perm), np.arange(n))
        pos = [e for e, _ in ru]
        assert np.array_equal(u[pos], perm[[a for _, a in ru]]), (scale, ef, seed)
        assert np.array_equal(v[pos], perm[[b for _, b in rv]]), (scale, ef, seed)


def test_undirected_csr_rows_in_chunks_match_a_sorted_reference(monkeypatch) -> None:
    """_csr fills each row's two blocks a chunk of rows at a time; tiny chunks (down to one row) give
    the same arrays as sorting all 2m (row, neighbour) entries."""
    from g2pl.graph import graph as gg

    rng = np.random.default_rng(11)
    for trial in range(120):
        n = int(rng.integers(1, 50))
        a, b = rng.integers(0, n, 200), rng.integers(0, n, 200)
        key = np.unique(np.minimum(a, b) * n + np.maximum(a, b))
        key = key[key // n != key % n]
        src, dst = (key // n).astype(np.int32), (key % n).astype(np.int32)
        monkeypatch.setattr(gg, "_CHUNK", int(rng.integers(1, 30)))
        indptr, nbr, eid, *_ = gg._csr(src, dst, n, directed=False)
        rows = np.concatenate([src, dst])
        cols = np.concatenate([dst, src])
        eids = np.concatenate([np.arange(src.size), np.arange(src.size)])
        order = np.lexsort((cols, rows))
        assert np.array_equal(nbr, cols[order]) and np.array_equal(eid, eids[order]), trial
        assert np.array_equal(indptr, np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=n))]))
