r"""sparse: evaluate `M && rest` only at M's members when they are few.

A vertex or edge computation `T = M && rest`, where M is a set variable and
`rest` costs two operations or more (and draws no random numbers), is the
shape of every frontier step (`F = {or ...} && !Seen`, `Edges(X) && ...`).
Read literally it evaluates `rest` over every vertex or edge.  This pass
marks it; the generated code then asks the runtime to evaluate `rest` only
at M's members when M is sparse (`rt.vmap(..., within=M)`), and over
everything otherwise.  The answer is that of the literal code: outside M the
conjunction is false either way.  It changes no message, only local work,
so it runs at every level, -O0 included.

Before::

    -> $9 = [V] ($8 && !(Seen || (x > 3)))

After::

    -> $9 = [V] ($8 && !(Seen || (x > 3)))  (only at the members of $8 when few)
"""

from __future__ import annotations

import dataclasses

from g2pl.compiler import ir
from g2pl.compiler.passlog import PassLog, PassNote
from g2pl.compiler.plan import Plan


def sparse_rest(i: ir.Compute) -> ir.Ex | None:
    """`rest` when `i` computes `M && rest` over V or E, M a set variable and `rest` worth skipping
    (two operations or more, no rand()): where M is sparse, `rest` is evaluated at M's members only."""
    e = i.ex
    if i.dom not in ("V", "E") or not (isinstance(e, ir.Op) and e.op == "&&"):
        return None
    m, rest = e.args
    if not (isinstance(m, ir.Load) and m.pos == "here" and m.kind != "scalar" and m.elem == "bool"):
        return None
    if ir.has_rand(rest) or sum(isinstance(n, (ir.Op, ir.Where)) for n in ir.walk(rest)) < 2:
        return None
    return rest


def run(plan: Plan, log: PassLog) -> Plan:
    done = 0
    for s in plan.states:
        for k, i in enumerate(s.instrs):
            if isinstance(i, ir.Compute) and not i.sparse and sparse_rest(i) is not None:
                s.instrs[k] = dataclasses.replace(i, sparse=True)
                done += 1
                log.append(PassNote.on("sparse", i, f"{i.target} evaluated only at the members of "
                                                   f"{i.ex.args[0].var} when they are few"))  # type: ignore[attr-defined]
    if not done:
        log.append(PassNote("sparse", "no computation is a set intersected with a costlier condition"))
    return plan
