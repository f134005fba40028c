r"""edgeset: compute an edge subset `{ u in X && v in Y | (u, v) <- E }` as a set that shrinks.

Programs keep the edges between still-active vertices as a set (matching's
`Edges(NotMatched)`), and the active vertices only ever leave
(`NotMatched = NotMatched \ Matched`), so the edge set shrinks round after
round, usually to a tiny part of E after the first rounds.  Read literally it
is two endpoint gathers over every edge per round.  This pass gives the
endpoint exchange the conjunction itself: when its fields are all bool, its
targets are read only by one edge computation that is their conjunction, and
moving that computation to the exchange changes nothing any path reads, the
exchange defines the conjunction directly.  At run time (`rt.edges_within`)
the runtime remembers the vertex sets and the member edges of the previous
answer; when every set is a subset of what it was then, only those member
edges are checked again, so a round costs the size of the previous edge set
instead of |E|.  Any other change of the sets recomputes over every edge, so
the answer is always that of the literal code.

Before::

    => $5 = NotMatched@src, $6 = NotMatched@dst  (endpoint exchange)
       $7 = [E] ($5 && $6)

After::

    => $7 = edges with NotMatched@src && NotMatched@dst  (endpoint exchange, shrinking set)
"""

from __future__ import annotations

from g2pl.compiler import ir
from g2pl.compiler.analysis import local_readers, walk_paths
from g2pl.compiler.exchange import EndpointRecord
from g2pl.compiler.passlog import PassLog, PassNote
from g2pl.compiler.plan import Plan, State


def _conjunction_use(plan: Plan, i: ir.EndpointExchange) -> ir.Compute | None:
    """The one edge Compute that reads the exchange's targets, if it is exactly their conjunction."""
    readers = [local_readers(plan, t) for t in i.targets]
    single = [r for r in readers if r is not None and len(r) == 1]
    if len(single) != len(readers):
        return None
    use = single[0][0]
    if any(r[0] is not use for r in single) or not isinstance(use, ir.Compute) or use.dom != "E":
        return None
    parts = ir.conjuncts(use.ex)
    names = [p.var for p in parts if isinstance(p, ir.Load) and p.kind == "edge" and p.pos == "here"]
    if len(names) != len(parts) or sorted(names) != sorted(i.targets):
        return None
    return use


def _unread_until(plan: Plan, s: State, use: ir.Compute) -> bool:
    """No path from the exchange (ending state `s`) reads or writes `use.target` before `use` runs
    (or before the exchange runs again): only then may the exchange define it instead of `use`."""
    t = use.target
    if t in s.term_uses():
        return False

    def visit(st: State, before: list[ir.Instr], reached: bool) -> bool | None:
        if any(t in ins.uses() or t in ins.defs() for ins in before):
            return False
        if reached or st is s:
            return None  # `use` runs, or the exchange runs again (after the instructions just checked)
        if any(t in x.uses() or t in x.defs() for x in st.exchange) or t in st.term_uses():
            return False
        return True

    return walk_paths(plan, s, use, visit)


def run(plan: Plan, log: PassLog) -> Plan:
    done = 0
    for s in plan.states:
        for k, x in enumerate(s.exchange):
            if not isinstance(x, EndpointRecord) or x.within is not None or x.instr.need is not None:
                continue
            i = x.instr
            if not i.fields or any(elem != "bool" for _v, _s, elem in i.fields):
                continue
            use = _conjunction_use(plan, i)
            if use is None:
                continue
            if not _unread_until(plan, s, use):
                log.append(PassNote.on("edgeset", use, f"{use.target} is read between the exchange and "
                                                      "its computation: left as endpoint reads"))
                continue
            s.exchange[k] = x.but(within=use.target)
            for st in plan.states:
                st.instrs = [ins for ins in st.instrs if ins is not use]
            done += 1
            log.append(PassNote.on("edgeset", use, f"{use.target} = edges with {i.conjunction()}, "
                                                  "re-checked only on its previous edges while the sets shrink"))
    if not done and not any(n.pass_name == "edgeset" for n in log):
        log.append(PassNote("edgeset", "no edge set is a conjunction of endpoint memberships"))
    return plan
