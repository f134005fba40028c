"""merge: run an exchange in the previous superstep when its inputs did not change (the original G2PL compiler's second rule).

An exchange X of state T moves into the exchange group of every *barrier*
state B before T (walking back through exchange-free states I), when

* nothing in I, in T before X, or in B's own exchanges defines an input of X,
* nothing between B's barrier and X reads or writes X's results, and
* if some path from B leads elsewhere than T, X only writes temporaries
  and calls no rand() (computing it on that path too is then harmless).

A state left without exchanges stops being a superstep.

Before (-O0)::

    state 1: => or over V of NotMatched            (loop condition)
    state 2: => or over V of Matched
    state 4: => $3 = sum over in-neighbours of 1 where NotMatched@nbr

After::

    state 1: => or over V of NotMatched, or over V of Matched,
                $3 = sum over in-neighbours of 1 where NotMatched@nbr
"""

from __future__ import annotations

from g2pl.compiler import ir
from g2pl.compiler.passlog import PassLog, PassNote
from g2pl.compiler.plan import Plan, State, compact


def _barriers(plan: Plan, t: State, preds: dict[int, list[int]]) -> tuple[list[State], list[State]] | None:
    """(barrier states, exchange-free states in between) before `t`, or None if there is no earlier barrier."""
    barriers: dict[int, State] = {}
    between: dict[int, State] = {}
    stack = list(preds.get(t.id, []))
    if not stack:
        return None
    while stack:
        p = plan.states[stack.pop()]
        if p.id == t.id:
            return None  # a loop of exchange-free states back to t
        if p.exchange:
            barriers[p.id] = p
            continue
        if p.id in between:
            continue
        between[p.id] = p
        ps = preds.get(p.id, [])
        if not ps:
            return None  # reached the entry without a barrier: nothing earlier to merge into
        stack.extend(ps)
    return list(barriers.values()), list(between.values())


def _try_move(plan: Plan, t: State, k: int, preds: dict[int, list[int]], log: PassLog) -> bool:
    moving = t.exchange[k]
    x = moving.instr
    if isinstance(x, ir.RemoteRead):
        return False
    found = _barriers(plan, t, preds)
    if found is None:
        return False
    barriers, between = found
    uses, defs = moving.uses(), set(moving.defs())
    changed: set[str] = set()
    touched: set[str] = set()
    for s in between:
        for i in s.instrs:
            changed |= set(i.defs())
            touched |= i.uses() | set(i.defs())
        touched |= s.term_uses()
    for i in t.instrs:
        changed |= set(i.defs())
        touched |= i.uses() | set(i.defs())
    for j, other in enumerate(t.exchange):
        if j != k:
            touched |= other.uses() | set(other.defs())
    touched |= t.term_uses()
    for b in barriers:
        for e in b.exchange:
            changed |= set(e.defs())
            touched |= e.uses() | set(e.defs())
        touched |= b.term_uses()
    if uses & changed or defs & touched:
        return False
    region = {t.id} | {s.id for s in between}
    leaks = any(any(n not in region for n in s.successors()) for s in barriers + between)
    if leaks and (not all(d.startswith("$") for d in defs) or ir.calls_rand(x)):
        return False  # it would also run on the other path: harmless only for temporaries, never for rand()
    t.exchange.pop(k)
    for n, b in enumerate(barriers):  # on several paths: each copy its own exchange (own caches, own stats)
        b.exchange.append(moving if n == 0 else moving.but(id=plan.next_spec_id()))
    where = ", ".join(str(b.id) for b in barriers)
    log.append(PassNote.on("merge", x, f"`{ir.show_instr(x)}` merged into the superstep of state {where}"))
    return True


def run(plan: Plan, log: PassLog) -> Plan:
    moved = False
    progress = True
    while progress:
        progress = False
        preds: dict[int, list[int]] = {}
        for s in plan.states:
            for n in s.successors():
                preds.setdefault(n, []).append(s.id)
        for t in plan.states:
            k = 0
            while k < len(t.exchange):
                if _try_move(plan, t, k, preds, log):
                    progress = moved = True
                else:
                    k += 1
    if not moved:
        log.append(PassNote("merge", "no exchange could move to an earlier superstep"))
        return plan
    plan.states = compact(plan.states)
    return plan
