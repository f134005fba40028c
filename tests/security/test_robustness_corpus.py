"""The robustness corpus (tests/robustness/): hostile or malformed inputs, each once a crash, a hang
or an allocation of gigabytes. Through the real command line, every one must end quickly with its
expected status: for bad input exit 2 and one `FILE...: error:` message, never a traceback.

Graph files are loaded by `g2pl run programs/cc.g2pl --graph FILE`; programs are checked
(`g2pl check`) and run (`g2pl run`), which must agree. A program states what it expects on its first
line: `// expect: 2` (refused) or `// expect: 0` (compiles and runs).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from cli_util import ROOT, run_proc

CORPUS = ROOT / "tests" / "robustness"
GRAPHS = sorted(p for p in CORPUS.iterdir() if p.suffix in (".el", ".txt", ".tsv", ".csv", ".mtx", ".npz"))
PROGRAMS = sorted(CORPUS.glob("*.g2pl"))


def _assert_refused(p, path: Path) -> None:
    assert p.returncode == 2, (path.name, p.returncode, p.stderr[-2000:])
    assert "Traceback" not in p.stderr and "internal error" not in p.stderr, p.stderr[-2000:]
    errors = [ln for ln in p.stderr.splitlines() if "error:" in ln]
    assert len(errors) >= 1 and all(ln.startswith(str(path)) for ln in errors), p.stderr[-2000:]
    assert p.stdout == "", p.stdout[-500:]


@pytest.mark.parametrize("path", GRAPHS, ids=[p.name for p in GRAPHS])
def test_bad_graph_file_is_refused(path):
    p = run_proc("g2pl", "run", ROOT / "programs" / "cc.g2pl", "--graph", path, "--quiet", timeout=60)
    _assert_refused(p, path)


def _expected(path: Path) -> int:
    m = re.match(r"//\s*expect:\s*([02])", path.read_text().splitlines()[0])
    assert m, f"{path.name}: the first line must be `// expect: 0` or `// expect: 2`"
    return int(m.group(1))


@pytest.mark.parametrize("path", PROGRAMS, ids=[p.name for p in PROGRAMS])
def test_program_check_and_run_agree(path):
    want = _expected(path)
    check = run_proc("g2pl", "check", path, timeout=60)
    run = run_proc("g2pl", "run", path, "--graph", "er:20:40", "--quiet", timeout=60)
    for p in (check, run):
        if want == 2:
            _assert_refused(p, path)
        else:
            assert p.returncode == 0, (path.name, p.stderr[-2000:])
    if want == 2:
        assert check.stderr.splitlines()[0] == run.stderr.splitlines()[0]  # the same first error
