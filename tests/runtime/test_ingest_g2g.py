"""`.g2g` files read by slices on P ranks (g2pl.graph.binary.binary_share): the parts are array for array
the partition of the graph `load_binary` reads, with its counts, and a bad file is refused on every rank
with the error `load_binary` gives it, while no rank reads more than about its share of the file."""

from __future__ import annotations

import json
import threading
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from test_ingest import assert_same_parts
from test_security_graph_files import _edit, _refused, _saved, _set, _swap, fuzz
from thread_comm import run_ranks

from g2pl.errors import G2PLError
from g2pl.graph import binary, loaders
from g2pl.graph import graph as graph_mod
from g2pl.graph.binary import binary_share, load_binary, save_graph
from g2pl.graph.graph import Graph, build_graph
from g2pl.runtime import ingest

SIZES = (1, 2, 3, 4)


def _graph(seed: int, directed: bool, weighted: bool) -> Graph:
    """Non-contiguous IDs in three components, isolated vertices, and self-loops and duplicates in the
    input (so the file's counts are not all zero)."""
    rng = np.random.default_rng(seed)
    ids = rng.choice(10**12, 90, replace=False)
    comps = [ids[:45], ids[45:70], ids[70:82]]
    s = np.concatenate([rng.choice(c, 3 * len(c)) for c in comps])
    d = np.concatenate([rng.choice(c, 3 * len(c)) for c in comps])
    w = rng.integers(1, 9, len(s)).astype(float) if weighted else None
    return build_graph(s, d, w, directed=directed, name="t", extra_ids=ids[82:])


def _loaded(path: Path, directed: bool, size: int, renumber: str | None = None) -> list[ingest.DistributedGraph]:
    got = run_ranks(size, lambda c: ingest.load(c, str(path), directed=directed, renumber=renumber))
    for g in got:
        if isinstance(g, BaseException):
            raise g
    return got


def _same_graph(path: Path, directed: bool, renumber: str | None = None) -> None:
    """On every rank count: the partition of the graph load_binary reads (more ranks than vertices too: an empty block's first ID is
    the next block's, for the owner lookup); the same `info`."""
    whole = load_binary(str(path), directed)
    for size in SIZES:
        dgs = _loaded(path, directed, size, renumber)
        assert_same_parts(whole, size, renumber, False, dgs)
        assert all((dg.weighted, dg.renumber) == (whole.weighted, renumber) for dg in dgs)
        assert all(dg.info == whole.info for dg in dgs), (size, dgs[0].info, whole.info)


@pytest.mark.parametrize("directed", [False, True])
@pytest.mark.parametrize("weighted", [False, True])
def test_slices_make_the_partition_of_the_loaded_graph(tmp_path, directed, weighted):
    g = _graph(3 + 2 * directed + weighted, directed, weighted)
    assert g.info["self_loops_dropped"] and g.info["duplicates_merged"] and g.info["isolated_vertices"]
    path = tmp_path / "g.g2g"
    save_graph(g, path)
    for renumber in (None, "degree"):
        _same_graph(path, directed, renumber)


@pytest.mark.parametrize("directed", [False, True])
def test_small_blocks_and_wide_indices(tmp_path, monkeypatch, directed):
    """Checks a few entries at a time (many rounds of lookups, rows longer than a block), on a file
    with int64 indices."""
    monkeypatch.setattr(graph_mod, "INDEX32_LIMIT", 4)
    g = _graph(11, directed, True)
    monkeypatch.undo()
    path, _, head = _saved(tmp_path, g)
    assert head["arrays"]["src"][0] == "<i8"
    monkeypatch.setattr(binary, "_CHUNK", 3)
    _same_graph(path, directed)


@pytest.mark.parametrize("directed", [False, True])
@pytest.mark.parametrize("case", ["no edges", "one vertex", "fewer vertices than ranks"])
def test_tiny_graphs(tmp_path, directed, case):
    empty = np.zeros(0, dtype=np.int64)
    if case == "no edges":
        g = build_graph(empty, empty, directed=directed, name="t", extra_ids=np.array([9, 4, 10**11]))
    elif case == "one vertex":
        g = build_graph(np.array([7]), np.array([7]), directed=directed, name="t")
    else:
        g = build_graph(np.array([5, 3]), np.array([3, 5]), np.array([2.0, 1.0]), directed=directed, name="t")
    path = tmp_path / "g.g2g"
    save_graph(g, path)
    _same_graph(path, directed)


def test_no_rank_reads_the_whole_file(tmp_path, monkeypatch):
    """The distributed load never reads the graph whole: the one-process readers are not called, and
    each of 4 ranks reads a little over a quarter of the file."""
    g = _graph(5, False, True)
    path = tmp_path / "g.g2g"
    total = save_graph(g, path)
    whole = load_binary(str(path))

    def whole_graph(*args, **kw):
        raise AssertionError("the whole graph was loaded")

    monkeypatch.setattr(binary, "load_binary", whole_graph)
    monkeypatch.setattr(loaders, "load_with", whole_graph)
    read_at = binary._read_at
    read: Counter[int] = Counter()

    def counted(f, p, offset, out):
        read[threading.get_ident()] += out.nbytes
        read_at(f, p, offset, out)

    monkeypatch.setattr(binary, "_read_at", counted)
    dgs = _loaded(path, False, 4)
    assert_same_parts(whole, 4, None, False, dgs)
    assert len(read) == 4 and max(read.values()) < 0.35 * total, (dict(read), total)


# --------------------------------------------------------------------------- bad files


def _refused_alike(path: Path, directed: bool, want: str) -> None:
    """Every rank count refuses the file on every rank with the message `load_binary` gives."""
    for size in SIZES:
        got = run_ranks(size, lambda c: binary_share(str(path), directed, c.rank, c.size, c))
        assert all(isinstance(e, G2PLError) and e.exit_status == 2 for e in got), (size, got)
        assert {str(e) for e in got} == {want}, (size, {str(e) for e in got})


def _entry_of(g: Graph, row: int, k: int = 0) -> int:
    """The position of entry `k` of a row (negative: from its end) in the in-adjacency."""
    lo, hi = int(g.in_indptr[row]), int(g.in_indptr[row + 1])
    assert hi - lo > abs(k)
    return (lo if k >= 0 else hi) + k


def _mid_row(g: Graph) -> int:
    """A row from the middle of the vertices on (a rank boundary for 2 and 4 ranks) with two entries or
    more and an edge out."""
    out = np.bincount(g.src, minlength=g.n)
    return next(r for r in range(g.n // 2, g.n) if g.in_indptr[r + 1] - g.in_indptr[r] >= 2 and out[r])


def _edges_edit(blob: bytearray, head: dict, k: int, src: int, dst: int) -> bytearray:
    return _edit(_edit(blob, head, "src", _set(k, src)), head, "dst", _set(k, dst))


# each: (directed, what is changed, a part of load_binary's message)
BAD_ARRAYS = {
    "edges swapped across the middle cut": (False, lambda g, b, h, k: _edit(_edit(
        b, h, "src", _swap(k - 1, k)), h, "dst", _swap(k - 1, k)), "not sorted by (src, dst)"),
    "an edge repeated across the middle cut": (True, lambda g, b, h, k: _edges_edit(
        b, h, k, int(g.src[k - 1]), int(g.dst[k - 1])), "without duplicates at edge"),
    "a self-loop": (False, lambda g, b, h, k: _edges_edit(b, h, k, int(g.src[k]), int(g.src[k])),
                    "is a self-loop or not stored as (smaller, larger)"),
    "a directed self-loop": (True, lambda g, b, h, k: _edges_edit(b, h, k + 1, int(g.src[k + 1]),
                                                                int(g.src[k + 1])), "is a self-loop"),
    "an endpoint out of range": (False, lambda g, b, h, k: _edit(b, h, "dst", _set(k + 2, g.n)),
                                 "has an endpoint outside 0.."),
    "a negative endpoint": (True, lambda g, b, h, k: _edit(b, h, "src", _set(g.m - 1, -1)),
                            "has an endpoint outside 0.."),
    "IDs not ascending at the middle cut": (False, lambda g, b, h, k: _edit(
        b, h, "ids", _set(g.n // 2, int(g.ids[g.n // 2 - 1]))), "not strictly ascending at position"),
    "an ID out of range": (True, lambda g, b, h, k: _edit(b, h, "ids", _set(g.n - 1, 2**62)),
                           "vertex IDs must be between 0 and 2^62"),
    "a NaN weight": (False, lambda g, b, h, k: _edit(b, h, "weight", _set(k, np.nan)),
                     "is not a finite non-negative number"),
    "a negative weight": (True, lambda g, b, h, k: _edit(b, h, "weight", _set(g.m - 1, -2.0)),
                          "is not a finite non-negative number"),
    "the first row pointer": (False, lambda g, b, h, k: _edit(b, h, "in_indptr", _set(0, 1)),
                              "row pointers do not match the edges"),
    "the last row pointer": (True, lambda g, b, h, k: _edit(b, h, "in_indptr", _set(g.n, g.m + 1)),
                             "row pointers do not match the edges"),
    "a falling row pointer": (False, lambda g, b, h, k: _edit(b, h, "in_indptr", _set(
        g.n // 2, int(g.in_indptr[g.n // 2 + 1]) + 1)), "row pointers do not match the edges"),
    "a row pointer moved by one": (True, lambda g, b, h, k: _edit(b, h, "in_indptr", _set(
        _mid_row(g) + 1, int(g.in_indptr[_mid_row(g) + 1]) - 1)), "in-adjacency"),
    "a row missing its last entry": (False, lambda g, b, h, k: _edit(b, h, "in_indptr", _set(
        _mid_row(g) + 1, int(g.in_indptr[_mid_row(g) + 1]) - 1)), "in-adjacency entry"),
    "an undirected row shorter than its edges out": (False, lambda g, b, h, k: _edit(
        b, h, "in_indptr", _set(_mid_row(g) + 1, g.in_indptr[_mid_row(g)])), "shorter than its"),
    "out-row pointers": (True, lambda g, b, h, k: _edit(b, h, "out_indptr", _set(
        g.n // 2, int(g.out_indptr[g.n // 2]) + 1)), "out-adjacency row pointers"),
    "an entry naming a non-incident edge": (True, lambda g, b, h, k: _edit(b, h, "in_eid", _set(
        _entry_of(g, _mid_row(g)), (int(g.in_eid[_entry_of(g, _mid_row(g))]) + 1) % g.m)),
        "which is not one of its edges"),
    "two rows swapping entries": (False, lambda g, b, h, k: _edit(_edit(
        b, h, "in_eid", _swap(_entry_of(g, 1), _entry_of(g, _mid_row(g)))), h, "in_nbr",
        _swap(_entry_of(g, 1), _entry_of(g, _mid_row(g)))), "in-adjacency"),
    "a row out of order": (True, lambda g, b, h, k: _edit(_edit(
        b, h, "in_eid", _swap(_entry_of(g, _mid_row(g)), _entry_of(g, _mid_row(g), 1))), h, "in_nbr",
        _swap(_entry_of(g, _mid_row(g)), _entry_of(g, _mid_row(g), 1))), "is not sorted by neighbour"),
    "an edge out listed wrong": (False, lambda g, b, h, k: _edit(b, h, "in_nbr", _set(
        _entry_of(g, _mid_row(g), -1), (int(g.in_nbr[_entry_of(g, _mid_row(g), -1)]) + 1) % g.n)),
        "after a vertex's edges in, its edges out"),
    "an entry out of range": (False, lambda g, b, h, k: _edit(b, h, "in_eid", _set(
        _entry_of(g, _mid_row(g)), g.m)), "name a vertex or edge out of range"),
    "an out-adjacency entry": (True, lambda g, b, h, k: _edit(b, h, "out_eid", _swap(k, k + 1)),
                               "out-adjacency entry"),
    "an out-neighbour": (True, lambda g, b, h, k: _edit(b, h, "out_nbr", _set(g.m - 1, 0)),
                         "out-adjacency entry"),
}


@pytest.mark.parametrize("what", list(BAD_ARRAYS))
def test_bad_arrays_are_refused_alike_on_every_rank(tmp_path, what):
    directed, edit, needle = BAD_ARRAYS[what]
    g = _graph(21 + directed, directed, True)
    _, blob, head = _saved(tmp_path, g)
    k = g.m // 2  # the first edge of rank 1's slice on 2 ranks, of rank 2's on 4
    want = _refused(tmp_path, edit(g, blob, head, k), directed, needle)
    _refused_alike(tmp_path / "bad.g2g", directed, want)


def _with_header(blob: bytearray, head: dict) -> bytearray:
    out = bytearray(blob)
    fuzz._put_header(out, json.dumps(head).encode())
    return out


BAD_FILES = {
    "truncated": (lambda b, h: b[:len(b) * 2 // 3], "lies outside the"),
    "empty": (lambda b, h: b"", "the file is empty"),
    "a wrong signature": (lambda b, h: b"G2PLGRX\x01" + b[8:], "does not start with the g2pl graph signature"),
    "a header that is not JSON": (lambda b, h: b[:16] + b"{[" + b[18:], "the header is not valid JSON"),
    "a header length past the end": (lambda b, h: b[:8] + (len(b)).to_bytes(8, "little") + b[16:],
                                     "the header length"),
    "a missing array": (lambda b, h: _with_header(b, {**h, "arrays": {
        k: v for k, v in h["arrays"].items() if k != "in_eid"}}), "array 'in_eid' is missing"),
    "a wrong isolated count": (lambda b, h: _with_header(b, {**h, "info": {
        **h["info"], "isolated_vertices": h["info"]["isolated_vertices"] + 1}}),
        "header count 'isolated_vertices'"),
    "a wrong input edge count": (lambda b, h: _with_header(b, {**h, "info": {
        **h["info"], "input_edges": h["info"]["input_edges"] + 2}}), "header count 'input_edges'"),
}


@pytest.mark.parametrize("what", list(BAD_FILES))
def test_bad_files_and_headers_are_refused_alike_on_every_rank(tmp_path, what):
    edit, needle = BAD_FILES[what]
    _, blob, head = _saved(tmp_path, _graph(31, False, True))
    want = _refused(tmp_path, edit(blob, head), False, needle)
    _refused_alike(tmp_path / "bad.g2g", False, want)


def test_the_wrong_direction_and_a_missing_file(tmp_path):
    path, _, _ = _saved(tmp_path, _graph(41, True, False))
    with pytest.raises(G2PLError) as want:
        load_binary(str(path), False)
    _refused_alike(path, False, str(want.value))
    got = run_ranks(3, lambda c: ingest.load(c, str(path), directed=None))  # `run` without --directed
    assert {str(e) for e in got} == {str(want.value)}
    with pytest.raises(G2PLError) as want:
        load_binary(str(tmp_path / "nope.g2g"))
    _refused_alike(tmp_path / "nope.g2g", False, str(want.value))


@pytest.mark.parametrize("directed", [False, True])
def test_flipped_bytes_give_the_one_process_answer(tmp_path, monkeypatch, directed):
    """Bytes flipped anywhere in the arrays (several defects at once), each side checking in blocks of
    its own size: refused with load_binary's message on every rank count, or (flips the checks cannot
    see, such as a weight's low bits) the same parts. Each check names the file's first bad position,
    so no defect wins by where the chunks or the ranks' slices are cut."""
    path, blob, head = _saved(tmp_path, _graph(51 + directed, directed, True))
    start = min(off for _, off, _ in head["arrays"].values())
    bad = tmp_path / "bad.g2g"
    rng = np.random.default_rng(directed)
    for case in range(40):
        b = bytearray(blob)
        for i in rng.integers(start, len(b), size=int(rng.integers(1, 4))):
            b[i] ^= int(rng.integers(1, 256))
        bad.write_bytes(bytes(b))
        monkeypatch.setattr(binary, "_CHUNK", int(rng.choice([3, 1 << 20])))
        try:
            whole = load_binary(str(bad), directed)
        except G2PLError as e:
            monkeypatch.setattr(binary, "_CHUNK", int(rng.choice([2, 7, 1 << 20])))
            size = int(rng.integers(2, 5))
            got = run_ranks(size, lambda c: binary_share(str(bad), directed, c.rank, c.size, c))
            assert {str(x) for x in got} == {str(e)}, (case, size)
            continue
        assert_same_parts(whole, 3, None, False, _loaded(bad, directed, 3))
