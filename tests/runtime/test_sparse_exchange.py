"""Sparse and dense ghost exchanges: a bool vector (a send mask's presence, a bool field) crosses to
each peer as a bitmap or as the positions of its set entries, whichever is fewer bytes, after a
header saying which.  Few active senders cost a few positions instead of a bit per mirror; both forms
give the same answers.

The MPI tests are skipped where mpi4py or mpiexec is missing (`pip install '.[mpi]'` brings both).
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from g2pl.runtime import array_kernels as AK
from g2pl.runtime.launch import find_mpiexec
from g2pl.runtime.numpy_backend import NumPyBackend
from g2pl.runtime.transport import FORM_ENV

ROOT = Path(__file__).resolve().parents[2]
TESTS = Path(__file__).resolve().parents[1]

try:
    import mpi4py  # noqa: F401

    HAVE_MPI = find_mpiexec() is not None
except ImportError:
    HAVE_MPI = False

needs_mpi = pytest.mark.skipif(not HAVE_MPI, reason="mpi4py/mpiexec not installed (pip install '.[mpi]')")


def _env(form: str = "") -> dict[str, str]:
    e = os.environ.copy()
    e["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), e.get("PYTHONPATH", "")) if p)
    e.pop("G2PL_FAIL_AT", None)
    e.pop(FORM_ENV, None)
    if form:
        e[FORM_ENV] = form
    return e


# ------------------------------------------------------------ the encoding


def test_widths_and_the_choice():
    assert [AK.uint_width(t) for t in (0, 255, 256, 65535, 65536, 2**32 - 1, 2**32)] == [1, 1, 2, 2, 4, 4, 8]
    # 30,000 mirrors: a 3,750-byte bitmap, or 2 bytes a position
    assert AK.flags_sparse(30_000, 1874) and not AK.flags_sparse(30_000, 1875)
    assert AK.flags_bytes(30_000, 10, True) == 20 and AK.flags_bytes(30_000, 10, False) == 3750
    assert not AK.flags_sparse(0, 0) and AK.flags_bytes(0, 0, False) == 0
    assert AK.flags_sparse(8, 0) and not AK.flags_sparse(8, 1)  # nothing set: nothing but the header


def _roundtrip(ops, xp, seed: int) -> None:
    rng = np.random.default_rng(seed)
    seg = np.array([0, 1, 7, 300, 70_000, 9], dtype=np.int64)
    host = np.concatenate([rng.random(n) < p for n, p in zip(seg, (0.5, 1.0, 0.3, 0.01, 0.0005, 0.0))])
    sel = xp.asarray(host)
    bounds = np.concatenate([[0], np.cumsum(seg)])
    k = np.array([int(host[a:b].sum()) for a, b in zip(bounds[:-1], bounds[1:])], dtype=np.int64)
    for sparse in ([False] * 6, [True] * 6, [AK.flags_sparse(int(n), int(c)) for n, c in zip(seg, k)]):
        chunks = AK.encode_flags(ops, sel, seg, k, sparse)
        sizes = [int(len(c)) for c in chunks]
        assert sizes == [AK.flags_bytes(int(n), int(c), s) for n, c, s in zip(seg, k, sparse)]
        got = AK.decode_flags(ops, chunks, seg, k, sparse)
        assert np.array_equal(got.get() if hasattr(got, "get") else got, host)
    auto = [AK.flags_sparse(int(n), int(c)) for n, c in zip(seg, k)]
    assert auto[4] and not auto[2]  # a few of 70,000: positions; 30% of 7: a bitmap


def test_flags_roundtrip_in_both_forms():
    _roundtrip(NumPyBackend, np, 1)


def test_flags_roundtrip_on_the_strict_cupy_standin():
    spec = importlib.util.spec_from_file_location("strict_cupy_activate", TESTS / "strict_cupy" / "activate.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    with mod.standin() as cupy:
        from g2pl.runtime.cupy_backend import CuPyBackend

        _roundtrip(CuPyBackend(), cupy, 2)


def test_positions_are_little_endian_bytes():
    x = np.array([0, 1, 258, 65535], dtype=np.int64)
    b = AK.to_le_bytes(NumPyBackend, x, 2)
    assert b.tolist() == [0, 0, 1, 0, 2, 1, 255, 255]
    assert AK.from_le_bytes(NumPyBackend, b, 2).tolist() == x.tolist()


# ------------------------------------------------------------ across ranks


def _small_frontier_graph(path: Path) -> tuple[int, int]:
    """(vertices, root): a path whose every edge crosses between two ranks (it alternates between
    the lowest and the highest IDs), beside a random graph whose vertices are mostly mirrors of the
    other rank.  BFS from the path's end has one frontier vertex per superstep."""
    rng = np.random.default_rng(7)
    lo, hi = list(range(40)), list(range(10_000, 10_040))
    walk = [v for pair in zip(lo, hi) for v in pair]
    edges = list(zip(walk[:-1], walk[1:]))
    edges += list(zip(rng.integers(1000, 5000, 8000).tolist(), rng.integers(1000, 5000, 8000).tolist()))
    path.write_text("".join(f"{a} {b}\n" for a, b in edges))
    return len({v for e in edges for v in e}), 0


def _run(tmp_path: Path, graph: Path, root: int, form: str) -> tuple[dict, dict]:
    out, stats = tmp_path / f"o{form}.json", tmp_path / f"s{form}.json"
    cmd = [sys.executable, "-m", "g2pl.cli", "run", str(ROOT / "programs" / "bfs.g2pl"), "--graph", str(graph),
           "--arg", f"root={root}", "--np", "2", "--quiet", "--output", str(out), "--stats", str(stats)]
    r = subprocess.run(cmd, env=_env(form), capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return json.loads(out.read_text()), json.loads(stats.read_text())


@needs_mpi
def test_a_small_frontier_sends_a_fraction_of_the_bitmap(tmp_path):
    """BFS along a path: every superstep has one or two active vertices, so the presence crosses as
    positions: under a tenth of the bytes of the bitmap form (a bit per mirror) in every superstep."""
    graph = tmp_path / "g.txt"
    n, root = _small_frontier_graph(graph)
    out, st = _run(tmp_path, graph, root, "")
    dense_out, dense = _run(tmp_path, graph, root, "dense")
    assert out["values"] == dense_out["values"]
    assert st["supersteps"] == dense["supersteps"] >= 80 and st["messages"] == dense["messages"]
    rows, drows = st["per_superstep"], dense["per_superstep"]
    checked = 0
    for row, drow in zip(rows, drows):
        if drow["bytes"] and row["active"] * 100 < n:
            assert row["bytes"] * 10 < drow["bytes"], (row, drow)
            checked += 1
    assert checked >= 79
    assert dense["per_superstep"][1]["bytes"] > 2000 // 8  # thousands of mirrors: hundreds of bitmap bytes


# every form of every bool vector, in one mpiexec launch: rank 0 writes answers, messages and bytes
FORMS = r"""
import json, os, sys
from pathlib import Path
import g2pl
from g2pl.runtime.mpi import MPIComm
sys.path.insert(0, sys.argv[3])
from program_args import program_args
comm = MPIComm()
graph = g2pl.load_graph(sys.argv[1]) if comm.rank == 0 else None
out = {}
for name in sys.argv[4].split(","):
    path = Path(sys.argv[2]) / f"{name}.g2pl"
    for opt in (1, 2):
        prog = g2pl.compile(path, opt=opt)
        for form in ("", "dense", "sparse"):
            os.environ[sys.argv[6]] = form
            r = prog.run(graph, args=program_args(path, int(sys.argv[5])), seed=3, comm=comm)
            if comm.rank == 0:
                out[f"{name} -O{opt} {form or 'auto'}"] = {"values": r.output()["values"], "stats": r.stats}
if comm.rank == 0:
    Path(sys.argv[7]).write_text(json.dumps(out))
"""

# presence only (bfs, kcore), with values (cc, bfs_parent), with bool fields (sssp, coloring, mis), kept
# presences and delta flips (matching), delta values (mst, bipartite)
PROGRAMS = ("bfs", "bfs_parent", "cc", "kcore", "sssp", "coloring", "mis", "matching", "mst", "bipartite")


@needs_mpi
def test_both_forms_give_the_same_answers(tmp_path):
    """Dense, sparse and the chosen form: the same answers and messages on three ranks, at -O1
    (records) and -O2 (packed); the chosen form never costs more bytes than either forced one."""
    graph = tmp_path / "g.txt"
    rng = np.random.default_rng(3)
    ids = rng.choice(10**6, 240, replace=False)
    src, dst = rng.choice(ids[:200], 700), rng.choice(ids[:200], 700)  # the rest isolated
    graph.write_text("".join(f"{a} {b} {w:.4f}\n" for a, b, w in zip(src, dst, rng.uniform(0.5, 3, 700)))
                     + "".join(f"{x} {x} 1.0\n" for x in ids[200:]))
    out = tmp_path / "forms.json"
    r = subprocess.run([find_mpiexec(), "-n", "3", sys.executable, "-c", FORMS, str(graph), str(ROOT / "programs"),
                        str(TESTS), ",".join(PROGRAMS), str(int(ids[0])), FORM_ENV, str(out)],
                       env=_env(), capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    got = json.loads(out.read_text())
    assert len(got) == len(PROGRAMS) * 2 * 3
    chose = {"dense": 0, "sparse": 0}  # runs where the chosen form saved bytes over forcing the other one
    for key, auto in got.items():
        if not key.endswith(" auto"):
            continue
        for form in ("dense", "sparse"):
            other = got[key.replace("auto", form)]
            assert other["values"] == auto["values"], (key, form)
            assert other["stats"]["messages"] == auto["stats"]["messages"], (key, form)
            assert auto["stats"]["bytes"] <= other["stats"]["bytes"], (key, form)
            for a, b in zip(auto["stats"]["per_superstep"], other["stats"]["per_superstep"]):
                assert a["bytes"] <= b["bytes"], (key, form, a, b)
            chose["dense" if form == "sparse" else "sparse"] += auto["stats"]["bytes"] < other["stats"]["bytes"]
    assert chose["dense"] and chose["sparse"], chose
