"""Analyses over the superstep plan, shared by the plan passes and the verifier.

Walks (`walk_paths`: every path from an exchange to a use), readers (`local_readers`), the
variables an exchange reads and writes by phase (`exchange_reads`, `exchange_defs`) and the
forward must-assignment analysis (`assigned_into`: what every path into a state has assigned).
Nothing here changes a plan.
"""

from __future__ import annotations

from collections.abc import Callable

from g2pl.compiler import ir
from g2pl.compiler.exchange import Exchange
from g2pl.compiler.plan import Plan, State

#: called with (variables read, variables assigned so far, where) by `state_out` when it checks reads
ReadCheck = Callable[[set[str], set[str], str], None]


def walk_paths(plan: Plan, s: State, use: ir.Instr | None,
               visit: Callable[[State, list[ir.Instr], bool], bool | None]) -> bool:
    """Follow every path from the end of state `s` (its exchange) until instruction `use` runs
    (None: until `visit` ends it).

    `visit(state, instrs, reached)` sees each state once, with the instructions that run on
    the path before `use` (all of them when `use` is not in that state) and whether `use` ends
    the path there; it returns False to reject (the walk returns False), None to end the path,
    True to go on to the state's successors.  Passes use it to ask "does anything between an
    exchange and the use of its result change X?"."""
    seen: set[int] = set()
    todo = list(s.successors())
    while todo:
        st = plan.states[todo.pop()]
        if st.id in seen:
            continue
        seen.add(st.id)
        k = next((j for j, ins in enumerate(st.instrs) if ins is use), None)
        verdict = visit(st, st.instrs if k is None else st.instrs[:k], k is not None)
        if verdict is False:
            return False
        if verdict and k is None:
            todo += st.successors()
    return True


def reachable(plan: Plan, s: State) -> list[State]:
    """The states that can run after state `s`'s exchange (`s` itself again in a loop), in id order."""
    seen: set[int] = set()
    todo = list(s.successors())
    while todo:
        k = todo.pop()
        if k not in seen:
            seen.add(k)
            todo += plan.states[k].successors()
    return [plan.states[k] for k in sorted(seen)]


def local_readers(plan: Plan, var: str) -> list[ir.Instr] | None:
    """The local instructions reading `var`; None when a terminator or an exchange reads it."""
    found: list[ir.Instr] = []
    for s in plan.states:
        if var in s.term_uses() or any(var in x.uses() for x in s.exchange):
            return None
        found += [i for i in s.instrs if var in i.uses()]
    return found


def exchange_reads(x: Exchange) -> set[str]:
    """What one phase of an exchange reads: a remote read's request its index, its reply the graph."""
    i = x.instr
    if isinstance(i, ir.RemoteRead):
        return ir.reads(i.index) if x.phase == "request" else {i.var}
    return x.uses()


def exchange_defs(x: Exchange) -> set[str]:
    """What one phase of an exchange assigns (a remote read's request: nothing yet)."""
    return set() if x.phase == "request" else set(x.defs())


def initially(proc: ir.ProcIR) -> set[str]:
    """The variables assigned before the first state runs: the parameters."""
    return {name for name, _ty in proc.params}


def state_out(s: State, defined: set[str], check: ReadCheck | None = None) -> set[str]:
    """The variables assigned after state `s` runs, given those assigned before it; `check` sees
    every read with what is assigned at that point (the exchanges of a group all read what held
    before the group; the terminator runs after it)."""
    d = set(defined)
    for i in s.instrs:
        if check:
            check(i.uses(), d, f"state {s.id}: {ir.show_instr(i).splitlines()[0].strip()}")
        d |= set(i.defs())
    for x in s.exchange:
        if check:
            check(exchange_reads(x), d, f"state {s.id}: exchange {ir.show_instr(x.instr).splitlines()[0].strip()}")
    for x in s.exchange:
        d |= exchange_defs(x)
    if check:
        check(s.term_uses(), d, f"state {s.id}: terminator")
    return d


def assigned_into(plan: Plan) -> dict[int, set[str]]:
    """The variables assigned on every path into each reachable state (a forward must-analysis: a
    state's input shrinks to what every predecessor assigns)."""
    if not plan.states:
        return {}
    into: dict[int, set[str]] = {0: initially(plan.proc)}
    todo = [0]
    while todo:
        sid = todo.pop()
        out = state_out(plan.states[sid], into[sid])
        for n in plan.states[sid].successors():
            new = out if n not in into else into[n] & out
            if n not in into or new != into[n]:
                into[n] = new
                todo.append(n)
    return into


def assigned_at_exchange(s: State, into: dict[int, set[str]]) -> set[str]:
    """The variables assigned on every path to state `s`'s exchange group (what it may read)."""
    return set(into.get(s.id, set())).union(*(i.defs() for i in s.instrs))


def readable_at_exchange(s: State, names: set[str], into: dict[int, set[str]]) -> bool:
    """Can a receiver filter of state `s`'s exchange group read `names`?  Each must be assigned on every
    path to the group (merge may move an exchange above an assignment), and no exchange of the group
    may define one (it would be read before the group has run)."""
    return names <= assigned_at_exchange(s, into) and not names & {d for x in s.exchange for d in x.defs()}
