"""Running a compiled procedure SPMD-style: partition, execute, merge statistics, collect results.

A graph loaded for a distributed run is a `DistributedGraph` (g2pl.runtime.ingest): every rank
built its own `LocalGraph`, and no rank holds the whole graph.  A whole `Graph` handed to a
multi-rank run (the Python API) is on rank 0, which cuts and sends every rank its part.  Every
rank runs the same generated code; statistics come back to rank 0, results stay with their ranks
until gathered or written.
"""

from __future__ import annotations

import time
from types import ModuleType
from typing import Any

import numpy as np

from g2pl.errors import G2PLRuntimeError, RunStopped
from g2pl.graph import alloc
from g2pl.runtime.backend import Backend
from g2pl.runtime.checkpoint import Checkpointer, graph_digest, hold_directory
from g2pl.runtime.comm import SingleComm
from g2pl.runtime.cupy_backend import CuPyBackend, import_cupy
from g2pl.runtime.engine import Runtime
from g2pl.runtime.grid import GridComm
from g2pl.runtime.ingest import DistributedGraph
from g2pl.runtime.launch import RankWatchdog, program_started
from g2pl.runtime.numpy_backend import NumPyBackend
from g2pl.runtime.partition import LocalGraph, partition, resolve_renumber, whole, whole_by_degree
from g2pl.runtime.stats import Stats

#: a rank that received its part warms this many heap bytes per byte of the part (see alloc.warm)
WARM_PER_BYTE = 2


_LOADED: dict[tuple, Backend] = {}


def load_backend(name: str) -> Backend:
    """The backend called `name` for this process (cupy: the device of this rank), one instance per
    process: the device copies of graph parts and their structures keep the backend they were made
    with, so its counters (`reset` at the start of every run) see every run's work."""
    key: tuple = (name,)
    if name == "cupy":
        key = (name, id(import_cupy()[0]))  # the CuPy module imported now (tests swap in a stand-in)
    bk = _LOADED.get(key)
    if bk is None:
        bk = _LOADED[key] = CuPyBackend() if name == "cupy" else NumPyBackend()
    bk.reset()
    return bk


def scatter_graph(comm, graph, renumber: str | None = None) -> LocalGraph:
    """Each rank's part of `graph` (a whole `Graph` given on rank 0 only, or a `DistributedGraph`)."""
    if isinstance(graph, DistributedGraph):  # each rank built its own part
        return graph.part
    if comm.size == 1:
        kept = graph.__dict__.setdefault("_g2pl_parts", {})  # reused by later runs on the same graph
        if renumber not in kept:
            kept[renumber] = whole(graph) if renumber is None else whole_by_degree(graph)
        return kept[renumber]
    if comm.rank == 0:
        parts = partition(graph, comm.size, renumber)
        for r in range(1, comm.size):
            comm.c.send(parts[r], dest=r, tag=7)
        return parts[0]
    part = comm.c.recv(source=0, tag=7)
    alloc.warm(WARM_PER_BYTE * sum(a.nbytes for a in vars(part).values() if isinstance(a, np.ndarray)))
    return part


def renumbering(graph, renumber: str | None) -> str | None:
    """`resolve_renumber`, its "auto" decision (a pass over every degree) made once per graph."""
    if isinstance(graph, DistributedGraph):
        return graph.renumber  # decided when its parts were built
    if renumber != "auto":
        return resolve_renumber(graph, renumber)
    if "_g2pl_auto_renumber" not in graph.__dict__:  # kept with the graph, as scatter_graph keeps its parts
        graph.__dict__["_g2pl_auto_renumber"] = resolve_renumber(graph, renumber)
    return graph.__dict__["_g2pl_auto_renumber"]


def peak_rss_bytes() -> int:
    """This process's peak resident memory so far (Linux reports kilobytes, macOS bytes)."""
    import resource
    import sys

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak if sys.platform == "darwin" else peak * 1024)


def _peers(comm, lg: LocalGraph) -> int:
    """The ranks this rank sends to: its ghosts' owners, or, routed over a grid, the row and column
    peers it sent to since the program started."""
    if lg.size == 1:
        return 0
    if isinstance(comm, GridComm):
        return len(comm.partners)
    return int(np.count_nonzero(np.asarray(lg.send_counts)[np.arange(lg.size) != lg.rank]))


def merge_stats(comm, rt: Runtime) -> Stats:
    """Per-superstep stats summed over ranks (times: the slowest rank), plus a per-rank breakdown."""
    st = rt.stats
    lg = rt.host_lg
    mine = {
        "rank": comm.rank, "vertices": int(lg.n), "local_edges": int(lg.m),
        "edges_owned": int(lg.m) if lg.size == 1 else  # one rank owns all
        int(lg.m_owned) if lg.m_owned is not None else int(np.count_nonzero(lg.edge_owned)),
        "ghosts": int(lg.n_ghosts),
        "bytes_sent": int(st.total("bytes")),
        "bytes_received": int(getattr(comm, "bytes_received", 0)),
        "comm_s": float(st.total("comm_s")),
        "peers": _peers(comm, lg),
        "load_time_s": float(st.load_time_s),
        "graph_load_s": float(st.graph_load_s),
        "peak_rss_bytes": peak_rss_bytes(),
        "compute_s": float(st.total("time_s") - st.total("comm_s")),
        # the kept records, then the sum of those left out: the same rows on every rank
        "per_superstep": [(s.messages, s.bytes, s.record_bytes, s.active, s.time_s) for s in st.rows()],
    }
    if comm.size == 1:
        mine.pop("per_superstep")
        st.per_rank = [mine]
        return st
    allr = comm.gather(mine)
    if comm.rank != 0:
        return st
    for i, s in enumerate(st.rows()):
        rows = [r["per_superstep"][i] for r in allr]
        s.messages = sum(x[0] for x in rows)
        s.bytes = sum(x[1] for x in rows)
        s.record_bytes = sum(x[2] for x in rows)
        s.active = sum(x[3] for x in rows)
        s.time_s = max(x[4] for x in rows)
    st.graph_load_s = max(r["graph_load_s"] for r in allr)
    st.load_time_s = max(r["load_time_s"] for r in allr)
    for r in allr:
        r.pop("per_superstep")
    st.per_rank = allr
    return st


def execute(module: ModuleType, graph, argv: dict[str, Any], *, comm=None, time_limit: float | None = None,
            **kw: Any) -> tuple[list[tuple] | None, dict]:
    """`_execute` under a rank watchdog (g2pl.runtime.launch): with several ranks and --time-limit, a
    rank that stops answering would otherwise keep the others blocked in a collective for ever.  A
    checkpoint directory is held (locked) from before the graph is scattered until the run ends."""
    comm = comm or SingleComm()
    with RankWatchdog(comm.rank, comm.size, time_limit), hold_directory(kw.get("checkpoint"), comm):
        return _execute(module, graph, argv, comm=comm, time_limit=time_limit, **kw)


def _execute(module: ModuleType, graph, argv: dict[str, Any], *, seed: int, max_supersteps: int | None,
            comm=None, backend: str = "numpy", opt: int = 2, entry: str = "", renumber: str | None = None,
            progress=None, checkpoint: dict | None = None, time_limit: float | None = None
            ) -> tuple[list[tuple] | None, dict]:
    """Run `module` on `graph`; returns (values, stats dict) on rank 0, (None, stats) elsewhere.

    Values are (name, kind, type, value) in `return` order, each vertex or edge value one host array
    aligned with `graph` (g2pl.results.returned); their JSON shapes are made only when asked for.

    `renumber`: "auto", "degree", "none" or None (see partition.resolve_renumber).

    `progress`, if given, is called as `progress(stats, final)` after every superstep (this rank's stats).
    `checkpoint`: {"dir", "every", "resume", "identity"} (see g2pl.runtime.checkpoint).
    """
    comm = comm or SingleComm()
    t0 = time.perf_counter()
    distributed = isinstance(graph, DistributedGraph)
    renumber = renumbering(graph, renumber) if comm.rank == 0 or distributed else None
    if comm.size > 1 and not distributed:
        renumber = comm.bcast(renumber)
    lg = scatter_graph(comm, graph, renumber)
    rt = Runtime(lg, module, seed=seed, comm=comm, max_supersteps=max_supersteps, progress=progress,
                 backend=load_backend(backend))
    rt.time_limit = time_limit
    if checkpoint is not None:
        ident = dict(checkpoint["identity"])
        if isinstance(graph, DistributedGraph):
            ident["graph"] = graph.digest()
        else:
            ident["graph"] = comm.bcast(graph_digest(graph) if comm.rank == 0 else None)
        ident["renumber"] = renumber or "none"  # saved vertex arrays are in the local order
        rt.attach_checkpointer(Checkpointer(checkpoint["dir"], checkpoint["every"], ident, comm,
                                            checkpoint["resume"], module))
    rt.prepare()  # adjacency structures of this rank's part (loading), then the clock starts
    if isinstance(comm, GridComm):
        comm.partners.clear()  # the program's partners, not the loading's
        rt.stats.partition = "2d {}x{}".format(*comm.shape)
    rt.stats.load_time_s = time.perf_counter() - t0
    rt.stats.graph_load_s = float(graph.__dict__.get("load_s", 0.0)) if graph is not None else 0.0
    rt.stats.backend = backend
    rt.stats.opt_level = opt
    rt.stats.entry = entry
    program_started()  # the watchdog's --time-limit counts from here, as the engine's does
    with np.errstate(all="ignore"):
        try:
            raw = module.run(rt, argv)
        except MemoryError:
            raise G2PLRuntimeError("out of memory while running the program") from None
        except RunStopped as stop:  # every rank stops at the same superstep: merge what was measured
            stats = merge_stats(comm, rt)
            stop.stats = dict(stats.as_dict(), stopped={"reason": stop.reason, "message": stop.message})
            raise
    rt.finish()
    if rt.bk.name != "numpy":  # one rank's answers are still on the device (collect): copied now, untimed
        raw = [(name, kind, elem, rt.host_copy(value)) for name, kind, elem, value in raw]
        rt.stats.device = rt.bk.memory_info()
    stats = merge_stats(comm, rt)
    if comm.rank != 0:  # several ranks: every rank returns its shares of the values (Runtime.collect)
        return list(raw), stats.as_dict()
    stats.graph = {"name": graph.name, "n": int(graph.n), "m": int(graph.m), "directed": bool(graph.directed),
                   **{k: v for k, v in graph.info.items() if isinstance(v, (int, float, str, bool))}}
    return list(raw), stats.as_dict()

