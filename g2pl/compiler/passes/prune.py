"""prune: send records only where they matter (conditional-send pruning, from the G2PL papers).

* Supersteps whose exchange is only aggregators send no records at all.
* A neighbourhood aggregation's filter is split: the conjuncts that depend
  on the sender alone (`u in X`) become its *send condition*, evaluated by
  each sender, so vertices that fail it send nothing (instead of an identity
  value); receivers learn who sent from a presence bitmap.
* Conjuncts over the connecting edge alone (`(u, e) <- nvals v, e in S`)
  are known at both endpoints (paper section 3.2): senders send only along
  the entries where they hold (section 4.2's example).
* Endpoint exchanges count records only along edges where the values are
  used: the edge-only conjuncts of the enclosing comprehension's generator
  and filters (`(u, v) <- Edges(X)`, `sum [ ... | (u, v) <- S ]`,
  `sum [ ... | (u, e, v) <- E, e in S ]`).
* A common-neighbour aggregation listing triangles within an edge set K
  ships (and counts) only the neighbour-list entries of K's edges, not the
  whole lists.

Before::

    => $3 = sum of 1 where NotMatched@nbr          (every neighbour sends 0 or 1)

After::

    => $3 = sum of 1 sent if NotMatched@nbr        (only unmatched neighbours send)
"""

from __future__ import annotations

import dataclasses

from g2pl.compiler import ir
from g2pl.compiler.passlog import PassLog, PassNote
from g2pl.compiler.plan import Exch, Plan


def sender_side(e: ir.Ex) -> bool:
    """Reads only the sending neighbour (and scalars), and reads it: the sender can evaluate it."""
    return ir.sender_only(e) and any(isinstance(n, (ir.Load, ir.Ids)) and getattr(n, "pos", "") == "nbr" for n in ir.walk(e))


def _records(x: Exch, **change) -> Exch:
    """The exchange's spec after prune: counted where sent, one record per mirror (not per entry)."""
    transport = "records" if x.spec.transport == "entries" else x.spec.transport
    return dataclasses.replace(x, spec=dataclasses.replace(x.spec, counted=True, transport=transport, **change))


def run(plan: Plan, log: PassLog) -> Plan:
    for s in plan.states:
        s.broadcast = None  # nothing is sent for its own sake
        for k, x in enumerate(s.exchange):
            i = x.instr
            if isinstance(i, ir.NbrReduce) and i.send is None:
                parts = ir.conjuncts(i.mask)
                send = [p for p in parts if sender_side(p)]
                along = ir.conjoin([p for p in parts if ir.edge_only(p)])
                if send:
                    rest = [p for p in parts if not sender_side(p)]
                    x = dataclasses.replace(x, instr=dataclasses.replace(i, send=ir.conjoin(send), mask=ir.conjoin(rest)))
                    log.append(PassNote.on("prune", i, f"{i.target} sent only if {ir.show_ex(ir.conjoin(send))}"))
                if along is not None:
                    x = dataclasses.replace(x, instr=dataclasses.replace(x.instr, along=along))
                    log.append(PassNote.on("prune", i, f"{i.target} sent only along entries where {ir.show_ex(along)}"))
                s.exchange[k] = _records(x, presence=bool(send), along=along is not None)
            elif isinstance(i, ir.NbrReduce):
                s.exchange[k] = _records(x, presence=True)
            elif isinstance(i, ir.EndpointExchange) and ir.has_rand(i.need):
                # the send condition would draw a second time from the filter's rand() stream
                s.exchange[k] = _records(dataclasses.replace(x, instr=dataclasses.replace(i, need=None)))
                log.append(PassNote.on("prune", i, "no send condition for the endpoint values: "
                                       "the edge condition calls rand()"))
            elif isinstance(i, ir.CommonReduce):  # counted where sent; within K, only K's list entries
                s.exchange[k] = dataclasses.replace(x, spec=dataclasses.replace(
                    x.spec, counted=True, need=i.within is not None))
                if i.within is not None:
                    log.append(PassNote.on("prune", i, f"neighbour lists sent only along the edges of {i.within}"))
            elif isinstance(i, ir.EndpointExchange):
                s.exchange[k] = _records(x, need=i.need is not None)
                if i.need is not None:
                    log.append(PassNote.on("prune", i, "endpoint values sent only along edges where "
                                           f"{ir.show_ex(i.need)}"))
        if s.exchange and all(isinstance(x.instr, ir.GlobalReduce) for x in s.exchange):
            log.append(PassNote.on_state("prune", s, "aggregators only, no records sent"))
    return plan
