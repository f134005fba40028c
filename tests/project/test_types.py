"""mypy over what pyproject.toml's `[tool.mypy] files` lists (the runtime, the graph, the I/O helpers,
the contract and the errors): CI fails on a type error there.  Skipped where mypy is not installed (`pip install -e
'.[test]'` installs it)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_mypy_passes(tmp_path: Path) -> None:
    pytest.importorskip("mypy")
    # the configuration (and the files to check) come from pyproject.toml; a fresh cache each time
    r = subprocess.run([sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path / "mypy-cache")], cwd=ROOT, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Success" in r.stdout
