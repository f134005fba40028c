"""Starting several ranks: `g2pl run --np N` re-runs itself under `mpiexec -n N` and supervises the job.

The `g2pl run` process that called `relaunch` stays alive as the job's supervisor (supervisor.py),
because only it can turn the ways an MPI job ends into one line of g2pl's own:

* a rank killed by a signal (MPICH's hydra prints a "BAD TERMINATION" banner on *stdout*, which
  would corrupt `--output -`): the banner is kept off our stdout and read to learn which PID died and
  how; the rank that PID belongs to comes from the small files every rank writes into a private
  run directory (`G2PL_RUN_DIR`);
* Ctrl-C: mpiexec runs in a process group of its own and hydra puts every rank in a session of its
  own, so the terminal's SIGINT reaches this process alone; it kills the job and prints one line;
* a rank that stops answering (SIGSTOP, a hung node) while `--time-limit` is set: the ranks stay
  blocked in a collective and the engine's own check never runs, so a watchdog here kills the job
  `--time-limit` + `watchdog_grace` seconds after the program started.

Rank side: `rank_main` is each rank's entry point; `program_started` (called by the driver) tells
when the program's clock started; `RankWatchdog` (around every run, in the driver) does the
watchdog's work inside the ranks when no supervisor is there (an outer `mpiexec -n N g2pl run ...`).
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path

from g2pl.errors import G2PLError

RUN_DIR_ENV = "G2PL_RUN_DIR"  # the supervisor's private directory; set only in ranks it started
SUPERVISOR_ENV = "G2PL_SUPERVISOR_PID"
POLL_S = 0.1  # how often the supervisor looks at the job (signals, rank files, deadline)
_ERR = "g2pl run: error:"


def find_mpiexec() -> str | None:
    """mpiexec next to this Python (the `mpich` wheel installs it there), else on PATH."""
    here = Path(sys.executable).parent / "mpiexec"
    if here.exists():
        return str(here)
    return shutil.which("mpiexec")


def watchdog_grace(limit: float) -> float:
    """Seconds past `--time-limit` before a watchdog kills the job: the engine checks the limit only
    at superstep boundaries, so a run that is merely in a long superstep gets time to stop by itself."""
    return 3.0 + 0.1 * limit


def signal_name(num: int) -> str:
    """'SIGKILL' for 9; 'signal 42' for numbers Python has no name for."""
    try:
        return signal.Signals(num).name
    except ValueError:
        return f"signal {num}"


def proc_state(pid: int) -> str | None:
    """The one-letter state of process `pid` from /proc (R, S, T, Z...), None if it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat[stat.rfind(")") + 2:][:1] or None



# ---------------------------------------------------------------- the supervisor (parent) side


def relaunch(n: int, argv: list[str], time_limit: float | None = None) -> int:
    """Run `g2pl <argv>` as `n` MPI ranks, supervised; return the exit status.

    0 on success; the ranks' own status when they reported their error themselves; 1 with one
    `error:` line when a rank died without a word or the watchdog stopped the job; 130 (143, 129)
    after SIGINT (SIGTERM, SIGHUP), with one line and the whole job killed."""
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        raise G2PLError("--np needs mpi4py and MPI; install them with `pip install '.[mpi]'`",
                        file="g2pl run") from None
    exe = find_mpiexec()
    if exe is None:
        raise G2PLError("--np needs `mpiexec`; install MPI with `pip install '.[mpi]'`", file="g2pl run")
    run_dir = tempfile.mkdtemp(prefix="g2pl-run-")
    try:
        env = _rank_env(run_dir)
        # -P: do not put the current directory first on sys.path, so every rank imports the same g2pl
        # as this process (the PYTHONPATH of _rank_env), not a g2pl/ folder that happens to be in the cwd
        py = [sys.executable, "-P"] if sys.version_info >= (3, 11) else [sys.executable]
        entry = "from g2pl.runtime.launch import rank_main; rank_main()"
        cmd = [exe, "-n", str(n), *py, "-c", entry, *argv]
        limit = time_limit if time_limit is not None and time_limit > 0 else None
        from g2pl.runtime.supervisor import Supervisor

        return Supervisor(n, cmd, env, Path(run_dir), limit).run()
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)


def _rank_env(run_dir: str) -> dict[str, str]:
    """The ranks' environment: this g2pl first on the path, and where to find their supervisor."""
    env = os.environ.copy()
    pkg_root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = pkg_root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env[RUN_DIR_ENV] = run_dir
    env[SUPERVISOR_ENV] = str(os.getpid())
    return env


# ---------------------------------------------------------------- the rank side


def _rank() -> int:
    """This rank's number as hydra's PMI tells it, before MPI is even loaded."""
    for k in ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK"):
        v = os.environ.get(k, "")
        if v.isdigit():
            return int(v)
    return -1


def _note(kind: str, text: str) -> None:
    """Write run_dir/rank<R>.<kind> for the supervisor (temporary file + rename: never read half-written)."""
    run_dir = os.environ.get(RUN_DIR_ENV)
    if not run_dir:
        return
    path = Path(run_dir) / f"rank{_rank()}.{kind}"
    try:
        tmp = path.with_suffix(f".{kind}.tmp")
        tmp.write_text(text)
        tmp.replace(path)
    except OSError:
        pass  # the supervisor is gone or its directory removed: nothing to tell


def note_exit(status: int) -> None:
    """Tell the supervisor this rank ends by itself with `status` (its error, if any, already printed)."""
    _note("exit", str(status))


def rank_main() -> None:
    """Entry point of a rank started by `relaunch`: deaf to SIGINT (the supervisor stops the job on
    Ctrl-C, so no rank prints a traceback from the middle of an import or an MPI call), known to the
    supervisor by its PID, and gone if the supervisor dies."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _note("pid", str(os.getpid()))
    threading.Thread(target=_follow_supervisor, name="g2pl-orphan", daemon=True).start()
    from g2pl.cli import g2pl_main

    status = 1
    try:
        status = g2pl_main(sys.argv[1:])
    except SystemExit as e:
        status = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    finally:
        note_exit(status)
    sys.exit(status)


def _follow_supervisor() -> None:
    """End this rank when the supervisor is gone (killed with SIGKILL): no orphan job keeps running."""
    pid = int(os.environ.get(SUPERVISOR_ENV, "0") or 0)
    if pid <= 0:
        return
    while True:
        time.sleep(1.0)
        if proc_state(pid) in (None, "Z", "X"):
            os._exit(1)


class RankWatchdog:
    """`with RankWatchdog(rank, size, limit):` around one run on this rank; ends the whole job when the
    run is still going `limit` + `watchdog_grace` seconds after it started (or after `program_started`).

    Only where no supervisor watches (an outer `mpiexec -n N g2pl run ...` or the API under mpiexec),
    with several ranks and a limit: then a rank that stops answering leaves the others blocked in a
    collective, where the engine's own check never runs. Ending is `os._exit(1)` from this thread
    (the main thread is stuck in MPI): mpiexec then kills the other ranks, stopped ones included."""

    def __init__(self, rank: int, size: int, limit: float | None) -> None:
        self.rank = rank
        self.limit = limit if limit is not None and limit > 0 else None
        self.armed = self.limit is not None and size > 1 and not os.environ.get(RUN_DIR_ENV)
        self.done = threading.Event()
        self.deadline = 0.0
        self.previous: RankWatchdog | None = None

    def __enter__(self) -> RankWatchdog:
        global _WATCHDOG
        self.previous, _WATCHDOG = _WATCHDOG, self
        if self.armed:
            self.restart()
            threading.Thread(target=self._watch, name="g2pl-watchdog", daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        global _WATCHDOG
        self.done.set()
        _WATCHDOG = self.previous

    def restart(self) -> None:
        """Count the limit from now (the program's clock started: loading does not count)."""
        if self.limit is not None:
            self.deadline = time.monotonic() + self.limit + watchdog_grace(self.limit)

    def _watch(self) -> None:
        while not self.done.wait(max(0.0, self.deadline - time.monotonic())):
            if time.monotonic() >= self.deadline:
                print(f"{_ERR} rank {self.rank}: --time-limit {self.limit:g} exceeded by "
                      f"{watchdog_grace(self.limit):.1f} s and the ranks did not stop (a rank is not answering); "
                      "the run was stopped", file=sys.stderr, flush=True)
                os._exit(1)


_WATCHDOG: RankWatchdog | None = None  # the one around the run in progress on this rank


def program_started() -> None:
    """Called by every rank when the program's clock starts: tells the supervisor (whose watchdog then
    counts from here) or restarts this rank's own watchdog."""
    _note("clock", "")
    if _WATCHDOG is not None and _WATCHDOG.armed:
        _WATCHDOG.restart()
