"""Starting several ranks: `g2pl run --np N` re-runs itself under `mpiexec -n N`."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from g2pl.errors import G2PLError


def find_mpiexec() -> str | None:
    """mpiexec next to this Python (the `mpich` wheel installs it there), else on PATH."""
    here = Path(sys.executable).parent / "mpiexec"
    if here.exists():
        return str(here)
    return shutil.which("mpiexec")


def relaunch(n: int, argv: list[str]) -> int:
    """Run `g2pl <argv>` as `n` MPI ranks and return the exit status."""
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        raise G2PLError("--np needs mpi4py and MPI; install them with `pip install '.[mpi]'`",
                        file="g2pl run") from None
    exe = find_mpiexec()
    if exe is None:
        raise G2PLError("--np needs `mpiexec`; install MPI with `pip install '.[mpi]'`", file="g2pl run")
    env = os.environ.copy()
    pkg_root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = pkg_root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    # -P: do not put the current directory first on sys.path, so every rank imports the same g2pl
    # as this process (the PYTHONPATH above), not a g2pl/ folder that happens to be in the cwd
    py = [sys.executable, "-P"] if sys.version_info >= (3, 11) else [sys.executable]
    cmd = [exe, "-n", str(n), *py, "-m", "g2pl.cli", *argv]
    try:
        return subprocess.call(cmd, env=env)
    except KeyboardInterrupt:
        return 130
