"""The device copy of a graph part holds only what a program reads: each array is uploaded on its
first read, arrays the host shares are uploaded once, and all-equal weights travel as one value."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np

import g2pl

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location(
    "strict_cupy_activate", Path(__file__).resolve().parents[1] / "strict_cupy" / "activate.py")
_activate = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_activate)
standin = _activate.standin


def _uploaded(g, name: str, **args) -> tuple[int, set[str]]:
    """(host->device bytes of a run on a fresh copy of `g`, the device part's arrays read by it)."""
    from g2pl.runtime.cupy_backend import DevicePart

    seen: list[DevicePart] = []
    orig = DevicePart.__init__

    def spy(self, *a, **k):
        orig(self, *a, **k)
        seen.append(self)

    DevicePart.__init__ = spy
    try:
        with standin():
            res = g2pl.compile_file(ROOT / "programs" / f"{name}.g2pl").run(g, args=args, backend="cupy")
    finally:
        DevicePart.__init__ = orig
    (part,) = seen
    pending = part.__dict__.get("_pending", {})
    arrays = {k for k, v in part.__dict__.items() if k not in pending and hasattr(v, "nbytes")}
    return res.stats["device"]["h2d_bytes"], arrays


def test_bfs_uploads_its_adjacency_and_nothing_of_the_edges() -> None:
    g = g2pl.load_graph("kron:10", seed=1)
    h2d, arrays = _uploaded(g, "bfs", root=int(g.ids[0]))
    assert not arrays & {"src", "dst", "weight", "edge_owned"}, " ".join(sorted(arrays))
    entries = len(g.in_nbr)
    # the in-adjacency (neighbours and, for the pushed first levels, edge ids) and per-vertex arrays
    assert h2d <= entries * (g.in_nbr.itemsize + g.in_eid.itemsize) + 64 * g.n, (h2d, entries)


def test_unit_weights_travel_as_one_value() -> None:
    rng = np.random.default_rng(0)
    src, dst = rng.integers(0, 300, 2000), rng.integers(0, 300, 2000)
    g = g2pl.Graph.from_edges(src, dst)  # no weights: every edge weighs 1.0 (a stride-0 view)
    h2d, arrays = _uploaded(g, "sssp", root=int(g.ids[0]))
    assert "weight" in arrays
    h2d_w, _ = _uploaded(g2pl.Graph.from_edges(src, dst, rng.uniform(1, 2, 2000)), "sssp", root=int(g.ids[0]))
    assert h2d_w - h2d >= 8 * (g.m - 1)  # real weights cost 8 bytes an edge; unit weights one value


def test_a_degree_renumbered_part_gives_the_numpy_answers() -> None:
    """Generated graphs are degree-renumbered (the part's `order`, a field with a class default): the
    device part must carry the renumbering, not the default, or every answer comes out permuted."""
    from g2pl.runtime.cupy_backend import DevicePart

    g = g2pl.load_graph("kron:10", seed=1)
    parts: list[DevicePart] = []
    orig = DevicePart.__init__

    def spy(self, *a, **k):
        orig(self, *a, **k)
        parts.append(self)

    for name, args in (("bfs", {"root": int(g.ids[0])}), ("cc", {})):
        prog = g2pl.compile_file(ROOT / "programs" / f"{name}.g2pl")
        want = prog.run(g, args=args).output()["values"]
        DevicePart.__init__ = spy
        try:
            with standin():
                got = prog.run(g, args=args, backend="cupy").output()["values"]
        finally:
            DevicePart.__init__ = orig
        assert got == want, name
    assert parts and parts[0].order is not None
