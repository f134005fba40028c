"""The superstep plan: a state machine over blocks split at exchanges (docs/language.md, "Execution model").

A *state* runs local instructions, then (optionally) one group of exchanges,
then a transition: `Goto`, `Branch` on a scalar condition (evaluated after the
exchange, like a Pregel master compute), or `Halt`.  Every state that has an
exchange costs one superstep boundary; states without one are jumped through
inside the same superstep.  At -O0 every exchange instruction gets its own
state (a remote read gets two: request and reply).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Literal

from g2pl.compiler import ir
from g2pl.compiler.exchange import Broadcast, Spec, baseline
from g2pl.compiler.limits import deep_stack
from g2pl.compiler.passlog import PassLog


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


#: the part of an exchange a state runs: a remote read's request or reply, or (empty) all of another
Phase = Literal["", "request", "reply"]


@dataclass
class Exch:
    """One exchange in a state's group; `phase` is 'request'/'reply' for remote reads, else ''.
    `spec` says how the runtime carries it out (written by the plan builder and the passes)."""

    instr: ir.Instr
    phase: Phase = ""
    spec: Spec | None = None


@dataclass
class State:
    id: int
    instrs: list[ir.Instr] = field(default_factory=list)
    exchange: list[Exch] = field(default_factory=list)
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
class Field:
    """A message field: a vertex value that travels to neighbours."""

    name: str  # variable (or 'id')
    elem: ir.Elem

    @property
    def size(self) -> int:
        return ir.ELEM_SIZE[self.elem]


@dataclass
class Plan:
    proc: ir.ProcIR
    states: list[State]
    opt_level: int = 0
    log: PassLog = field(default_factory=list)  # the passes' notes, in order

    def next_spec_id(self) -> int:
        """An exchange spec id no exchange of the plan has yet."""
        return 1 + max((x.spec.id for s in self.states for x in s.exchange), default=-1)

    def record_sent(self) -> bool:
        """Whether the program's whole record travels (pack has not run): in the naive broadcast or
        in an exchange's transport."""
        return (any(s.broadcast and s.broadcast.record for s in self.states)
                or any(x.spec.record for s in self.states for x in s.exchange))

    def exchange_states(self) -> list[State]:
        return [s for s in self.states if s.exchange]

    def program_fields(self) -> list[Field]:
        """Every message field of the program (what an -O0 record carries)."""
        seen: dict[str, Field] = {}
        for s in self.states:
            for x in s.exchange:
                for f in exchange_fields(x.instr, self.proc):
                    seen.setdefault(f.name, f)
        return list(seen.values())

    def directions(self) -> tuple[bool, bool]:
        """(needs in-direction flow, needs out-direction flow) for naive broadcasts on directed graphs."""
        need_in = need_out = False
        for s in self.states:
            for x in s.exchange:
                i = x.instr
                if isinstance(i, ir.NbrReduce):
                    if i.out:
                        need_out = True
                    else:
                        need_in = True
                elif isinstance(i, ir.EndpointExchange):
                    need_in = need_out = True
        return need_in or not need_out, need_out


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


def local_readers(plan: Plan, var: str) -> list[ir.Instr] | None:
    """The local instructions reading `var`; None when a terminator or an exchange reads it."""
    found: list[ir.Instr] = []
    for s in plan.states:
        if var in s.term_uses() or any(var in x.instr.uses() for x in s.exchange):
            return None
        found += [i for i in s.instrs if var in i.uses()]
    return found


def exchange_fields(instr: ir.Instr, proc: ir.ProcIR) -> list[Field]:
    """Message fields an exchange instruction needs from neighbours."""
    out: dict[str, Field] = {}
    if isinstance(instr, ir.NbrReduce):
        for x in (instr.value, instr.mask, instr.send):
            if x is None:
                continue
            for n in ir.walk(x):
                if isinstance(n, ir.Load) and n.pos == "nbr":
                    out.setdefault(n.var, Field(n.var, n.elem))
                elif isinstance(n, ir.Ids) and n.pos == "nbr" and instr.op in ("argmin", "argmax"):
                    out.setdefault("id", Field("id", "vid"))
        if instr.op in ("argmin", "argmax"):
            out.setdefault("id", Field("id", "vid"))
        if not out:  # the sender computes the message value itself (the paper's naive code)
            out[instr.target] = Field(instr.target, "int" if instr.op == "count" else instr.elem)
    elif isinstance(instr, ir.EndpointExchange):
        for var, _side, elem in instr.fields:
            out.setdefault(var, Field(var, elem))
    elif isinstance(instr, ir.CommonReduce):
        # a vertex program learns its neighbours' lists from their IDs; the vertex values it reads
        out["id"] = Field("id", "vid")
        for x in (instr.value, instr.mask):
            for n in ir.walk(x) if x is not None else ():
                if isinstance(n, ir.Load) and n.kind == "vertex":
                    out.setdefault(n.var, Field(n.var, n.elem))
    return list(out.values())


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
                phases = ("request", "reply") if isinstance(i, ir.RemoteRead) else ("",)
                for ph in phases:
                    cur.exchange.append(Exch(i, ph))
                    nxt = self.new()
                    cur.term = Goto(nxt.id)
                    cur = nxt
            else:
                cur.instrs.append(i)
        return cur


def build_plan(proc: ir.ProcIR) -> Plan:
    """Baseline (-O0) plan: one exchange per state, then jump threading and renumbering."""
    b = _Builder(proc)
    entry = b.new()
    end = b.seq(proc.body, entry)
    if end is not None:
        end.term = Halt(None)
    plan = Plan(proc, compact(b.states))
    record = tuple((f.name, f.elem) for f in plan.program_fields())
    exchanges = [(s, k, x) for s in plan.states for k, x in enumerate(s.exchange)]
    for n, (s, k, x) in enumerate(exchanges):
        s.exchange[k] = Exch(x.instr, x.phase, baseline(n, x.instr, record))
    for s in plan.states:
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


# ---------------------------------------------------------------- printing


def _src(plan: Plan, line: int) -> str:
    lines = plan.proc.source_lines
    return lines[line - 1].strip() if 1 <= line <= len(lines) else ""


def combiner_text(op: str) -> str:
    """How a neighbourhood aggregation's values are reduced: by a combiner, or (`mode`) per receiver."""
    if op == "mode":
        return "no combiner: each receiver counts its neighbours' values, most frequent wins, ties to the smaller"
    return f"combiner: {op}"


def describe_exchange(x: Exch, proc: ir.ProcIR) -> str:
    i = x.instr
    if isinstance(i, ir.NbrReduce):
        fields = exchange_fields(i, proc)
        fl = ", ".join(f"{f.name}:{f.elem}" for f in fields) or "(none: constant per record)"
        send = f"; sent if {ir.show_ex(i.send)}" if i.send is not None else ""
        send += "; pushed when the senders are few, else pulled" if i.push else ""
        send += f"; pulled only at receivers where {ir.show_ex(i.recv)}" if i.recv is not None else ""
        send += f"; sent only to receivers in {i.known}" if i.known is not None else ""
        cond = f"; filter {ir.show_ex(i.mask)}" if i.mask is not None else ""
        return (f"messages along {'out' if i.out else 'in'}-edges -> {i.target} = {i.op} of {ir.show_ex(i.value)}"
                f" [fields {fl}{send}{cond}] ({combiner_text(i.op)})")
    if isinstance(i, ir.CommonReduce):
        cond = f"; filter {ir.show_ex(i.mask)}" if i.mask is not None else ""
        within = f"; triangles within {i.within}" if i.within is not None else ""
        sides = "/".join("out" if o else "in" for o in i.outs)
        return (f"common {sides}-neighbours of edge endpoints -> {i.target} = {i.op} of {ir.show_ex(i.value)}"
                f"{within}{cond}")
    if isinstance(i, ir.GlobalReduce):
        cond = f" where {ir.show_ex(i.mask)}" if i.mask is not None else ""
        return f"aggregator {i.target} = {i.op} over {'vertices' if i.dom == 'V' else 'edges'} of {ir.show_ex(i.value)}{cond}"
    if isinstance(i, ir.EndpointExchange):
        where = f" (records only along edges where {ir.show_ex(i.need)})" if x.spec.need else ""
        if i.sent:
            where += " (each value only where " + "; ".join(
                f"{ir.show_ex(c)}" for c in i.sent if c is not None) + ")"
        if i.keep:
            where += f" (only values changed since the last run; copies kept in {', '.join(i.keep)})"
        if i.within is not None:
            return (f"endpoint exchange: {i.within} = edges with {i.conjunction()} "
                    f"(re-checked only on its previous edges while the sets shrink){where}")
        return "endpoint exchange: " + ", ".join(f"{t} = {v}@{s}" for (v, s, _), t in zip(i.fields, i.targets)) + where
    if isinstance(i, ir.RemoteRead):
        if x.phase == "request":
            return f"remote-read request: ask owner of {ir.show_ex(i.index)} for {i.var} (for {i.target})"
        return f"remote-read reply: {i.target} = {i.var}[...]"
    if isinstance(i, ir.RemoteMark):
        return f"remote mark: {i.target} = vertices with ID {ir.show_ex(i.index)}"
    if isinstance(i, ir.KeyedReduce):
        return f"keyed aggregation: {i.target} = {i.describe()}"
    return ir.show_instr(i)


@deep_stack
def render(plan: Plan) -> str:
    """Human-readable superstep plan (for `g2pl plan` and `g2plc --emit plan`)."""
    proc = plan.proc
    out = [f"plan for procedure `{proc.name}` ({proc.file}), -O{plan.opt_level}: "
           f"{len(plan.states)} states, {len(plan.exchange_states())} with an exchange"]
    fields = plan.program_fields()
    if any(s.broadcast and s.broadcast.record for s in plan.states):
        rb = sum(f.size for f in fields)
        fl = ", ".join(f"{f.name}:{f.elem}" for f in fields) or "none"
        out.append(f"record layout (every exchange superstep, every adjacency entry): {fl} = {rb} bytes")
    for note in plan.log:
        out.append(f"pass: {note}")
    for s in plan.states:
        ls = s.lines()
        where = f"lines {ls[0]}-{ls[-1]}" if len(ls) > 1 and ls[0] != ls[-1] else (f"line {ls[0]}" if ls else "")
        kind = "superstep block" if s.exchange else "local block"
        out.append("")
        out.append(f"state {s.id} ({kind}{', ' + where if where else ''})")
        for i in s.instrs:
            out.append(f"  {i.span.line:>4} | {_src(plan, i.span.line)}")
            out.append(f"       -> {ir.show_instr(i)}")
        for x in s.exchange:
            out.append(f"  {x.instr.span.line:>4} | {_src(plan, x.instr.span.line)}")
            out.append(f"       => {describe_exchange(x, proc)}")
            if x.spec.kind in ("nbr", "endpoint", "common"):
                out.append(f"          X{x.spec.id}: {x.spec.describe()}")
        if s.exchange:
            quiet = s.broadcast is None and all(isinstance(x.instr, ir.GlobalReduce) for x in s.exchange)
            out.append("  -- barrier (end of superstep)" + ("; aggregators only, no records" if quiet else "") + " --")
        t = s.term
        if isinstance(t, Goto):
            out.append(f"  then -> state {t.target}")
        elif isinstance(t, Branch):
            out.append(f"  then if {ir.show_ex(t.cond)} (line {t.line}) -> state {t.then} else -> state {t.other}")
        elif isinstance(t, Halt):
            if t.ret is not None:
                out.append("  then halt, returning " + ", ".join(v.name for v in t.ret.values))
            else:
                out.append("  then halt")
    return "\n".join(out)
