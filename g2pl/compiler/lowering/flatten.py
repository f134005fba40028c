"""Split deep local expressions into temporaries, right after lowering (at every -O level).

A 1,000-term sum lowers to 1,000 nested `Op`s.  Left so, every IR walker
after it (the passes, the plan, codegen) would recurse 1,000 levels deep,
and the generated Python would nest 1,000 parentheses, which Python's parser
refuses (its limit is 200).  So a subexpression `MAX_IR_DEPTH` levels deep
becomes a `Compute` of a fresh temporary placed just before its
instruction, and the expression reads the temporary instead:

    x = 1 + 1 + ... + 1;   (300 terms)
    =>  $7 = [S] ((1 + 1) + ...);  $8 = [S] (($7 + 1) + ...);  ...;  x = [S] (($15 + 1) + ...)

Only expressions evaluated over a whole domain (S, V or E) are split: every
subexpression of one is itself an expression of that domain, and evaluating
it a little earlier changes nothing, since local expressions have no side
effects, with one exception: a scalar `?:` evaluates only the branch taken,
so a branch calling rand() stays in place (each evaluation of a rand() site
advances its stream).  Expressions inside neighbourhood aggregations (domain
A) are not split either; one still deeper than `MAX_UNSPLIT_DEPTH` is
refused with an error, as Python could not parse the module.
"""

from __future__ import annotations

import dataclasses
from typing import Literal, overload

from g2pl.compiler import ir
from g2pl.compiler.limits import MAX_IR_DEPTH, MAX_UNSPLIT_DEPTH
from g2pl.errors import G2PLError

_KIND_OF_DOMAIN: dict[ir.Dom, ir.Kind] = {"S": "scalar", "V": "vertex", "E": "edge"}


class _Flattener:
    """Rewrites one procedure; `hoisted` collects the temporaries of the instruction being rewritten."""

    def __init__(self, proc: ir.ProcIR) -> None:
        self.proc = proc
        self.vars = dict(proc.vars)
        self.n_temps = max((int(v[1:]) for v in proc.vars if v[1:].isdigit() and v.startswith("$")), default=0)
        self.hoisted: list[tuple[str, ir.Dom, ir.Ex]] = []  # (temporary, domain, expression)
        self.changed = False

    def temp(self, e: ir.Ex, dom: ir.Dom) -> ir.Load:
        """A fresh temporary computing `e` over `dom`, emitted before the current instruction."""
        self.n_temps += 1
        name = f"${self.n_temps}"
        kind = _KIND_OF_DOMAIN[dom]
        self.vars[name] = ir.Ty(kind, e.elem)
        self.hoisted.append((name, dom, e))
        self.changed = True
        return ir.Load(e.elem, e.span, name, kind, "here")

    def ex(self, e: ir.Ex, dom: ir.Dom, lazy: bool = False) -> tuple[ir.Ex, int]:
        """`e` with its deep parts hoisted, and the depth left; `lazy`: inside a scalar `?:` branch."""
        if isinstance(e, ir.Op):
            parts = [self.ex(a, dom, lazy) for a in e.args]
            new: ir.Ex = dataclasses.replace(e, args=tuple(p[0] for p in parts))
            depth = 1 + max(p[1] for p in parts)
        elif isinstance(e, ir.Where):
            branch_lazy = lazy or dom == "S"
            c, dc = self.ex(e.cond, dom, lazy)
            a, da = self.ex(e.then, dom, branch_lazy)
            b, db = self.ex(e.other, dom, branch_lazy)
            new, depth = dataclasses.replace(e, cond=c, then=a, other=b), 1 + max(dc, da, db)
        else:
            return e, 1
        if depth > MAX_UNSPLIT_DEPTH:
            self.refuse(new)
        if depth >= MAX_IR_DEPTH and not (lazy and ir.has_rand(new)):
            return self.temp(new, dom), 1
        return new, depth

    @overload
    def top(self, e: ir.Ex, dom: ir.Dom | Literal["A"]) -> ir.Ex: ...

    @overload
    def top(self, e: ir.Ex | None, dom: ir.Dom | Literal["A"]) -> ir.Ex | None: ...

    def top(self, e: ir.Ex | None, dom: ir.Dom | Literal["A"]) -> ir.Ex | None:
        """Flatten a whole expression field evaluated over `dom` (S, V or E; A is only measured)."""
        if e is None:
            return None
        if dom == "A":
            if _depth(e) > MAX_UNSPLIT_DEPTH:
                self.refuse(e)
            return e
        return self.ex(e, dom)[0]

    @staticmethod
    def refuse(e: ir.Ex) -> None:
        """The error for an expression too deep to split (see the module docstring)."""
        raise G2PLError(f"expression nested too deeply (more than {MAX_UNSPLIT_DEPTH} levels in a neighbourhood "
                            "aggregation or in a `?:` branch calling rand()); compute parts of it into variables "
                            "first", span=e.span)

    def instr(self, i: ir.Instr) -> ir.Instr:
        """`i` with its expression fields flattened (temporaries go to `hoisted`)."""
        if isinstance(i, ir.Compute):
            return dataclasses.replace(i, ex=self.top(i.ex, i.dom))
        if isinstance(i, ir.GlobalReduce):
            return dataclasses.replace(i, value=self.top(i.value, i.dom), mask=self.top(i.mask, i.dom))
        if isinstance(i, ir.NbrReduce):
            return dataclasses.replace(i, value=self.top(i.value, "A"), mask=self.top(i.mask, "A"))
        if isinstance(i, ir.CommonReduce):  # per common neighbour: measured like domain A
            return dataclasses.replace(i, value=self.top(i.value, "A"), mask=self.top(i.mask, "A"))
        if isinstance(i, ir.MarkEndpoints):
            return dataclasses.replace(i, mask=self.top(i.mask, "E"))
        if isinstance(i, ir.EndpointExchange):
            return dataclasses.replace(i, need=self.top(i.need, "E"))
        if isinstance(i, ir.RemoteRead):
            return dataclasses.replace(i, index=self.top(i.index, i.dom))
        if isinstance(i, ir.RemoteMark):
            return dataclasses.replace(i, index=self.top(i.index, i.dom), mask=self.top(i.mask, i.dom))
        if isinstance(i, ir.KeyedReduce):
            return dataclasses.replace(i, value=self.top(i.value, i.dom), payload=self.top(i.payload, i.dom),
                                       mask=self.top(i.mask, i.dom), keys=tuple(self.top(k, i.dom) for k in i.keys))
        return i

    def block(self, instrs) -> tuple[ir.Instr, ...]:
        out: list[ir.Instr] = []
        for i in instrs:
            if isinstance(i, ir.WhileI):
                pre = list(self.block(i.cond_pre))
                cond = self.top(i.cond, "S")
                pre += self.take(i)
                out.append(dataclasses.replace(i, cond_pre=tuple(pre), cond=cond, body=self.block(i.body)))
            elif isinstance(i, ir.IfI):
                cond = self.top(i.cond, "S")
                out += self.take(i)
                out.append(dataclasses.replace(i, cond=cond, then=self.block(i.then), other=self.block(i.other)))
            else:
                new = self.instr(i)
                out += self.take(i)
                out.append(new)
        return tuple(out)

    def take(self, of: ir.Instr) -> list[ir.Instr]:
        """The temporaries hoisted out of instruction `of`, computed before it (and lowered from its statement)."""
        hoisted, self.hoisted = self.hoisted, []
        return [ir.Compute(e.span, name, dom, e, origin=of.origin) for name, dom, e in hoisted]


def _depth(e: ir.Ex) -> int:
    kids = ir.children(e)
    return 1 + max((_depth(c) for c in kids), default=0)


def flatten(proc: ir.ProcIR) -> ir.ProcIR:
    """`proc` with every local expression at most about `MAX_IR_DEPTH` deep (see the module docstring)."""
    f = _Flattener(proc)
    body = f.block(proc.body)
    if not f.changed:
        return proc
    return dataclasses.replace(proc, body=list(body), vars=f.vars)
