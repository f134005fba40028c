"""The BSP runtime a generated module runs on (`rt` in generated code): fourteen verbs.

    vmap          a scalar, vertex or edge value (Ligra's vertexMap), sparse where a set is
    nbr_combine   neighbourhood combine: exchange, count, push or pull, reduce (Ligra's edgeMap)
    endpoints     vertex values at edge endpoints (or the edge set where they all hold)
    common        an aggregation over the common neighbours of each edge's endpoints (triangles)
    mark          the vertex set named by edges' endpoints or by IDs (remote mark)
    aggregate     a global aggregation, combined at the barrier
    remote_request, remote_reply    a remote read, over two supersteps
    keyed         a keyed aggregation: values combined at the vertices keys name (keyed.py)
    rand          the counter-based random numbers of one call site
    barrier       the end of a superstep: aggregators, statistics, limits
    collect       a returned value: whole (one rank) or this rank's share (several)
    resume, checkpoint              --resume and --checkpoint; checkpoint also bounds loops (limits)

Each exchange verb takes the exchange's spec (written by the compiler's
passes) and carries it out: transport, presence, message counting and the
push/pull choice are decided by the spec, and caches are keyed by its id.
Vertex arrays hold this rank's *owned* vertices, edge arrays its *local*
edges (those with an owned endpoint); with one rank nothing is exchanged.
The verbs are written in the backend's array module (`bk.xp`) and
primitives (backend.py), never in NumPy directly.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import time

from g2pl.contract import (
    DEFAULTS,  # one definition for the compiler and the runtime
    Broadcast,
    Spec,
)
from g2pl.errors import RunStopped
from g2pl.graph import alloc
from g2pl.runtime import cpu_kernels
from g2pl.runtime.backend import Backend
from g2pl.runtime.checkpoint_schema import encode_runtime
from g2pl.runtime.comm import SingleComm
from g2pl.runtime.common_neighbours import Common
from g2pl.runtime.edges import Edges, Members
from g2pl.runtime.keyed import Keyed
from g2pl.runtime.neighbourhood import Neighbourhood
from g2pl.runtime.numpy_backend import NumPyBackend, load_sparse
from g2pl.runtime.output import RankPart
from g2pl.runtime.partials import merge_mode, offsets
from g2pl.runtime.partition import LocalGraph, whole
from g2pl.runtime.remote import Remote, RemoteRequest
from g2pl.runtime.stats import Stats, SuperstepStat, Tally
from g2pl.runtime.transport import Transport

#: the limits inside loops that exchange nothing (see `Runtime.checkpoint`): the clock is read, and
#: with several ranks agreed on, every so many such loop iterations: at first CLOCK_FIRST, then as
#: many as take about CLOCK_PERIOD seconds on the slowest rank (at most CLOCK_MAX)
CLOCK_FIRST, CLOCK_MAX, CLOCK_PERIOD = 16, 1 << 20, 0.05
_NEVER = 1 << 62  # a count never reached


class _Every:
    """The back edges of a module without BACK_EDGES: every transition to a state numbered no higher
    (every cycle of the state machine has one, so its loops are still bounded)."""

    def __getitem__(self, state: int) -> _Every:
        return self

    def __contains__(self, state: object) -> bool:
        return True


def _back_from(module) -> _Every | tuple:
    """For each state, the states whose transition to it goes back to a loop's header (None: none)."""
    edges, states = getattr(module, "BACK_EDGES", None), getattr(module, "STATE_LINES", None)
    if edges is None or states is None:
        return _Every()
    top = max([0, *states, *(x for e in edges for x in e)])
    return tuple(frozenset(s for s, t in edges if t == h) or None for h in range(top + 1))


def _fault_injection(var: str = "G2PL_FAIL_AT") -> tuple[int, int] | None:
    """Testing hooks: G2PL_FAIL_AT=RANK:SUPERSTEP makes that rank raise when that superstep ends;
    G2PL_KILL_AT=RANK:SUPERSTEP makes it die by SIGKILL there."""
    spec = os.environ.get(var)
    if not spec:
        return None
    r, s = spec.split(":")
    return int(r), int(s)


class Runtime:
    """Runtime verbs over one rank's part of a graph."""

    def __init__(self, lg: LocalGraph, module, *, seed: int = 0, comm=None, max_supersteps: int | None = None,
                 progress=None, backend: Backend | None = None) -> None:
        self.bk = bk = backend or NumPyBackend()
        self.xp, self.ops = bk.xp, bk  # the array module and the elementwise operations of generated code
        alloc.tune()  # freed temporaries stay in the process between supersteps
        self.progress = progress  # optional callback(stats, final: bool) after every superstep
        self.comm = bk.staged(comm or SingleComm())  # device buffers reach MPI through host memory
        if not isinstance(lg, LocalGraph):  # a whole Graph: the one-rank view of it
            lg = whole(lg)
        self.host_lg = lg
        self.lg = lg = bk.graph_part(lg)  # the part the verbs work on (a device copy on a GPU)
        self.n, self.m = lg.n, lg.m
        self.ids = lg.ids
        self._weight = None  # the edge weights, on first read (`weight`)
        self.seed = int(seed)
        self.max_supersteps = max_supersteps
        need_in, need_out = getattr(module, "DIRECTIONS", (True, False))
        self._directions = (bool(need_in), bool(need_out))
        # an exchange that may push reads each sender's entries (the transposed adjacency); a program
        # that only pulls never builds that copy of its adjacency
        self._nbr_specs = [v for v in vars(module).values() if isinstance(v, Spec) and v.kind == "nbr"]
        self._pushes = any(v.policy == "push-pull" for v in self._nbr_specs)
        # a sum, count or average over neighbours is one sparse mat-vec (SciPy on the NumPy backend)
        self._sums = any(isinstance(v, Spec) and v.op in ("sum", "count", "avg") for v in vars(module).values())
        # neighbourhood combines over a large adjacency run compiled row kernels where numba is there (not
        # the existence tests `or`/`and`: an early-exit pull reads about a row's first entries, kernels.any_pull)
        self._combines = any(isinstance(v, Spec) and v.kind == "nbr" and v.op not in ("or", "and")
                             for v in vars(module).values())
        self._rand_counts = [0] * int(getattr(module, "RAND_SITES", 0))
        self._names = tuple(getattr(module, "VARIABLES", ()))  # what a checkpoint saves
        # the naive code's broadcast: every vertex sends one record along every adjacency entry it has
        host = self.host_lg  # lengths from the host part: reading the device part's arrays would upload them
        if lg.directed:
            self.naive_entries = (len(host.in_nbr) if need_in else 0) + (len(host.out_nbr) if need_out else 0)
        else:
            self.naive_entries = len(host.in_nbr)
        self.stats = Stats(ranks=self.comm.size)
        self.tally = Tally()
        self.transport = Transport(bk, lg, self.comm, self.tally)
        self.members = Members(bk)
        self.nbr = Neighbourhood(bk, lg, self.transport, self.tally, self.stats)
        self.edges = Edges(bk, lg, self.transport, self.members, self.tally, self.stats)
        self.remote = Remote(bk, lg, self.comm, self.tally)
        self.common_nbrs = Common(bk, lg, self.comm, self.transport, self.tally)
        self._keyed = Keyed(bk, lg, self.comm, self.tally)
        self._aggs: list[tuple] = []
        self._modes: dict[int, tuple] = {}  # global `mode`s of this superstep: index in _aggs -> histogram
        self._fail_at = _fault_injection()
        self._kill_at = _fault_injection("G2PL_KILL_AT")
        self._ckpt = None
        self._ckpt_seen = 0
        self._time_limit: float | None = None
        self._t_last = time.perf_counter()
        self._t_start = self._t_last
        # loops: the generated code reports every state it enters (`checkpoint`); a transition back to a
        # loop's header (BACK_EDGES; without them, any transition to a state numbered no higher: every
        # cycle has one) that follows no superstep boundary since the previous one is a loop iteration
        # that exchanged nothing, and counts toward the limits.  Control flow is the same on every rank,
        # so these counts are too: no rank stops alone.
        self._back_from = _back_from(module)
        self._state = -1  # the state entered last (none yet)
        self._barriers = 0  # supersteps ended (stats.supersteps, kept here for the hot path)
        self._ss_at_back = 0  # supersteps at the last back edge (or at the start)
        self._clock_every = CLOCK_FIRST  # loop iterations between clock checks (adapted)
        self._t_clock = self._t_last  # when the clock was last checked
        self._rearm()

    @property
    def time_limit(self) -> float | None:
        """--time-limit in seconds (None: none); the driver sets it before the program starts."""
        return self._time_limit

    @time_limit.setter
    def time_limit(self, limit: float | None) -> None:
        self._time_limit = limit
        self._rearm()

    def _rearm(self) -> None:
        """After a superstep, a clock check or a resume: the loop iteration count at which a limit needs
        a look (`_loop_alarm`, one comparison per iteration): past `_loop_cap` --max-supersteps is
        exceeded; at `_clock_at` the clock is due."""
        n, loops = self.max_supersteps, self.stats.loop_iterations
        self._loop_cap = _NEVER if n is None else n - 1 - self._barriers
        self._clock_at = _NEVER if self._time_limit is None else loops + self._clock_every
        self._loop_alarm = min(self._loop_cap + 1, self._clock_at)

    def _loop_event(self, loops: int) -> None:
        if loops > self._loop_cap:
            self._check_steps()
        if loops >= self._clock_at:
            self._check_clock()
        self._rearm()

    # ------------------------------------------------------------ structure

    @property
    def weight(self):
        """The edge weights (`Weight` of the language), read on first use: a device part uploads them
        only for programs that read them."""
        if self._weight is None:
            self._weight = _weight_view(self.lg, self.bk)
        return self._weight

    @property
    def directed(self) -> bool:
        """`directed` of the language: does the graph keep edge direction?"""
        return bool(self.lg.directed)

    @property
    def all_edges(self):
        """`E` as an edge set (every local edge), for the edge tests `(v, u) in E`."""
        return self.xp.broadcast_to(self.xp.ones(1, dtype=bool), (self.m,))

    def reverse_edges(self, arr):
        """Edge set `arr` at each local edge's reverse (the edge v -> u of u -> v; the edge itself on an
        undirected graph), false where there is none: the edge test `(v, u) in A` over edges."""
        return self.edges.reverse(arr, self.nbr.edge_index())

    def prepare(self) -> None:
        """Build this rank's adjacency structures the program reads (both CSR directions of the local
        part, as one rank has them from the graph) before the run's clock starts: part of loading the
        graph, like building the CSR itself, and done on every rank at once.

        What an earlier run on this graph part left that depends on its values is dropped: every run
        starts as the first one does, so repeated runs time what a fresh `g2pl run` does."""
        lg = self.lg
        lg.cache.forget_values()
        if self.host_lg is not lg:  # a device copy: the host part's cache too
            self.host_lg.cache.forget_values()
        specs = self._nbr_specs
        served = [spec for spec in specs if self.nbr.grid_served(spec)]  # (a 2D run: over edge blocks)
        for d in sorted({spec.dir for spec in served}):
            self.nbr.edge_grid(d)
        if lg.size > 1 and self._pushes:
            for d in sorted({spec.dir for spec in specs if spec.policy == "push-pull" and spec not in served}):
                self.nbr.adj(d).transpose()
        if lg.size > 1 or self._sums:
            load_sparse()  # imported on first need, and that is now: not inside the first superstep
        if self._combines and self.bk.name == "numpy" and cpu_kernels.use(len(self.host_lg.in_nbr)):
            cpu_kernels.available()  # numba's import (seconds), where the neighbourhood kernels will load it
        if lg.size > 1:
            # MPI sets up its transport between two ranks on their first exchange: one byte per mirror
            # now, so that cost is part of loading, not of the first superstep
            counted = (self.comm.bytes_sent, self.comm.bytes_received)
            self.comm.alltoallv(self.xp.zeros(int(lg.send_counts.sum()), dtype=self.xp.uint8), lg.send_counts,
                                lg.recv_counts)
            self.comm.bytes_sent, self.comm.bytes_received = counted  # not program traffic
        self.comm.barrier()  # every rank has its part ready: the clock starts on all ranks together
        self._t_start = self._t_last = time.perf_counter()

    @property
    def src_ids(self):
        """Original ID of each local edge's u endpoint (computed on first use, kept on the graph part)."""
        return self.lg.end_ids("src")

    @property
    def dst_ids(self):
        return self.lg.end_ids("dst")

    # ------------------------------------------------------------ local values

    def vmap(self, x, dom: str, elem: str, within=None):
        """`x` as a value of domain `dom` (S: a scalar; V, E: an array of `elem`).  With `within` (a bool
        array M), `x` is a function of element indices giving `rest` where the value is `M && rest`:
        evaluated only at M's members when they are few."""
        if within is not None:
            return self._sparse_and(within, x, dom)
        if dom == "S":
            return self._scalar(x, elem)
        return self._as(x, elem, self.n if dom == "V" else self.m)

    def _scalar(self, x, elem: str):
        if isinstance(x, self.xp.ndarray):
            x = self.bk.item(x)
        if elem == "bool":
            return bool(x)
        if elem == "float":
            return float(x)
        return self.bk.int64(x)

    def _as(self, x, elem: str, size: int):
        bk = self.bk
        dt = bk.dtype(elem)
        if bk.is_array(x):
            if x.dtype != dt:
                x = bk.to_int(x) if elem in ("int", "vid") and x.dtype.kind == "f" else x.astype(dt)
            return x
        return self.xp.full(size, x, dtype=dt)

    def _sparse_and(self, mask, rest, dom: str):
        if not self.bk.is_array(mask):
            return self._as(self.xp.logical_and(mask, rest(slice(None))), "bool", self.n if dom == "V" else self.m)
        idx = self.members.if_few(mask)
        if idx is None:
            return self._as(self.xp.logical_and(mask, rest(slice(None))), "bool", len(mask))
        vals = rest(idx)
        out = self.xp.zeros(len(mask), dtype=bool)
        out[idx] = vals
        if self.xp.ndim(vals):
            self.members.remember(out, idx[self.bk.nonzero(vals)])
        return out

    # ------------------------------------------------------------ exchanges

    @property
    def ext_ids(self):
        """Original IDs of the senders a message head reads (owned, then ghosts; a 2D reduction's
        expanded senders while its head runs: Neighbourhood.head_ids)."""
        return self.nbr.head_ids

    def nbr_combine(self, spec: Spec, fields: tuple, head, send=None, recv=None, along=None, known=None,
                    edge=None):
        """Neighbourhood combine (see neighbourhood.py): `fields` travel to the neighbours, `head` makes
        (value, filter) of what arrived, `spec.op` combines it per receiver; `along`, an edge mask,
        the entries senders send along; `known`, the senders' copy of the receivers that read it;
        `edge`, the edge array of a `spec.plus_edge` head."""
        return self.nbr.combine(spec, fields, head, send, recv, along, known, edge)

    def endpoints(self, spec: Spec, fields: tuple, need=None, keep=None, sent=None) -> list:
        """Vertex values at edge endpoints, or an edgeset spec's edge set (see edges.py); a delta spec
        also returns the new copies of what it kept (`keep`: the last run's, None at first); `sent(idx,
        *reads)` gives each read's condition at edges `idx`, where its sender sends it."""
        return self.edges.endpoints(spec, fields, need, keep, sent)

    def common(self, spec: Spec, vfields: tuple, efields: tuple, head, within=None):
        """An aggregation over the common neighbours w of each local edge's endpoints (see
        common_neighbours.py): `head` makes (value, filter) per element of the vertex and edge fields (None:
        count them)."""
        return self.common_nbrs.reduce(spec, vfields, efields, head, within)

    def mark(self, mask, sides: tuple[str, ...] = (), ids=None, spec: Spec | None = None):
        """The owned vertices that are a `sides` endpoint of an edge in `mask` (local: edges live at
        both ends), or, with a remote-mark spec, whose original ID is one of `ids` where `mask` holds."""
        if spec is None:
            return self.edges.mark_endpoints(mask, sides)
        return self.remote.mark(spec, ids, mask)

    def aggregate(self, spec: Spec, value, mask) -> None:
        """Contribute this rank's partial; `barrier` returns the combined values in call order."""
        bk, xp = self.bk, self.xp
        size = self.n if spec.dom == "V" else self.m
        v = value if bk.is_array(value) else xp.full(size, value)
        msk = None if mask is None else (mask if bk.is_array(mask) else xp.full(size, mask)).astype(bool, copy=False)
        if spec.dom == "E" and self.lg.size > 1:  # every edge is counted once, by the rank owning its u endpoint
            msk = self.lg.edge_owned if msk is None else (msk & self.lg.edge_owned)
        if spec.op == "mode":  # no fixed-size partial: this rank's histogram, merged at the barrier
            vals, counts = bk.value_counts(v, msk)
            self._modes[len(self._aggs)] = (bk.to_host(vals), bk.to_host(counts))
            self._aggs.append(("count", spec.elem, "i", [0, 0]))  # a placeholder slot pair
            return
        ids = self.ids if spec.dom == "V" else None
        vk = bk.value_kind(spec.op, v, spec.elem)
        self._aggs.append((spec.op, spec.elem, vk, bk.partial(spec.op, v, msk, spec.elem, ids, vk)))

    def remote_request(self, spec: Spec, ids) -> RemoteRequest:
        return self.remote.request(self.vmap(ids, spec.dom, "vid"))

    def remote_reply(self, spec: Spec, arr, rq: RemoteRequest):
        return self.remote.reply(arr, rq, spec.elem, DEFAULTS[spec.elem])

    def keyed(self, spec: Spec, keys: tuple, value, mask, payload=None):
        """A keyed aggregation: `value` (where `mask` holds) combined at the vertex each of `keys`
        names, or the argmin/argmax winners the spec asks for (see keyed.py)."""
        return self._keyed.run(spec, keys, value, mask, payload)

    def rand(self, site: int, dom: str, entries=None):
        """Uniform [0, 1) numbers of call site `site`, one per element of `dom` (S, V, E, or the
        adjacency entries `entries`), keyed by original IDs: the same for any ranks and backend."""
        bk = self.bk
        count = self._rand_counts[site]
        if entries is not None and entries.later_block:  # the same draw as the head's first block
            count -= 1
        else:
            self._rand_counts[site] = count + 1
        if dom == "S":
            return float(bk.item(bk.uniform(self.seed, site, count, self.xp.zeros(1, dtype=self.xp.int64))[0]))
        if dom == "V":
            return bk.uniform(self.seed, site, count, self.ids)
        if dom == "E":
            return bk.uniform(self.seed, site, count, self.src_ids, self.dst_ids)
        return bk.uniform(self.seed, site, count, self.src_ids[entries.eid], self.dst_ids[entries.eid])

    # ------------------------------------------------------------ supersteps

    def barrier(self, state: int, broadcast: Broadcast | None = None) -> list:
        """Close the current superstep: combine aggregators (one Allreduce), record stats, check limits;
        returns the aggregators' values in `aggregate` call order.  With `broadcast` (the naive code),
        every vertex's record goes to every neighbour if nothing else went, and counts as messages."""
        # decided from the program alone (never from this rank's share of the graph): every rank must
        # make the same collective calls, or they wait for each other forever
        tally = self.tally
        if broadcast is not None and not tally.exchanged:
            self.transport.broadcast(broadcast.record)
        results = self._reduce_aggregators()
        self.nbr.end_superstep()
        self.bk.synchronize()  # the superstep's device work is done: its time is measured
        naive = self.naive_entries if broadcast is not None else 0
        if tally.pending:  # the device-side message counts: one read for all of them
            total = tally.pending[0]
            for p in tally.pending[1:]:
                total = total + p
            tally.messages += int(self.bk.item(total))
            tally.pending = []
        msgs = naive + tally.messages
        rec_bytes = naive * (broadcast.record_bytes() if broadcast is not None else 0) + tally.messages * 8
        now = time.perf_counter()
        i = self.stats.supersteps
        active = self.n if tally.active is None else tally.active
        self.stats.record(SuperstepStat(
            i, state, int(msgs), int(self.comm.bytes_sent), int(rec_bytes), int(active), now - self._t_last,
            tally.comm_s))
        tally.messages, tally.active, tally.exchanged, tally.comm_s = 0, None, False, 0.0
        self.comm.bytes_sent = 0
        self._t_last = self._t_clock = now
        self._barriers = i + 1
        self._rearm()  # (the barrier checks the clock itself)
        if self.progress is not None:
            self.progress(self.stats, False)
        self._check_limits(i, now)
        return results

    def _reduce_aggregators(self) -> list:
        if not self._aggs:
            return []
        t0 = time.perf_counter()
        layout = tuple((op, vk) for op, _e, vk, _p in self._aggs)
        buf = self.bk.host_int64([p for *_x, p in self._aggs])
        res = self.comm.allreduce_partials(buf, layout)
        at = offsets(layout)
        out = []
        for j, (op, e, vk, _p) in enumerate(self._aggs):
            if j in self._modes:  # every rank's histogram, merged the same way on every rank
                own = self._modes[j]
                r = merge_mode(self.comm.allgather(own), e)
                self.comm.bytes_sent += sum(a.nbytes for a in own) * (self.comm.size - 1)
            else:
                r = self.bk.finish(op, e, vk, res[at[j]:at[j + 1]])
            out.append(self.bk.int64(r) if isinstance(r, int) and not isinstance(r, bool) else r)
        self._aggs = []
        self._modes = {}
        self.tally.comm_s += time.perf_counter() - t0
        return out

    def _check_limits(self, i: int, now: float) -> None:
        if self._fail_at is not None and self._fail_at == (self.comm.rank, i):
            raise RuntimeError(f"injected failure on rank {self.comm.rank} at superstep {i} (G2PL_FAIL_AT)")
        if self._kill_at is not None and self._kill_at == (self.comm.rank, i):
            os.kill(os.getpid(), signal.SIGKILL)  # testing hook G2PL_KILL_AT: a crash at a chosen superstep
        limit = self.time_limit
        if limit is not None and self.comm.allreduce_partials(
                self.bk.host_int64([[int(now - self._t_start > limit), 0]]), (("or", "i"),))[0]:
            self._stop_time(now)
        self._check_steps()

    def _check_steps(self) -> None:
        """--max-supersteps N: stop unless the run fits in N steps, a step being a superstep or a loop
        iteration that exchanged nothing; called when either count grows, while the program still needs
        at least one more superstep (its last, which `finish` records)."""
        n = self.max_supersteps
        done, loops = self.stats.supersteps, self.stats.loop_iterations
        if n is None or done + loops + 1 <= n:
            return
        partial = self._partial()
        self.stats.time_s = time.perf_counter() - self._t_start  # the supersteps run so far, no final one
        if loops:
            what = (f"stopped after {done} supersteps and {loops} loop iterations without an exchange "
                    f"(--max-supersteps {n} counts both)")
        else:
            what = f"stopped after {n} supersteps (--max-supersteps)"
        raise RunStopped(f"{what}; the program had not finished ({partial})", reason="max-supersteps")

    def _stop_time(self, now: float) -> None:
        partial = self._partial()
        self.stats.time_s = now - self._t_start  # the supersteps run so far, no final one
        raise RunStopped(f"stopped after {now - self._t_start:.1f} s (--time-limit {self.time_limit:g}); "
                         f"the program had not finished ({partial})", reason="time-limit")

    def _check_clock(self) -> None:
        """--time-limit inside loops that exchange nothing: every `_clock_every` of their iterations,
        the clock is read and, with several ranks, agreed on (one small Allreduce, at the same iteration
        on every rank); the interval adapts so that checks come about every CLOCK_PERIOD seconds."""
        now = time.perf_counter()
        limit = self._time_limit
        assert limit is not None  # the clock is read only under a time limit (see _clock_at)
        over, _n, slowest, _m = self.comm.allreduce_partials(self.bk.host_int64(
            [[int(now - self._t_start > limit), 0], [int(1e6 * (now - self._t_clock)), 0]]),
            (("or", "i"), ("max", "i")))
        if over:
            self._stop_time(now)
        # the same on every rank (it depends on reduced values only)
        if slowest < 5e5 * CLOCK_PERIOD:
            self._clock_every = min(2 * self._clock_every, CLOCK_MAX)
        elif slowest > 2e6 * CLOCK_PERIOD:
            self._clock_every = max(self._clock_every // 2, 1)
        self._t_clock = now

    def _partial(self) -> str:
        """This rank's statistics so far, for the messages of runs stopped by a limit."""
        st = self.stats
        loops = f", {st.loop_iterations} loop iterations without an exchange" if st.loop_iterations else ""
        return (f"partial stats: {st.supersteps} supersteps, {int(st.total('messages'))} messages, "
                f"{st.total('time_s'):.2f} s{loops}")

    def finish(self) -> None:
        """Record the last superstep (compute only, no exchange)."""
        self.bk.synchronize()
        now = time.perf_counter()
        self.stats.record(SuperstepStat(self.stats.supersteps, -1, 0, 0, 0, self.n, now - self._t_last))
        self.stats.time_s = now - self._t_start
        if self.progress is not None:
            self.progress(self.stats, True)

    # ------------------------------------------------------------ checkpoints

    def attach_checkpointer(self, ckpt) -> None:
        """Save every K supersteps (and, with resume, start from the saved state)."""
        self._ckpt = ckpt

    def resume(self, names: tuple[str, ...]) -> tuple[int, tuple | None]:
        """(state, values of `names`) of the checkpoint --resume names, or (0, None) for a fresh run."""
        ckpt = self._ckpt
        if ckpt is None or not ckpt.resume_requested:
            return 0, None
        data = ckpt.load(self.lg)  # checked against the program and this rank's part (exit 2 if not)
        r = data["runtime"]
        self.stats.per_superstep = [SuperstepStat(*row) for row in r["per_superstep"]]
        self.stats.left_out = SuperstepStat(*r["left_out"])
        self.stats.loop_iterations = r["loop_iterations"]
        self._ss_at_back = self._barriers = self.stats.supersteps
        self._rearm()
        self._rand_counts = list(r["rand_counts"])
        self.nbr.push_state = dict(r["push_state"])
        self.stats.directions = dict(r["directions"])
        self.stats.edge_sets = dict(r["edge_sets"])
        self._ckpt_seen = self.stats.supersteps
        env = data["env"]
        values = (env[n] for n in names)  # pending remote requests come back as their arrays
        return data["state"], tuple(self._moved(RemoteRequest(**v) if isinstance(v, dict) else v, self.bk.from_host)
                                    for v in values)

    def checkpoint(self, state: int, values: tuple) -> None:
        """Called by the generated code as it enters each state.  A transition back to a loop's header
        counts toward the limits (see `__init__`); at a superstep boundary, every --checkpoint-every
        supersteps: save the program's variables (`values`, in the module's VARIABLES order) and the
        runtime's counters."""
        prev = self._state
        self._state = state
        if state <= prev:
            back = self._back_from[state]
            if back is not None and prev in back:  # back to a loop's header
                done = self._barriers
                if done != self._ss_at_back:  # the iteration ended a superstep, whose barrier checked limits
                    self._ss_at_back = done
                else:  # an iteration that exchanged nothing
                    st = self.stats
                    st.loop_iterations = loops = st.loop_iterations + 1
                    if loops >= self._loop_alarm:
                        self._loop_event(loops)
        ckpt = self._ckpt
        if ckpt is None:
            return
        count = self._barriers
        if count == self._ckpt_seen:
            return  # no barrier since the last check
        self._ckpt_seen = count
        if not ckpt.due(count):
            return
        runtime_state = encode_runtime(self.stats.per_superstep, self._rand_counts, self.nbr.push_state,
                                       self.stats.directions, self.stats.edge_sets,
                                       left_out=self.stats.left_out, loop_iterations=self.stats.loop_iterations)
        ckpt.save(count, state, self._names, tuple(self._moved(v, self.bk.to_host) for v in values), runtime_state)

    @staticmethod
    def _moved(value, move):
        """A variable's value with its arrays moved by `move` (to or from the host)."""
        if isinstance(value, RemoteRequest):
            return RemoteRequest(*(move(getattr(value, f.name)) for f in dataclasses.fields(RemoteRequest)))
        return move(value)

    # ------------------------------------------------------------ results

    def host_copy(self, value):
        """A returned value in host memory: an array as a writable, contiguous host array (a device array
        copied; the read-only stride-0 view of constant weights copied too), other values as they are."""
        if not self.bk.is_array(value):
            return value
        arr = self.bk.to_host(value)
        return arr if arr.flags.writeable and arr.strides[0] == arr.itemsize else arr.copy()

    def collect(self, kind: str, elem: str, value):
        """A returned value as the driver hands it on; scalars are the same everywhere.

        One rank: the whole vertex or edge value, an array aligned with the graph.  Several ranks:
        this rank's share, a `RankPart` (its owned vertices in ID order, or its owned edges, in host
        memory), on every rank.  Nothing is gathered here: `Program.run` gathers the shares to rank
        0 when the caller wants arrays (the API's default), while `g2pl run` writes them from every
        rank (g2pl.results.streamed), so no rank needs memory for a whole value it only writes out."""
        if kind == "scalar":
            return value
        arr = self.vmap(value, "V" if kind == "vertex" else "E", elem)
        if kind == "vertex":
            arr = self.lg.in_id_order(arr)
        if self.lg.size == 1 and self.bk.is_array(arr) and self.bk.name != "numpy":
            return arr  # a device answer stays there: the driver copies it to the host after the clock stops
        if self.lg.size == 1:
            return self.host_copy(arr)
        arr = self.bk.to_host(arr)
        if kind == "edge":
            arr = arr[self.host_lg.edge_owned]
        return RankPart(kind, elem, arr, self.host_lg)


def _weight_view(lg: LocalGraph, bk):
    """The edge weights; when they are all the same (an unweighted graph: all 1.0), a read-only
    stride-0 view of the one value, so gathering weights along adjacency entries reads one cache line
    instead of a scattered array.  Worked out once per graph part."""
    w = lg.cache.weight_view
    if w is None:  # (once per graph part: one read of the device)
        w = lg.weight
        xp = bk.xp
        if len(w) and w.dtype == xp.float64 and w.flags.c_contiguous:
            bits = w.view(xp.int64)
            if bk.item(xp.all(bits == bits[0])):  # bitwise: -0.0 and NaN payloads stay as they are
                w = xp.broadcast_to(w[:1], w.shape)
        lg.cache.weight_view = w
    return w
