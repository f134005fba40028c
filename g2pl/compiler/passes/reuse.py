"""reuse: an exchange already computed whose inputs have not changed is not recomputed (paper 2.3.4, rule 1).

A forward "available exchanges" analysis over the structured IR: an
exchange is available after it runs, until one of its inputs or the
variable holding its result is assigned.  At an `if` join only what both
branches keep stays available; a loop keeps what nothing inside it can
invalidate (so reuse also holds inside every iteration).  A second,
identical exchange (same aggregation of the same expressions, spans
ignored) becomes a local copy of the first one's result: no superstep.

Before::

    theta = 2.0 * (1.0 + 0.01) * f(S);          => $5 = sum over in-neighbours of 1 where S@nbr
    A = { deg <= theta | deg <- Degr(S) };       => $6 = sum over in-neighbours of 1 where S@nbr

After::

    A = { deg <= theta | deg <- Degr(S) };       -> $6 = [V] $5   (local copy)
"""

from __future__ import annotations

import dataclasses
from typing import Any

from g2pl.compiler import ir


def ex_key(e: ir.Ex | None) -> Any:
    """Structural identity of an expression, ignoring source spans."""
    if e is None:
        return None
    fields = tuple(
        ex_key(v) if isinstance(v, ir.Ex) else tuple(ex_key(a) for a in v) if isinstance(v, tuple) else v
        for f in dataclasses.fields(e) if f.name != "span"
        for v in (getattr(e, f.name),)
    )
    return (type(e).__name__, *fields)


def instr_key(i: ir.Instr) -> Any:
    if isinstance(i, ir.NbrReduce):
        return ("nbr", i.op, i.out, ex_key(i.value), ex_key(i.mask), ex_key(i.send), i.elem)
    if isinstance(i, ir.GlobalReduce):
        return ("glob", i.op, i.dom, ex_key(i.value), ex_key(i.mask), i.elem)
    if isinstance(i, ir.EndpointExchange):  # values only along `need`'s edges (prune): part of the identity
        return ("ends", i.fields, ex_key(i.need))
    if isinstance(i, ir.RemoteRead):
        return ("read", i.var, i.dom, ex_key(i.index), i.elem)
    if isinstance(i, ir.RemoteMark):
        return ("mark", i.dom, ex_key(i.index), ex_key(i.mask))
    return None


class _Reuse:
    def __init__(self, proc: ir.ProcIR, log: list[str]) -> None:
        self.proc = proc
        self.log = log
        self.hits = 0

    def _dom(self, var: str) -> str:
        return ir.DOMAIN_OF_KIND[self.proc.vars[var].kind]

    @staticmethod
    def _kill(avail: dict, defs: set[str]) -> dict:
        return {k: v for k, v in avail.items() if not (v[1] & defs) and not (set(v[0]) & defs)}

    def block(self, instrs, avail: dict) -> tuple[tuple[ir.Instr, ...], dict]:
        out: list[ir.Instr] = []
        for i in instrs:
            if isinstance(i, ir.WhileI):
                killed = set(i.defs())
                entry = self._kill(avail, killed)
                pre, after_cond = self.block(i.cond_pre, entry)
                body, _ = self.block(i.body, dict(after_cond))
                out.append(dataclasses.replace(i, cond_pre=pre, body=body))
                avail = after_cond
            elif isinstance(i, ir.IfI):
                then, a1 = self.block(i.then, dict(avail))
                other, a2 = self.block(i.other, dict(avail))
                out.append(dataclasses.replace(i, then=then, other=other))
                avail = {k: v for k, v in a1.items() if a2.get(k) == v}
            elif isinstance(i, ir.ReturnI):
                out.append(i)
            else:
                key = instr_key(i) if i.exchange else None
                if key is not None and key in avail:
                    holders = avail[key][0]
                    copies = [ir.Compute(i.span, t, self._dom(t), ir.Load(self.proc.vars[h].elem, i.span, h,
                                                                          self.proc.vars[h].kind))
                              for t, h in zip(i.defs(), holders)]
                    self.hits += 1
                    self.log.append(f"reuse: line {i.span.line}: `{ir.show_instr(i)}` reuses "
                                    f"{', '.join(holders)} (its inputs are unchanged)")
                    out.extend(copies)
                    avail = self._kill(avail, set(i.defs()))
                    continue
                out.append(i)
                avail = self._kill(avail, set(i.defs()))
                if key is not None and not (set(i.defs()) & i.uses()):
                    avail[key] = (tuple(i.defs()), i.uses())
        return tuple(out), avail


def run(proc: ir.ProcIR, log: list[str]) -> ir.ProcIR:
    r = _Reuse(proc, log)
    body, _ = r.block(proc.body, {})
    if not r.hits:
        log.append("reuse: no exchange is repeated with unchanged inputs")
        return proc
    return dataclasses.replace(proc, body=list(body))
