"""The CuPy backend: every program at every -O level gives the NumPy backend's answers.

Without a GPU (CI) the backend's code runs over a strict NumPy stand-in for `cupy`
(tests/strict_cupy: raises wherever CuPy 14 raises, refuses implicit host conversion, counts
device->host synchronizations); with a real CUDA device the same tests run on it too.  Errors:
no CuPy, and CuPy without a device, are exit-2 refusals naming what to do.
"""

from __future__ import annotations

import ast
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from program_args import program_args

import g2pl

ROOT = Path(__file__).resolve().parents[2]
STANDIN = Path(__file__).resolve().parents[1] / "strict_cupy"
PROGRAMS = sorted((ROOT / "programs").glob("*.g2pl"))

def _activate():
    """tests/strict_cupy/activate.py, imported by path (the folder never goes on sys.path: a plain
    `import cupy` anywhere else in the process must not find the stand-in)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("strict_cupy_activate", STANDIN / "activate.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


standin = _activate().standin


def _real_cupy():
    """The installed CuPy with a usable device, else None."""
    try:
        import cupy
    except ImportError:
        return None
    try:
        return cupy if cupy.cuda.runtime.getDeviceCount() > 0 else None
    except Exception:
        return None


def _graph():
    """Non-contiguous IDs, three components, isolated vertices, weights."""
    rng = np.random.default_rng(5)
    ids = rng.choice(10**9, 300, replace=False)
    src, dst = [], []
    for part in (ids[:150], ids[150:250], ids[250:280]):
        m = 3 * len(part)
        src += rng.choice(part, m).tolist()
        dst += rng.choice(part, m).tolist()
    w = rng.uniform(0.5, 4.0, len(src)).round(3)
    g = g2pl.Graph.from_edges(np.array(src), np.array(dst), w, ids=ids)
    return g, int(ids[0])


def same(a, b) -> bool:
    """Ints, bools, IDs and sets exactly; floats within 1e-9 relative (sums in another order)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b)) or abs(a - b) <= 1e-9 * max(abs(a), abs(b))
    return a == b


def _run_both(path: Path, opt: int, g, root: int, bounded: bool = False):
    """The NumPy backend's run and the CuPy backend's; `bounded`: the CuPy run may take at most about twice
    the NumPy run's supersteps (a program that does not terminate on a device fails fast instead of hanging)."""
    prog = g2pl.compile(path, opt=opt)
    args = program_args(path, root)
    want = prog.run(g, args=args, seed=7)
    limit = 2 * want.stats["supersteps"] + 10 if bounded else None
    got = prog.run(g, args=args, seed=7, backend="cupy", max_supersteps=limit)
    return want, got


@pytest.mark.parametrize("opt", [0, 1, 2])
@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: p.stem)
def test_every_program_on_the_standin_matches_numpy(path: Path, opt: int) -> None:
    g, root = _graph()
    with standin():
        want, got = _run_both(path, opt, g, root)
    assert same(got.output()["values"], want.output()["values"]), path.stem
    assert got.stats["backend"] == "cupy" and got.stats["supersteps"] == want.stats["supersteps"]
    assert got.stats["messages"] == want.stats["messages"]
    dev = got.stats["device"]
    assert dev["h2d_bytes"] > 0 and dev["syncs"] >= 0


def test_pulls_over_a_receiver_filter_s_rows_on_the_standin_match_numpy(monkeypatch: pytest.MonkeyPatch) -> None:
    """cc_hub.g2pl's later pulls reduce only the rows of its receiver filter (Adjacency.of_rows, made with
    the backend's arrays) on the device as on the host, with the same answers."""
    from g2pl.runtime.adjacency import Adjacency

    served: list[bool] = []
    of_rows = Adjacency.of_rows
    monkeypatch.setattr(Adjacency, "of_rows", lambda self, rows, frac: served.append(
        (view := of_rows(self, rows, frac)) is not None) or view)
    g = g2pl.load_graph("kron:10", seed=3)
    prog = g2pl.compile_file(ROOT / "programs" / "cc_hub.g2pl")
    want = prog.run(g)
    with standin():
        got = prog.run(g, backend="cupy")
    assert got.output()["values"] == want.output()["values"]
    assert served.count(True) >= 4  # (twice a run here: the third and fourth rounds, on each backend)


@pytest.mark.skipif(_real_cupy() is None, reason="no CUDA device (CuPy with a GPU runs these on the device)")
@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: p.stem)
def test_every_program_on_the_gpu_matches_numpy(path: Path) -> None:
    g, root = _graph()
    for opt in (0, 2):
        want, got = _run_both(path, opt, g, root, bounded=True)
        assert same(got.output()["values"], want.output()["values"]), (path.stem, opt)


@pytest.mark.parametrize("opt", [0, 2])
def test_stats_count_every_device_read(opt: int) -> None:
    """`stats.device.syncs` is every device->host synchronization of the run: the stand-in counts each
    one CuPy makes (int()/bool() of an array, nonzero, boolean masks, bincount, repeat by device
    counts, copies to the host), and the backend's count must be the same, for every program."""
    import importlib

    g = g2pl.load_graph("kron:10", seed=3)
    root = int(g.ids[g.src[0]])
    for path in PROGRAMS:
        prog = g2pl.compile(path, opt=opt)
        args = program_args(path, root)
        with standin():
            cupy = importlib.import_module("cupy")
            first = prog.run(g, args=args, backend="cupy")  # the graph part's device copy is made once
            before = cupy._standin_syncs()
            res = prog.run(g, args=args, backend="cupy")
            syncs = cupy._standin_syncs() - before
        assert res.stats["device"]["syncs"] == syncs, path.stem
        # the device copy of the graph is made once: later runs copy only their own staging (remote reads)
        assert res.stats["device"]["h2d_bytes"] <= first.stats["device"]["h2d_bytes"], path.stem


def test_syncs_stay_with_the_supersteps_control_values() -> None:
    """Reads of the superstep's control values, not of elements: a handful per superstep."""
    g = g2pl.load_graph("kron:10", seed=3)
    root = int(g.ids[g.src[0]])
    for name in ("bfs", "pagerank", "cc", "sssp", "matching"):
        path = ROOT / "programs" / f"{name}.g2pl"
        with standin():
            res = g2pl.compile(path).run(g, args=program_args(path, root), backend="cupy")
        assert res.stats["device"]["syncs"] <= 10 * res.stats["supersteps"], (name, res.stats["device"])


def _env(extra_path: str = "") -> dict[str, str]:
    e = os.environ.copy()
    e["PYTHONPATH"] = os.pathsep.join(p for p in (extra_path, str(ROOT), e.get("PYTHONPATH", "")) if p)
    return e


# every program at every -O level on two ranks, both backends, in one mpiexec launch (rank 0 compares)
TWO_RANKS = r"""
import json, sys
from pathlib import Path
import g2pl
from g2pl.runtime.mpi import MPIComm
sys.path.insert(0, sys.argv[3])
from program_args import program_args
comm = MPIComm()
graph = g2pl.load_graph(sys.argv[1]) if comm.rank == 0 else None
out = {}
for path in sorted(Path(sys.argv[2]).glob("*.g2pl")):
    for opt in (0, 1, 2):
        prog = g2pl.compile(path, opt=opt)
        args = program_args(path, int(sys.argv[4]))
        got = {b: prog.run(graph, args=args, seed=3, comm=comm, backend=b) for b in ("numpy", "cupy")}
        if comm.rank == 0:
            assert got["cupy"].stats["backend"] == "cupy" and got["cupy"].stats["ranks"] == 2
            assert got["cupy"].stats["device"]["h2d_bytes"] > 0
            out[f"{path.stem} -O{opt}"] = {b: r.output()["values"] for b, r in got.items()}
if comm.rank == 0:
    Path(sys.argv[5]).write_text(json.dumps(out))
"""


def test_two_ranks_stage_device_buffers_through_the_host(tmp_path: Path) -> None:
    """Every program, every -O level, on two ranks: device buffers staged through host memory give the
    NumPy backend's answers (the ranks import the stand-in as `cupy`)."""
    from g2pl.runtime.launch import find_mpiexec

    try:
        import mpi4py  # noqa: F401
    except ImportError:
        pytest.skip("mpi4py not installed (pip install '.[mpi]')")
    mpiexec = find_mpiexec()
    if mpiexec is None:
        pytest.skip("no mpiexec")
    g, root = _graph()
    gfile = tmp_path / "g.txt"
    gfile.write_text("".join(f"{int(g.ids[s])} {int(g.ids[d])} {w}\n" for s, d, w in zip(g.src, g.dst, g.weight)))
    out = tmp_path / "out.json"
    r = subprocess.run([mpiexec, "-n", "2", sys.executable, "-c", TWO_RANKS, str(gfile), str(ROOT / "programs"),
                        str(Path(__file__).resolve().parents[1]), str(root), str(out)],
                       env=_env(str(STANDIN)), capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    got = json.loads(out.read_text())
    assert len(got) == 3 * len(PROGRAMS)
    for key, by in got.items():
        assert same(by["cupy"], by["numpy"]), key


def test_without_cupy_the_backend_is_refused_with_the_install_command(tmp_path: Path) -> None:
    blocker = tmp_path / "nocupy"
    (blocker / "cupy").mkdir(parents=True)
    (blocker / "cupy" / "__init__.py").write_text("raise ImportError('no cupy here')\n")
    r = subprocess.run([sys.executable, "-m", "g2pl.cli", "run", str(ROOT / "programs" / "cc.g2pl"), "--graph",
                        "er:50:100", "--backend", "cupy"], env=_env(str(blocker)), capture_output=True, text=True)
    assert r.returncode == 2 and "needs CuPy" in r.stderr and "pip install" in r.stderr
    assert "Traceback" not in r.stderr


def test_cupy_without_a_device_is_refused(tmp_path: Path) -> None:
    fake = tmp_path / "nodevice"
    (fake / "cupy" / "cuda").mkdir(parents=True)
    (fake / "cupyx" / "scipy").mkdir(parents=True)
    (fake / "cupy" / "__init__.py").write_text("from . import cuda\n")
    (fake / "cupy" / "cuda" / "__init__.py").write_text(
        "class runtime:\n    @staticmethod\n    def getDeviceCount():\n"
        "        raise RuntimeError('cudaErrorNoDevice: no CUDA-capable device is detected')\n")
    (fake / "cupyx" / "__init__.py").write_text("")
    (fake / "cupyx" / "scipy" / "__init__.py").write_text("")
    (fake / "cupyx" / "scipy" / "sparse.py").write_text("")
    r = subprocess.run([sys.executable, "-m", "g2pl.cli", "run", str(ROOT / "programs" / "cc.g2pl"), "--graph",
                        "er:50:100", "--backend", "cupy"], env=_env(str(fake)), capture_output=True, text=True)
    assert r.returncode == 2 and "no CUDA device" in r.stderr and "Traceback" not in r.stderr


def _names_used() -> set[tuple[str, str]]:
    """(module, name) of every `xp.NAME` / `sparse.NAME` the CuPy backend and the verbs use."""
    used = set()
    files = ["cupy_backend.py", "engine.py", "neighbourhood.py", "edges.py", "transport.py", "remote.py",
             "adjacency.py"]
    for name in files:
        tree = ast.parse((ROOT / "g2pl" / "runtime" / name).read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute):
                base = node.value
                base_name = base.id if isinstance(base, ast.Name) else base.attr if isinstance(base, ast.Attribute) else ""
                if base_name == "xp":
                    used.add(("cupy", node.attr))
                elif base_name == "sparse":
                    used.add(("cupyx.scipy.sparse", node.attr))
    return used


def test_every_cupy_name_the_backend_uses_exists_in_cupy() -> None:
    cupy = pytest.importorskip("cupy", reason="CuPy is not installed (pip install -e '.[gpu]')")
    import cupyx.scipy.sparse as sparse

    mods = {"cupy": cupy, "cupyx.scipy.sparse": sparse}
    missing = sorted(f"{m}.{n}" for m, n in _names_used() if not hasattr(mods[m], n))
    assert not missing


def test_every_cupy_name_the_backend_uses_exists_in_the_standin() -> None:
    import importlib

    with standin():
        mods = {"cupy": importlib.import_module("cupy"), "cupyx.scipy.sparse": importlib.import_module(
            "cupyx.scipy.sparse")}
        missing = sorted(f"{m}.{n}" for m, n in _names_used() if not hasattr(mods[m], n))
    assert not missing


@pytest.mark.parametrize("directed", [False, True], ids=["undirected", "directed"])
def test_common_neighbour_forms_on_the_standin_match_numpy(directed: bool) -> None:
    """Every common-neighbour form (heads over vertex and edge fields, float means in a fixed order,
    argmax ties, restricted listing, directed lists) gives the NumPy answers on the stand-in."""
    from test_common_neighbours import DIRECTED, FORMS

    g, _root = _graph()
    if directed:
        g = g2pl.Graph.from_edges(g.ids[g.src], g.ids[g.dst], g.weight, directed=True, ids=g.ids)
    for opt in (0, 2):
        prog = g2pl.compile(DIRECTED if directed else FORMS, opt=opt)
        args = {} if directed else {"t": 2.0}
        want = prog.run(g, args=args)
        with standin():
            got = prog.run(g, args=args, backend="cupy")
        assert same(got.output()["values"], want.output()["values"]), opt
        assert got.stats["messages"] == want.stats["messages"]
