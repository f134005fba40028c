"""Plan verifier: the invariants code generation relies on.

Run after planning and (in tests) between optimizer passes, so a pass that
breaks the plan fails at the pass, not at run time.
"""

from __future__ import annotations

from g2pl.compiler import ir
from g2pl.compiler.plan import Branch, Goto, Halt, Plan

_POSITIONS = {"S": {"here"}, "V": {"here"}, "E": {"here", "src", "dst"}, "A": {"here", "nbr", "self", "edge"}}


class PlanError(AssertionError):
    """An internal invariant of the plan is broken (a compiler bug, never a user error)."""


def _check_ex(e: ir.Ex | None, dom: str, vars_: dict[str, ir.Ty], where: str) -> None:
    if e is None:
        return
    for n in ir.walk(e):
        if isinstance(n, ir.Load):
            ty = vars_.get(n.var)
            if ty is None and n.var != "@id":
                raise PlanError(f"{where}: reads unknown variable {n.var}")
            if ty is not None and ty.kind != n.kind:
                raise PlanError(f"{where}: reads {n.var} as {n.kind}, but it is {ty.kind}")
            if n.kind == "scalar":
                continue
            if n.pos not in _POSITIONS[dom]:
                raise PlanError(f"{where}: position {n.pos} is not valid in domain {dom}")
            if dom == "V" and n.kind != "vertex" or dom == "E" and n.kind != "edge":
                raise PlanError(f"{where}: {n.kind} variable {n.var} read in domain {dom}")
            if dom == "A" and (n.pos == "edge") != (n.kind == "edge"):
                raise PlanError(f"{where}: {n.kind} variable {n.var} read at {n.pos}")
        elif isinstance(n, ir.Ids) and n.pos not in _POSITIONS[dom] | ({"src", "dst"} if dom == "E" else set()):
            raise PlanError(f"{where}: id at {n.pos} in domain {dom}")


def _check_instr(i: ir.Instr, vars_: dict[str, ir.Ty], where: str) -> None:
    for d in i.defs():
        if d not in vars_:
            raise PlanError(f"{where}: defines unknown variable {d}")
    if isinstance(i, ir.Compute):
        _check_ex(i.ex, i.dom, vars_, where)
        if ir.DOMAIN_OF_KIND[vars_[i.target].kind] != i.dom:
            raise PlanError(f"{where}: {i.target} is {vars_[i.target].kind} but computed over {i.dom}")
    elif isinstance(i, ir.NbrReduce):
        _check_ex(i.value, "A", vars_, where)
        _check_ex(i.mask, "A", vars_, where)
        _check_ex(i.recv, "V", vars_, where)
    elif isinstance(i, ir.GlobalReduce):
        _check_ex(i.value, i.dom, vars_, where)
        _check_ex(i.mask, i.dom, vars_, where)
    elif isinstance(i, (ir.RemoteRead, ir.RemoteMark)):
        _check_ex(i.index, i.dom, vars_, where)
    elif isinstance(i, ir.MarkEndpoints):
        _check_ex(i.mask, "E", vars_, where)


def verify_plan(plan: Plan) -> None:
    """Raise `PlanError` if the plan is malformed."""
    states = plan.states
    ids = [s.id for s in states]
    if ids != list(range(len(states))):
        raise PlanError(f"state ids are not 0..{len(states) - 1}: {ids}")
    vars_ = plan.proc.vars
    for s in states:
        where = f"state {s.id}"
        for i in s.instrs:
            if i.exchange:
                raise PlanError(f"{where}: exchange {ir.show_instr(i)} among local instructions")
            _check_instr(i, vars_, where)
        for x in s.exchange:
            if not x.instr.exchange:
                raise PlanError(f"{where}: local instruction in the exchange group")
            _check_instr(x.instr, vars_, where)
        t = s.term
        if t is None:
            raise PlanError(f"{where}: no terminator")
        targets = [t.target] if isinstance(t, Goto) else [t.then, t.other] if isinstance(t, Branch) else []
        for tg in targets:
            if not 0 <= tg < len(states):
                raise PlanError(f"{where}: jumps to missing state {tg}")
        if isinstance(t, Branch):
            _check_ex(t.cond, "S", vars_, where)
        if isinstance(t, Halt) and t.ret is not None:
            for v in t.ret.values:
                if v.var not in vars_:
                    raise PlanError(f"{where}: returns unknown variable {v.var}")
