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
from g2pl.compiler.exchange import CommonExchange, EndpointRecord, Exchange, NbrExchange
from g2pl.compiler.passlog import PassLog, PassNote
from g2pl.compiler.plan import Plan


def is_send_conjunct(e: ir.Ex) -> bool:
    """Reads only the sending neighbour (and scalars), and reads it: the sender can evaluate it."""
    return ir.sender_only(e) and any(isinstance(n, (ir.Load, ir.Ids)) and getattr(n, "pos", "") == "nbr" for n in ir.walk(e))


def _records(x: Exchange, **change: object) -> Exchange:
    """The exchange after prune: counted where sent, one record per mirror (not per entry)."""
    transport = "records" if x.transport == "entries" else x.transport
    return x.but(counted=True, transport=transport, **change)


def run(plan: Plan, log: PassLog) -> Plan:
    for s in plan.states:
        s.broadcast = None  # nothing is sent for its own sake
        for k, x in enumerate(s.exchange):
            i = x.instr
            if isinstance(x, NbrExchange) and x.send is None:
                parts = ir.conjuncts(x.instr.mask)
                send = [p for p in parts if is_send_conjunct(p)]
                along = ir.conjoin([p for p in parts if ir.edge_only(p)])
                if send:
                    rest = [p for p in parts if not is_send_conjunct(p)]
                    x = x.but(instr=dataclasses.replace(x.instr, mask=ir.conjoin(rest)), send=ir.conjoin(send))
                    assert x.send is not None  # the conjunction of a non-empty list
                    log.append(PassNote.on("prune", i, f"{x.instr.target} sent only if {ir.show_ex(x.send)}"))
                if along is not None:
                    x = x.but(along=along)
                    log.append(PassNote.on("prune", i, f"{x.instr.target} sent only along entries where "
                                                      f"{ir.show_ex(along)}"))
                s.exchange[k] = _records(x)
            elif isinstance(x, NbrExchange):
                s.exchange[k] = _records(x)
            elif isinstance(x, EndpointRecord) and ir.has_rand(x.instr.need):
                # the send condition would draw a second time from the filter's rand() stream
                s.exchange[k] = _records(x.but(instr=dataclasses.replace(x.instr, need=None)))
                log.append(PassNote.on("prune", i, "no send condition for the endpoint values: "
                                       "the edge condition calls rand()"))
            elif isinstance(x, CommonExchange):  # counted where sent; within K, only K's list entries
                s.exchange[k] = x.but(counted=True, need=x.instr.within is not None)
                if x.instr.within is not None:
                    log.append(PassNote.on("prune", i, f"neighbour lists sent only along the edges of "
                                                      f"{x.instr.within}"))
            elif isinstance(x, EndpointRecord):
                s.exchange[k] = _records(x, need=x.instr.need is not None)
                if x.instr.need is not None:
                    log.append(PassNote.on("prune", i, "endpoint values sent only along edges where "
                                           f"{ir.show_ex(x.instr.need)}"))
        if s.exchange and all(isinstance(x.instr, ir.GlobalReduce) for x in s.exchange):
            log.append(PassNote.on_state("prune", s, "aggregators only, no records sent"))
    return plan
