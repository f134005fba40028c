"""Starting several ranks: `g2pl run --np N` re-runs itself under `mpiexec -n N` and supervises the job.

The `g2pl run` process that called `relaunch` stays alive as the job's supervisor, because only it can
turn the ways an MPI job ends into one line of g2pl's own:

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
from typing import BinaryIO

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
        return _Supervisor(n, cmd, env, Path(run_dir), limit).run()
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


class _Supervisor:
    """One supervised mpiexec job: started in `run`, watched every POLL_S seconds, killed if need be."""

    def __init__(self, n: int, cmd: list[str], env: dict[str, str], run_dir: Path, limit: float | None) -> None:
        self.n, self.cmd, self.env, self.run_dir, self.limit = n, cmd, env, run_dir, limit
        self.proc: subprocess.Popen | None = None
        self.signals: list[int] = []  # SIGINT/SIGTERM/SIGHUP received, in order
        self.pids: dict[int, int] = {}  # rank -> PID, from the ranks' files
        self.deaths = _DeathWatch(self.pids, self._learn_pids)
        self.started = time.monotonic()

    def run(self) -> int:
        """Start the job and wait for it; the exit status of `g2pl run`."""
        previous = self._catch_signals()
        try:
            self.proc = subprocess.Popen(self.cmd, env=self.env, stdout=subprocess.PIPE, process_group=0)
            self.out = _StdoutFilter(self.proc.stdout, sys.stdout.buffer)
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
            if not self.signals:  # after a signal stay deaf to a second Ctrl-C: we are exiting anyway
                for sig, handler in previous.items():
                    signal.signal(sig, handler)

    def _catch_signals(self) -> dict[int, object]:
        """Note SIGINT/SIGTERM/SIGHUP instead of dying with a traceback; the wait loop acts on them."""
        previous: dict[int, object] = {}
        if threading.current_thread() is not threading.main_thread():
            return previous
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            previous[sig] = signal.signal(sig, lambda num, _frame: self.signals.append(num))
        return previous

    def _wait(self) -> int | None:
        """Wait for the job; a final status if this process had to stop it, else None."""
        while True:
            try:
                self.proc.wait(timeout=POLL_S)
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
                print(f"{_ERR} --time-limit {self.limit:g} exceeded by {over:.1f} s and the ranks did not "
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
        return [(r, pid) for r, pid in sorted(list(self.pids.items())) if _proc_state(pid) in ("T", "t")]

    def _kill(self) -> None:
        """SIGKILL mpiexec with its proxy (their process group) and every rank (each in a session of
        its own): nothing is left to print a banner or a traceback, and stopped ranks die too."""
        self._learn_pids()
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except OSError:
            pass
        for pid in list(self.pids.values()):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        self.proc.wait()

    def _verdict(self, rc: int) -> int:
        """Exit status of a job that ended by itself, with one `error:` line where the ranks said nothing."""
        if rc == 0:
            return 0
        self._learn_pids()
        reported = [s for r in sorted(self.pids) if (s := self._exit_status(r)) not in (None, 0)]
        if reported:  # a rank reported its own error (printed once) before the job ended: its status,
            return reported[0]  # not mpiexec's, which under load can be that of a rank hydra killed
        print(f"{_ERR} {self._what_happened(rc)}; the run was stopped", file=sys.stderr)
        return 1

    def _what_happened(self, rc: int) -> str:
        """'rank 1 was killed by signal 9 (SIGKILL)' and the like, from the best evidence at hand.

        First choice: the rank seen dying first, with the wait status read from its zombie. hydra's
        banner comes next: it names the first rank *in its list* that ended badly, which under load
        can be a rank hydra killed itself while cleaning up after the real failure."""
        first = self.deaths.first()
        if first is not None and first in self.deaths.status:
            return f"rank {first} {_how(self.deaths.status[first])}"
        banner = self.out.banner_info()
        if banner is not None and (first is None or self.pids.get(first) == banner[0]):
            pid, code, sig = banner
            return f"{self._who(pid)} " + (f"was killed by signal {sig} ({signal_name(sig)})" if sig
                                           else f"exited with status {code}")
        if first is not None:
            return f"rank {first} died unexpectedly" if banner else f"rank {first} exited with status {rc} without a message"
        if rc < 0:
            return f"mpiexec was killed by signal {-rc} ({signal_name(-rc)})"
        return f"an MPI process exited with status {rc} without a message"

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
    found dead at each wake-up, in order; without pidfd (not Linux >= 5.3) it polls /proc."""

    def __init__(self, pids: dict[int, int], learn: Callable[[], None]) -> None:
        self.pids, self.learn = pids, learn
        self.groups: list[list[int]] = []  # ranks found dead together, earliest first
        self.status: dict[int, int] = {}  # rank -> wait status, read from the zombie before it is reaped
        self.stop = threading.Event()

    def first(self) -> int | None:
        """The rank that died first; None if unknown. Of ranks found dead together, the one that did
        not die from SIGKILL when the others did (hydra cleans up with SIGKILL)."""
        if not self.groups:
            return None
        group = self.groups[0]
        if len(group) == 1:
            return group[0]
        other = [r for r in group if r in self.status and self.status[r] != signal.SIGKILL]
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
                dead += [r for r, pid in polled.items() if _proc_state(pid) in (None, "Z", "X")]
                for fd in [fd for fd, r in fds.items() if r in dead]:
                    poller.unregister(fd)
                    os.close(fds.pop(fd))
                for r in dead:
                    polled.pop(r, None)
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


def _zombie_status(pid: int) -> int | None:
    """The wait status of process `pid` if it is a zombie not yet reaped by its parent (field 52 of
    /proc/PID/stat, Linux >= 3.5), else None."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rfind(")") + 2:].split()
    if fields[:1] != ["Z"] or len(fields) < 50:
        return None
    return int(fields[49])


def _ranks_below(pid: int) -> dict[int, int]:
    """rank -> PID of the MPI processes among the descendants of `pid` (their PMI_RANK), Linux /proc."""
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
                rank = [e[9:] for e in env if e.startswith(b"PMI_RANK=")]
                if rank and rank[0].isdigit():
                    out[int(rank[0])] = kid
    return out


def _proc_state(pid: int) -> str | None:
    """The one-letter state of process `pid` from /proc (R, S, T, Z...), None if it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat[stat.rfind(")") + 2:][:1] or None


class _StdoutFilter:
    """Copies mpiexec's stdout to ours as it comes, except MPICH's "BAD TERMINATION" banner.

    hydra prints the banner on stdout when a rank dies from a signal: a blank line, a rule of '=',
    then "=   BAD TERMINATION ...". Bytes that could be the start of it (only at a line start) are held
    back until the next bytes decide; from the banner on, everything is kept here for `banner_info`."""

    MARK = b"\n" + b"=" * 83 + b"\n=   BAD TERMINATION"

    def __init__(self, src: BinaryIO | None, dst: BinaryIO) -> None:
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
        if _proc_state(pid) in (None, "Z", "X"):
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
