"""Faults under `g2pl run --np N`: a rank killed, Ctrl-C, a rank stopped while --time-limit is set.

Each must end the whole job promptly with one line of g2pl's own on stderr and nothing of MPICH's
on stdout (`--output -` must stay clean). Skipped where mpi4py or mpiexec is missing.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from g2pl.runtime.launch import find_mpiexec, watchdog_grace
from g2pl.runtime.supervisor import StdoutFilter

ROOT = Path(__file__).resolve().parents[2]
PAGERANK = str(ROOT / "programs" / "pagerank.g2pl")

try:
    import mpi4py  # noqa: F401

    HAVE_MPI = find_mpiexec() is not None
except ImportError:
    HAVE_MPI = False

needs_mpi = pytest.mark.skipif(not HAVE_MPI, reason="mpi4py/mpiexec not installed (pip install '.[mpi]')")

# runs until stopped: a million PageRank supersteps of a few milliseconds each
FOREVER = ["--graph", "kron:9", "--arg", "iters=1000000", "--arg", "damping=0.85", "--quiet"]


def env() -> dict[str, str]:
    e = os.environ.copy()
    e["PYTHONPATH"] = str(ROOT) + (os.pathsep + e["PYTHONPATH"] if e.get("PYTHONPATH") else "")
    for k in ("G2PL_FAIL_AT", "G2PL_KILL_AT"):
        e.pop(k, None)
    return e


def start(*args: str) -> subprocess.Popen:
    """`g2pl run` in a session of its own, as a shell starts a foreground job."""
    return subprocess.Popen([sys.executable, "-m", "g2pl.cli", "run", *args], env=env(), cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)


def children(pid: int) -> list[int]:
    """PIDs of the children of `pid` (Linux /proc)."""
    out: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            out += [int(x) for x in (task / "children").read_text().split()]
        except OSError:
            pass
    return out


def descendants(pid: int) -> list[int]:
    todo, seen = [pid], []
    while todo:
        for c in children(todo.pop()):
            seen.append(c)
            todo.append(c)
    return seen


def rank_pids(pid: int) -> dict[int, int]:
    """rank -> PID of the MPI ranks below process `pid` (their PMI_RANK)."""
    out = {}
    for p in descendants(pid):
        try:
            environ = Path(f"/proc/{p}/environ").read_bytes().split(b"\0")
        except OSError:
            continue
        for item in environ:
            if item.startswith(b"PMI_RANK="):
                out[int(item[9:])] = p
    return out


def wait_for(cond, timeout: float = 30.0, step: float = 0.02):
    """Poll `cond()` until it returns something true; that value."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        v = cond()
        if v:
            return v
        time.sleep(step)
    raise AssertionError("timed out waiting")


def gone(pids) -> bool:
    """True when none of `pids` is still alive (zombies count as gone)."""
    for p in pids:
        try:
            stat = Path(f"/proc/{p}/stat").read_text()
        except OSError:
            continue
        if stat[stat.rfind(")") + 2] not in "ZX":
            return False
    return True


def finish(proc: subprocess.Popen, timeout: float = 30.0) -> tuple[int, str, str]:
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        for p in descendants(proc.pid):
            os.kill(p, signal.SIGKILL)
        proc.communicate()
        raise
    return proc.returncode, out, err


# ---------------------------------------------------------------- stdout filter (no MPI needed)

BANNER = (b"\n" + b"=" * 83 + b"\n=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES\n"
          b"=   PID 4242 RUNNING AT vm\n=   EXIT CODE: 9\n=   CLEANING UP REMAINING PROCESSES\n"
          b"=   YOU CAN IGNORE THE BELOW CLEANUP MESSAGES\n" + b"=" * 83 + b"\n"
          b"YOUR APPLICATION TERMINATED WITH THE EXIT STRING: Killed (signal 9)\n")


class Sink:
    def __init__(self) -> None:
        self.data = b""

    def write(self, b: bytes) -> None:
        self.data += b

    def flush(self) -> None:
        pass


@pytest.mark.parametrize("chunk", [1, 2, 7, 64, 10**6])
def test_filter_drops_banner_in_any_chunking(chunk: int) -> None:
    text = b'{\n "a": 1\n}\n' + BANNER
    f, sink = StdoutFilter(None, Sink()), None
    sink = f.dst
    for i in range(0, len(text), chunk):
        f.feed(text[i:i + chunk])
    f.finish()
    assert sink.data == b'{\n "a": 1\n}\n'
    assert f.banner_info() == (4242, 9, 9)


def test_filter_keeps_ordinary_output() -> None:
    text = b"a\n\n\nb\n" + b"=" * 83 + b"\n=   not a banner\n\n=\n" + b"=" * 90 + b"\nend"
    f = StdoutFilter(None, Sink())
    for i in range(len(text)):
        f.feed(text[i:i + 1])
    f.finish()
    assert f.dst.data == text and f.banner_info() is None


def test_filter_forwards_complete_lines_at_once() -> None:
    f = StdoutFilter(None, Sink())
    f.feed(b"graph: 10 vertices\n")
    assert f.dst.data == b"graph: 10 vertices\n"  # only a blank line may wait for the next bytes
    f.feed(b"progress without newline")
    assert f.dst.data.endswith(b"progress without newline")


# ---------------------------------------------------------------- real jobs


@needs_mpi
def test_killed_rank_is_named_and_stdout_stays_clean() -> None:
    proc = start(PAGERANK, *FOREVER, "--np", "2", "--output", "-")
    ranks = wait_for(lambda: (r := rank_pids(proc.pid)) and len(r) == 2 and r)
    time.sleep(1.0)  # into the run (rank start-up and loading are covered by the Ctrl-C test)
    os.kill(ranks[1], signal.SIGKILL)
    t0 = time.monotonic()
    rc, out, err = finish(proc)
    assert time.monotonic() - t0 < 5
    assert rc == 1
    assert out == ""
    # the cause comes from the dead rank's zombie or hydra's banner; under heavy load both can miss it
    # (the rank is reaped at once, the banner names a rank hydra killed itself): the rank is still named
    assert names_the_killed_rank(err, 1), err
    assert gone(ranks.values())



def names_the_killed_rank(err: str, victim: int) -> bool:
    """stderr is the supervisor's one line naming rank `victim`, killed by SIGKILL: alone (its signal
    read from its zombie, or only that it died, where under heavy load the evidence was gone), or among
    ranks dying at once (the others killed by hydra right after it), with the signal where all had it."""
    lines = err.strip().splitlines()
    if lines in ([f"g2pl run: error: rank {victim} was killed by signal 9 (SIGKILL); the run was stopped"],
                 [f"g2pl run: error: rank {victim} died unexpectedly; the run was stopped"]):
        return True
    m = len(lines) == 1 and re.fullmatch(r"g2pl run: error: ranks ([0-9, ]+) and ([0-9]+) (were killed by signal 9 "
                                         r"\(SIGKILL\)|died) at once \(which one first is not known\); the run was "
                                         r"stopped", lines[0])
    return bool(m) and str(victim) in [*m.group(1).split(", "), m.group(2)]

def run_failing(e: dict[str, str]) -> list[str]:
    """Run the endless PageRank on 2 ranks with environment `e` to its failure: exit status 1 and
    nothing on stdout are asserted; returns the lines of stderr."""
    proc = subprocess.run([sys.executable, "-m", "g2pl.cli", "run", PAGERANK, *FOREVER, "--np", "2", "--output", "-"],
                          env=e, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1 and proc.stdout == "", proc.stderr
    return proc.stderr.strip().splitlines()


@needs_mpi
def test_rank_failure_prints_one_line() -> None:
    e = env()
    e["G2PL_FAIL_AT"] = "1:2"
    assert run_failing(e) == [
        "g2pl: rank 1: runtime failure: RuntimeError: injected failure on rank 1 at superstep 2 (G2PL_FAIL_AT)"]


@needs_mpi
def test_ctrl_c_is_one_line_every_time() -> None:
    """SIGINT to the foreground process group at 20 moments from the launch of mpiexec on (rank start-up,
    loading, running): exit 130, exactly one line, never a traceback, no rank left behind."""
    bad = []
    for i in range(20):
        proc = start(PAGERANK, *FOREVER, "--np", "2")
        wait_for(lambda p=proc.pid: children(p), step=0.005)  # mpiexec is up: the supervisor is in charge
        time.sleep(0.08 * i)  # 0 .. 1.5 s: ranks importing, loading, in supersteps
        ranks = rank_pids(proc.pid)
        os.killpg(proc.pid, signal.SIGINT)
        rc, out, err = finish(proc)
        if rc != 130 or err.strip().splitlines() != ["g2pl run: interrupted"] or out or not gone(ranks.values()):
            bad.append((i, rc, out, err))
    assert not bad, f"{len(bad)} of 20 runs not clean: {bad[:3]}"


@needs_mpi
def test_ctrl_c_while_the_command_starts() -> None:
    """The `g2pl` console script interrupted while it imports NumPy and the compiler (g2pl/_ctrl_c.py),
    then while it hands over to the supervisor: never a traceback. From 0.25 s on, so that Python
    itself has started (before that, SIGINT ends the interpreter silently)."""
    script = Path(sys.executable).parent / "g2pl"
    if not script.exists():
        pytest.skip("no g2pl console script next to this Python")
    bad = []
    for i in range(10):
        proc = subprocess.Popen([str(script), "run", PAGERANK, *FOREVER, "--np", "2"], env=env(), cwd=ROOT,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
        time.sleep(0.25 + 0.08 * i)
        os.killpg(proc.pid, signal.SIGINT)
        rc, out, err = finish(proc)
        lines = err.strip().splitlines()
        if rc != 130 or len(lines) != 1 or not lines[0].endswith("interrupted") or out:
            bad.append((i, rc, out, err))
    assert not bad, f"{len(bad)} of 10 runs not clean: {bad[:3]}"


@needs_mpi
def test_stopped_rank_cannot_outlive_time_limit() -> None:
    limit = 3.0
    proc = start(PAGERANK, *FOREVER, "--np", "2", "--time-limit", str(limit))
    t0 = time.monotonic()
    ranks = wait_for(lambda: (r := rank_pids(proc.pid)) and len(r) == 2 and r)
    time.sleep(1.0)
    os.kill(ranks[1], signal.SIGSTOP)
    try:
        rc, out, err = finish(proc, timeout=limit + watchdog_grace(limit) + 20)
    finally:
        os.kill(ranks[1], signal.SIGCONT) if not gone([ranks[1]]) else None
    took = time.monotonic() - t0
    assert rc == 1 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("g2pl run: error: --time-limit 3 exceeded"), err
    assert f"rank 1 (PID {ranks[1]}) is stopped" in lines[0]
    assert took < limit + watchdog_grace(limit) + 5  # + start-up and loading
    assert gone(ranks.values())


@needs_mpi
def test_outer_mpiexec_stopped_rank_ends_after_time_limit() -> None:
    """No supervisor (`mpiexec -n 2 g2pl run ...`): the ranks' own watchdog still ends the job."""
    limit = 2.0
    cmd = [find_mpiexec(), "-n", "2", sys.executable, "-m", "g2pl.cli", "run", PAGERANK, *FOREVER[:-1],
           "--time-limit", str(limit)]
    proc = subprocess.Popen(cmd, env=env(), cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    assert proc.stdout is not None
    assert proc.stdout.readline().startswith("kron:9")  # rank 0 loaded the graph: its run is under way
    t0 = time.monotonic()
    ranks = wait_for(lambda: (r := rank_pids(proc.pid)) and len(r) == 2 and r)
    os.kill(ranks[1], signal.SIGSTOP)
    try:
        rc, _out, err = finish(proc, timeout=limit + watchdog_grace(limit) + 20)
    finally:
        os.kill(ranks[1], signal.SIGCONT) if not gone([ranks[1]]) else None
    assert rc != 0
    assert "g2pl run: error: rank 0: --time-limit 2 exceeded" in err
    assert time.monotonic() - t0 < limit + watchdog_grace(limit) + 5
    assert gone(ranks.values())


@needs_mpi
def test_output_dash_is_plain_json_on_success() -> None:
    proc = subprocess.run([sys.executable, "-m", "g2pl.cli", "run", PAGERANK, "--graph", "kron:8", "--arg", "iters=3",
                           "--arg", "damping=0.85", "--np", "2", "--output", "-"],
                          env=env(), cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)  # nothing of mpiexec's mixed in
    assert "Traceback" not in proc.stderr and "error" not in proc.stderr


@needs_mpi
def test_silent_exit_of_a_rank_is_named(tmp_path: Path) -> None:
    """A rank that ends with a status of its own and no message (here os._exit(3) from a sitecustomize)."""
    (tmp_path / "sitecustomize.py").write_text(
        "import os, threading, time\n"
        "if os.environ.get('PMI_RANK') == '1' and os.environ.get('G2PL_RUN_DIR'):\n"
        "    threading.Thread(target=lambda: (time.sleep(2), os._exit(3)), daemon=True).start()\n")
    e = env()
    e["PYTHONPATH"] += os.pathsep + str(tmp_path)
    err = run_failing(e)
    # under heavy load both ranks can be gone before their statuses are read: then both are named
    assert err in (["g2pl run: error: rank 1 exited with status 3 without a message; the run was stopped"],
                   ["g2pl run: error: ranks 0 and 1 died at once (which one first is not known); the run was "
                    "stopped"]), err


@needs_mpi
def test_sigterm_to_g2pl_run_stops_the_job() -> None:
    proc = start(PAGERANK, *FOREVER, "--np", "2")
    ranks = wait_for(lambda: (r := rank_pids(proc.pid)) and len(r) == 2 and r)
    os.kill(proc.pid, signal.SIGTERM)
    rc, out, err = finish(proc)
    assert rc == 128 + signal.SIGTERM and out == ""
    assert err.strip().splitlines() == ["g2pl run: stopped by SIGTERM"]
    assert gone(ranks.values())
