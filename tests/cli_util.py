"""Running the command-line tools from tests: in-process (`call`) or as a real process (`run_proc`)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def call(main, argv: list, capsys) -> tuple[int, str, str]:
    """Run a CLI entry point in-process; returns (exit status, stdout, stderr)."""
    try:
        rc = main([str(a) for a in argv])
    except SystemExit as e:  # argparse errors
        rc = e.code if isinstance(e.code, int) else (0 if e.code is None else 2)
    out = capsys.readouterr()
    return rc, out.out, out.err


def mpi_available() -> bool:
    """mpi4py and an mpiexec are installed (the `mpi` extra): tests of several ranks can run."""
    import importlib.util

    from g2pl.runtime.launch import find_mpiexec

    return importlib.util.find_spec("mpi4py") is not None and find_mpiexec() is not None


def run_proc(tool: str, *args, cwd: Path | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
    """Run `g2plc` / `g2pl` as a real process (console-script entry points)."""
    fn = "g2plc_main" if tool == "g2plc" else "g2pl_main"
    code = f"import sys; from g2pl.cli import {fn}; sys.exit({fn}())"
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run([sys.executable, "-c", code, *map(str, args)], cwd=cwd or ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)


def write(tmp_path: Path, name: str, text: str | bytes) -> Path:
    """A file `name` in `tmp_path` holding `text`."""
    p = tmp_path / name
    if isinstance(text, bytes):
        p.write_bytes(text)
    else:
        p.write_text(text)
    return p
