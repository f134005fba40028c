r"""direction: let sparse neighbourhood aggregations be pushed instead of pulled (Beamer et al.'s direction-optimizing BFS).

An aggregation whose senders are restricted by a send condition (after
prune: `u in F`) is marked push-capable.  At run time, every superstep,
the runtime compares the active senders' adjacency entries with all entries
(push below 1/20, back to pull above 1/12: hysteresis) and either pushes
from the active senders through the transposed adjacency, or pulls over
every entry (CSR mat-vec / segmented reduction).  Only exact combiners are
pushed (or, and, count, min, max, argmin, argmax, integer sum), so the
direction never changes a result.

Before::

    => $2 = or over in-neighbours of true sent if F@nbr

After::

    => $2 = or over in-neighbours of true sent if F@nbr (push/pull)

Second, the bottom-up half of Beamer's BFS: a pull looks only at the
receivers that can use its result.  When the aggregation's result `$t` is
used once, as `$t && R` with `R` read at the receiver (`F = {or ...} \ Seen`
is `$2 && !Seen`), and nothing on any path from the exchange to that use
changes what `R` reads, the pull skips the receivers where `R` is false (only
unvisited vertices look for a visited neighbour); their `$t` is never read.

    => $2 = or over in-neighbours of true sent if F@nbr (push/pull) (pulled only where !Seen)

The same for a min or max used once as `R ? f($t) : d` (a comprehension's filter on the receiver:
`M = { min [ l | l <- nbrs x, l in Active ] | x <- L, x >= 0 }` is `(L >= 0) ? $5 : 0`): the pull
reduces only the rows where R holds when they hold few entries (Adjacency.of_rows); cc_hub.g2pl's
vertices that already have the least label skip their rows.

    => $5 = min of L@nbr sent if Active@nbr (push/pull) (pulled only at receivers where (L >= 0))
"""

from __future__ import annotations

from g2pl.compiler import ir
from g2pl.compiler.analysis import assigned_into, local_readers, readable_at_exchange, walk_paths
from g2pl.compiler.exchange import NbrExchange
from g2pl.compiler.passlog import PassLog, PassNote
from g2pl.compiler.plan import Plan, State

EXACT = ("or", "and", "count", "min", "max", "argmin", "argmax")
EARLY_EXIT = ("or", "and")  # the pulls that visit receivers one by one (and can skip some)
FILTERED = (*EARLY_EXIT, "min", "max")  # the pulls a receiver filter lets skip receivers


def _only_use(plan: Plan, t: str) -> ir.Compute | None:
    """The single instruction reading `t`, if `t` has exactly one reader and it is a local Compute."""
    found = local_readers(plan, t)
    return found[0] if found is not None and len(found) == 1 and isinstance(found[0], ir.Compute) else None


def receiver_filter(plan: Plan, s: State, i: ir.NbrReduce, into: dict[int, set[str]]) -> ir.Ex | None:
    """R when the result of exchange `i` (in state `s`) is only used as `target && R` at the
    receivers, the exchange can read R (`analysis.readable_at_exchange`, `into` from
    `analysis.assigned_into`), and no path from the exchange to that use changes what R reads."""
    use = _only_use(plan, i.target)
    if use is None or use.dom != "V":
        return None
    r: ir.Ex | None = None
    if isinstance(use.ex, ir.Op) and use.ex.op == "&&":
        a, b = use.ex.args
        is_t = [isinstance(x, ir.Load) and x.var == i.target for x in (a, b)]
        r = b if is_t[0] else a if is_t[1] else None
    elif isinstance(use.ex, ir.Where) and i.target in ir.reads(use.ex.then):
        r = use.ex.cond  # `R ? f(t) : d` (a comprehension's filter on the receiver), t read nowhere else
        if i.target in ir.reads(use.ex.other):
            return None
    if r is None or i.target in ir.reads(r) or not ir.receiver_only(r):
        return None
    need = ir.reads(r)
    if not readable_at_exchange(s, need, into):
        return None

    def visit(st: State, before: list[ir.Instr], reached: bool) -> bool | None:
        if st is s:
            return None  # the exchange runs again: its old result is never read
        if any(need & set(ins.defs()) for ins in before):
            return False
        if reached:
            return None
        defs = {d for x in st.exchange for d in x.defs()}
        if need & defs:
            return False
        return None if i.target in defs else True  # the exchange runs again here: the path ends

    return r if walk_paths(plan, s, use, visit) else None


def run(plan: Plan, log: PassLog) -> Plan:
    marked = 0
    into = assigned_into(plan)
    for s in plan.states:
        for k, x in enumerate(s.exchange):
            if not isinstance(x, NbrExchange):
                continue
            i = x.instr
            if i.op in FILTERED and x.recv is None:
                r = receiver_filter(plan, s, i, into)
                if r is not None:
                    x = s.exchange[k] = x.but(recv=r)
                    marked += 1
                    log.append(PassNote.on("direction", i, f"{i.target} pulled only at receivers where "
                                                          f"{ir.show_ex(r)}"))
            if x.send is None or x.push:
                continue
            if i.op in EXACT or (i.op == "sum" and i.elem == "int"):
                s.exchange[k] = x.but(push=True)
                marked += 1
                log.append(PassNote.on("direction", i, f"{i.target} pushed from the active senders "
                                                      "when they are few, else pulled"))
    if not marked:
        log.append(PassNote("direction", "no aggregation has a send condition to push from or receivers to skip"))
    return plan
