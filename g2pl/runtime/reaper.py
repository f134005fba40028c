"""The reaper between a `g2pl run --np N` supervisor and its mpiexec (see launch.py and supervisor.py).

`reaper_command` wraps the mpiexec command line in a run of this file as a script with `python -I -S`:
it must start in milliseconds and without the package on its path, so this module imports nothing but
the standard library (tests/project/test_layers.py checks that).  The reaper is a child subreaper, so every
process of the job, ranks in sessions of their own included, stays below it; when the supervisor's end
of a pipe closes (it exited, however) the reaper kills and reaps them all.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

ERR = "g2pl run: error:"  # how every line of the supervisor, the reaper and the ranks' watchdog starts
REAP_S = 10.0  # the reaper's time limit for killing and reaping what is left of a job
PR_SET_PDEATHSIG = 1  # prctl(2) options (linux/prctl.h)
PR_SET_CHILD_SUBREAPER = 36


def stat_fields(path: str) -> list[str] | None:
    """The fields of a /proc `stat` file after the command name (state first: field 3 of proc(5) is
    index 0), None if it cannot be read (the process or thread is gone).  The name is skipped up to its
    last ')': it may hold spaces and parentheses itself."""
    try:
        with open(path) as f:
            stat = f.read()
    except OSError:
        return None
    return stat[stat.rfind(")") + 2:].split()


def proc_state(pid: int) -> str | None:
    """The one-letter state of process `pid` from /proc (R, S, T, Z...), None if it is gone."""
    fields = stat_fields(f"/proc/{pid}/stat")
    return fields[0] if fields else None


def reaper_command(lifeline: int, cmd: list[str]) -> list[str]:
    """`cmd` run below a reaper that kills the whole job once descriptor `lifeline` reads end of file."""
    return [sys.executable, "-I", "-S", str(Path(__file__).resolve()), "--reap", str(lifeline), *cmd]


_LIBC = None


def prctl(option: int, value: int) -> bool:
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
        fields = stat_fields(f"/proc/{name}/stat")
        if fields is None:
            continue
        below.setdefault(int(fields[1]), []).append(int(name))
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
    prctl(PR_SET_CHILD_SUBREAPER, 1)
    wake_r, wake_w = os.pipe()  # SIGCHLD wakes the poll below
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda _num, _frame: None)
    me = os.getpid()

    def child_setup() -> None:
        if sys.version_info < (3, 11):  # Popen's process_group (below) is Python 3.11's
            os.setpgid(0, 0)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != me:  # we died before the line above took effect
            os._exit(1)

    statuses: dict[int, int] = {}
    try:
        if sys.version_info >= (3, 11):
            job = subprocess.Popen(cmd, preexec_fn=child_setup, process_group=0)
        else:
            job = subprocess.Popen(cmd, preexec_fn=child_setup)
    except OSError as e:
        print(f"{ERR} cannot start {cmd[0]}: {e.strerror}", file=sys.stderr)
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
        print(f"{ERR} the job's reaper failed ({type(e).__name__}: {e}); the run was stopped", file=sys.stderr)
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
