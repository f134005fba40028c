"""Untrusted graph files: `.g2g` files whose arrays disagree with each other, files that change while
or after they are read, odd headers, and graph paths that are not regular files (FIFOs, devices) on
both sides of `g2pl convert`; plus a seeded, CI-sized run of the structural fuzzer bench/fuzz_g2g.py.

What could kill the test process itself (SIGBUS from a shrinking file, a FIFO that blocks) runs in a
subprocess with a timeout.
"""

from __future__ import annotations

import json
import mmap
import os
import stat
import struct
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from cli_util import ROOT, call, run_proc

import g2pl
from g2pl.cli import g2pl_main
from g2pl.errors import G2PLError
from g2pl.graph import build_graph, load_graph
from g2pl.graph.binary import load_binary, save_graph
from g2pl.runtime.launch import find_mpiexec

sys.path.insert(0, str(ROOT / "bench"))
import fuzz_g2g as fuzz  # noqa: E402  (bench/fuzz_g2g.py)

SMALL_EL = "0 1\n1 2\n2 3\n3 0\n0 2\n4 5\n"
SUM_SRC = "main(){ S = { sum [ id[u] | u <- nvals v ] | v <- V }; return S; }\n"
SUM = g2pl.compile(SUM_SRC)


def _small(tmp_path: Path) -> Path:
    el = tmp_path / "small.el"
    el.write_text(SMALL_EL)
    out = tmp_path / "small.g2g"
    save_graph(load_graph(str(el)), out)
    return out


def _random(directed: bool, weighted: bool = False, seed: int = 4):
    rng = np.random.default_rng(seed)
    ids = np.sort(rng.choice(10**6, size=14, replace=False))
    u, v = ids[rng.integers(0, 14, 40)], ids[rng.integers(0, 14, 40)]
    w = rng.integers(1, 9, 40).astype(float) if weighted else None
    return build_graph(u, v, w, directed=directed, name="random")


def _saved(tmp_path: Path, g) -> tuple[Path, bytearray, dict]:
    path = tmp_path / "g.g2g"
    save_graph(g, path)
    blob = bytearray(path.read_bytes())
    (hlen,) = struct.unpack("<Q", bytes(blob[8:16]))
    return path, blob, json.loads(bytes(blob[16:16 + hlen]))


def _edit(blob: bytearray, head: dict, name: str, fn) -> bytearray:
    """`blob` with array `name` replaced by fn(a copy of it)."""
    dt, off, count = head["arrays"][name]
    a = np.frombuffer(bytes(blob), dtype=dt, count=count, offset=off).copy()
    a = fn(a)
    out = bytearray(blob)
    out[off:off + a.nbytes] = a.astype(dt).tobytes()
    return out


def _refused(tmp_path: Path, blob: bytes, directed: bool, *needles: str) -> str:
    path = tmp_path / "bad.g2g"
    path.write_bytes(bytes(blob))
    with pytest.raises(G2PLError) as e:
        load_binary(str(path), directed)
    text = str(e.value)
    assert e.value.exit_status == 2 and str(path) in text, text
    for s in needles:
        assert s in text, text
    return text


def _swap(i: int, j: int):
    def fn(a: np.ndarray) -> np.ndarray:
        a[i], a[j] = a[j], a[i]
        return a
    return fn


def _set(i: int, v: int):
    def fn(a: np.ndarray) -> np.ndarray:
        a[i] = v
        return a
    return fn


# --------------------------------------------------------------------------- arrays that disagree


def test_adjacency_entry_that_disagrees_with_the_edges_is_refused(tmp_path):
    """One in-range in_nbr entry changed, degrees unchanged: it used to load, give answers that depended
    on the rank count and abort the two-rank run in SciPy (an index of -1)."""
    path = _small(tmp_path)
    _, blob, head = _saved(tmp_path, load_binary(str(path)))
    bad = _edit(blob, head, "in_nbr", _set(0, 5))
    _refused(tmp_path, bad, False, "not a valid .g2g graph file", "in-adjacency entry 0")
    prog = tmp_path / "sum.g2pl"
    prog.write_text(SUM_SRC)
    ranks = ["1", "2"] if find_mpiexec() else ["1"]
    for np_ in ranks:
        r = run_proc("g2pl", "run", prog, "--graph", tmp_path / "bad.g2g", "--np", np_, "-O0", "--quiet",
                     timeout=120)
        assert r.returncode == 2 and "in-adjacency" in r.stderr, (np_, r.returncode, r.stderr)
        assert "Traceback" not in r.stderr and "free()" not in r.stderr


def _row_of(ptr: np.ndarray, k: int) -> int:
    return int(np.searchsorted(ptr, k, side="right")) - 1


@pytest.mark.parametrize("directed", [False, True])
@pytest.mark.parametrize("what", ["nbr", "eid-swap", "pair-swap", "order"])
def test_in_adjacency_must_be_the_csr_of_the_edges(tmp_path, directed, what):
    """In-range, degree-preserving edits of the in-adjacency, each of which the range checks let through."""
    g = _random(directed)
    _, blob, head = _saved(tmp_path, g)
    ptr = g.in_indptr
    big = [r for r in range(g.n) if ptr[r + 1] - ptr[r] >= 2]
    r0, r1 = big[0], big[-1]
    i, j = int(ptr[r0]), int(ptr[r1])  # first entries of two different rows
    if what == "nbr":  # a neighbour that is a vertex, but not the edge's other end
        bad = _edit(blob, head, "in_nbr", _set(i, (int(g.in_nbr[i]) + 1) % g.n))
    elif what == "eid-swap":  # two rows exchange edge ids, neighbours kept
        bad = _edit(blob, head, "in_eid", _swap(i, j))
    elif what == "pair-swap":  # two rows exchange whole entries: every id in range, every row its length
        bad = _edit(_edit(blob, head, "in_eid", _swap(i, j)), head, "in_nbr", _swap(i, j))
    else:  # a row's entries out of order
        bad = _edit(_edit(blob, head, "in_eid", _swap(i, i + 1)), head, "in_nbr", _swap(i, i + 1))
    _refused(tmp_path, bad, directed, "adjacency")


@pytest.mark.parametrize("what", ["nbr", "eid-swap", "eid-set"])
def test_directed_out_adjacency_must_be_the_edges(tmp_path, what):
    g = _random(True)
    _, blob, head = _saved(tmp_path, g)
    if what == "nbr":
        bad = _edit(blob, head, "out_nbr", _set(0, (int(g.out_nbr[0]) + 1) % g.n))
    else:
        bad = _edit(blob, head, "out_eid", _swap(0, 1) if what == "eid-swap" else _set(2, 0))
    _refused(tmp_path, bad, True, "out-adjacency entry")


def test_edge_changed_without_its_adjacency_is_refused(tmp_path):
    g = _random(False)
    _, blob, head = _saved(tmp_path, g)
    last = g.m - 1
    bad = _edit(blob, head, "dst", _set(last, g.n - 1 if int(g.dst[last]) != g.n - 1 else g.n - 2))
    _refused(tmp_path, bad, False, "not a valid .g2g graph file")


def test_header_counts_and_overlapping_arrays(tmp_path):
    g = _random(False)
    _, blob, head = _saved(tmp_path, g)
    (hlen,) = struct.unpack("<Q", bytes(blob[8:16]))

    def with_head(h: dict) -> bytearray:
        text = json.dumps(h).encode()
        assert len(text) <= hlen + 100
        out = bytearray(blob)
        out[8:16] = struct.pack("<Q", len(text))
        out[16:16 + len(text)] = text
        return out

    h = json.loads(json.dumps(head))
    h["info"]["isolated_vertices"] += 1
    _refused(tmp_path, with_head(h), False, "header count 'isolated_vertices'")
    h = json.loads(json.dumps(head))
    h["info"]["input_edges"] += 3
    _refused(tmp_path, with_head(h), False, "header count 'input_edges'")
    h = json.loads(json.dumps(head))
    h["arrays"]["in_eid"][1] = h["arrays"]["in_nbr"][1]  # two arrays read from the same bytes
    _refused(tmp_path, with_head(h), False, "'in_eid'", "'in_nbr'", "overlap in the file")


def test_loaded_arrays_are_the_canonical_ones(tmp_path):
    """A directed graph's out-adjacency is its `dst` (as built in memory), and indices have the runtime's
    widths whatever the file stored."""
    g = _random(True, weighted=True)
    path, _, _ = _saved(tmp_path, g)
    h = load_binary(str(path), True)
    assert h.out_nbr is h.dst and np.array_equal(h.out_eid, np.arange(g.m))
    for k in fuzz.ARRAYS:
        x, y = getattr(g, k), getattr(h, k)
        assert x.dtype == y.dtype and np.array_equal(x, y), k
        base = y
        while base is not None:  # in this process's memory, not a view of the file
            assert not isinstance(base, mmap.mmap), k
            base = getattr(base, "base", None)


# --------------------------------------------------------------------------- files that change


def _script(tmp_path: Path, body: str, timeout: float = 120) -> subprocess.CompletedProcess:
    code = "import os, sys\nimport numpy as np\nimport g2pl\n" + textwrap.dedent(body)
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=timeout)


@pytest.mark.parametrize("change", ["truncate", "overwrite"])
def test_a_loaded_graph_does_not_depend_on_its_file(tmp_path, change):
    """The file truncated or rewritten after loading (SIGBUS / SIGSEGV / wrong answers through a shared
    mapping): the graph in memory is what was checked, and the run gives the same answers."""
    save_graph(_random(False, weighted=True, seed=9), tmp_path / "g.g2g")
    r = _script(tmp_path, f"""
        prog = g2pl.compile({SUM_SRC!r})
        bfs = g2pl.compile_file({str(ROOT / "programs" / "bfs.g2pl")!r})
        g = g2pl.load_graph("g.g2g")
        root = int(g.ids[0])
        want = (prog.run(g).output(), bfs.run(g, args={{"root": root}}).output())
        g = g2pl.load_graph("g.g2g")
        if {change!r} == "truncate":
            os.truncate("g.g2g", 0)
        else:
            size = os.path.getsize("g.g2g")
            with open("g.g2g", "r+b") as f:
                f.write(bytes(range(256)) * (size // 256 + 1))
        for renumber in ("none", "degree"):
            got = (prog.run(g, renumber=renumber).output(),
                   bfs.run(g, args={{"root": root}}, renumber=renumber).output())
            assert got == want, renumber
        print("same answers")
    """)
    assert r.returncode == 0 and "same answers" in r.stdout, (r.returncode, r.stderr[-2000:])


def test_a_file_that_shrinks_while_it_is_read_is_refused(tmp_path):
    save_graph(_random(False, seed=10), tmp_path / "g.g2g")
    r = _script(tmp_path, """
        from g2pl.errors import G2PLError
        from g2pl.graph import binary
        read_header = binary._read_header
        def shrinking(*args):  # the file is cut just after its header has been read
            out = read_header(*args)
            os.truncate("g.g2g", os.path.getsize("g.g2g") // 2)
            return out
        binary._read_header = shrinking
        try:
            binary.load_binary("g.g2g")
        except G2PLError as e:
            print("refused:", e)
    """)
    assert r.returncode == 0 and "refused:" in r.stdout, (r.returncode, r.stderr[-2000:])
    assert "the file changed while it was read" in r.stdout


# --------------------------------------------------------------------------- odd headers


def _nested(header: bytes) -> bytes:
    return b"G2PLGRF\x01" + struct.pack("<Q", len(header)) + header


@pytest.mark.parametrize("data,message", [
    (b"G2PLGRF", "the file is truncated: it has 7 bytes, but the signature and the header length take 16"),
    (b"G2PLGRF\x01", "the file is truncated: it has 8 bytes"),
    (b"G2PLGRF\x01\x10\x00\x00\x00\x00\x00\x00", "the file is truncated: it has 15 bytes"),
    (b"G2PL", "the file is truncated: it has 4 bytes"),
    (b"G2PLGRF\x07", "format version 7 is not supported"),
    (_nested(b"[" * 200_000 + b"]" * 200_000), "the header is not valid JSON (nested too deeply"),
    (_nested(b'{"a":' * 40_000 + b"1" + b"}" * 40_000), "the header is not valid JSON (nested too deeply"),
])
def test_odd_headers_are_precise_errors(tmp_path, capsys, data, message):
    path = tmp_path / "odd.g2g"
    path.write_bytes(data)
    with pytest.raises(G2PLError) as e:
        load_binary(str(path))
    assert message in str(e.value)
    rc, _, err = call(g2pl_main, ["run", ROOT / "programs" / "bfs.g2pl", "--graph", path, "--arg", "root=0"],
                      capsys)
    assert rc == 2 and message in err and "Traceback" not in err and "internal error" not in err, err


# --------------------------------------------------------------------------- paths that are not regular files


def test_graph_paths_that_are_not_regular_files_are_refused(tmp_path):
    """A FIFO used to block the loader for ever (open waits for a writer); a link to /dev/zero to read
    for ever. Each is refused at once, whatever the format."""
    for name in ("f.el", "f.mtx", "f.npz", "f.g2g"):
        os.mkfifo(tmp_path / name)
    os.symlink("/dev/zero", tmp_path / "zero.el")
    r = _script(tmp_path, """
        from g2pl.errors import G2PLError
        for name in ("f.el", "f.mtx", "f.npz", "f.g2g", "zero.el"):
            try:
                g2pl.load_graph(name)
            except G2PLError as e:
                print(e)
    """, timeout=60)
    assert r.returncode == 0, r.stderr[-2000:]
    lines = r.stdout.splitlines()
    assert len(lines) == 5, r.stdout
    for line in lines[:4]:
        assert "is a FIFO (named pipe), not a regular file; a graph is read from a regular file" in line
    assert lines[4].startswith("zero.el: error: is a character device, not a regular file")
    r = run_proc("g2pl", "run", ROOT / "programs" / "bfs.g2pl", "--graph", tmp_path / "f.g2g",
                 "--arg", "root=0", timeout=60)
    assert r.returncode == 2 and "FIFO" in r.stderr and "Traceback" not in r.stderr
    d = tmp_path / "dir.npz"
    d.mkdir()
    with pytest.raises(G2PLError, match="is a directory, not a graph file"):
        load_graph(str(d))


def test_convert_refuses_special_outputs_and_leaves_them_alone(tmp_path, capsys):
    """README: a .g2g must be a regular file; a FIFO, or a link to /dev/null, used to be replaced by one."""
    fifo = tmp_path / "out.g2g"
    os.mkfifo(fifo)
    rc, _, err = call(g2pl_main, ["convert", "kron:4", fifo], capsys)
    assert rc == 2, err
    assert "is a FIFO (named pipe); a .g2g graph is written to, and loaded from, a regular file" in err
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    link = tmp_path / "null.g2g"
    os.symlink("/dev/null", link)
    rc, _, err = call(g2pl_main, ["convert", "kron:4", link], capsys)
    assert rc == 2 and "links to a character device (/dev/null)" in err, err
    assert os.path.islink(link) and os.readlink(link) == "/dev/null"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["null.g2g", "out.g2g"]  # no temporary left
    with pytest.raises(G2PLError, match="is a FIFO"):
        save_graph(_random(False), fifo)
    rc, _, err = call(g2pl_main, ["convert", "kron:4", tmp_path / "real.g2g", "--quiet"], capsys)
    assert rc == 0 and load_graph(str(tmp_path / "real.g2g")).n == 16, err


# --------------------------------------------------------------------------- the fuzzer, CI-sized


def test_fuzzing_the_reader_finds_nothing(tmp_path):
    """A few hundred seeded cases of bench/fuzz_g2g.py in-process, and a few through the CLI."""
    results: list[dict] = []
    fuzz.run_in_process(7, 0, 300, tmp_path, lambda rec: results.append(rec) if "outcome" in rec else None)
    crashes = [r for r in results if r["outcome"] == "crash"]
    assert not crashes, crashes[:5]
    outcomes = {r["outcome"] for r in results}
    assert outcomes == {"loaded", "refused"}
    bases = fuzz.base_graphs(tmp_path)
    picks = [next(r for r in results if r["outcome"] == "loaded"),
             next(r for r in results if r["outcome"] == "refused")]
    for rec, ranks in zip(picks, (1, 2 if find_mpiexec() else 1), strict=True):
        data, _, directed, _ = fuzz.make_case(7, rec["i"], bases, tmp_path)
        path = tmp_path / "cli.g2g"
        path.write_bytes(data)
        expected = None
        if rec["outcome"] == "loaded":
            g = load_binary(str(path), directed)
            expected = json.loads(json.dumps(SUM.run(fuzz.reference(g, tmp_path), renumber="none").output()))
        outcome, detail = fuzz.cli_case(path, directed, ranks, tmp_path, expected)
        assert outcome == rec["outcome"], detail
