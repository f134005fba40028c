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
  `--time-limit` + `watchdog_grace` seconds after the program started;
* the supervisor itself dying, even by SIGKILL: mpiexec is started through a small reaper process
  (`reaper_main`, this file run as a stdlib-only script) that is a child subreaper, so every process
  of the job, ranks in sessions of their own included, stays below it; when the supervisor's end of a
  pipe closes (it exited, however) the reaper kills and reaps them all.

`--np` is capped (`rank_cap`: 4 ranks per usable CPU core, at least 8; G2PL_MAX_RANKS sets another
cap) so that a typo such as `--np 100000` cannot fork the machine to a standstill.

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

# No g2pl import at module level: the reaper runs this file as a script with `python -I -S`, which must
# start in milliseconds and without the package on its path (G2PLError is imported where it is raised).

RUN_DIR_ENV = "G2PL_RUN_DIR"  # the supervisor's private directory; set only in ranks it started
SUPERVISOR_ENV = "G2PL_SUPERVISOR_PID"
MAX_RANKS_ENV = "G2PL_MAX_RANKS"  # overrides the default cap on --np
RANKS_PER_CORE = 4  # default cap: oversubscribing a few times is useful for testing, thousands never is
MIN_RANK_CAP = 8  # ... and never below this, so small machines can still try a few ranks
POLL_S = 0.1  # how often the supervisor looks at the job (signals, rank files, deadline)
REAP_S = 10.0  # the reaper's time limit for killing and reaping what is left of a job
_ERR = "g2pl run: error:"
PR_SET_PDEATHSIG = 1  # prctl(2) options (linux/prctl.h)
PR_SET_CHILD_SUBREAPER = 36


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


def usable_cores() -> int:
    """CPU cores this process may run on (its affinity mask, as under taskset or a batch system)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def rank_cap() -> tuple[int, str]:
    """The largest `--np` allowed here and where that number comes from (for the refusal message)."""
    from g2pl.errors import G2PLError

    raw = os.environ.get(MAX_RANKS_ENV, "").strip()
    if raw:
        if not raw.isdigit() or int(raw) < 1:
            raise G2PLError(f"{MAX_RANKS_ENV}={raw!r}: expected a positive whole number of ranks", file="g2pl run")
        return int(raw), f"{MAX_RANKS_ENV}={int(raw)}"
    cores = usable_cores()
    return (max(MIN_RANK_CAP, RANKS_PER_CORE * cores),
            f"the default: {RANKS_PER_CORE} per usable CPU core, {cores} cores here, and never fewer than {MIN_RANK_CAP}")


def check_rank_count(n: int) -> None:
    """Refuse (exit 2) an `--np` above `rank_cap`, saying the cap and how to raise it."""
    from g2pl.errors import G2PLError

    cap, why = rank_cap()
    if n > cap:
        raise G2PLError(f"--np {n}: at most {cap} ranks may be started on this machine ({why}); "
                        f"set {MAX_RANKS_ENV}={n} to allow more", file="g2pl run")


# ---------------------------------------------------------------- the supervisor (parent) side


def relaunch(n: int, argv: list[str], time_limit: float | None = None) -> int:
    """Run `g2pl <argv>` as `n` MPI ranks, supervised; return the exit status.

    0 on success; the ranks' own status when they reported their error themselves; 1 with one
    `error:` line when a rank died without a word or the watchdog stopped the job; 130 (143, 129)
    after SIGINT (SIGTERM, SIGHUP), with one line and the whole job killed."""
    from g2pl.errors import G2PLError

    check_rank_count(n)
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
    _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)  # hydra's proxy gone (killed with the reaper): gone too
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


# ---------------------------------------------------------------- the reaper (between supervisor and mpiexec)


def reaper_command(lifeline: int, cmd: list[str]) -> list[str]:
    """`cmd` run below a reaper that kills the whole job once descriptor `lifeline` reads end of file."""
    return [sys.executable, "-I", "-S", str(Path(__file__).resolve()), "--reap", str(lifeline), *cmd]


_LIBC = None


def _prctl(option: int, value: int) -> bool:
    """prctl(2) through libc; False where it is missing or refused (not Linux): best effort only."""
    global _LIBC
    try:
        import ctypes

        if _LIBC is None:
            _LIBC = ctypes.CDLL(None, use_errno=True)
        args = (ctypes.c_ulong(option), ctypes.c_ulong(value), ctypes.c_ulong(0), ctypes.c_ulong(0),
                ctypes.c_ulong(0))
        return _LIBC.prctl(*args) == 0
    except (ImportError, OSError, AttributeError):
        return False


def _descendants(root: int) -> list[int]:
    """PIDs below process `root`, parents before children (Linux /proc; zombies included)."""
    below: dict[int, list[int]] = {}
    try:
        names = os.listdir("/proc")
    except OSError:  # no /proc: only mpiexec's process group is killed
        return []
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        ppid = int(stat[stat.rfind(")") + 2:].split()[1])
        below.setdefault(ppid, []).append(int(name))
    out, todo = [], [root]
    while todo:
        kids = below.get(todo.pop(0), [])
        out += kids
        todo += kids
    return out


def _reap_children(statuses: dict[int, int]) -> None:
    """Reap every child that has ended (orphans of the job come to us: we are a subreaper)."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        statuses[pid] = status


def _kill_job(job: int | None, statuses: dict[int, int]) -> None:
    """SIGKILL mpiexec's group `job` first if it is still our unreaped child (it and hydra's proxy:
    nothing left to print a banner), then every process still below us, again and again until none is
    left (a process killed mid-fork leaves a child, which comes to us), reaping them all; gives up after
    REAP_S seconds (a process stuck in the kernel)."""
    if job is not None:
        try:
            os.killpg(job, signal.SIGKILL)
        except OSError:
            pass
    end = time.monotonic() + REAP_S
    while time.monotonic() < end:
        _reap_children(statuses)
        left = _descendants(os.getpid())
        if not left:
            return
        for pid in left:
            if proc_state(pid) != "Z":
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
        time.sleep(0.005)


def reaper_main(argv: list[str]) -> int:
    """Run `argv[1:]` (mpiexec ...) and return its exit status, as a child subreaper watching descriptor
    `argv[0]`: end of file there means the supervisor is gone (exited, or killed with SIGKILL), and the
    whole job, every process that ever started below us, is killed and reaped.

    Also, after mpiexec ends by itself, whatever it left behind is killed. mpiexec gets SIGKILL should
    this process die (PR_SET_PDEATHSIG), and runs in a process group of its own."""
    import select
    import subprocess

    lifeline, cmd = int(argv[0]), argv[1:]
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the supervisor answers Ctrl-C, by closing the lifeline
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
    wake_r, wake_w = os.pipe()  # SIGCHLD wakes the poll below
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda _num, _frame: None)
    me = os.getpid()

    def child_setup() -> None:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != me:  # we died before the line above took effect
            os._exit(1)

    statuses: dict[int, int] = {}
    try:
        job = subprocess.Popen(cmd, preexec_fn=child_setup, process_group=0)
    except OSError as e:
        print(f"{_ERR} cannot start {cmd[0]}: {e.strerror}", file=sys.stderr)
        return 127
    try:
        poller = select.poll()
        poller.register(lifeline, select.POLLIN)
        poller.register(wake_r, select.POLLIN)
        while job.pid not in statuses:
            events = dict(poller.poll())
            try:
                os.read(wake_r, 4096)
            except BlockingIOError:
                pass
            _reap_children(statuses)
            if lifeline in events:  # the supervisor is gone or stops the job
                _kill_job(None if job.pid in statuses else job.pid, statuses)
                return 1
    except Exception as e:  # never leave the job behind, whatever went wrong here
        _kill_job(None if job.pid in statuses else job.pid, statuses)
        print(f"{_ERR} the job's reaper failed ({type(e).__name__}: {e}); the run was stopped", file=sys.stderr)
        return 1
    job.returncode = code = os.waitstatus_to_exitcode(statuses[job.pid])
    _kill_job(None, statuses)  # what outlived mpiexec (its PID is free again: no killpg)
    if code < 0:  # killed by a signal: die of the same one, so the supervisor sees what mpiexec saw
        import resource

        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        signal.signal(-code, signal.SIG_DFL)
        os.kill(me, -code)
        return 128 - code
    return code


if __name__ == "__main__" and sys.argv[1:2] == ["--reap"]:
    sys.exit(reaper_main(sys.argv[2:]))
