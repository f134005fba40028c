"""The supervisor of a `g2pl run --np N` job (see launch.py): `relaunch` starts mpiexec (MPICH's or Open
MPI's, called as each needs) below the reaper (reaper.py); the supervisor waits for it, watches which
rank dies first and how, keeps hydra's banner off stdout, acts on Ctrl-C/SIGTERM, and enforces
`--time-limit` when a rank stops answering. Everything it says is one `g2pl run` line."""

from __future__ import annotations

import os
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import IO, Any, TypeAlias

from g2pl.errors import G2PLError
from g2pl.runtime import launch, shm_leftovers
from g2pl.runtime.launch import POLL_S, signal_name, watchdog_grace
from g2pl.runtime.reaper import ERR, proc_state, reaper_command, stat_fields

#: what `signal.signal` takes and gives back
_Handler: TypeAlias = "Callable[[int, FrameType | None], Any] | int | signal.Handlers | None"

KILL_WAIT_S = 15.0  # how long `_kill` lets the reaper clean up before killing it and the ranks itself


def relaunch(n: int, argv: list[str], entry: str, time_limit: float | None = None) -> int:
    """Run `n` MPI ranks, supervised, each running the Python statement `entry` with `argv` as its
    arguments (`g2pl run` passes its own; see g2pl.cli.rank); return the exit status.

    0 on success; the ranks' own status when they reported their error themselves; 1 with one
    `error:` line when a rank died without a word or the watchdog stopped the job; 130 (143, 129)
    after SIGINT (SIGTERM, SIGHUP), with one line and the whole job killed."""
    launch.check_rank_count(n)
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        raise G2PLError("--np needs mpi4py and MPI; install them with `pip install '.[mpi]'`",
                        file="g2pl run") from None
    exe = launch.find_mpiexec()
    if exe is None:
        raise G2PLError("--np needs `mpiexec`; install MPI with `pip install '.[mpi]'`", file="g2pl run")
    run_dir = tempfile.mkdtemp(prefix="g2pl-run-")
    try:
        # -P: do not put the current directory first on sys.path, so every rank imports the same g2pl
        # as this process (the PYTHONPATH of _rank_env), not a g2pl/ folder that happens to be in the cwd
        py = [sys.executable, "-P"] if sys.version_info >= (3, 11) else [sys.executable]
        limit = time_limit if time_limit is not None and time_limit > 0 else None
        return Supervisor(n, exe, [*py, "-c", entry, *argv], _rank_env(run_dir), Path(run_dir), limit).run()
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)


def _rank_env(run_dir: str) -> dict[str, str]:
    """The ranks' environment: this g2pl first on the path, and where to find their supervisor; without
    the variables an outer launcher gave this process (PMI_RANK, PMIX_NAMESPACE ...), which describe a
    job of one and would mislead the new job's MPI into joining it (`_outer_job`)."""
    env = {k: v for k, v in os.environ.items() if not _outer_job(k)}
    pkg_root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = pkg_root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env[launch.RUN_DIR_ENV] = run_dir
    env[launch.SUPERVISOR_ENV] = str(os.getpid())
    return env


#: prefixes of the variables that tell a process which MPI job it belongs to (not settings: PMIX_MCA_*,
#: I_MPI_*, OMPI_MCA_* stay)
_JOB_PREFIXES = ("PMI_", "PMIX_", "OMPI_COMM_WORLD_", "OMPI_UNIVERSE_SIZE", "MPI_LOCALNRANKS", "MPI_LOCALRANKID",
                 "MV2_COMM_WORLD_")


def _outer_job(name: str) -> bool:
    """True for a variable by which a launcher told this process which job and rank it is."""
    return name.startswith(_JOB_PREFIXES) and not name.startswith("PMIX_MCA_")


class Supervisor:
    """One supervised mpiexec job: started in `run`, watched every POLL_S seconds, killed if need be."""

    def __init__(self, n: int, exe: str, program: list[str], env: dict[str, str], run_dir: Path,
                 limit: float | None, flavour: str | None = None) -> None:
        self.n, self.exe, self.program, self.env, self.run_dir, self.limit = n, exe, program, env, run_dir, limit
        self.flavour = flavour  # which MPI `exe` belongs to (launch.mpiexec_flavour); None: `run` asks it
        self.proc: subprocess.Popen[bytes] | None = None  # the reaper, parent of mpiexec (reaper.reaper_main)
        self.lifeline: int | None = None  # our end of the reaper's pipe: closing it stops the whole job
        self.signals: list[int] = []  # SIGINT/SIGTERM/SIGHUP received, in order
        self.pids: dict[int, int] = {}  # rank -> PID, from the ranks' files
        self.deaths = _DeathWatch(self.pids, self._learn_pids)
        self.started = time.monotonic()

    def run(self) -> int:
        """Start the job and wait for it; the exit status of `g2pl run`."""
        previous = self._catch_signals()
        shm_before = shm_leftovers.segments()
        theirs, self.lifeline = os.pipe()  # both ends close-on-exec: only the reaper gets `theirs`
        try:
            try:
                if self.flavour is None:  # asked with the signals caught: a Ctrl-C now ends the job as any other
                    self.flavour = launch.mpiexec_flavour(self.exe) if not self.signals else launch.OTHER
                job = launch.mpiexec_command(self.exe, self.flavour, self.n, self.program, launch.physical_cores())
                env = launch.mpiexec_env(self.flavour, self.env, launch.is_root())
                cmd = reaper_command(theirs, job)
                if sys.version_info >= (3, 11):
                    self.proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, process_group=0,
                                                 pass_fds=(theirs,))
                else:  # Popen's process_group is Python 3.11's
                    self.proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, preexec_fn=os.setpgrp,
                                                 pass_fds=(theirs,))
            finally:
                os.close(theirs)
            self.out = StdoutFilter(self.proc.stdout, sys.stdout.buffer)
            reader = threading.Thread(target=self.out.pump, name="g2pl-stdout", daemon=True)
            reader.start()
            deaths = threading.Thread(target=self.deaths.run, name="g2pl-deaths", daemon=True)
            deaths.start()
            try:
                status = self._wait()
                reader.join(timeout=5)
                return status if status is not None else self._verdict(self.proc.returncode)
            finally:  # ended before this process exits: a daemon thread torn down mid-poll prints a traceback
                self.deaths.stop.set()
                deaths.join(timeout=5)
        finally:
            self._release()  # whatever happened here, nothing of the job outlives this call
            shm_leftovers.remove_leftovers(shm_before)  # nor the segments of ranks killed before they cleaned up
            if not self.signals:  # after a signal stay deaf to a second Ctrl-C: we are exiting anyway
                for sig, handler in previous.items():
                    signal.signal(sig, handler)

    def _catch_signals(self) -> dict[int, _Handler]:
        """Note SIGINT/SIGTERM/SIGHUP instead of dying with a traceback; the wait loop acts on them."""
        previous: dict[int, _Handler] = {}
        if threading.current_thread() is not threading.main_thread():
            return previous
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            previous[sig] = signal.signal(sig, lambda num, _frame: self.signals.append(num))
        return previous

    @property
    def _job(self) -> subprocess.Popen[bytes]:
        """The reaper (parent of mpiexec), once `run` has started it."""
        assert self.proc is not None
        return self.proc

    def _wait(self) -> int | None:
        """Wait for the job; a final status if this process had to stop it, else None."""
        while True:
            try:
                self._job.wait(timeout=POLL_S)
                ended = True
            except subprocess.TimeoutExpired:
                ended = False
            # a Ctrl-C the instant mpiexec starts (before it has its own process group) kills it too:
            # still an interruption, not a failure
            if self.signals:
                sig = self.signals[0]
                self._kill()
                word = "interrupted" if sig == signal.SIGINT else f"stopped by {signal_name(sig)}"
                print(f"g2pl run: {word}", file=sys.stderr)
                signal.signal(signal.SIGINT, signal.SIG_IGN)
                return 128 + sig
            if ended:
                return None
            over = self._overdue()
            if over is not None:
                stopped = self._stopped_ranks()
                self._kill()
                print(f"{ERR} --time-limit {self.limit:g} exceeded by {over:.1f} s and the ranks did not "
                      f"stop{_stopped_words(stopped)}; the run was stopped", file=sys.stderr)
                return 1

    def _overdue(self) -> float | None:
        """Seconds past the limit when the watchdog must act (limit + grace after the program started,
        or after the job started while no rank has reached the program yet), else None."""
        if self.limit is None:
            return None
        starts = [p.stat().st_mtime for p in self.run_dir.glob("rank*.clock")]
        begin = self.started if not starts else max(self.started, min(starts) - time.time() + time.monotonic())
        over = time.monotonic() - begin - self.limit
        return over if over > watchdog_grace(self.limit) else None

    def _learn_pids(self) -> None:
        """Learn the PIDs of new ranks: from the files they write, or, for ranks still starting (or
        killed before they could write it), from the processes below mpiexec and their PMI_RANK."""
        for p in self.run_dir.glob("rank*.pid"):
            rank = int(p.stem[4:])
            if rank not in self.pids:
                try:
                    self.pids[rank] = int(p.read_text())
                except (OSError, ValueError):
                    continue
        if len(self.pids) < self.n and self.proc is not None:
            for rank, pid in _ranks_below(self.proc.pid).items():
                self.pids.setdefault(rank, pid)

    def _stopped_ranks(self) -> list[tuple[int, int]]:
        """(rank, PID) of the ranks that are stopped (SIGSTOP, a debugger): why nothing moves."""
        return [(r, pid) for r, pid in sorted(list(self.pids.items())) if proc_state(pid) in ("T", "t")]

    def _release(self) -> None:
        """Close the lifeline: if the job still runs, the reaper SIGKILLs mpiexec, its proxy and every
        rank. (It closes by itself when this process dies, SIGKILL included: the same happens then.)"""
        if self.lifeline is not None:
            os.close(self.lifeline)
            self.lifeline = None

    def _kill(self) -> None:
        """Have the reaper SIGKILL mpiexec with its proxy (first: nothing is left to print a banner) and
        every process below them, stopped ranks included, and wait until it has reaped them; should the
        reaper not answer, kill it (mpiexec dies with it) and the ranks we know."""
        self._learn_pids()
        self._release()
        try:
            self._job.wait(timeout=KILL_WAIT_S)
            return
        except subprocess.TimeoutExpired:
            pass
        try:
            os.killpg(self._job.pid, signal.SIGKILL)
        except OSError:
            pass
        for pid in list(self.pids.values()):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        self._job.wait()

    def _verdict(self, rc: int) -> int:
        """Exit status of a job that ended by itself, with one `error:` line where the ranks said nothing."""
        if rc == 0:
            return 0
        self._learn_pids()
        reported = [s for r in sorted(self.pids) if (s := self._exit_status(r)) not in (None, 0)]
        if reported:  # a rank reported its own error (printed once) before the job ended: its status,
            return reported[0]  # not mpiexec's, which under load can be that of a rank hydra killed
        print(f"{ERR} {self._what_happened(rc)}; the run was stopped", file=sys.stderr)
        return 1

    def _what_happened(self, rc: int) -> str:
        """'rank 1 was killed by signal 9 (SIGKILL)' and the like, from the best evidence at hand.

        First choice: the rank seen dying first, with the wait status read from its zombie; where several
        were dying at once (the one that died and those hydra killed after it, all by SIGKILL), all of
        them, with their signal where all had the same. hydra's banner comes next: it names the
        first rank *in its list* that ended badly, which under load can be a rank hydra killed itself
        while cleaning up after the real failure."""
        banner = self.out.banner_info()
        first = self.deaths.first(exited=banner is None and "killed" not in self._launcher_status(rc))
        if first is not None and first in self.deaths.status:
            return f"rank {first} {_how(self.deaths.status[first])}"
        together = self.deaths.groups[0] if first is None and self.deaths.groups else []
        if len(together) > 1:
            # dying at once: hydra's banner would name one of them, not necessarily the one that started it
            how = {self.deaths.status[r] for r in together if r in self.deaths.status}
            alike = len(how) == 1 and all(r in self.deaths.status for r in together)
            said = _how(how.pop()).replace("was killed", "were killed", 1) if alike else "died"
            names = ", ".join(map(str, together[:-1])) + f" and {together[-1]}"
            return f"ranks {names} {said} at once (which one first is not known)"
        if banner is not None and (first is None or self.pids.get(first) == banner[0]):
            pid, code, sig = banner
            return f"{self._who(pid)} " + (f"was killed by signal {sig} ({signal_name(sig)})" if sig
                                           else f"exited with status {code}")
        if first is not None:
            return f"rank {first} died unexpectedly" if banner else f"rank {first} {self._launcher_status(rc)}"
        if rc < 0:
            return f"mpiexec was killed by signal {-rc} ({signal_name(-rc)})"
        return f"an MPI process {self._launcher_status(rc)}"

    def _launcher_status(self, rc: int) -> str:
        """mpiexec's exit status `rc` in words. Open MPI's mpirun (like a shell) ends with 128 + N when a rank
        was killed by signal N and says nothing on stdout; hydra says so in its banner instead and passes a
        rank's own exit status on, 137 included, so only there 137 is not SIGKILL."""
        sig = rc - 128
        if self.flavour != launch.MPICH and sig in signal.valid_signals() and signal_name(sig).startswith("SIG"):
            return f"was killed by signal {sig} ({signal_name(sig)})"
        return f"exited with status {rc} without a message"

    def _who(self, pid: int) -> str:
        """'rank 1' for a rank's PID, 'a rank (PID 123)' for one that died before saying which it was."""
        for rank, p in self.pids.items():
            if p == pid:
                return f"rank {rank}"
        return f"a rank (PID {pid})"

    def _exit_status(self, rank: int) -> int | None:
        """The status rank `rank` wrote when it ended by itself; None if it did not."""
        try:
            return int((self.run_dir / f"rank{rank}.exit").read_text())
        except (OSError, ValueError):
            return None


class _DeathWatch:
    """Which rank died first, seen as it happens: hydra kills the other ranks within milliseconds of a
    rank's death, so neither its banner nor a look afterwards can always tell which one started it.

    A thread (`run`) waits on a pidfd per rank (woken the moment a rank exits) and records the ranks
    found dead at each wake-up, in order, the first time with the ranks then dying; without pidfd
    (not Linux >= 5.3) it polls /proc."""

    def __init__(self, pids: dict[int, int], learn: Callable[[], None]) -> None:
        self.pids, self.learn = pids, learn
        self.groups: list[list[int]] = []  # ranks found dead together, earliest first
        self.status: dict[int, int] = {}  # rank -> wait status, read from the zombie before it is reaped
        self.stop = threading.Event()

    def first(self, exited: bool = False) -> int | None:
        """The rank that died first; None if unknown. Of ranks found dying together, the one that did
        not die from SIGKILL when the others did (hydra cleans up with SIGKILL); where the launcher says
        a rank ended by itself (`exited`), the one whose status was not seen when all others were SIGKILL."""
        if not self.groups:
            return None
        group = self.groups[0]
        if len(group) == 1:
            return group[0]
        other = [r for r in group if r in self.status and self.status[r] != signal.SIGKILL]
        unseen = [r for r in group if r not in self.status]
        if exited and not other and len(unseen) == 1:
            return unseen[0]
        return other[0] if len(other) == 1 else None

    def run(self) -> None:
        try:
            self._run()
        except Exception:  # noqa: BLE001 - evidence only: a failure here must never print a traceback
            pass

    def _run(self) -> None:
        poller = select.poll()
        fds: dict[int, int] = {}  # pidfd -> rank
        polled: dict[int, int] = {}  # rank -> PID, watched through /proc where pidfd is missing
        seen: set[int] = set()
        try:
            while not self.stop.is_set():
                self.learn()
                for rank, pid in list(self.pids.items()):
                    if rank not in seen:
                        seen.add(rank)
                        self._watch(poller, fds, polled, rank, pid)
                dead = [fds[fd] for fd, _ in poller.poll(50)]
                for r in dead:
                    code = _zombie_status(self.pids[r])
                    if code is not None:
                        self.status[r] = code
                dead += [r for r, pid in polled.items() if proc_state(pid) in (None, "Z", "X")]
                for fd in [fd for fd, r in fds.items() if r in dead]:
                    poller.unregister(fd)
                    del fds[fd]
                    os.close(fd)  # the pidfd itself: fds maps it to a rank number, never a descriptor
                for r in dead:
                    polled.pop(r, None)
                if dead and not self.groups:
                    # ranks already dying now may have been killed before these: the order in which ranks
                    # are seen dead is that of their last thread's end, and hydra kills the others as soon
                    # as a rank's files close, before that end. Their status: from a thread that has begun
                    # to end the process, else read when they end
                    for r in [*fds.values(), *polled]:
                        ending, code = _ending(self.pids[r])
                        if ending:
                            dead.append(r)
                        if code is not None:
                            self.status[r] = code
                if dead:
                    self.groups.append(sorted(dead))
        finally:
            for fd in fds:
                os.close(fd)

    def _watch(self, poller: select.poll, fds: dict[int, int], polled: dict[int, int], rank: int, pid: int) -> None:
        try:
            fd = os.pidfd_open(pid)
        except ProcessLookupError:
            self.groups.append([rank])  # died before it could be watched
            return
        except (AttributeError, OSError):
            polled[rank] = pid
            return
        fds[fd] = rank
        poller.register(fd, select.POLLIN)


def _stopped_words(stopped: list[tuple[int, int]]) -> str:
    """', rank 1 (PID 123) is stopped and not answering' for the time-limit message."""
    if not stopped:
        return " (a rank is not answering)"
    names = ", ".join(f"rank {r} (PID {pid})" for r, pid in stopped)
    return f": {names} {'is' if len(stopped) == 1 else 'are'} stopped and not answering"


def _how(status: int) -> str:
    """'was killed by signal 9 (SIGKILL)' or 'exited with status 3' for a wait status."""
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        return f"was killed by signal {sig} ({signal_name(sig)})"
    return f"exited with status {os.WEXITSTATUS(status)} without a message"


_PF_EXITING = 0x4  # a task's flag (/proc/PID/task/TID/stat, field 9) from the start of its exit


def _ending(pid: int) -> tuple[bool, int | None]:
    """(whether process `pid` is gone or ending, its wait status if a thread already holds it): ending
    once its leader thread is a zombie or exiting, or any thread exits with the process's status (a
    signal's, exit_group's; a lone thread ending by pthread_exit has 0, its process lives on).  A
    status of 0 counts only from a zombie: an exiting thread writes its status after raising the flag."""
    ending, code = False, None
    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            fields = stat_fields(str(task / "stat"))
            if fields is None:  # (a thread gone since the listing)
                continue
            status, zombie = int(fields[49]), fields[0] in ("Z", "X")
            if (zombie or int(fields[6]) & _PF_EXITING) and (status or task.name == str(pid)):
                ending = True
                if status or zombie and code is None:
                    code = status
    except (OSError, ValueError, IndexError):
        return not Path(f"/proc/{pid}").exists(), code
    return ending, code


def _zombie_status(pid: int) -> int | None:
    """The wait status of process `pid` if it is a zombie not yet reaped by its parent (field 52 of
    /proc/PID/stat, Linux >= 3.5), else None."""
    fields = stat_fields(f"/proc/{pid}/stat")
    if not fields or fields[0] != "Z" or len(fields) < 50:
        return None
    return int(fields[49])


#: the variable that holds a rank's number: hydra's, Open MPI's, PMIx's (the outer job's ones are not
#: passed on: `_rank_env`)
_RANK_VARS = tuple(f"{k}=".encode() for k in ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK"))


def _ranks_below(pid: int) -> dict[int, int]:
    """rank -> PID of the MPI processes among the descendants of `pid` (their PMI_RANK, or Open MPI's
    OMPI_COMM_WORLD_RANK), Linux /proc."""
    out: dict[int, int] = {}
    todo = [pid]
    while todo:
        for task in Path(f"/proc/{todo.pop()}/task").glob("*"):
            try:
                kids = [int(x) for x in (task / "children").read_text().split()]
            except (OSError, ValueError):
                continue
            todo += kids
            for kid in kids:
                try:
                    env = Path(f"/proc/{kid}/environ").read_bytes().split(b"\0")
                except OSError:
                    continue
                rank = next((e[len(k):] for k in _RANK_VARS for e in env if e.startswith(k)), b"")
                if rank.isdigit():
                    out[int(rank)] = kid
    return out


class StdoutFilter:
    """Copies mpiexec's stdout to ours as it comes, except MPICH's "BAD TERMINATION" banner.

    hydra prints the banner on stdout when a rank dies from a signal: a blank line, a rule of '=',
    then "=   BAD TERMINATION ...". Bytes that could be the start of it (only at a line start) are held
    back until the next bytes decide; from the banner on, everything is kept here for `banner_info`."""

    MARK = b"\n" + b"=" * 83 + b"\n=   BAD TERMINATION"

    def __init__(self, src: IO[bytes] | None, dst: IO[bytes]) -> None:
        self.src, self.dst = src, dst
        self.held = b""
        self.at_line_start = True  # the byte before `held` ended a line (or nothing was written yet)
        self.banner: bytes | None = None
        self.broken = False

    def pump(self) -> None:
        """Forward until end of file (the reader thread)."""
        assert self.src is not None
        fd = self.src.fileno()
        while data := os.read(fd, 65536):
            self.feed(data)
        self.finish()

    def feed(self, data: bytes) -> None:
        """Forward `data`, holding back a possible banner start."""
        if self.banner is not None:
            self.banner += data
            return
        buf = self.held + data
        at = self._find_mark(buf)
        if at is not None:
            self._write(buf[:at])
            self.banner, self.held = buf[at:], b""
            return
        keep = self._possible_start(buf)
        self._write(buf[:keep])
        if keep:
            self.at_line_start = buf[keep - 1:keep] == b"\n"
        self.held = buf[keep:]

    def finish(self) -> None:
        """End of file: what was held back was not a banner after all."""
        if self.banner is None:
            self._write(self.held)
        self.held = b""

    def banner_info(self) -> tuple[int, int, int] | None:
        """(PID, exit code, signal or 0) from the banner, None if there was none."""
        if self.banner is None:
            return None
        text = self.banner.decode("utf-8", "replace")
        pid = re.search(r"PID (\d+) RUNNING AT", text)
        code = re.search(r"EXIT CODE: (\d+)", text)
        sig = re.search(r"\(signal (\d+)\)", text)
        return (int(pid.group(1)) if pid else -1, int(code.group(1)) if code else -1,
                int(sig.group(1)) if sig else 0)

    def _line_start(self, buf: bytes, i: int) -> bool:
        """True if offset `i` of `buf` starts a line."""
        return buf[i - 1:i] == b"\n" if i > 0 else self.at_line_start

    def _find_mark(self, buf: bytes) -> int | None:
        """Offset of a whole banner start at a line start, if any (bytes.find: a 100 MB `--output -`
        passes at C speed)."""
        i = buf.find(self.MARK)
        while i != -1 and not self._line_start(buf, i):
            i = buf.find(self.MARK, i + 1)
        return None if i == -1 else i

    def _possible_start(self, buf: bytes) -> int:
        """Offset from which `buf` might still turn into a banner start (len(buf) if nowhere): only the
        last len(MARK) - 1 bytes can be an unfinished one."""
        for i in range(max(0, len(buf) - len(self.MARK) + 1), len(buf)):
            if buf[i] == 10 and self._line_start(buf, i) and self.MARK.startswith(buf[i:]):
                return i
        return len(buf)

    def _write(self, data: bytes) -> None:
        if not data or self.broken:
            return
        try:
            self.dst.write(data)
            self.dst.flush()
        except (BrokenPipeError, ValueError, OSError):
            self.broken = True  # the reader went away (`| head`): keep draining so the ranks never block
