"""How `g2pl run` finds its ranks: from MPI itself wherever a launcher's variables are present (an outer
`mpiexec -f HOSTFILE`, a launcher's job of one rank, a launcher whose ranks MPI cannot see), and how
`--np` calls MPICH's and Open MPI's `mpiexec` (flavour detection and arguments as functions: Open MPI
need not be installed). Runs that need mpi4py or mpiexec are skipped where they are missing.
"""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from g2pl.runtime import launch, supervisor
from g2pl.runtime.launch import MPICH, OPEN_MPI, OTHER, mpi_flavour, mpiexec_command, mpiexec_env
from g2pl.runtime.mpi import claimed_ranks, launcher_signs
from g2pl.runtime.supervisor import StdoutFilter, Supervisor

ROOT = Path(__file__).resolve().parents[2]
CC = str(ROOT / "programs" / "cc.g2pl")
GRAPH = ["--graph", "kron:8", "--seed", "2"]

try:
    import mpi4py  # noqa: F401

    HAVE_MPI4PY = True
except ImportError:
    HAVE_MPI4PY = False
MPIEXEC = launch.find_mpiexec()
needs_mpi = pytest.mark.skipif(not HAVE_MPI4PY or MPIEXEC is None,
                               reason="mpi4py/mpiexec not installed (pip install '.[mpi]')")


def clean_env(**extra: str) -> dict[str, str]:
    """This environment without any launcher's variables (the tests may themselves run under one), this
    g2pl first on the path, plus `extra`."""
    e = {k: v for k, v in os.environ.items() if k not in launcher_signs(os.environ)}
    e["PYTHONPATH"] = str(ROOT) + (os.pathsep + e["PYTHONPATH"] if e.get("PYTHONPATH") else "")
    for k in ("G2PL_FAIL_AT", "G2PL_KILL_AT"):
        e.pop(k, None)
    e.update(extra)
    return e


def g2pl_run(out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "g2pl", "run", CC, *GRAPH, "--output", str(out), *extra]


def run(cmd: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, timeout=180)


@pytest.fixture(scope="module")
def one_rank(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The answer of a plain one-rank run (no launcher)."""
    out = tmp_path_factory.mktemp("one") / "one.json"
    proc = run(g2pl_run(out, "--quiet"), clean_env())
    assert proc.returncode == 0, proc.stderr
    return json.loads(out.read_text())


# ---------------------------------------------------------------- ranks come from MPI


@needs_mpi
def test_outer_mpiexec_with_a_hostfile_gives_the_one_rank_answer(tmp_path: Path, one_rank: dict) -> None:
    if launch.mpiexec_flavour(MPIEXEC) != MPICH:
        pytest.skip("`-f HOSTFILE` is MPICH hydra's syntax")
    hosts = tmp_path / "hosts"
    hosts.write_text("localhost:3\n")
    out = tmp_path / "np3.json"
    proc = run([MPIEXEC, "-n", "3", "-f", str(hosts), *g2pl_run(out)], clean_env())
    assert proc.returncode == 0, proc.stderr
    assert json.loads(out.read_text()) == one_rank
    # one job of 3 ranks, not 3 jobs of one: one summary, printed by rank 0, saying 3 ranks
    summaries = [line for line in proc.stdout.splitlines() if line.startswith("stats:")]
    assert len(summaries) == 1 and "3 ranks" in summaries[0], proc.stdout


def test_launcher_variables_of_a_one_rank_job_run_one_rank(tmp_path: Path, one_rank: dict) -> None:
    """PMI/Slurm variables of a job of one (a batch step, `srun -n 1`): MPI, if there, says 1; one rank runs."""
    out = tmp_path / "o.json"
    env = clean_env(PMI_RANK="0", PMI_SIZE="1", MPI_LOCALNRANKS="1", SLURM_PROCID="0", SLURM_STEP_ID="0",
                    SLURM_STEP_NUM_TASKS="1")
    proc = run(g2pl_run(out), env)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(out.read_text()) == one_rank
    assert " 1 rank," in proc.stdout, proc.stdout


@needs_mpi
def test_mpiexec_of_one_rank_runs_one_rank(tmp_path: Path, one_rank: dict) -> None:
    out = tmp_path / "o.json"
    proc = run([MPIEXEC, "-n", "1", *g2pl_run(out, "--quiet")], clean_env())
    assert proc.returncode == 0, proc.stderr
    assert json.loads(out.read_text()) == one_rank


@needs_mpi
def test_np_inside_a_launchers_job_of_one(tmp_path: Path, one_rank: dict) -> None:
    """`g2pl run --np 2` started as the only rank of an outer job (an interactive `srun`, `mpiexec -n 1`):
    MPI says one rank, so --np starts its own job, whose ranks must not join the outer one."""
    out = tmp_path / "o.json"
    proc = run([MPIEXEC, "-n", "1", *g2pl_run(out, "--np", "2")], clean_env())
    assert proc.returncode == 0, proc.stderr
    assert json.loads(out.read_text()) == one_rank
    assert "2 ranks" in proc.stdout, proc.stdout


def test_a_launcher_whose_ranks_mpi_cannot_see_is_an_error(tmp_path: Path) -> None:
    """srun says 3 tasks but MPI sees a job of one (MPI and launcher do not talk): exit 2 with the reason,
    never three copies each running the whole job and writing the same file."""
    out = tmp_path / "o.json"
    env = clean_env(SLURM_PROCID="0", SLURM_STEP_ID="0", SLURM_STEP_NUM_TASKS="3")
    proc = run(g2pl_run(out), env)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("g2pl run: error: "), lines
    assert "SLURM_STEP_NUM_TASKS=3" in lines[0]
    assert ("MPI sees a job of one rank" if HAVE_MPI4PY else "mpi4py is not installed") in lines[0]
    assert not out.exists()


@pytest.mark.parametrize("size, status", [("3", 2), ("1", 0)])
def test_without_mpi4py_only_a_job_of_several_is_an_error(tmp_path: Path, size: str, status: int) -> None:
    """mpi4py missing (blocked here): a launcher that says 3 ranks is exit 2 with the install command; one
    that says 1 rank runs it."""
    out = tmp_path / "o.json"
    code = ("import sys; sys.modules['mpi4py'] = None; from g2pl.cli.main import g2pl_main; "
            f"sys.exit(g2pl_main({g2pl_run(out, '--quiet')[3:]!r}))")
    proc = run([sys.executable, "-c", code], clean_env(PMI_RANK="0", PMI_SIZE=size))
    assert proc.returncode == status, proc.stderr
    if status:
        assert proc.stderr.strip() == ("g2pl run: error: started under mpiexec as one of several ranks (PMI_SIZE=3), "
                                       "but mpi4py is not installed (`pip install '.[mpi]'`)")
        assert not out.exists()
    else:
        assert json.loads(out.read_text())["entry"] == "cc"


def test_no_launcher_no_mpi4py_import() -> None:
    """A plain run never imports mpi4py (it would cost about 0.1 s of start-up)."""
    code = ("import sys; from g2pl.cli.commands import _mpi_comm; assert _mpi_comm() is None; "
            "print([m for m in sys.modules if m.startswith('mpi4py')])")
    proc = run([sys.executable, "-c", code], clean_env())
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


@pytest.mark.parametrize("env, signs", [
    ({}, []),
    ({"PATH": "/bin", "HOME": "/root"}, []),
    # what installations and profiles set everywhere, and a batch script (SLURM_PROCID alone)
    ({"I_MPI_ROOT": "/opt/intel/mpi", "PMIX_MCA_gds": "hash", "SLURM_PROCID": "0", "SLURM_JOB_ID": "7"}, []),
    ({"SLURM_PROCID": "0", "SLURM_STEP_ID": "0"}, ["SLURM_PROCID", "SLURM_STEP_ID"]),  # srun, any --mpi
    ({"PMIX_RANK": "0", "PMIX_NAMESPACE": "slurm.pmix.7.0"}, ["PMIX_NAMESPACE", "PMIX_RANK"]),  # srun --mpi=pmix
    ({"PMI_RANK": "1", "PMI_SIZE": "4", "PMI_FD": "5"}, ["PMI_FD", "PMI_RANK", "PMI_SIZE"]),  # hydra, srun pmi2
    ({"OMPI_COMM_WORLD_SIZE": "8"}, ["OMPI_COMM_WORLD_SIZE"]),
    ({"MV2_COMM_WORLD_RANK": "0"}, ["MV2_COMM_WORLD_RANK"]),
    ({"PALS_RANKID": "0"}, ["PALS_RANKID"]),
    ({"I_MPI_PIN": "1"}, ["I_MPI_PIN"]),
])
def test_launcher_signs(env: dict[str, str], signs: list[str]) -> None:
    assert launcher_signs(env) == signs


@pytest.mark.parametrize("env, claim", [
    ({}, None),
    ({"PMIX_RANK": "0"}, None),  # a rank, not a count
    ({"PMI_SIZE": "4", "MPI_LOCALNRANKS": "2"}, (4, "PMI_SIZE")),
    ({"OMPI_COMM_WORLD_SIZE": "oops"}, None),
    ({"SLURM_STEP_NUM_TASKS": "64"}, None),  # no srun step: not this process's job
    ({"SLURM_STEP_NUM_TASKS": "64", "SLURM_PROCID": "3", "SLURM_STEP_ID": "0"}, (64, "SLURM_STEP_NUM_TASKS")),
])
def test_claimed_ranks(env: dict[str, str], claim: tuple[int, str] | None) -> None:
    assert claimed_ranks(env) == claim


# ---------------------------------------------------------------- --np: which mpiexec, called how

HYDRA = """HYDRA build details:
    Version:                                 4.2.1
    Process Manager:                         pmi
    Launchers available:                     ssh rsh fork slurm ll lsf sge manual persist
"""


@pytest.mark.parametrize("text, flavour", [
    (HYDRA, MPICH),
    ("Intel(R) MPI Library for Linux* OS, Version 2021.10 Build 20230619 (id: c2e19c2f3e)\n", MPICH),
    ("mpiexec (OpenRTE) 4.1.2\n\nReport bugs to http://www.open-mpi.org/community/help/\n", OPEN_MPI),
    ("mpiexec (Open MPI) 5.0.3\n\nReport bugs to https://www.open-mpi.org/community/help/\n", OPEN_MPI),
    ("", OTHER),
    ("usage: mpiexec [options]\n", OTHER),
])
def test_mpi_flavour(text: str, flavour: str) -> None:
    assert mpi_flavour(text) == flavour


@pytest.mark.skipif(MPIEXEC is None, reason="mpiexec not installed (pip install '.[mpi]')")
def test_installed_mpiexec_is_recognised() -> None:
    out = subprocess.run([MPIEXEC, "--version"], capture_output=True, text=True, timeout=30)
    assert launch.mpiexec_flavour(MPIEXEC) == mpi_flavour(out.stdout + out.stderr) != OTHER


PROGRAM = ["python", "-c", "pass"]


def test_open_mpi_oversubscribes_only_past_its_cores() -> None:
    over = ["mpiexec", "--oversubscribe", "-n", "8", *PROGRAM]
    assert mpiexec_command("mpiexec", OPEN_MPI, 8, PROGRAM, cores=2) == over
    assert mpiexec_command("mpiexec", OPEN_MPI, 2, PROGRAM, cores=2) == ["mpiexec", "-n", "2", *PROGRAM]


@pytest.mark.parametrize("flavour", [MPICH, OTHER])
def test_hydra_is_called_as_before(flavour: str) -> None:
    assert mpiexec_command("/x/mpiexec", flavour, 8, PROGRAM, cores=2) == ["/x/mpiexec", "-n", "8", *PROGRAM]


def test_open_mpi_as_root_gets_its_allow_variables() -> None:
    env = {"PATH": "/bin"}
    as_root = mpiexec_env(OPEN_MPI, env, root=True)
    assert {k: as_root[k] for k in launch.OPEN_MPI_ROOT_ENV} == dict.fromkeys(launch.OPEN_MPI_ROOT_ENV, "1")
    assert as_root["PATH"] == "/bin" and env == {"PATH": "/bin"}  # a copy
    assert mpiexec_env(OPEN_MPI, env, root=False) == env
    assert mpiexec_env(MPICH, env, root=True) == env


def test_ranks_do_not_inherit_an_outer_job(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    outer = {"PMI_RANK": "0", "PMI_FD": "9", "PMIX_NAMESPACE": "slurm.pmix.7.0", "PMIX_RANK": "0",
             "OMPI_COMM_WORLD_SIZE": "1", "MPI_LOCALRANKID": "0"}
    settings = {"PMIX_MCA_gds": "hash", "I_MPI_FABRICS": "shm", "OMPI_MCA_btl": "self,vader"}
    for k, v in {**outer, **settings}.items():
        monkeypatch.setenv(k, v)
    env = supervisor._rank_env(str(tmp_path))
    assert not set(outer) & set(env)
    assert {k: env[k] for k in settings} == settings
    assert env[launch.RUN_DIR_ENV] == str(tmp_path)


def _ended(tmp_path: Path, flavour: str, rc: int, first_dead: int | None) -> str:
    """What the supervisor says of a job that ended with status `rc`, without a banner or a zombie's status."""
    sup = Supervisor(3, "mpiexec", [], {}, tmp_path, None, flavour)
    sup.out = StdoutFilter(None, io.BytesIO())
    if first_dead is not None:
        sup.deaths.groups.append([first_dead])
    return sup._what_happened(rc)


def test_open_mpi_killed_rank_is_named_with_its_signal(tmp_path: Path) -> None:
    """Open MPI's mpirun ends with 128 + N when a rank was killed by signal N, and prints no banner."""
    assert _ended(tmp_path, OPEN_MPI, 128 + signal.SIGKILL, 2) == "rank 2 was killed by signal 9 (SIGKILL)"
    assert _ended(tmp_path, OPEN_MPI, 128 + signal.SIGSEGV, None) == \
        "an MPI process was killed by signal 11 (SIGSEGV)"
    assert _ended(tmp_path, OPEN_MPI, 3, 1) == "rank 1 exited with status 3 without a message"


def test_hydra_status_137_is_a_rank_s_own(tmp_path: Path) -> None:
    """hydra passes a rank's own exit status on (a signal gets its banner instead): 137 is just a status."""
    assert _ended(tmp_path, MPICH, 137, 2) == "rank 2 exited with status 137 without a message"


def test_ranks_seen_dead_at_once_alike_are_all_named(tmp_path: Path) -> None:
    """Ranks found dead at one wake-up, all by SIGKILL (the one that died and those hydra killed right
    after it, under load): all are named, not the one hydra's banner picks; a rank that died otherwise
    among SIGKILLed ones is named alone (the others were hydra's cleanup)."""
    sup = Supervisor(4, "mpiexec", [], {}, tmp_path, None, MPICH)
    sup.out = StdoutFilter(None, io.BytesIO())
    sup.deaths.groups.append([1, 2, 3])
    sup.deaths.status.update({1: signal.SIGKILL, 2: signal.SIGKILL, 3: signal.SIGKILL})
    assert sup._what_happened(137) == \
        "ranks 1, 2 and 3 were killed by signal 9 (SIGKILL) at once (which one first is not known)"
    sup.deaths.status[2] = signal.SIGSEGV
    assert sup._what_happened(137) == "rank 2 was killed by signal 11 (SIGSEGV)"
    del sup.deaths.status[3]  # reaped before its status could be read: one of the three, not known which
    sup.deaths.status[2] = signal.SIGKILL
    sup.out.banner = b"=   PID 4321 RUNNING AT host\n=   EXIT CODE: 9\n... (signal 9)"  # hydra's, for a signal
    assert sup._what_happened(9) == "ranks 1, 2 and 3 died at once (which one first is not known)"


def test_a_rank_that_ended_by_itself_among_killed_ones_is_named(tmp_path: Path) -> None:
    """hydra passes on the status of a rank that exited by itself (no banner): of ranks dying at once,
    the one whose status was not seen is it when every other was SIGKILLed (hydra's cleanup)."""
    sup = Supervisor(2, "mpiexec", [], {}, tmp_path, None, MPICH)
    sup.out = StdoutFilter(None, io.BytesIO())
    sup.deaths.groups.append([0, 1])
    sup.deaths.status[0] = signal.SIGKILL
    assert sup._what_happened(3) == "rank 1 exited with status 3 without a message"
    del sup.deaths.status[0]  # neither seen: not known which
    assert sup._what_happened(3) == "ranks 0 and 1 died at once (which one first is not known)"


def test_a_process_is_ending_from_the_start_of_its_exit() -> None:
    """`_ending`: not while a process runs; once it is a zombie, with its status (and for a PID that is
    gone): the evidence that it was already dying when another rank was seen dead."""
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read(); sys.exit(3)"],
                             stdin=subprocess.PIPE)
    try:
        assert supervisor._ending(child.pid) == (False, None)
        assert child.stdin is not None
        child.stdin.close()
        deadline = time.monotonic() + 30
        while supervisor.proc_state(child.pid) != "Z" and time.monotonic() < deadline:
            time.sleep(0.01)
        assert supervisor._ending(child.pid) == (True, 3 << 8)  # a zombie, not yet reaped
    finally:
        child.wait()
    assert supervisor._ending(child.pid) == (True, None)
