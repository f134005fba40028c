"""`g2pl explain`: the superstep plan read back per source statement.

For every statement of the procedure: the plan state(s) its code runs in and
the first superstep those run in, whether it is local or ends a superstep with
an exchange, what that costs (message fields and their bytes, aggregators,
endpoint exchanges, remote reads) and which optimizer passes touched it (the
plan's pass log).

Every instruction names the statement it was lowered from by id (its
`origin`: the statement's index in `ast.walk_statements`, the order of the
report's rows), including code inlined from functions (whose spans point into
the function body) and what the passes derived from it; every pass-log note
names the statements it is about the same way (`PassNote.origins`).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from g2pl.compiler import ast as A
from g2pl.compiler import ir
from g2pl.compiler.exchange import Exchange
from g2pl.compiler.limits import deep_stack
from g2pl.compiler.passlog import PassNote
from g2pl.compiler.plan import Branch, Halt, Plan, State
from g2pl.contract import record_size

STMT_WIDTH = 44


@dataclass
class Row:
    stmt: A.Stmt
    text: str
    loop: int | None  # line of the innermost enclosing `while`
    calls: list[str] = field(default_factory=list)
    states: set[int] = field(default_factory=set)
    local: list[ir.Instr] = field(default_factory=list)
    exchanges: list[tuple[State, Exchange]] = field(default_factory=list)
    opts: list[PassNote] = field(default_factory=list)


# ---------------------------------------------------------------- statements


def _slice(src: list[str], sp) -> str:
    if not 1 <= sp.line <= len(src):
        return ""
    line = src[sp.line - 1]
    if sp.end_line == sp.line:
        return line[sp.col - 1:sp.end_col - 1].strip()
    return line[sp.col - 1:].strip() + " ..."


def _text(s: A.Stmt, src: list[str]) -> str:
    if isinstance(s, A.While):
        return f"while ({_slice(src, s.cond.span)})"
    if isinstance(s, A.If):
        return f"if ({_slice(src, s.cond.span)})"
    return _slice(src, s.span)


def _rows(proc: A.Procedure, src: list[str]) -> list[Row]:
    """A row per statement, indexed by statement id (`ir.Instr.origin`)."""
    return [Row(s, _text(s, src), loop.span.line if loop is not None else None)
            for s, loop in A.walk_statements(proc.body)]


def _calls(e, module: A.Module, seen: list[str]) -> None:
    """User functions called by expression `e`, transitively, in first-call order."""
    if isinstance(e, A.Call) and e.func in module.functions and e.func not in seen:
        seen.append(e.func)
        _calls(module.functions[e.func].body, module, seen)
    for v in vars(e).values() if hasattr(e, "__dataclass_fields__") else ():
        for x in v if isinstance(v, tuple) else (v,):
            if isinstance(x, (A.Expr, A.Generator, A.Filter)):
                _calls(x, module, seen)


def _own_exprs(s: A.Stmt) -> tuple:
    if isinstance(s, A.Assign):
        return (s.value,)
    if isinstance(s, (A.While, A.If)):
        return (s.cond,)
    if isinstance(s, A.Return):
        return s.values
    return ()


# ---------------------------------------------------------------- plan facts


def _first_supersteps(plan: Plan) -> dict[int, int]:
    """The first superstep (0-based, as in the statistics) in which each state can run."""
    by_id = {s.id: s for s in plan.states}
    if not plan.states:
        return {}
    dist = {plan.states[0].id: 0}
    todo = deque([plan.states[0].id])
    while todo:  # 0-1 BFS: leaving a state with an exchange starts a new superstep
        sid = todo.popleft()
        s = by_id[sid]
        w = 1 if s.exchange else 0
        for n in s.successors():
            d = dist[sid] + w
            if n not in dist or d < dist[n]:
                dist[n] = d
                (todo.append if w else todo.appendleft)(n)
    return dist


def _kind(x: Exchange, n: int = 1) -> str:
    one, many = x.words
    if x.phase and n == 1:
        return f"{one} {x.phase}"
    return one if n == 1 else f"{n} {many}"


def _attach_log(plan: Plan, rows: list[Row]) -> list[PassNote]:
    """Give each pass-log note to the statements it names; returns the notes naming none."""
    general = []
    for note in plan.log:
        for origin in dict.fromkeys(note.origins):
            rows[origin].opts.append(note)
        if not note.origins:
            general.append(note)
    return general


def _place(plan: Plan, rows: list[Row]) -> None:
    """Give every instruction of the plan, and every state's branch or return, to its statement's row."""
    for st in plan.states:
        for i in st.instrs:
            rows[i.origin].states.add(st.id)
            rows[i.origin].local.append(i)
        for x in st.exchange:
            rows[x.instr.origin].states.add(st.id)
            rows[x.instr.origin].exchanges.append((st, x))
        t = st.term
        if isinstance(t, Branch):
            rows[t.origin].states.add(st.id)
        elif isinstance(t, Halt) and t.ret is not None:
            rows[t.ret.origin].states.add(st.id)


# ---------------------------------------------------------------- the report


@deep_stack
def explain(module: A.Module, comp) -> str:
    """The per-statement report for a `Compilation` of one procedure of `module`."""
    plan: Plan = comp.plan
    rows = _rows(module.procedures[plan.proc.name], module.source.splitlines())
    for r in rows:
        for e in _own_exprs(r.stmt):
            _calls(e, module, r.calls)
    _place(plan, rows)
    general = _attach_log(plan, rows)
    first = _first_supersteps(plan)
    return _render(module, plan, rows, general, first)


def _render(module: A.Module, plan: Plan, rows: list[Row], general: list[PassNote], first: dict[int, int]) -> str:
    proc = plan.proc
    n_x = len(plan.exchange_states())
    out = [f"explain: procedure `{proc.name}` ({proc.file}), -O{plan.opt_level}: {len(plan.states)} states, "
           f"{n_x} end with an exchange (a superstep boundary); `g2pl plan` shows each state"]
    if not plan.record_sent():
        out.append("records: packed per superstep, only the fields each exchange needs (bools as bits)")
    else:
        fl = ", ".join(f"{n}:{e}" for n, e in plan.record) or "none"
        rb = record_size(plan.record)
        out.append(f"records: every exchange superstep sends the whole program record along every adjacency "
                   f"entry: {fl} = {rb} B")
    if not plan.log:
        out.append("optimizations: none (-O0)")
    for entry in general:
        out.append(f"pass: {entry}")
    out.append("")
    head = f"{'LINE':>4}  {'STATEMENT':<{STMT_WIDTH}}  {'STATES':<7}  {'SUPERSTEP':<14}  RUNS"
    out.append(head)
    out.append("-" * (len(head) + 24))
    for r in rows:
        text = r.text if len(r.text) <= STMT_WIDTH else r.text[:STMT_WIDTH - 3] + "..."
        states = ",".join(str(s) for s in sorted(r.states)) or "-"
        steps = sorted({first[s] for s in r.states if s in first})
        step = "-" if not steps else (str(steps[0]) if len(steps) == 1 else f"{steps[0]}-{steps[-1]}")
        if r.loop is not None and steps:
            step += f" (loop L{r.loop})" if not isinstance(r.stmt, A.While) else " (loop)"
        if r.exchanges:
            kinds: dict[type, list[Exchange]] = {}
            for _s, x in r.exchanges:
                kinds.setdefault(type(x), []).append(x)
            runs = "exchange: " + ", ".join(_kind(xs[0], len(xs)) for xs in kinds.values())
        elif isinstance(r.stmt, (A.While, A.If)):
            runs = "local: branch" if r.states else "-"
        elif r.local or r.states:
            runs = "local"
        else:
            runs = "no code (optimized away)"
        out.append(f"{r.stmt.span.line:>4}  {text:<{STMT_WIDTH}}  {states:<7}  {step:<14}  {runs}")
        pad = " " * 6
        if r.calls:
            where = ", ".join(f"{f} (L{module.functions[f].span.line})" for f in r.calls)
            out.append(f"{pad}inlines  {where}")
        for st, x in r.exchanges:
            phase = f" {x.phase}" if x.phase else ""
            out.append(f"{pad}state {st.id}: {x.words[0]}{phase}: {x.summary()}")
            out.append(f"{pad}  cost   {x.layout()}")
        for entry in r.opts:
            out.append(f"{pad}opt      {entry}")
    return "\n".join(out)
