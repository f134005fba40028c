"""Missing optional packages: a G2PLError naming a command that installs them, never `g2pl[...]`
(the name `g2pl` on PyPI belongs to an unrelated project)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import g2pl
from g2pl import G2PLError, Graph
from g2pl.cli import g2pl_main as main

PROGRAMS = Path(__file__).resolve().parents[2] / "programs"


@pytest.fixture
def res():
    g = Graph.from_edges([1, 2], [2, 3])
    return g2pl.compile(PROGRAMS / "bfs.g2pl").run(g, {"root": 1})


@pytest.mark.parametrize("module,call", [("pandas", "to_pandas"), ("networkx", "to_networkx")])
def test_interop_names_the_install_command(monkeypatch, res, module, call):
    monkeypatch.setitem(sys.modules, module, None)  # `import module` raises ImportError
    with pytest.raises(G2PLError) as err:
        getattr(res, call)()
    msg = str(err.value)
    assert f"pip install {module}`" in msg and "g2pl[" not in msg


def test_plot_names_the_install_command(monkeypatch, tmp_path, capsys):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    code = main(["run", str(PROGRAMS / "cc.g2pl"), "--graph", "ws:50:4:0.1", "--plot", str(tmp_path / "p.png")])
    err = capsys.readouterr().err
    assert code == 2
    assert "pip install matplotlib`" in err and "g2pl[" not in err
    assert not (tmp_path / "p.png").exists()
