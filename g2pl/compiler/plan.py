"""The superstep plan: a state machine over blocks split at exchanges (docs/language.md, "Execution model").

A *state* runs local instructions, then (optionally) one group of exchanges,
then a transition: `Goto`, `Branch` on a scalar condition (evaluated after the
exchange, like a Pregel master compute), or `Halt`.  Every state that has an
exchange costs one superstep boundary; states without one are jumped through
inside the same superstep.  At -O0 every exchange instruction gets its own
state (a remote read gets two: request and reply).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from g2pl.compiler import ir
from g2pl.compiler.exchange import Exchange, Phase, baseline
from g2pl.compiler.passlog import PassLog
from g2pl.contract import Broadcast, Field


@dataclass
class Goto:
    target: int


@dataclass
class Branch:
    cond: ir.Ex
    then: int
    other: int
    line: int
    origin: int  # the `while` or `if` statement it tests for (`ir.Instr.origin`)


@dataclass
class Halt:
    ret: ir.ReturnI | None


Terminator = Goto | Branch | Halt


@dataclass
class State:
    id: int
    instrs: list[ir.Instr] = field(default_factory=list)
    exchange: list[Exchange] = field(default_factory=list)  # one record per exchange (compiler/exchange.py)
    term: Terminator | None = None
    broadcast: Broadcast | None = None  # the naive per-superstep record (None: none, after prune)

    def successors(self) -> list[int]:
        t = self.term
        if isinstance(t, Goto):
            return [t.target]
        if isinstance(t, Branch):
            return [t.then, t.other]
        return []

    def term_uses(self) -> set[str]:
        """Variables the terminator reads (a branch condition, returned values)."""
        t = self.term
        if isinstance(t, Branch):
            return ir.reads(t.cond)
        if isinstance(t, Halt) and t.ret is not None:
            return t.ret.uses()
        return set()

    def lines(self) -> list[int]:
        ls = {i.span.line for i in self.instrs} | {x.instr.span.line for x in self.exchange}
        if isinstance(self.term, Branch):
            ls.add(self.term.line)
        if isinstance(self.term, Halt) and self.term.ret is not None:
            ls.add(self.term.ret.span.line)
        return sorted(ls)


@dataclass
class Plan:
    """The superstep plan of one procedure.  It has its own symbol table: a copy of the IR's, to
    which plan passes add their variables (`new_var`), so the IR stays as lowered."""

    proc: ir.ProcIR
    states: list[State]
    vars: dict[str, ir.Ty] = field(default_factory=dict)
    #: the program's whole record: every message field of every exchange (what an -O0 record carries)
    record: tuple[Field, ...] = ()
    opt_level: int = 0
    log: PassLog = field(default_factory=list)  # the passes' notes, in order

    def new_var(self, ty: ir.Ty) -> str:
        """A fresh temporary of type `ty` (`$N`, N above every temporary of the procedure)."""
        nums = [int(m.group(1)) for v in self.vars if (m := re.fullmatch(r"\$(\d+)", v))]
        name = f"${max(nums, default=0) + 1}"
        self.vars[name] = ty
        return name

    def next_spec_id(self) -> int:
        """An exchange id no exchange of the plan has yet."""
        return 1 + max((x.id for s in self.states for x in s.exchange), default=-1)

    def record_sent(self) -> bool:
        """Whether the program's whole record travels (pack has not run): in the naive broadcast or
        in an exchange's transport."""
        return (any(s.broadcast and s.broadcast.record for s in self.states)
                or any(x.record for s in self.states for x in s.exchange))

    def exchange_states(self) -> list[State]:
        return [s for s in self.states if s.exchange]

    def directions(self) -> tuple[bool, bool]:
        """(needs in-direction flow, needs out-direction flow) for naive broadcasts on directed graphs."""
        need_in = need_out = False
        for s in self.states:
            for x in s.exchange:
                i = x.instr
                if isinstance(i, ir.NbrReduce):
                    need_in = need_in or i.dir != "out"
                    need_out = need_out or i.dir != "in"
                elif isinstance(i, ir.EndpointExchange):
                    need_in = need_out = True
        return need_in or not need_out, need_out


def message_fields(instr: ir.Instr) -> dict[str, str]:
    """The message fields (name -> element type) an exchange instruction needs from neighbours, as
    the naive code sends them (before any pass splits its filter)."""
    out: dict[str, str] = {}
    if isinstance(instr, ir.NbrReduce):
        for x in (instr.value, instr.mask):
            if x is None:
                continue
            for n in ir.walk(x):
                if isinstance(n, ir.Load) and n.pos == "nbr":
                    out.setdefault(n.var, n.elem)
                elif isinstance(n, ir.Ids) and n.pos == "nbr" and instr.op in ("argmin", "argmax"):
                    out.setdefault("id", "vid")
        if instr.op in ("argmin", "argmax"):
            out.setdefault("id", "vid")
        if not out:  # the sender computes the message value itself (the paper's naive code)
            out[instr.target] = "int" if instr.op == "count" else instr.elem
    elif isinstance(instr, ir.EndpointExchange):
        for var, _side, elem in instr.fields:
            out.setdefault(var, elem)
    elif isinstance(instr, ir.CommonReduce):
        # a vertex program learns its neighbours' lists from their IDs; the vertex values it reads
        out["id"] = "vid"
        for x in (instr.value, instr.mask):
            for n in ir.walk(x) if x is not None else ():
                if isinstance(n, ir.Load) and n.kind == "vertex":
                    out.setdefault(n.var, n.elem)
    return out


class _Builder:
    def __init__(self, proc: ir.ProcIR) -> None:
        self.proc = proc
        self.states: list[State] = []

    def new(self) -> State:
        s = State(len(self.states))
        self.states.append(s)
        return s

    def seq(self, instrs, cur: State | None) -> State | None:
        for i in instrs:
            if cur is None:
                return None
            if isinstance(i, ir.WhileI):
                header = self.new()
                cur.term = Goto(header.id)
                c_end = self.seq(i.cond_pre, header)
                body, after = self.new(), self.new()
                assert c_end is not None
                c_end.term = Branch(i.cond, body.id, after.id, i.span.line, i.origin)
                b_end = self.seq(i.body, body)
                if b_end is not None:
                    b_end.term = Goto(header.id)
                cur = after
            elif isinstance(i, ir.IfI):
                then, other, join = self.new(), self.new(), self.new()
                cur.term = Branch(i.cond, then.id, other.id, i.span.line, i.origin)
                t_end = self.seq(i.then, then)
                o_end = self.seq(i.other, other)
                for end in (t_end, o_end):
                    if end is not None:
                        end.term = Goto(join.id)
                cur = join if (t_end is not None or o_end is not None) else None
            elif isinstance(i, ir.ReturnI):
                cur.term = Halt(i)
                return None
            elif i.exchange:
                phases: tuple[Phase, ...] = ("request", "reply") if isinstance(i, ir.RemoteRead) else ("",)
                for ph in phases:
                    cur.exchange.append(baseline(-1, i, (), ph))  # numbered and given the record below
                    nxt = self.new()
                    cur.term = Goto(nxt.id)
                    cur = nxt
            else:
                cur.instrs.append(i)
        return cur


def build_plan(proc: ir.ProcIR) -> Plan:
    """Baseline (-O0) plan: one exchange per state, then jump threading and renumbering; every
    exchange gets its baseline record, numbered in plan order."""
    b = _Builder(proc)
    entry = b.new()
    end = b.seq(proc.body, entry)
    if end is not None:
        end.term = Halt(None)
    states = compact(b.states)
    fields: dict[str, str] = {}
    for s in states:
        for x in s.exchange:
            for name, elem in message_fields(x.instr).items():
                fields.setdefault(name, elem)
    record = tuple(fields.items())
    plan = Plan(proc, states, vars=dict(proc.vars), record=record)
    n = 0
    for s in plan.states:
        for k, x in enumerate(s.exchange):
            s.exchange[k] = baseline(n, x.instr, record, x.phase)
            n += 1
        s.broadcast = Broadcast(record) if record else None
    return plan


def compact(states: list[State]) -> list[State]:
    """Thread jumps through empty states, drop unreachable ones, renumber in reachability order."""
    by_id = {s.id: s for s in states}

    def resolve(t: int) -> int:
        seen = set()
        while True:
            s = by_id[t]
            if s.instrs or s.exchange or not isinstance(s.term, Goto) or t in seen:
                return t
            seen.add(t)
            t = s.term.target

    for s in states:
        if isinstance(s.term, Goto):
            s.term = Goto(resolve(s.term.target))
        elif isinstance(s.term, Branch):
            s.term = replace(s.term, then=resolve(s.term.then), other=resolve(s.term.other))
    order: list[int] = []
    stack = [resolve(states[0].id)]
    while stack:
        t = stack.pop()
        if t in order:
            continue
        order.append(t)
        stack.extend(reversed(by_id[t].successors()))
    renum = {old: new for new, old in enumerate(order)}
    out = []
    for old in order:
        s = by_id[old]
        s.id = renum[old]
        if isinstance(s.term, Goto):
            s.term = Goto(renum[s.term.target])
        elif isinstance(s.term, Branch):
            s.term = replace(s.term, then=renum[s.term.then], other=renum[s.term.other])
        out.append(s)
    return out
