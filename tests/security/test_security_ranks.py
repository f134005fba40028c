"""`g2pl run --np N` cannot exhaust the machine or leave processes behind, and a killed rank is reported.

* `--np` is capped (4 per usable CPU core, at least 8; G2PL_MAX_RANKS sets another cap): above the cap,
  exit 2 with one line saying the cap and how to raise it, and nothing started;
* the supervisor killed with SIGKILL, at start-up or mid-run: mpiexec, its proxy, every rank and any
  process a rank started in a session of its own are gone within a couple of seconds;
* a rank killed under 3 or 4 ranks: exit 1 and one line naming the rank (the supervisor's pidfd
  watcher once closed descriptors numbered like the ranks, its own stderr among them).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from test_mpi_faults import (
    FOREVER,
    PAGERANK,
    ROOT,
    descendants,
    env,
    finish,
    names_the_killed_rank,
    needs_mpi,
    rank_pids,
    wait_for,
)

from g2pl.cli import g2pl_main
from g2pl.runtime import launch
from g2pl.runtime.supervisor import _DeathWatch

BFS = str(ROOT / "programs" / "bfs.g2pl")


# ---------------------------------------------------------------- the cap on --np (no MPI needed)


def test_default_cap_is_per_core_with_a_floor(monkeypatch) -> None:
    monkeypatch.delenv(launch.MAX_RANKS_ENV, raising=False)
    for cores, cap in ((1, 8), (2, 8), (3, 12), (64, 256)):
        monkeypatch.setattr(launch, "usable_cores", lambda c=cores: c)
        assert launch.rank_cap()[0] == cap


def test_huge_np_is_refused_before_anything_starts() -> None:
    e = env()
    e.pop(launch.MAX_RANKS_ENV, None)
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "g2pl.cli", "run", BFS, "--graph", "kron:6", "--np", "100000"],
                       env=e, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and r.stdout == ""
    cap = launch.rank_cap()[0]
    assert r.stderr.splitlines() == [
        f"g2pl run: error: --np 100000: at most {cap} ranks may be started on this machine (the default: "
        f"4 per usable CPU core, {launch.usable_cores()} cores here, and never fewer than 8); "
        "set G2PL_MAX_RANKS=100000 to allow more"]
    assert "Traceback" not in r.stderr
    assert time.monotonic() - t0 < 60  # refused at once: no rank was started


def test_g2pl_max_ranks_sets_the_cap(monkeypatch, capsys) -> None:
    monkeypatch.setenv(launch.MAX_RANKS_ENV, "2")
    assert g2pl_main(["run", BFS, "--graph", "kron:6", "--np", "3"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "g2pl run: error: --np 3: at most 2 ranks may be started on this machine (G2PL_MAX_RANKS=2); "
        "set G2PL_MAX_RANKS=3 to allow more"]
    monkeypatch.setenv(launch.MAX_RANKS_ENV, "100000")
    assert launch.rank_cap() == (100000, "G2PL_MAX_RANKS=100000")


@pytest.mark.parametrize("value", ["x", "0", "-3", "2.5", "1e3"])
def test_bad_g2pl_max_ranks_is_refused(monkeypatch, capsys, value: str) -> None:
    monkeypatch.setenv(launch.MAX_RANKS_ENV, value)
    assert g2pl_main(["run", BFS, "--graph", "kron:6", "--np", "2"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"g2pl run: error: G2PL_MAX_RANKS={value!r}: expected a positive whole number of ranks"]


# ---------------------------------------------------------------- the pidfd watcher (no MPI needed)


def open_fds() -> set[int]:
    return {int(x) for x in os.listdir("/proc/self/fd")}


def test_death_watch_closes_its_pidfd_not_the_rank_number() -> None:
    """The rank is numbered like an open descriptor of ours: that descriptor must stay open, and the
    pidfd used to watch the rank must not leak."""
    decoy = os.open(os.devnull, os.O_RDONLY)
    child = subprocess.Popen(["sleep", "30"])
    try:
        before = open_fds()
        watch = _DeathWatch({decoy: child.pid}, lambda: None)
        thread = threading.Thread(target=watch.run, daemon=True)
        thread.start()
        time.sleep(0.3)  # watched
        child.kill()
        wait_for(lambda: watch.groups, timeout=10)
        watch.stop.set()
        thread.join(timeout=5)
        assert watch.groups == [[decoy]] and watch.first() == decoy
        assert os.WTERMSIG(watch.status[decoy]) == signal.SIGKILL
        os.fstat(decoy)  # still open
        assert open_fds() == before
    finally:
        child.kill()
        child.wait()
        os.close(decoy)


# ---------------------------------------------------------------- real jobs


def start_run(*args: str, extra_env: dict[str, str] | None = None) -> subprocess.Popen:
    e = env()
    e.update(extra_env or {})
    return subprocess.Popen([sys.executable, "-m", "g2pl.cli", "run", *args], env=e, cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)


def start_time(pid: int) -> str | None:
    """Field 22 of /proc/PID/stat (when it started): tells a process from a later one with its PID;
    None once it is gone or a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rfind(")") + 2:].split()
    return None if fields[0] in "ZX" else fields[19]


def still_alive(procs: dict[int, str | None]) -> list[int]:
    return [p for p, t in procs.items() if t is not None and start_time(p) == t]


def kill_leftovers(procs: dict[int, str | None]) -> None:
    for p in still_alive(procs):
        try:
            os.kill(p, signal.SIGKILL)
        except OSError:
            pass


@needs_mpi
@pytest.mark.parametrize("moment", ["start-up", "running"])
def test_sigkill_of_the_supervisor_leaves_no_process(moment: str) -> None:
    """`kill -9` of `g2pl run --np 3` while the ranks start (importing, before any of them could watch
    the supervisor) or while they run: within 2 s nothing of the job is left."""
    proc = start_run(PAGERANK, *FOREVER, "--np", "3")
    if moment == "start-up":
        wait_for(lambda: len(descendants(proc.pid)) >= 5, step=0.005)  # reaper, mpiexec, proxy, ranks forking
    else:
        wait_for(lambda: len(rank_pids(proc.pid)) == 3)
        time.sleep(1.0)
    job = {p: start_time(p) for p in descendants(proc.pid)}
    try:
        t0 = time.monotonic()  # (not after `communicate`: its end of file comes only once the job is gone)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        while still_alive(job) and time.monotonic() - t0 < 2.0:
            time.sleep(0.02)
        left = still_alive(job)
        assert not left, f"still running 2 s after the supervisor was killed: {left}"
    finally:
        kill_leftovers(job)
        proc.communicate()


@needs_mpi
def test_sigkill_of_the_supervisor_also_ends_what_a_rank_started(tmp_path: Path) -> None:
    """A process rank 1 started in a session of its own (a daemon) is below the reaper too."""
    marker = tmp_path / "daemon.pid"
    (tmp_path / "sitecustomize.py").write_text(
        "import os, subprocess\n"
        "if os.environ.get('PMI_RANK') == '1' and os.environ.get('G2PL_RUN_DIR'):\n"
        "    p = subprocess.Popen(['sleep', '300'], start_new_session=True)\n"
        f"    open({str(marker)!r}, 'w').write(str(p.pid))\n")
    e = env()
    proc = start_run(PAGERANK, *FOREVER, "--np", "2",
                     extra_env={"PYTHONPATH": e["PYTHONPATH"] + os.pathsep + str(tmp_path)})
    daemon: dict[int, str | None] = {}
    try:
        pid = wait_for(lambda: marker.exists() and marker.read_text().isdigit() and int(marker.read_text()))
        daemon = {pid: start_time(pid)}
        assert still_alive(daemon)
        t0 = time.monotonic()
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        while still_alive(daemon) and time.monotonic() - t0 < 2.0:
            time.sleep(0.02)
        assert not still_alive(daemon)
    finally:
        if proc.poll() is None:
            proc.kill()
        kill_leftovers(daemon)  # it holds the pipes of `proc` open
        proc.communicate()


@needs_mpi
@pytest.mark.parametrize(("n", "victim"), [(3, 2), (4, 1)])
def test_killed_rank_is_one_line_under_more_ranks(n: int, victim: int) -> None:
    """G2PL_KILL_AT: rank `victim` dies by SIGKILL at superstep 3. stderr is the supervisor's one line
    naming it (with the signal, unless under heavy load the evidence of it was gone), rc 1, nothing
    on stdout, no rank left."""
    proc = start_run(PAGERANK, *FOREVER, "--np", str(n), "--output", "-",
                     extra_env={"G2PL_KILL_AT": f"{victim}:3"})
    ranks = wait_for(lambda: (r := rank_pids(proc.pid)) and len(r) == n and r, timeout=60)
    rc, out, err = finish(proc, timeout=60)
    assert rc == 1 and out == ""
    assert names_the_killed_rank(err, victim), err
    assert all(start_time(p) is None for p in ranks.values())
