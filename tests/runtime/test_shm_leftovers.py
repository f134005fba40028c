"""Shared-memory segments of killed MPI jobs (g2pl/runtime/shm_leftovers.py): removed after the job when
new, this user's, named as an MPI library names them, and neither open nor mapped by any process."""

from __future__ import annotations

import mmap
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from g2pl.runtime import shm_leftovers
from g2pl.runtime.launch import find_mpiexec

ROOT = Path(__file__).resolve().parents[2]


def test_only_new_unused_mpi_segments_go(tmp_path):
    for name in ("mpich_shm_old", "mpich_shm_new", "mpich_shm_mapped", "mpich_shm_open", "vader_segment.x.1",
                 "someone_elses_file"):
        (tmp_path / name).write_bytes(b"\0" * 8192)
    before = {"mpich_shm_old"}
    assert shm_leftovers.segments(tmp_path) == {"mpich_shm_old", "mpich_shm_new", "mpich_shm_mapped",
                                                 "mpich_shm_open", "vader_segment.x.1"}
    with open(tmp_path / "mpich_shm_mapped", "r+b") as f:
        mapped = mmap.mmap(f.fileno(), 8192)
    held = open(tmp_path / "mpich_shm_open", "rb")  # noqa: SIM115 - held open across the call
    try:
        removed = shm_leftovers.remove_leftovers(before, tmp_path)
    finally:
        mapped.close()
        held.close()
    assert sorted(removed) == ["mpich_shm_new", "vader_segment.x.1"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mpich_shm_mapped", "mpich_shm_old", "mpich_shm_open",
                                                          "someone_elses_file"]
    assert shm_leftovers.remove_leftovers(set(), tmp_path / "missing") == []


def _has_mpi() -> bool:
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return False
    return find_mpiexec() is not None


@pytest.mark.skipif(not (_has_mpi() and shm_leftovers.SHM_DIR.is_dir()), reason="needs MPI and /dev/shm")
def test_a_job_with_a_killed_rank_leaves_no_segment():
    """A rank SIGKILLed in the middle of a run (G2PL_KILL_AT) takes the job down; the segments its ranks
    made are gone when `g2pl run` returns."""
    before = shm_leftovers.segments()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "G2PL_KILL_AT": "1:3"}
    cmd = [sys.executable, "-m", "g2pl.cli", "run", str(ROOT / "programs" / "pagerank.g2pl"), "--graph", "kron:9",
           "--arg", "iters=50", "--arg", "damping=0.85", "--np", "2", "--quiet"]
    r = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 1, r.stderr
    left = shm_leftovers.segments() - before
    deadline = time.monotonic() + 5
    while left and time.monotonic() < deadline:  # another job of this user may be starting meanwhile
        time.sleep(0.2)
        left = shm_leftovers.segments() - before
    assert not left, left
    assert signal.SIGKILL  # (the kill is the engine's G2PL_KILL_AT hook)
