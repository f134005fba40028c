"""receivers: send a neighbourhood aggregation only to the receivers that can read its result.

Matching computes `Deps(NotMatched)` and the argmin at every vertex, but
reads them only at unmatched vertices: `Deps` as the argmin's message, which
only unmatched vertices send (`sent if NotMatched@nbr`), the argmin as
`Candidate` at the endpoints of `Edges(NotMatched)`.  Yet each unmatched
sender sends to all its neighbours.  This pass finds such an exchange, whose
result `T` is read only where a vertex set `R` holds, and lets its senders
skip the receivers they know to be outside `R`:

* every read of `T` is guarded by `R` at the reading vertex: a message
  field of an aggregation whose send condition has the conjunct `R@nbr`, or
  an endpoint value whose need condition has the conjunct `W`, an edge set
  `R@src && ...` computed by an endpoint exchange (the edgeset pass's form)
  with nothing changing `R` between it, the exchange and the read;
* the senders know `R` at their neighbours: an endpoint exchange of `R`
  keeps copies of it (the delta pass), and after that exchange first runs,
  `R` only ever shrinks (every assignment is `R = R && ...`), so the copy is
  a superset of `R` now; before it first runs there is no copy and every
  entry is sent.

A sender then sends along an entry only when its copy says the receiver is
in `R`.  The result at receivers outside `R` is unspecified (never read);
at the others it is exact.  The copies travel in the endpoint exchange that
keeps them (counted there), so the decision costs no extra message.  The
receivers know `R` itself, as it is now, which the copies may lag: the pull
also gets `R` as its receiver filter (as the direction pass gives one), so it
reduces only the rows of receivers in `R`.

Before::

    => $3 = sum of 1 sent if NotMatched@nbr

After::

    => $3 = sum of 1 sent if NotMatched@nbr (pulled only where NotMatched) (only to receivers in NotMatched, as kept in $10)
"""

from __future__ import annotations

from g2pl.compiler import ir
from g2pl.compiler.analysis import assigned_into, local_readers, reachable, readable_at_exchange, walk_paths
from g2pl.compiler.exchange import EndpointRecord, Exchange, NbrExchange
from g2pl.compiler.passlog import PassLog, PassNote
from g2pl.compiler.plan import Plan, State


def _is_shrink(ins: ir.Instr, r: str) -> bool:
    """`R = R && ...` over the vertices."""
    return (isinstance(ins, ir.Compute) and ins.dom == "V" and any(
        isinstance(c, ir.Load) and c.var == r and c.kind == "vertex" and c.pos == "here"
        for c in ir.conjuncts(ins.ex)))


def _only_shrinks_after(plan: Plan, s: State, r: str) -> bool:
    """After state `s`'s exchange, every assignment to `r` only removes members."""
    for st in reachable(plan, s):
        if any(r in x.defs() for x in st.exchange):
            return False
        if any(r in ins.defs() and not _is_shrink(ins, r) for ins in st.instrs):
            return False
    return True


def _unchanged_between(plan: Plan, a: State, b: State, r: str) -> bool:
    """No path from the end of state `a` (its exchange) to the exchange of state `b` assigns `r`."""
    if a is b:
        return False

    def visit(st: State, before: list[ir.Instr], _reached: bool) -> bool | None:
        if any(r in ins.defs() for ins in before):
            return False
        if st is b or st is a:
            return None  # the reading exchange runs (or the defining one again)
        return not any(r in x.defs() for x in st.exchange)

    return walk_paths(plan, a, None, visit)


def _state_of(plan: Plan, x: Exchange) -> State:
    return next(s for s in plan.states if any(y is x for y in s.exchange))


def _edge_set_of(plan: Plan, w: str, r: str, side: str) -> EndpointRecord | None:
    """The one exchange defining edge set `w` as a conjunction with `r` at `side`, if so."""
    defs: list[ir.Instr | Exchange] = [x for s in plan.states for x in s.exchange if w in x.defs()]
    defs += [ins for s in plan.states for ins in s.instrs if w in ins.defs()]
    x = defs[0] if len(defs) == 1 else None
    if not isinstance(x, EndpointRecord) or x.within != w:
        return None
    return x if any(var == r and sd == side for var, sd, _e in x.instr.fields) else None


def _guarded(plan: Plan, s: State, i: ir.NbrReduce, r: str) -> bool:
    """Every read of the exchange's result happens only at vertices in `r`, as `r` was when it ran."""
    t = i.target
    for st in plan.states:
        if t in st.term_uses() or any(t in ins.uses() for ins in st.instrs):
            return False
        for y in st.exchange:
            if t not in y.uses():
                continue
            if y.instr is i:
                return False
            if isinstance(y, NbrExchange):
                yi = y.instr
                at_nbr = all(n.pos == "nbr" for x in (yi.value, yi.mask, y.send, y.recv, y.along) if x is not None
                             for n in ir.walk(x) if isinstance(n, ir.Load) and n.var == t)
                guard = any(isinstance(c, ir.Load) and c.var == r and c.pos == "nbr" for c in ir.conjuncts(y.send))
                if not (at_nbr and guard):
                    return False
            elif isinstance(y, EndpointRecord):
                need = y.instr.need
                if t in ir.reads(need) or not _unchanged_between(plan, s, st, r):
                    return False
                for var, side, _e in y.instr.fields:
                    if var != t:
                        continue
                    sets = [_edge_set_of(plan, c.var, r, side) for c in ir.conjuncts(need)
                            if isinstance(c, ir.Load) and c.kind == "edge" and c.pos == "here"]
                    if not any(w is not None and _unchanged_between(plan, _state_of(plan, w), st, r) for w in sets):
                        return False
            else:
                return False
    return True


def _kept(plan: Plan) -> dict[str, tuple[str, State]]:
    """Vertex bool variable -> (its kept copy, the state of the delta exchange keeping it)."""
    out: dict[str, tuple[str, State]] = {}
    for s in plan.states:
        for x in s.exchange:
            if isinstance(x, EndpointRecord) and x.keep:
                names = list(dict.fromkeys(var for var, _s, _e in x.instr.fields))
                for var, k in zip(names, x.keep):
                    if plan.vars[k].elem == "bool":
                        out.setdefault(var, (k, s))
    return out


def _sender_known(c: ir.Ex, t: str) -> bool:
    """Reads the value `t` itself and otherwise only endpoint IDs and constants: what the sender of `t`
    along an edge knows (its own value, and the edge's two endpoints); not `t` at the reverse edge (an
    edge test), which another sender sends."""
    uses_t = False
    for n in ir.walk(c):
        if isinstance(n, ir.Load):
            if n.var != t or n.pos != "here":
                return False
            uses_t = True
        if isinstance(n, ir.Rand):
            return False
    return uses_t


def sent_conditions(plan: Plan, i: ir.EndpointExchange) -> tuple[ir.Ex | None, ...]:
    """Per read of endpoint exchange `i`: the conjunction of the conjuncts of its one reader (an edge
    computation `... && c && ...`) that only its sender can need to know, or None."""
    out: list[ir.Ex | None] = []
    for t in i.targets:
        readers = local_readers(plan, t)
        c = None
        if readers is not None and len(readers) == 1 and isinstance(readers[0], ir.Compute) and readers[0].dom == "E":
            parts = ir.conjuncts(readers[0].ex)
            if len(parts) > 1:
                c = ir.conjoin([p for p in parts if _sender_known(p, t)])
        out.append(c)
    return tuple(out)


def run(plan: Plan, log: PassLog) -> Plan:
    kept = _kept(plan)
    into = assigned_into(plan)
    done = 0
    for s in plan.states:  # endpoint values: only along the edges where their reader can use them
        for k, x in enumerate(s.exchange):
            if not isinstance(x, EndpointRecord) or not x.need or x.within is not None or x.sent:
                continue
            ends = x.instr
            sent = sent_conditions(plan, ends)
            if any(c is not None for c in sent):
                s.exchange[k] = x.but(sent=sent)
                done += 1
                conds = "; ".join(f"{var}@{side} where {ir.show_ex(c)}"
                                  for (var, side, _e), c in zip(ends.fields, sent) if c is not None)
                log.append(PassNote.on("receivers", x, f"endpoint values sent only where their reader can use "
                                                      f"them: {conds}"))
    for s in plan.states:
        for k, x in enumerate(s.exchange):
            if not isinstance(x, NbrExchange) or not x.counted or x.known is not None or x.along is not None:
                continue
            i = x.instr
            for r, (copy, sk) in kept.items():
                if _only_shrinks_after(plan, sk, r) and _guarded(plan, s, i, r):
                    recv = x.recv
                    if recv is None and readable_at_exchange(s, {r}, into):  # R as it is at the exchange
                        recv = ir.Load("bool", i.span, r, "vertex")
                    s.exchange[k] = x.but(known=copy, recv=recv)
                    done += 1
                    log.append(PassNote.on("receivers", i, f"{i.target} is read only in {r}: sent only to "
                                                          f"receivers in {r} as the senders know it ({copy})"
                                                          + (", pulled only where it holds" if recv is not None
                                                             and x.recv is None else "")))
                    break
    if not done:
        log.append(PassNote("receivers", "no aggregation's result is read only where its senders know a set holds"))
    return plan
