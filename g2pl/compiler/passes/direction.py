"""direction: let sparse neighbourhood aggregations be pushed instead of pulled (Beamer; papers 003, 004).

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
"""

from __future__ import annotations

import dataclasses

from g2pl.compiler import ir
from g2pl.compiler.plan import Exch, Plan

EXACT = ("or", "and", "count", "min", "max", "argmin", "argmax")


def run(plan: Plan, log: list[str]) -> Plan:
    marked = 0
    for s in plan.states:
        for k, x in enumerate(s.exchange):
            i = x.instr
            if not isinstance(i, ir.NbrReduce) or i.send is None or i.push:
                continue
            if i.op in EXACT or (i.op == "sum" and i.elem == "int"):
                s.exchange[k] = Exch(dataclasses.replace(i, push=True), x.phase)
                marked += 1
                log.append(f"direction: line {i.span.line}: {i.target} pushed from the active senders "
                           "when they are few, else pulled")
    if not marked:
        log.append("direction: no aggregation has a send condition to push from")
    return plan
