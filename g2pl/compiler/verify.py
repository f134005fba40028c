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
  Every field of the program record (`plan.record`) and of an exchange's record
  is a vertex value of the element type its variable has (or the vid `id`).
* **Records**: every exchange has the record of its instruction's kind, and its
  decisions fit together (a send condition only once counted, kept copies
  only without a need condition, ...): the runtime trusts the spec derived
  from it alone.
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

from g2pl.compiler import exchange as X
from g2pl.compiler import ir
from g2pl.compiler.analysis import assigned_into, initially, state_out
from g2pl.compiler.plan import Branch, Halt, Plan

_POSITIONS: dict[ir.ExDom, set[ir.Pos]] = {
    "S": {"here"}, "V": {"here"}, "E": {"here", "src", "dst", "rev"},
    "A": {"here", "nbr", "self", "edge", "nbr_self", "self_nbr"},
    "W": {"here", "src", "dst", "nbr", "src_nbr", "dst_nbr"},
}

# the kind of a variable with a value per element of a domain
_KIND_OF_ELEM_DOM: dict[ir.ElemDom, ir.Kind] = {"V": "vertex", "E": "edge"}

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
    cls: type = type(node)  # (mypy takes a `type[object]` for unhashable)
    for name, hint in _word_fields(cls):
        bad = _misfit(getattr(node, name), hint)
        if bad is not None:
            raise PlanError(f"{where}: {type(node).__name__}.{name} holds {bad[0]!r}, not one of "
                            f"{', '.join(map(str, bad[1]))}")


def _check_symbols(vars_: dict[str, ir.Ty]) -> None:
    """Every type of the symbol table is made of allowed words."""
    for name, ty in vars_.items():
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
            if n.pos in ir.EDGE_TEST_POS and (n.kind != "edge" or n.elem != "bool"):
                raise PlanError(f"{where}: edge test reads {n.var}, which is no edge set")
            if dom == "A" and (n.pos in ("edge", "nbr_self", "self_nbr")) != (n.kind == "edge"):
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


def _check_instr(i: ir.Instr, vars_: dict[str, ir.Ty], where: str, rec: X.Exchange | None = None) -> None:
    """One instruction; in the plan, an exchange's with its record (`rec`), whose conditions are checked too."""
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
        if isinstance(rec, X.NbrExchange):
            _check_nbr_record(rec, vars_, where)
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
        _check_endpoints(i, rec if isinstance(rec, X.EndpointRecord) else None, vars_, where)
    elif isinstance(i, ir.RemoteRead):
        _target(i.target, _KIND_OF_ELEM_DOM[i.dom], vars_, where, i.elem)
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


def _check_nbr_record(x: X.NbrExchange, vars_: dict[str, ir.Ty], where: str) -> None:
    """A neighbourhood aggregation's decided conditions: each reads only what its evaluator has."""
    _check_ex(x.send, "A", vars_, where, bool_=True)
    if x.send is not None and not ir.sender_only(x.send):
        raise PlanError(f"{where}: send condition {ir.show_ex(x.send)} reads more than the sender")
    _check_ex(x.along, "A", vars_, where, bool_=True)
    if x.known is not None:
        _target(x.known, "vertex", vars_, where, "bool")
    if x.along is not None and not ir.edge_only(x.along):
        raise PlanError(f"{where}: edge condition {ir.show_ex(x.along)} reads more than the edge")
    _check_ex(x.recv, "V", vars_, where, bool_=True)
    if x.recv is not None and not ir.receiver_only(x.recv):
        raise PlanError(f"{where}: receiver filter {ir.show_ex(x.recv)} reads more than the receiver")


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


def _check_endpoints(i: ir.EndpointExchange, x: X.EndpointRecord | None, vars_: dict[str, ir.Ty],
                     where: str) -> None:
    if not i.fields:
        raise PlanError(f"{where}: an endpoint exchange without fields")
    for var, side, elem in i.fields:
        if side not in ("src", "dst"):
            raise PlanError(f"{where}: field {var} read at {side}, not at an endpoint")
        _target(var, "vertex", vars_, where, elem)
    within, keep, sent = (x.within, x.keep, x.sent) if x is not None else (None, (), ())
    if within is not None:
        _target(within, "edge", vars_, where, "bool")
        if any(elem != "bool" for _v, _s, elem in i.fields):
            raise PlanError(f"{where}: the edge set {within} is a conjunction of non-bool fields")
    else:
        if len(i.targets) != len(i.fields):
            raise PlanError(f"{where}: {len(i.fields)} fields for {len(i.targets)} targets")
        for (_var, _side, elem), t in zip(i.fields, i.targets):
            _target(t, "edge", vars_, where, elem)
    if keep:
        if len(keep) != len({var for var, _s, _e in i.fields}):
            raise PlanError(f"{where}: {len(keep)} kept copies for its fields")
        elems = dict((var, elem) for var, _s, elem in i.fields)
        for var, t in zip(dict.fromkeys(var for var, _s, _e in i.fields), keep):
            _target(t, "vertex", vars_, where, elems[var])
    if sent:
        if len(sent) != len(i.targets) or within is not None:
            raise PlanError(f"{where}: {len(sent)} send conditions for {len(i.targets)} reads")
        for c, t in zip(sent, i.targets):
            _check_ex(c, "E", vars_, where, bool_=True)
            if c is not None and ir.reads(c) - {t}:
                raise PlanError(f"{where}: send condition {ir.show_ex(c)} reads more than {t}")
    _check_ex(i.need, "E", vars_, where, bool_=True)
    if i.need is not None:
        brought = set(x.defs() if x is not None else i.defs()) & ir.reads(i.need)
        if brought:
            raise PlanError(f"{where}: need condition reads {', '.join(sorted(brought))}, which the exchange brings")
        if x is not None and x.counted and ir.has_rand(i.need):
            raise PlanError(f"{where}: need condition draws random numbers a second time")


_RECORD_OF: dict[type, type] = {
    ir.NbrReduce: X.NbrExchange, ir.EndpointExchange: X.EndpointRecord, ir.GlobalReduce: X.AggregateExchange,
    ir.RemoteRead: X.RemoteReadExchange, ir.RemoteMark: X.RemoteMarkExchange, ir.CommonReduce: X.CommonExchange,
    ir.KeyedReduce: X.KeyedExchange}


def _check_record(x: X.Exchange, where: str) -> None:
    """The exchange's record is its instruction's kind and its decisions fit together: the runtime
    trusts the spec derived from it alone."""
    i = x.instr
    want = _RECORD_OF[type(i)]
    bad = [] if type(x) is want else [f"a {type(x).__name__}, not a {want.__name__}"]
    if isinstance(x, X.NbrExchange):
        bad += [what for what, ok in (
            ("send condition before prune", x.send is None or x.counted),
            ("edge condition before prune", x.along is None or x.counted),
            ("push without a send condition", not x.push or x.send is not None),
            ("known without prune", x.known is None or x.counted)) if not ok]
    if isinstance(x, X.EndpointRecord):
        bad += [what for what, ok in (
            ("need", not x.need or x.instr.need is not None),
            ("sent", not x.sent or x.need),
            ("delta", not x.keep or not (x.need or x.transport == "entries"))) if not ok]
    if isinstance(x, X.CommonExchange):
        if x.need and x.instr.within is None:
            bad.append("need")
    if (isinstance(x, (X.NbrExchange, X.EndpointRecord)) and x.transport != "packed" and not x.record
            and x.fields):
        bad.append("a record transport without the program record")
    if bad:
        raise PlanError(f"{where}: exchange {ir.show_instr(i)}: record X{x.id} disagrees: {', '.join(bad)}")


# ---------------------------------------------------------------- definite assignment


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
    _check_symbols(proc.vars)
    _ir_block(proc.body, initially(proc), proc, f"procedure {proc.name}")


def _definitely_assigned(plan: Plan) -> None:
    for sid, d in assigned_into(plan).items():
        state_out(plan.states[sid], d, check=_check_reads)


def verify_plan(plan: Plan) -> None:
    """Raise `PlanError` if the plan is malformed."""
    states = plan.states
    ids = [s.id for s in states]
    if ids != list(range(len(states))):
        raise PlanError(f"state ids are not 0..{len(states) - 1}: {ids}")
    vars_ = plan.vars
    _check_symbols(plan.vars)
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
            _check_record(x, where)
            _check_instr(x.instr, vars_, where, rec=x)
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
    spec_ids = [x.id for s in states for x in s.exchange]
    if len(set(spec_ids)) != len(spec_ids):
        raise PlanError(f"two exchanges share an id: {sorted(spec_ids)}")
    layout: dict[str, str] = {}
    for s in states:
        fields = list(plan.record) + [f for x in s.exchange if isinstance(x, (X.NbrExchange, X.EndpointRecord))
                                      and x.transport != "packed" for f in x.fields]
        for name, elem in fields:
            ty = vars_.get(name)
            ok = elem == "vid" if name == "id" else ty is not None and ty.kind == "vertex" and ty.elem == elem
            if not ok:
                raise PlanError(f"state {s.id}: message field {name}:{elem} is not a vertex value of that type")
            if layout.setdefault(name, elem) != elem:
                raise PlanError(f"state {s.id}: message field {name} is {elem} here, {layout[name]} elsewhere")
    _definitely_assigned(plan)
