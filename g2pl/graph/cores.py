"""How many threads this process may keep busy: the compiled row kernels' threads, the output's chunk
makers and the build's sorts all ask here."""

from __future__ import annotations

import os

from g2pl.errors import G2PLError

#: the variables by which MPI launchers (MPICH's and Intel MPI's hydra, Open MPI, MVAPICH, Cray PALS) say
#: how many ranks they started on this machine
_LOCAL_RANKS = ("MPI_LOCALNRANKS", "OMPI_COMM_WORLD_LOCAL_SIZE", "MV2_COMM_WORLD_LOCAL_SIZE", "PALS_LOCAL_SIZE")


def threads() -> int:
    """G2PL_THREADS (a positive integer) when set, else the CPUs this process may run on (its affinity,
    which `taskset` or a batch system narrows), divided among the ranks an MPI launcher started on this
    machine so that they do not oversubscribe its cores, unless the launcher bound the process to fewer
    CPUs than the machine has (it divided them already)."""
    raw = os.environ.get("G2PL_THREADS", "").strip()
    if raw:
        if not raw.isdigit() or int(raw) < 1:
            raise G2PLError(f"G2PL_THREADS must be a positive integer, not {raw!r}")
        return int(raw)
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # (no affinity on macOS and Windows)
        cpus = os.cpu_count() or 1
    if cpus < (os.cpu_count() or cpus):
        return max(cpus, 1)
    local = max((int(v) for k in _LOCAL_RANKS if (v := os.environ.get(k, "")).isdigit()), default=1)
    return max(cpus // max(local, 1), 1)
