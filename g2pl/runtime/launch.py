"""Starting several ranks: `g2pl run --np N` re-runs itself under `mpiexec -n N` and supervises the job.

The `g2pl run` process that called `relaunch` (supervisor.py) stays alive as the job's supervisor,
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
  (reaper.py, run as a stdlib-only script) that is a child subreaper, so every process
  of the job, ranks in sessions of their own included, stays below it; when the supervisor's end of a
  pipe closes (it exited, however) the reaper kills and reaps them all.

Which MPI `mpiexec` belongs to (`mpiexec_flavour`, from `mpiexec --version`) decides how it is called
(`mpiexec_command`, `mpiexec_env`): MPICH's hydra (also Intel MPI's and MVAPICH's) takes `-n N` as it
is; Open MPI's refuses more ranks than cores without `--oversubscribe` and refuses root without its
two allow-run-as-root variables, and reports a rank killed by signal N as exit status 128 + N.

`--np` is capped (`rank_cap`: 4 ranks per usable CPU core, at least 8; G2PL_MAX_RANKS sets another
cap) so that a typo such as `--np 100000` cannot fork the machine to a standstill.

Rank side: each rank runs the entry its caller gives `relaunch` (`g2pl.cli.rank`), which calls
`join_supervisor` first and `note_exit` last; `program_started` (called by the driver) tells
when the program's clock started; `RankWatchdog` (around every run, in the driver) does the
watchdog's work inside the ranks when no supervisor is there (an outer `mpiexec -n N g2pl run ...`).
"""

from __future__ import annotations

import functools
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path

from g2pl.errors import G2PLError
from g2pl.runtime.reaper import ERR, PR_SET_PDEATHSIG, prctl, proc_state

RUN_DIR_ENV = "G2PL_RUN_DIR"  # the supervisor's private directory; set only in ranks it started
SUPERVISOR_ENV = "G2PL_SUPERVISOR_PID"
MAX_RANKS_ENV = "G2PL_MAX_RANKS"  # overrides the default cap on --np
RANKS_PER_CORE = 4  # default cap: oversubscribing a few times is useful for testing, thousands never is
MIN_RANK_CAP = 8  # ... and never below this, so small machines can still try a few ranks
POLL_S = 0.1  # how often the supervisor looks at the job (signals, rank files, deadline)


def find_mpiexec() -> str | None:
    """mpiexec next to this Python (the `mpich` wheel installs it there), else on PATH."""
    here = Path(sys.executable).parent / "mpiexec"
    if here.exists():
        return str(here)
    return shutil.which("mpiexec")


MPICH, OPEN_MPI, OTHER = "mpich", "openmpi", "other"  # what `mpiexec_flavour` answers
#: the variables with which Open MPI's mpirun (4.x: OMPI_*, 5.x's PRRTE: PRTE_*) agrees to run as root
OPEN_MPI_ROOT_ENV = ("OMPI_ALLOW_RUN_AS_ROOT", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM",
                     "PRTE_ALLOW_RUN_AS_ROOT", "PRTE_ALLOW_RUN_AS_ROOT_CONFIRM")
VERSION_TIMEOUT_S = 10.0  # for `mpiexec --version`; a launcher that hangs there is treated as unknown


def mpi_flavour(version_text: str) -> str:
    """OPEN_MPI, MPICH (any hydra: MPICH, Intel MPI, MVAPICH) or OTHER for what `mpiexec --version` printed.

    Open MPI 4 says "mpiexec (OpenRTE) 4.1.2", Open MPI 5 "mpiexec (Open MPI) 5.0.3"; hydra prints
    "HYDRA build details", Intel MPI "Intel(R) MPI Library"."""
    low = version_text.lower()
    if "open mpi" in low or "openrte" in low or "open-mpi.org" in low:
        return OPEN_MPI
    if "hydra" in low or "mpich" in low or "intel(r) mpi" in low or "mvapich" in low:
        return MPICH
    return OTHER


@functools.lru_cache(maxsize=8)
def mpiexec_flavour(exe: str) -> str:
    """Which MPI `exe` belongs to: from the files beside it when they tell (hydra's `mpiexec.hydra`,
    Open MPI's `prterun`/`orterun` behind the link), else from its `--version` output; OTHER if it
    does not say.  Knowing without running it keeps a Ctrl-C at start-up from meeting a probe."""
    real = Path(os.path.realpath(exe))
    if (Path(exe).parent / "mpiexec.hydra").exists() or real.name == "mpiexec.hydra":
        return MPICH
    if real.name in ("prterun", "orterun"):
        return OPEN_MPI
    env = mpiexec_env(OPEN_MPI, os.environ, is_root())  # as root, in case: they mean nothing to other MPIs
    try:
        out = subprocess.run([exe, "--version"], env=env, stdin=subprocess.DEVNULL, capture_output=True,
                             timeout=VERSION_TIMEOUT_S, check=False)
    except (OSError, subprocess.SubprocessError):
        return OTHER
    return mpi_flavour((out.stdout + out.stderr).decode("utf-8", "replace"))


def is_root() -> bool:
    """True when this process runs as root (Open MPI then needs OPEN_MPI_ROOT_ENV)."""
    return hasattr(os, "geteuid") and os.geteuid() == 0


def mpiexec_command(exe: str, flavour: str, n: int, program: list[str], cores: int) -> list[str]:
    """The command line that starts `program` on `n` ranks of this machine with `exe`: `-n N` for every
    MPI, and for Open MPI `--oversubscribe` when `n` exceeds its slots (one per physical core, `cores`),
    which it otherwise refuses; hydra places any number of ranks by itself."""
    extra = ["--oversubscribe"] if flavour == OPEN_MPI and n > cores else []
    return [exe, *extra, "-n", str(n), *program]


def mpiexec_env(flavour: str, env: Mapping[str, str], root: bool) -> dict[str, str]:
    """`env` for mpiexec: for Open MPI run as root, with the variables that let it run (a container's
    usual user; without them mpirun stops with a page of advice)."""
    out = dict(env)
    if flavour == OPEN_MPI and root:
        out.update(dict.fromkeys(OPEN_MPI_ROOT_ENV, "1"))
    return out


def physical_cores() -> int:
    """Physical cores among those this process may run on (Open MPI's default slots on one machine);
    `usable_cores` where /sys does not tell."""
    try:
        cpus = os.sched_getaffinity(0)
    except (AttributeError, OSError):
        return usable_cores()
    cores: set[tuple[str, str]] = set()
    for cpu in cpus:
        topo = Path(f"/sys/devices/system/cpu/cpu{cpu}/topology")
        try:
            cores.add(((topo / "physical_package_id").read_text().strip(), (topo / "core_id").read_text().strip()))
        except OSError:
            return usable_cores()
    return len(cores) or usable_cores()


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


def usable_cores() -> int:
    """CPU cores this process may run on (its affinity mask, as under taskset or a batch system)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def rank_cap() -> tuple[int, str]:
    """The largest `--np` allowed here and where that number comes from (for the refusal message)."""
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
    cap, why = rank_cap()
    if n > cap:
        raise G2PLError(f"--np {n}: at most {cap} ranks may be started on this machine ({why}); "
                        f"set {MAX_RANKS_ENV}={n} to allow more", file="g2pl run")


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


def join_supervisor() -> None:
    """What a rank started by `relaunch` does first: it becomes deaf to SIGINT (the supervisor stops
    the job on Ctrl-C, so no rank prints a traceback from the middle of an import or an MPI call),
    known to the supervisor by its PID, and gone if the supervisor dies."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)  # hydra's proxy gone (killed with the reaper): gone too
    _note("pid", str(os.getpid()))
    threading.Thread(target=_follow_supervisor, name="g2pl-orphan", daemon=True).start()


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
        limit = self.limit
        assert limit is not None  # (armed only with a limit)
        while not self.done.wait(max(0.0, self.deadline - time.monotonic())):
            if time.monotonic() >= self.deadline:
                print(f"{ERR} rank {self.rank}: --time-limit {limit:g} exceeded by "
                      f"{watchdog_grace(limit):.1f} s and the ranks did not stop (a rank is not answering); "
                      "the run was stopped", file=sys.stderr, flush=True)
                os._exit(1)


_WATCHDOG: RankWatchdog | None = None  # the one around the run in progress on this rank


def program_started() -> None:
    """Called by every rank when the program's clock starts: tells the supervisor (whose watchdog then
    counts from here) or restarts this rank's own watchdog."""
    _note("clock", "")
    if _WATCHDOG is not None and _WATCHDOG.armed:
        _WATCHDOG.restart()
