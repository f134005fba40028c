"""reuse: an exchange already computed whose inputs have not changed is not recomputed (the original G2PL compiler's first rule).

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
from g2pl.compiler.passlog import PassLog, PassNote


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
        return ("nbr", i.op, i.dir, ex_key(i.value), ex_key(i.mask), i.elem)
    if isinstance(i, ir.CommonReduce):
        return ("common", i.op, i.outs, i.within, ex_key(i.value), ex_key(i.mask), i.elem)
    if isinstance(i, ir.GlobalReduce):
        return ("glob", i.op, i.dom, ex_key(i.value), ex_key(i.mask), i.elem)
    if isinstance(i, ir.EndpointExchange):  # values only along `need`'s edges (prune): part of the identity
        return ("ends", i.fields, ex_key(i.need))
    if isinstance(i, ir.RemoteRead):
        return ("read", i.var, i.dom, ex_key(i.index), i.elem)
    if isinstance(i, ir.RemoteMark):
        return ("mark", i.dom, ex_key(i.index), ex_key(i.mask))
    if isinstance(i, ir.KeyedReduce):
        return ("keyed", i.op, i.dom, tuple(ex_key(k) for k in i.keys), ex_key(i.value), ex_key(i.payload),
                ex_key(i.mask), i.elem, i.result)
    return None


class _Avail:
    """The available exchanges: key -> (holders, inputs), indexed by every variable whose assignment kills one.

    Killing through the index costs what it removes, not the size of the
    table, so a long straight-line run of exchanges is handled in linear time.
    The index may name keys already gone (or re-added with other variables);
    every candidate is checked against the table before it is removed.
    """

    def __init__(self, table: dict | None = None) -> None:
        self.table: dict[Any, tuple[tuple[str, ...], set[str]]] = {}
        self.by_var: dict[str, set] = {}
        for key, (holders, uses) in (table or {}).items():
            self.add(key, holders, uses)

    def copy(self) -> _Avail:
        return _Avail(self.table)

    def add(self, key: Any, holders: tuple[str, ...], uses: set[str]) -> None:
        self.table[key] = (holders, uses)
        for v in (*holders, *uses):
            self.by_var.setdefault(v, set()).add(key)

    def kill(self, defs: set[str]) -> None:
        """Forget every exchange whose inputs or result holders are among `defs`."""
        for v in defs:
            for key in self.by_var.pop(v, ()):
                entry = self.table.get(key)
                if entry is not None and (entry[1] & defs or set(entry[0]) & defs):
                    del self.table[key]

    def meet(self, other: _Avail) -> _Avail:
        """What both branches of an `if` keep available."""
        return _Avail({k: v for k, v in self.table.items() if other.table.get(k) == v})


class _Reuse:
    def __init__(self, proc: ir.ProcIR, log: PassLog) -> None:
        self.proc = proc
        self.log = log
        self.hits = 0
        self.loop_defs: dict[int, set[str]] = {}  # id(WhileI / IfI) -> what it defines

    def _dom(self, var: str) -> ir.Dom:
        return ir.DOMAIN_OF_KIND[self.proc.vars[var].kind]

    def defs_of(self, i: ir.Instr) -> set[str]:
        """`set(i.defs())`, memoized for loops and ifs: `WhileI.defs()` walks the whole body, and asking
        it at every level of n nested loops would cost n^2."""
        if not isinstance(i, (ir.WhileI, ir.IfI)):
            return set(i.defs())
        found = self.loop_defs.get(id(i))
        if found is None:
            parts = (i.cond_pre + i.body) if isinstance(i, ir.WhileI) else (i.then + i.other)
            found = set().union(*(self.defs_of(j) for j in parts))
            self.loop_defs[id(i)] = found
        return found

    def block(self, instrs, avail: _Avail) -> tuple[tuple[ir.Instr, ...], _Avail]:
        """Rewrite `instrs` given what is available on entry; `avail` is updated in place (pass a copy)."""
        out: list[ir.Instr] = []
        for i in instrs:
            if isinstance(i, ir.WhileI):
                avail.kill(self.defs_of(i))
                pre, after_cond = self.block(i.cond_pre, avail)
                body, _ = self.block(i.body, after_cond.copy())
                out.append(dataclasses.replace(i, cond_pre=pre, body=body))
                avail = after_cond
            elif isinstance(i, ir.IfI):
                then, a1 = self.block(i.then, avail.copy())
                other, a2 = self.block(i.other, avail.copy())
                out.append(dataclasses.replace(i, then=then, other=other))
                avail = a1.meet(a2)
            elif isinstance(i, ir.ReturnI):
                out.append(i)
            else:
                out.extend(self.exchange_or_copy(i, avail))
        return tuple(out), avail

    def exchange_or_copy(self, i: ir.Instr, avail: _Avail) -> list[ir.Instr]:
        """`i` itself, or local copies of the results of an identical available exchange."""
        key = instr_key(i) if i.exchange else None
        if isinstance(i, ir.EndpointExchange) and key not in avail.table and ("ends", i.fields, None) in avail.table:
            key = ("ends", i.fields, None)  # values sent along every edge serve any `need`
        if key is not None and key in avail.table:
            holders = avail.table[key][0]
            copies: list[ir.Instr] = [
                ir.Compute(i.span, t, self._dom(t), ir.Load(self.proc.vars[h].elem, i.span, h, self.proc.vars[h].kind),
                           origin=i.origin)
                for t, h in zip(i.defs(), holders)]
            self.hits += 1
            self.log.append(PassNote.on("reuse", i, f"`{ir.show_instr(i)}` reuses {', '.join(holders)} "
                                        "(its inputs are unchanged)", vars=(*i.defs(), *holders)))
            avail.kill(set(i.defs()))
            return copies
        avail.kill(set(i.defs()))
        if key is not None and not (set(i.defs()) & i.uses()):
            avail.add(key, tuple(i.defs()), i.uses())
        return [i]


def run(proc: ir.ProcIR, log: PassLog) -> ir.ProcIR:
    r = _Reuse(proc, log)
    body, _ = r.block(proc.body, _Avail())
    if not r.hits:
        log.append(PassNote("reuse", "no exchange is repeated with unchanged inputs"))
        return proc
    return dataclasses.replace(proc, body=list(body))
