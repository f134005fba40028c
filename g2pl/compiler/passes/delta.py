"""delta: endpoint exchanges send only the values that changed since they last ran.

An endpoint exchange puts vertex values on edges (paper section 3.2: both
endpoints hold the edge's copy of each other's value).  In a loop the same
exchange runs every round, and most values are what they were last round:
matching's `Edges(NotMatched)` re-sends every vertex's membership along
every edge each round, although only the vertices matched in the last round
changed.  This pass gives such an exchange one vertex variable per field
that keeps the values as last exchanged (owned and ghost copies): a sender
sends only where its value differs from its kept copy, after a presence bit
per mirror, and counts one message per adjacency entry of each such sender;
receivers take the unchanged values from their copies, so every edge sees
exactly the values the literal code reads (a single set's change is a flip:
the presence bits are all that travels).  The first run sends everything.
The kept copies are program variables, so a checkpoint saves them and a
resumed run sends and counts what the uninterrupted run does.

Exchanges whose values are needed only along some edges (`need`, prune) are
left alone: a copy kept along the edges of one round's condition could be
stale along the next round's.  So are the naive per-entry records (prune
disabled), which go along every entry by definition.

Before::

    => endpoint exchange: $7 = edges with NotMatched@src && NotMatched@dst

After::

    => endpoint exchange: $7 = edges with NotMatched@src && NotMatched@dst; changed values only (kept in $10)
"""

from __future__ import annotations

from g2pl.compiler import ir
from g2pl.compiler.exchange import EndpointRecord
from g2pl.compiler.passlog import PassLog, PassNote
from g2pl.compiler.plan import Plan


def run(plan: Plan, log: PassLog) -> Plan:
    done = 0
    for s in plan.states:
        for k, x in enumerate(s.exchange):
            if not isinstance(x, EndpointRecord) or x.keep or x.need or x.transport == "entries":
                continue  # (per-entry records, prune not run: every entry is sent anyway)
            keep = tuple(plan.new_var(ir.Ty("vertex", ir.as_elem(elem))) for _var, elem in x.fields)
            s.exchange[k] = x.but(keep=keep)
            done += 1
            names = ", ".join(v for v, _e in x.fields)
            log.append(PassNote.on("delta", x, f"{names} sent only where changed since the last run "
                                              f"(copies kept in {', '.join(keep)})"))
    if not done:
        log.append(PassNote("delta", "no endpoint exchange sends its values along every edge"))
    return plan
