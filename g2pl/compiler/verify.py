"""IR and plan verifier: the invariants the passes and code generation rely on.

`verify_plan` runs after planning and (in tests) between the plan passes;
`verify_ir` between lowering and the IR passes.  A pass that breaks an
invariant fails at the pass, not at run time.  The invariants:

* **Words**: every field typed with one of `ir`'s `Literal` aliases (a kind,
  an element type, a position, a domain, an operator) holds one of its words,
  in every expression, instruction and type of the symbol table.
* **Origins**: every instruction names a source statement (its `origin` is
  an index into `ProcIR.statements`), which `g2pl explain` relies on.
* **Expressions** read known variables with their own kind and element type
  (a `Load`'s element type is its variable's), at positions valid in their
  domain (`S`, `V`, `E`, or `A` inside neighbourhood aggregations).
* **Instructions** define known variables of the kind their domain computes;
  every condition (a mask, a prune `send` condition, a direction `recv`
  filter, an endpoint `need` condition, a branch) is a bool expression.
* **Exchanges**: a prune `send` condition reads only the sending neighbour
  and scalars and draws no random numbers (each sender evaluates it over its
  own vertices); a `recv` filter reads only the receiver (its own vertex
  values and scalars) and draws none; an endpoint `need` condition reads edge
  values and scalars only, not the values the exchange brings, and draws no
  random numbers once prune is on; every endpoint field names a vertex
  variable of its element type, read at `src` or `dst`, and its target is an
  edge variable of the same type (an edgeset `within` target: an edge set,
  every field a vertex set); a remote read reads a graph of its own type.
  Every message field of the plan (`plan.exchange_fields`) is a vertex value of
  the element type its variable has (or the vid `id`), so no two exchanges
  give one field two layouts.
* **Definite assignment**: every variable read is assigned on every path from
  the start to the read (parameters and the `@` built-ins count as assigned).
  This is the rule lowering enforces on source variables (`x` may be read
  before it is assigned), so it is sound for the whole IR: a variable assigned
  only inside a loop body or one branch of an `if` is not assigned after it,
  and a program reading it there was refused.  On the plan it is a forward
  must-analysis over the state machine (the join of a state's predecessors is
  the intersection); the exchanges of one group run together, so none of them
  may read what another of the group defines (a terminator runs after the
  group and may).  A remote read's request reads its index; its reply, the
  graph it reads, and only the reply defines the target.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Literal, get_args, get_origin, get_type_hints

from g2pl.compiler import exchange, ir
from g2pl.compiler.plan import Branch, Exch, Halt, Plan, State, exchange_fields

_POSITIONS: dict[ir.ExDom, set[ir.Pos]] = {
    "S": {"here"}, "V": {"here"}, "E": {"here", "src", "dst"}, "A": {"here", "nbr", "self", "edge"},
    "W": {"here", "src", "dst", "nbr", "src_nbr", "dst_nbr"},
}

# what a value may widen to
_WIDER: dict[ir.Elem, tuple[ir.Elem, ...]] = {"int": ("vid", "float"), "vid": ("float",), "bool": (), "float": ()}


class PlanError(AssertionError):
    """An internal invariant of the IR or the plan is broken (a compiler bug, never a user error)."""


# ---------------------------------------------------------------- words and origins


def _misfit(value: object, hint: object) -> tuple[object, tuple] | None:
    """A word in `value` that the `Literal` parts of type `hint` do not allow, with the words they do
    (None: all fit; parts of other types are the other checks' business)."""
    origin, args = get_origin(hint), get_args(hint)
    if origin is Literal:
        return None if value in args else (value, args)
    if origin is tuple and isinstance(value, tuple):
        parts = args[:1] * len(value) if len(args) == 2 and args[1] is Ellipsis else args
        return next((m for v, a in zip(value, parts) if (m := _misfit(v, a)) is not None), None)
    return None


def _has_words(hint: object) -> bool:
    """Does type `hint` restrict some part of a value to fixed words?"""
    return get_origin(hint) is Literal or any(_has_words(a) for a in get_args(hint))


@functools.cache
def _word_fields(cls: type) -> tuple[tuple[str, object], ...]:
    """(name, type) of the fields of node class `cls` whose type has `Literal` parts (once per class)."""
    hints = get_type_hints(cls)
    return tuple((f.name, hints[f.name]) for f in dataclasses.fields(cls) if _has_words(hints[f.name]))


def _check_words(node: object, where: str) -> None:
    """Every field of `node` typed with a `Literal` alias of `ir` holds one of its words."""
    for name, hint in _word_fields(type(node)):
        bad = _misfit(getattr(node, name), hint)
        if bad is not None:
            raise PlanError(f"{where}: {type(node).__name__}.{name} holds {bad[0]!r}, not one of "
                            f"{', '.join(map(str, bad[1]))}")


def _check_symbols(proc: ir.ProcIR) -> None:
    """Every type of the symbol table is made of allowed words."""
    for name, ty in proc.vars.items():
        _check_words(ty, f"variable {name}")


def _check_origin(i: ir.Instr | Branch, proc: ir.ProcIR, where: str) -> None:
    """`i` names one of the procedure's statements (what `g2pl explain` and the pass log attribute it to)."""
    if not 0 <= i.origin < len(proc.statements):
        raise PlanError(f"{where}: origin {i.origin} names no statement (the procedure has "
                        f"{len(proc.statements)})")


# ---------------------------------------------------------------- expressions and instructions


def _check_ex(e: ir.Ex | None, dom: ir.ExDom, vars_: dict[str, ir.Ty], where: str, bool_: bool = False) -> None:
    if e is None:
        return
    if bool_ and e.elem != "bool":
        raise PlanError(f"{where}: condition {ir.show_ex(e)} is {e.elem}, not bool")
    for n in ir.walk(e):
        _check_words(n, where)
        if isinstance(n, ir.Load):
            ty = vars_.get(n.var)
            if ty is None and n.var != "@id":
                raise PlanError(f"{where}: reads unknown variable {n.var}")
            if ty is not None and ty.kind != n.kind:
                raise PlanError(f"{where}: reads {n.var} as {n.kind}, but it is {ty.kind}")
            if ty is not None and ty.elem != n.elem:
                raise PlanError(f"{where}: reads {n.var} as {n.elem}, but it holds {ty.elem}")
            if n.kind == "scalar":
                continue
            if n.pos not in _POSITIONS[dom]:
                raise PlanError(f"{where}: position {n.pos} is not valid in domain {dom}")
            if dom == "V" and n.kind != "vertex" or dom == "E" and n.kind != "edge":
                raise PlanError(f"{where}: {n.kind} variable {n.var} read in domain {dom}")
            if dom == "A" and (n.pos == "edge") != (n.kind == "edge"):
                raise PlanError(f"{where}: {n.kind} variable {n.var} read at {n.pos}")
            if dom == "W" and (n.pos in ("here", "src_nbr", "dst_nbr")) != (n.kind == "edge"):
                raise PlanError(f"{where}: {n.kind} variable {n.var} read at {n.pos}")
        elif isinstance(n, ir.Ids) and (n.pos not in _POSITIONS[dom] | ({"src", "dst"} if dom == "E" else set())
                                        or dom == "W" and n.pos not in ("src", "dst", "nbr")):
            raise PlanError(f"{where}: id at {n.pos} in domain {dom}")


def _target(var: str, kind: ir.Kind, vars_: dict[str, ir.Ty], where: str, elem: ir.Elem | None = None) -> None:
    ty = vars_.get(var)
    if ty is None:
        raise PlanError(f"{where}: defines unknown variable {var}")
    if ty.kind != kind or elem is not None and ty.elem != elem:
        want = ir.Ty(kind, elem or ty.elem)
        raise PlanError(f"{where}: {var} is {ty.word()}, but the instruction makes {want.word()}")


def _check_instr(i: ir.Instr, vars_: dict[str, ir.Ty], where: str, prune: bool = False) -> None:
    where = f"{where}: {ir.show_instr(i).splitlines()[0].strip()}"
    _check_words(i, where)
    for d in i.defs():
        if d not in vars_:
            raise PlanError(f"{where}: defines unknown variable {d}")
    if isinstance(i, ir.Compute):
        _check_ex(i.ex, i.dom, vars_, where)
        if ir.DOMAIN_OF_KIND[vars_[i.target].kind] != i.dom:
            raise PlanError(f"{where}: {i.target} is {vars_[i.target].kind} but computed over {i.dom}")
        if i.ex.elem != vars_[i.target].elem and vars_[i.target].elem not in _WIDER[i.ex.elem]:
            raise PlanError(f"{where}: {i.target} holds {vars_[i.target].elem}, assigned {i.ex.elem}")
    elif isinstance(i, ir.NbrReduce):
        _target(i.target, "vertex", vars_, where, i.elem)
        _check_ex(i.value, "A", vars_, where)
        _check_ex(i.mask, "A", vars_, where, bool_=True)
        _check_ex(i.send, "A", vars_, where, bool_=True)
        if i.send is not None and not ir.sender_only(i.send):
            raise PlanError(f"{where}: send condition {ir.show_ex(i.send)} reads more than the sender")
        _check_ex(i.along, "A", vars_, where, bool_=True)
        if i.known is not None:
            _target(i.known, "vertex", vars_, where, "bool")
        if i.along is not None and not ir.edge_only(i.along):
            raise PlanError(f"{where}: edge condition {ir.show_ex(i.along)} reads more than the edge")
        _check_ex(i.recv, "V", vars_, where, bool_=True)
        if i.recv is not None and not ir.receiver_only(i.recv):
            raise PlanError(f"{where}: receiver filter {ir.show_ex(i.recv)} reads more than the receiver")
    elif isinstance(i, ir.CommonReduce):
        _target(i.target, "edge", vars_, where, i.elem)
        _check_ex(i.value, "W", vars_, where)
        _check_ex(i.mask, "W", vars_, where, bool_=True)
        if ir.has_rand(i.value) or ir.has_rand(i.mask):
            raise PlanError(f"{where}: draws random numbers per common neighbour")
        if i.within is not None:
            _target(i.within, "edge", vars_, where, "bool")
    elif isinstance(i, ir.GlobalReduce):
        _target(i.target, "scalar", vars_, where, i.elem)
        _check_ex(i.value, i.dom, vars_, where)
        _check_ex(i.mask, i.dom, vars_, where, bool_=True)
    elif isinstance(i, ir.EndpointExchange):
        _check_endpoints(i, vars_, where, prune)
    elif isinstance(i, ir.RemoteRead):
        _target(i.target, {"V": "vertex", "E": "edge"}[i.dom], vars_, where, i.elem)
        if i.var == "@id":  # the built-in ID graph
            if i.var_kind != "vertex" or i.elem != "vid":
                raise PlanError(f"{where}: reads the IDs as {i.var_kind} {i.elem}")
        else:
            _target(i.var, i.var_kind, vars_, where, i.elem)
        _check_ex(i.index, i.dom, vars_, where)
    elif isinstance(i, ir.RemoteMark):
        _target(i.target, "vertex", vars_, where, "bool")
        _check_ex(i.index, i.dom, vars_, where)
        _check_ex(i.mask, i.dom, vars_, where, bool_=True)
    elif isinstance(i, ir.KeyedReduce):
        _check_keyed(i, vars_, where)
    elif isinstance(i, ir.MarkEndpoints):
        _target(i.target, "vertex", vars_, where, "bool")
        _check_ex(i.mask, "E", vars_, where, bool_=True)
        if not i.sides or not set(i.sides) <= {"src", "dst"}:
            raise PlanError(f"{where}: endpoint sides {i.sides}")


def _check_keyed(i: ir.KeyedReduce, vars_: dict[str, ir.Ty], where: str) -> None:
    """A keyed aggregation: vid keys, and a result kind its form allows (an edge set: the winners of an
    argmin/argmax over edges; a scalar: a payload argmin/argmax without keys; else one value per key)."""
    _target(i.target, i.result, vars_, where, i.elem)
    for x in (i.value, i.payload, *i.keys):
        _check_ex(x, i.dom, vars_, where)
    _check_ex(i.mask, i.dom, vars_, where, bool_=True)
    if any(k.elem not in ("vid", "int") for k in i.keys):
        raise PlanError(f"{where}: a key is not a vid")
    arg = i.op in ("argmin", "argmax")
    want = ("edge" if i.dom == "E" and arg and i.payload is None else "vertex" if i.keys else "scalar")
    if i.result != want or (i.payload is not None and not arg) or (not i.keys and not arg):
        raise PlanError(f"{where}: a keyed {i.op} over {i.dom} with {len(i.keys)} keys makes {i.result}")
    if i.payload is not None and i.payload.elem != i.elem:
        raise PlanError(f"{where}: payload {i.payload.elem}, target {i.elem}")


def _check_endpoints(i: ir.EndpointExchange, vars_: dict[str, ir.Ty], where: str, prune: bool) -> None:
    if not i.fields:
        raise PlanError(f"{where}: an endpoint exchange without fields")
    for var, side, elem in i.fields:
        if side not in ("src", "dst"):
            raise PlanError(f"{where}: field {var} read at {side}, not at an endpoint")
        _target(var, "vertex", vars_, where, elem)
    if i.within is not None:
        _target(i.within, "edge", vars_, where, "bool")
        if any(elem != "bool" for _v, _s, elem in i.fields):
            raise PlanError(f"{where}: the edge set {i.within} is a conjunction of non-bool fields")
    else:
        if len(i.targets) != len(i.fields):
            raise PlanError(f"{where}: {len(i.fields)} fields for {len(i.targets)} targets")
        for (_var, _side, elem), t in zip(i.fields, i.targets):
            _target(t, "edge", vars_, where, elem)
    if i.keep:
        if len(i.keep) != len({var for var, _s, _e in i.fields}):
            raise PlanError(f"{where}: {len(i.keep)} kept copies for its fields")
        elems = dict((var, elem) for var, _s, elem in i.fields)
        for var, t in zip(dict.fromkeys(var for var, _s, _e in i.fields), i.keep):
            _target(t, "vertex", vars_, where, elems[var])
    if i.sent:
        if len(i.sent) != len(i.targets) or i.within is not None:
            raise PlanError(f"{where}: {len(i.sent)} send conditions for {len(i.targets)} reads")
        for c, t in zip(i.sent, i.targets):
            _check_ex(c, "E", vars_, where, bool_=True)
            if c is not None and ir.reads(c) - {t}:
                raise PlanError(f"{where}: send condition {ir.show_ex(c)} reads more than {t}")
    _check_ex(i.need, "E", vars_, where, bool_=True)
    if i.need is not None:
        brought = set(i.defs()) & ir.reads(i.need)
        if brought:
            raise PlanError(f"{where}: need condition reads {', '.join(sorted(brought))}, which the exchange brings")
        if prune and ir.has_rand(i.need):
            raise PlanError(f"{where}: need condition draws random numbers a second time")


# ---------------------------------------------------------------- definite assignment


def _check_spec(x: Exch, where: str) -> None:
    """The exchange's spec says what its instruction needs: the runtime trusts the spec alone."""
    i, sp = x.instr, x.spec
    if sp is None:
        raise PlanError(f"{where}: exchange {ir.show_instr(i)} has no spec")
    want = {ir.NbrReduce: "nbr", ir.EndpointExchange: "endpoint", ir.GlobalReduce: "aggregate",
            ir.RemoteRead: "remote_read", ir.RemoteMark: "remote_mark", ir.CommonReduce: "common",
            ir.KeyedReduce: "keyed"}[type(i)]
    bad = [] if sp.kind == want else [f"kind {sp.kind}, not {want}"]
    if isinstance(i, ir.NbrReduce):
        bad += [what for what, ok in (
            ("per_entry", sp.per_entry == (not exchange.sender_side(i))),
            ("presence", sp.presence == (i.send is not None and sp.counted)),
            ("policy", (sp.policy == "push-pull") == i.push),
            ("recv", sp.recv == (i.recv is not None)),
            ("along", sp.along == (i.along is not None)),
            ("known", sp.known == (i.known or "")),
            ("op/elem/out", (sp.op, sp.elem, sp.out) == (i.op, i.elem, i.out))) if not ok]
    if isinstance(i, ir.EndpointExchange):
        fields, reads = exchange.endpoint_fields(i)
        bad += [what for what, ok in (
            ("fields", [n for n, _e in sp.fields] == [n for n, _e in fields] and sp.reads == reads),
            ("need", not sp.need or i.need is not None),
            ("within", sp.within == (i.within is not None)),
            ("sent", sp.sent == bool(i.sent) and (not i.sent or sp.need)),
            ("delta", sp.delta == bool(i.keep) and not (sp.delta and (sp.need or sp.transport == "entries"))),
        ) if not ok]
    if isinstance(i, ir.CommonReduce):
        vf, ef = exchange.common_fields(i)
        bad += [what for what, ok in (
            ("fields", (sp.fields, sp.edge_fields) == (vf, ef)),
            ("need", not sp.need or i.within is not None),
            ("op/elem/outs", (sp.op, sp.elem, sp.outs) == (i.op, i.elem, i.outs))) if not ok]
    if isinstance(i, ir.KeyedReduce):
        bad += [] if (sp.op, sp.elem, sp.dom, sp.result, sp.nkeys, sp.payload) == (
            i.op, i.elem, i.dom, i.result, len(i.keys), i.payload is not None) else ["op/elem/dom/result/keys"]
    if sp.transport != "packed" and sp.kind in ("nbr", "endpoint") and not sp.record and sp.fields:
        bad.append("a record transport without the program record")
    if bad:
        raise PlanError(f"{where}: exchange {ir.show_instr(i)}: spec X{sp.id} disagrees: {', '.join(bad)}")


def _initially(proc: ir.ProcIR) -> set[str]:
    return {name for name, _ty in proc.params}


def _check_reads(reads: set[str], defined: set[str], where: str) -> None:
    missing = sorted(v for v in reads - defined if not v.startswith("@"))
    if missing:
        raise PlanError(f"{where}: reads {', '.join(missing)} before it is assigned on some path")


def _ir_block(instrs, defined: set[str], proc: ir.ProcIR, where: str) -> tuple[set[str], bool]:
    """Check a structured block; returns (definitely assigned after it, ends every path with a return)."""
    vars_ = proc.vars
    for i in instrs:
        w = f"{where} line {i.span.line}"
        _check_origin(i, proc, w)
        if isinstance(i, ir.WhileI):
            defined, _ = _ir_block(i.cond_pre, defined, proc, w)
            _check_ex(i.cond, "S", vars_, w, bool_=True)
            _check_reads(ir.reads(i.cond), defined, w)
            _ir_block(i.body, set(defined), proc, w)  # the body's assignments may not have run after it
        elif isinstance(i, ir.IfI):
            _check_ex(i.cond, "S", vars_, w, bool_=True)
            _check_reads(ir.reads(i.cond), defined, w)
            a1, r1 = _ir_block(i.then, set(defined), proc, w)
            a2, r2 = _ir_block(i.other, set(defined), proc, w)
            if r1 and r2:
                return a1 | a2, True
            defined = a2 if r1 else a1 if r2 else a1 & a2
        elif isinstance(i, ir.ReturnI):
            for v in i.values:
                _check_words(v.ty, w)
            _check_reads(i.uses(), defined, w)
            return defined, True
        else:
            _check_instr(i, vars_, w)
            _check_reads(i.uses(), defined, w)
            defined = defined | set(i.defs())
    return defined, False


def verify_ir(proc: ir.ProcIR) -> None:
    """Raise `PlanError` if the (structured) IR is malformed or reads a variable before it is assigned."""
    for name, ty in proc.params:
        if proc.vars.get(name) != ty or ty.kind != "scalar":
            raise PlanError(f"parameter {name}: {ty} but the symbol table says {proc.vars.get(name)}")
    _check_symbols(proc)
    _ir_block(proc.body, _initially(proc), proc, f"procedure {proc.name}")


def _exch_reads(x: Exch) -> set[str]:
    i = x.instr
    if isinstance(i, ir.RemoteRead):
        return ir.reads(i.index) if x.phase == "request" else {i.var}
    return i.uses()


def _exch_defs(x: Exch) -> set[str]:
    return set() if x.phase == "request" else set(x.instr.defs())


def _state_out(s: State, defined: set[str], check: bool) -> set[str]:
    d = set(defined)
    for i in s.instrs:
        if check:
            _check_reads(i.uses(), d, f"state {s.id}: {ir.show_instr(i).splitlines()[0].strip()}")
        d |= set(i.defs())
    for x in s.exchange:  # one group: each reads what held before the group
        if check:
            _check_reads(_exch_reads(x), d, f"state {s.id}: exchange {ir.show_instr(x.instr).splitlines()[0].strip()}")
    for x in s.exchange:
        d |= _exch_defs(x)
    if check:
        _check_reads(s.term_uses(), d, f"state {s.id}: terminator")
    return d


def assigned_into(plan: Plan) -> dict[int, set[str]]:
    """The variables assigned on every path into each reachable state (a forward must-analysis: a
    state's input shrinks to what every predecessor assigns)."""
    if not plan.states:
        return {}
    into: dict[int, set[str]] = {0: _initially(plan.proc)}
    todo = [0]
    while todo:
        sid = todo.pop()
        out = _state_out(plan.states[sid], into[sid], check=False)
        for n in plan.states[sid].successors():
            new = out if n not in into else into[n] & out
            if n not in into or new != into[n]:
                into[n] = new
                todo.append(n)
    return into


def assigned_at_exchange(plan: Plan, s: State, into: dict[int, set[str]]) -> set[str]:
    """The variables assigned on every path to state `s`'s exchange group (what it may read)."""
    return set(into.get(s.id, set())).union(*(i.defs() for i in s.instrs))


def readable_at_exchange(plan: Plan, s: State, names: set[str], into: dict[int, set[str]]) -> bool:
    """Can a receiver filter of state `s`'s exchange group read `names`?  Each must be assigned on every
    path to the group (merge may move an exchange above an assignment), and no exchange of the group
    may define one (it would be read before the group has run)."""
    return names <= assigned_at_exchange(plan, s, into) and not names & {d for x in s.exchange
                                                                         for d in x.instr.defs()}


def _definitely_assigned(plan: Plan) -> None:
    for sid, d in assigned_into(plan).items():
        _state_out(plan.states[sid], d, check=True)


def verify_plan(plan: Plan) -> None:
    """Raise `PlanError` if the plan is malformed."""
    states = plan.states
    ids = [s.id for s in states]
    if ids != list(range(len(states))):
        raise PlanError(f"state ids are not 0..{len(states) - 1}: {ids}")
    vars_ = plan.proc.vars
    _check_symbols(plan.proc)
    for s in states:
        where = f"state {s.id}"
        for i in s.instrs:
            if i.exchange:
                raise PlanError(f"{where}: exchange {ir.show_instr(i)} among local instructions")
            _check_origin(i, plan.proc, where)
            _check_instr(i, vars_, where)
        for x in s.exchange:
            if not x.instr.exchange:
                raise PlanError(f"{where}: local instruction in the exchange group")
            _check_origin(x.instr, plan.proc, where)
            phases = ("request", "reply") if isinstance(x.instr, ir.RemoteRead) else ("",)
            if x.phase not in phases:
                raise PlanError(f"{where}: exchange phase {x.phase!r} for {type(x.instr).__name__}")
            _check_spec(x, where)
            _check_instr(x.instr, vars_, where, prune=x.spec.counted)
        t = s.term
        if t is None:
            raise PlanError(f"{where}: no terminator")
        for tg in s.successors():
            if not 0 <= tg < len(states):
                raise PlanError(f"{where}: jumps to missing state {tg}")
        if isinstance(t, Branch):
            _check_origin(t, plan.proc, where)
            _check_ex(t.cond, "S", vars_, where, bool_=True)
        if isinstance(t, Halt) and t.ret is not None:
            _check_origin(t.ret, plan.proc, where)
            for v in t.ret.values:
                if vars_.get(v.var) != v.ty:
                    raise PlanError(f"{where}: returns {v.var} as {v.ty}, but it is {vars_.get(v.var)}")
    spec_ids = [x.spec.id for s in states for x in s.exchange]
    if len(set(spec_ids)) != len(spec_ids):
        raise PlanError(f"two exchanges share a spec id: {sorted(spec_ids)}")
    layout: dict[str, ir.Elem] = {}
    for s in states:
        for x in s.exchange:
            for f in exchange_fields(x.instr, plan.proc):
                ty = ir.Ty("vertex", "vid") if f.name == "@id" else vars_.get(f.name)
                ok = (f.elem == "vid" if f.name == "id" else
                      ty is not None and ty.kind == "vertex" and ty.elem == f.elem)
                if not ok:
                    raise PlanError(f"state {s.id}: message field {f.name}:{f.elem} is not a vertex value of that type")
                if layout.setdefault(f.name, f.elem) != f.elem:
                    raise PlanError(f"state {s.id}: message field {f.name} is {f.elem} here, {layout[f.name]} elsewhere")
    _definitely_assigned(plan)
