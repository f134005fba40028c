"""Checkpoint and resume: a run killed at any superstep continues to exactly the uninterrupted result."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from cli_util import mpi_available

import g2pl

ROOT = Path(__file__).resolve().parents[2]
GRAPH = "er:2000:6000"

CASES = {
    "sssp": lambda g: {"root": int(g.ids[g.src[0]])},
    "mis": lambda g: {},  # rand(): the per-site counters must be restored
    "pjcc": lambda g: {},  # remote reads: a pending request survives a checkpoint between request and reply
    "matching": lambda g: {},
    "pagerank": lambda g: {"iters": 12, "damping": 0.85},
}


@pytest.fixture(scope="module")
def graph():
    return g2pl.load_graph(GRAPH, seed=7)


@pytest.mark.parametrize("prog", sorted(CASES))
def test_checkpointed_and_resumed_runs_match(tmp_path, graph, prog):
    p = g2pl.compile(ROOT / "programs" / f"{prog}.g2pl")
    args = CASES[prog](graph)
    ref = p.run(graph, args=args, seed=3)
    d = tmp_path / "ck"
    full = p.run(graph, args=args, seed=3, checkpoint=str(d), checkpoint_every=2)
    assert full.values == ref.values
    manifest = json.loads((d / "manifest.json").read_text())
    assert manifest["superstep"] % 2 == 0 and manifest["superstep"] > 0
    again = p.run(graph, args=args, seed=3, resume=str(d), checkpoint_every=2)
    assert again.values == ref.values
    assert again.stats["supersteps"] == ref.stats["supersteps"]
    assert again.stats["messages"] == ref.stats["messages"]


def test_resume_refuses_a_different_run(tmp_path, graph):
    p = g2pl.compile(ROOT / "programs" / "sssp.g2pl")
    args = CASES["sssp"](graph)
    d = tmp_path / "ck"
    p.run(graph, args=args, seed=3, checkpoint=str(d), checkpoint_every=2)
    with pytest.raises(g2pl.G2PLError, match="seed differs"):
        p.run(graph, args=args, seed=4, resume=str(d))
    other = dict(args, root=int(graph.ids[graph.dst[5]]))
    with pytest.raises(g2pl.G2PLError, match="args differs"):
        p.run(graph, args=other, seed=3, resume=str(d))
    with pytest.raises(g2pl.G2PLError, match="graph differs"):
        p.run(g2pl.load_graph(GRAPH, seed=8), args=args, seed=3, resume=str(d))
    with pytest.raises(g2pl.G2PLError, match="renumber differs"):  # saved arrays are in the local order
        p.run(graph, args=args, seed=3, resume=str(d), renumber="degree")
    with pytest.raises(g2pl.G2PLError, match="program, entry differ"):
        g2pl.compile(ROOT / "programs" / "bfs.g2pl").run(graph, args=args, seed=3, resume=str(d))
    (tmp_path / "empty").mkdir()
    with pytest.raises(g2pl.G2PLError, match="manifest.json is missing"):
        p.run(graph, args=args, seed=3, resume=str(tmp_path / "empty"))
    with pytest.raises(g2pl.G2PLError, match="no such checkpoint directory"):
        p.run(graph, args=args, seed=3, resume=str(tmp_path / "absent"))
    assert not (tmp_path / "absent").exists()  # --resume never creates the directory


CHILD = """
import sys, g2pl
prog, graph_spec, d, every = sys.argv[1:5]
g = g2pl.load_graph(graph_spec, seed=7)
args = {"root": int(g.ids[g.src[0]])} if prog in ("sssp", "bfs") else {}
res = g2pl.compile_file(f"{sys.argv[5]}/programs/{prog}.g2pl").run(
    g, args=args, seed=3, checkpoint=d, checkpoint_every=int(every), resume=d if len(sys.argv) > 6 else None)
print(res.stats["supersteps"])
"""


def _child(tmp_path, prog, d, every, kill_at=None, resume=False):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("G2PL_KILL_AT", None)
    if kill_at is not None:
        env["G2PL_KILL_AT"] = f"0:{kill_at}"
    cmd = [sys.executable, "-c", CHILD, prog, GRAPH, str(d), str(every), str(ROOT)] + (["resume"] if resume else [])
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("prog", ["mis", "sssp", "pjcc"])
def test_sigkill_then_resume(tmp_path, graph, prog):
    p = g2pl.compile(ROOT / "programs" / f"{prog}.g2pl")
    ref = p.run(graph, args=CASES[prog](graph), seed=3)
    n = ref.stats["supersteps"]
    rng = random.Random(hash(prog) & 0xFFFF)
    for cycle in range(2):
        d = tmp_path / f"ck{cycle}"
        kill_at = rng.randrange(2, max(3, n - 1))
        r = _child(tmp_path, prog, d, 2, kill_at=kill_at)
        assert r.returncode == -signal.SIGKILL, r.stderr
        assert (d / "manifest.json").exists()
        res = p.run(graph, args=CASES[prog](graph), seed=3, resume=str(d), checkpoint_every=2)
        assert res.values == ref.values, f"{prog}: killed at superstep {kill_at}"



@pytest.mark.skipif(not mpi_available(), reason="mpi4py/mpiexec not installed (pip install '.[mpi]')")
def test_sigkill_one_of_two_ranks_then_resume(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    base = [sys.executable, "-m", "g2pl.cli", "run", str(ROOT / "programs" / "mis.g2pl"), "--graph", GRAPH,
            "--seed", "3", "--np", "2", "--quiet"]
    ref = tmp_path / "ref.json"
    subprocess.run(base + ["--output", str(ref)], env=env, check=True, timeout=120)
    d = tmp_path / "ck"
    killed = subprocess.run(base + ["--checkpoint", str(d), "--checkpoint-every", "2"],
                            env=dict(env, G2PL_KILL_AT="1:5"), capture_output=True, text=True, timeout=120)
    assert killed.returncode != 0
    out = tmp_path / "out.json"
    r = subprocess.run(base + ["--resume", str(d), "--checkpoint-every", "2", "--output", str(out)], env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert json.loads(out.read_text()) == json.loads(ref.read_text())
    wrong = subprocess.run([*base[:-3], "--np", "1", "--quiet", "--resume", str(d)], env=env, capture_output=True,
                           text=True, timeout=120)
    assert wrong.returncode == 2 and "ranks differs" in wrong.stderr
