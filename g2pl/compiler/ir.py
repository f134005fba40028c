"""The G2PL intermediate representation.

Two layers:

* **Local expressions** (`Ex`): exchange-free elementwise computations over one
  *domain*: `S` (a scalar, the master), `V` (every local vertex), `E` (every
  local edge) or `A` (every adjacency entry of a neighbourhood aggregation,
  grouped by receiving vertex).  Reads name a *position*: `here` (the element
  itself), `nbr`/`self`/`edge` (sender, receiver and connecting edge of an
  adjacency entry).
* **Instructions**: `Compute` (local, no communication) and *exchanges*
  (`NbrReduce`, `GlobalReduce`, `EndpointExchange`, `RemoteRead`,
  `RemoteMark`, `KeyedReduce`), each of which ends a superstep at -O0; plus structured
  control flow (`WhileI`, `IfI`, `ReturnI`) whose conditions are scalars.

Every node carries the source `Span` it came from, and every instruction the
`origin` id of the source statement it was lowered from (see `Instr`).

The fields that take one of a fixed set of words (kind, element type,
position, domain, operator) are typed with the `Literal` aliases below, so a
misspelt word is a type error, and `verify` checks the values against them
(they are plain strings: codegen and the runtime compare them with literals).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from g2pl.errors import Span

#: element type of a value
Elem = Literal["bool", "int", "float", "vid"]
#: what a variable is: one value, or one per vertex / per edge
Kind = Literal["scalar", "vertex", "edge"]
#: domain an instruction computes over: the scalar (master), every vertex or every edge
Dom = Literal["S", "V", "E"]
#: domain of an instruction that runs per element (an aggregator, a remote read or mark)
ElemDom = Literal["V", "E"]
#: domain of a local expression: an instruction's, A (every adjacency entry of an aggregation) or W
#: (every common neighbour w of an edge's endpoints, see `CommonReduce`)
ExDom = Literal[Dom, "A", "W"]
#: endpoint of an edge
Side = Literal["src", "dst"]
#: where a read takes its value, relative to the element being computed (see `Load`, `Ids`); in domain
#: W: the edge (`here`), its endpoints (`src`, `dst`), the common neighbour (`nbr`) and the edges
#: joining it to the endpoints (`src_nbr`, `dst_nbr`).  Edge tests `(a, b) in K` read an edge set at
#: an edge that may not exist (false there): in domain E the reverse of the element (`rev`, the edge
#: v -> u of u -> v), in domain A the edge from the neighbour to the receiver (`nbr_self`) or back
#: (`self_nbr`).  On an undirected graph each of them is the element's (entry's) own edge.
Pos = Literal["here", "nbr", "self", "edge", Side, "src_nbr", "dst_nbr", "rev", "nbr_self", "self_nbr"]
#: the neighbours a neighbourhood aggregation ranges over (`nvals`, `outnvals`, `allnvals`, `nbrs`):
#: in-neighbours, out-neighbours, every in- and out-adjacency entry (a multiset: a neighbour linked
#: both ways twice), or every adjacent vertex once (a set; its edge the out-edge when both exist).
#: On an undirected graph all four are the neighbours.
NbrDir = Literal["in", "out", "all", "set"]
#: edge positions of the edge tests (see `Pos`): false where the edge does not exist
EDGE_TEST_POS: tuple[Pos, ...] = ("rev", "nbr_self", "self_nbr")
#: the built-in edge set of every edge (`E`), as the edge tests `(a, b) in E` read it
ALL_EDGES_VAR = "@E"

#: a neighbourhood aggregation's combiner (the source language's aggregations but `union`)
AggOp = Literal["sum", "min", "max", "and", "or", "argmin", "argmax", "avg", "count", "mode"]
#: an aggregator's combiner: an aggregation, or `pick` (the value of the one element its mask selects)
ReduceOp = Literal[AggOp, "pick"]
#: an elementwise operator or built-in function of `Op`
ExOp = Literal["+", "-", "*", "/", "%", "<", "<=", ">", ">=", "==", "!=", "&&", "||", "!",
               "min", "max", "abs", "sqrt", "log", "exp", "floor", "ceil", "int", "float", "float32",
               "idiv", "bitand", "bitor", "bitxor", "bitnot", "shl", "shr"]

#: which neighbours of an endpoint a common-neighbour aggregation lists: in (False), out (True) or
#: each adjacent vertex once ("set", `nbrs`)
CommonSide = bool | Literal["set"]

#: every element type
ELEMS: tuple[Elem, ...] = get_args(Elem)


def common_side_word(side: bool | str) -> str:
    """`in`, `out` or `in|out` (each adjacent vertex once): one side of a common-neighbour aggregation."""
    return "in|out" if side == "set" else "out" if side else "in"


def nbr_words(d: NbrDir) -> str:
    """The neighbours of direction `d` in words (plans, IR dumps, code comments)."""
    return {"in": "in-neighbours", "out": "out-neighbours", "all": "in+out-neighbours",
            "set": "distinct in/out-neighbours"}[d]


def as_elem(word: str) -> Elem:
    """`word`, an element type held as a plain string (a contract `Field`'s); ValueError if it is none."""
    if word in ELEMS:
        return word
    raise ValueError(f"not an element type: {word!r}")


KIND_WORD: dict[Kind, str] = {"scalar": "scalar", "vertex": "vertex graph", "edge": "edge graph"}
DOMAIN_OF_KIND: dict[Kind, Dom] = {"scalar": "S", "vertex": "V", "edge": "E"}


@dataclass(frozen=True)
class Ty:
    """Kind (scalar/vertex/edge) and element type (bool/int/float/vid)."""

    kind: Kind
    elem: Elem

    def word(self) -> str:
        if self.elem == "bool" and self.kind == "vertex":
            return "vertex set"
        if self.elem == "bool" and self.kind == "edge":
            return "edge set"
        if self.kind == "scalar":
            return f"scalar {self.elem}"
        return f"{KIND_WORD[self.kind]} of {self.elem}"

    def ann(self) -> str:
        return self.elem if self.kind == "scalar" else f"{self.kind}<{self.elem}>"


# ---------------------------------------------------------------- local expressions


@dataclass(frozen=True)
class Ex:
    elem: Elem
    span: Span


@dataclass(frozen=True)
class Const(Ex):
    value: Any


@dataclass(frozen=True)
class Load(Ex):
    """Read variable `var` (of kind `kind`) at `pos`: here | nbr | self | edge."""

    var: str
    kind: Kind
    pos: Pos = "here"


@dataclass(frozen=True)
class Ids(Ex):
    """Original vertex ID at `pos` (here | nbr | self | src | dst)."""

    pos: Pos = "here"


@dataclass(frozen=True)
class Op(Ex):
    """Elementwise operator or built-in function applied to `args`."""

    op: ExOp
    args: tuple[Ex, ...]


@dataclass(frozen=True)
class Where(Ex):
    cond: Ex
    then: Ex
    other: Ex


@dataclass(frozen=True)
class Rand(Ex):
    """Counter-based uniform float in [0,1) keyed by seed, element, call site and execution count."""

    site: int


def children(e: Ex) -> tuple[Ex, ...]:
    if isinstance(e, Op):
        return e.args
    if isinstance(e, Where):
        return (e.cond, e.then, e.other)
    return ()


def map_leaves(e: Ex, leaf: Callable[[Ex], Ex]) -> Ex:
    """`e` with every leaf (a load, constant, ID or rand() site) replaced by `leaf(it)`."""
    if isinstance(e, Op):
        return Op(e.elem, e.span, e.op, tuple(map_leaves(a, leaf) for a in e.args))
    if isinstance(e, Where):
        return Where(e.elem, e.span, map_leaves(e.cond, leaf), map_leaves(e.then, leaf), map_leaves(e.other, leaf))
    return leaf(e)


def walk(e: Ex):
    """Pre-order traversal of a local expression."""
    yield e
    for c in children(e):
        yield from walk(c)


def reads(e: Ex | None) -> set[str]:
    """Variables a local expression reads."""
    if e is None:
        return set()
    return {n.var for n in walk(e) if isinstance(n, Load)}


def has_rand(e: Ex | None) -> bool:
    return e is not None and any(isinstance(n, Rand) for n in walk(e))


def calls_rand(i: Instr) -> bool:
    """Does instruction `i` draw random numbers? Each evaluation of a rand() site advances its
    stream, so a pass may neither duplicate it nor run it on a path that did not run it before."""
    return any(isinstance(x, Ex) and has_rand(x) for v in vars(i).values() for x in (v if isinstance(v, tuple) else (v,)))


def conjuncts(e: Ex | None) -> list[Ex]:
    """The operands of a chain of `&&` (none for no expression)."""
    if e is None:
        return []
    if isinstance(e, Op) and e.op == "&&":
        return [c for a in e.args for c in conjuncts(a)]
    return [e]


def conjoin(parts: list[Ex]) -> Ex | None:
    """`parts[0] && parts[1] && ...` (None for no parts): the inverse of `conjuncts`."""
    if not parts:
        return None
    out = parts[0]
    for p in parts[1:]:
        out = Op("bool", p.span, "&&", (out, p))
    return out


def sender_only(e: Ex | None) -> bool:
    """A domain-A expression (none counts) that reads only the sending neighbour and scalars and draws
    no random numbers: each sender can evaluate it once for all its adjacency entries."""
    for n in walk(e) if e is not None else ():
        if isinstance(n, Load) and n.kind != "scalar" and n.pos != "nbr":
            return False
        if isinstance(n, Ids) and n.pos != "nbr" or isinstance(n, Rand):
            return False
    return True


def edge_only(e: Ex) -> bool:
    """A domain-A expression that reads the connecting edge's values (and scalars) and nothing else, and
    draws no random numbers: both endpoints hold it (paper section 3.2), so the sender can evaluate it."""
    edge = False
    for n in walk(e):
        if isinstance(n, Load) and n.kind != "scalar":
            if n.kind != "edge" or n.pos != "edge":
                return False
            edge = True
        if isinstance(n, (Ids, Rand)):
            return False
    return edge


def on_edges(e: Ex) -> Ex:
    """An `edge_only` expression over the edge domain E (edge reads `here`)."""
    def leaf(x: Ex) -> Ex:
        return Load(x.elem, x.span, x.var, x.kind, "here") if isinstance(x, Load) and x.pos == "edge" else x

    return map_leaves(e, leaf)


def receiver_only(e: Ex) -> bool:
    """A domain-V expression that reads only the vertex's own values and scalars and draws no random
    numbers: a pull can evaluate it at each receiver (a receiver filter)."""
    for n in walk(e):
        if isinstance(n, Load) and (n.kind not in ("vertex", "scalar") or n.kind == "vertex" and n.pos != "here"):
            return False
        if isinstance(n, Ids) and n.pos != "here" or isinstance(n, Rand):
            return False
    return True


# ---------------------------------------------------------------- instructions


@dataclass(frozen=True)
class Instr:
    """An instruction; `origin` is the id of the source statement it was lowered from.

    A statement's id is its index in the pre-order of the procedure's statements
    (`ast.walk_statements`; the `span`s of `ProcIR.statements`).  Code inlined from a
    function belongs to the statement that calls it, and so does anything a pass
    derives from an instruction (`dataclasses.replace` keeps the field), which is how
    `g2pl explain` and the pass log name statements.  Keyword-only and required,
    so no instruction is made without one.
    """

    span: Span
    origin: int = field(kw_only=True)

    #: True for instructions that end a superstep at -O0 (communication)
    exchange = False

    def defs(self) -> tuple[str, ...]:
        raise NotImplementedError

    def uses(self) -> set[str]:
        raise NotImplementedError


@dataclass(frozen=True)
class Compute(Instr):
    """target = ex, evaluated over domain `dom` (S, V or E); purely local.

    `sparse` (the sparse pass): `ex` is `M && rest` with M a set variable, and `rest` is evaluated
    only at M's members when they are few."""

    target: str
    dom: Dom
    ex: Ex
    sparse: bool = False

    def defs(self) -> tuple[str, ...]:
        return (self.target,)

    def uses(self) -> set[str]:
        return reads(self.ex)


@dataclass(frozen=True)
class MarkEndpoints(Instr):
    """target = vertices that are a `sides` endpoint of an edge where `mask` holds (local: edges live at both ends)."""

    target: str
    mask: Ex
    sides: tuple[Side, ...]

    def defs(self) -> tuple[str, ...]:
        return (self.target,)

    def uses(self) -> set[str]:
        return reads(self.mask)


@dataclass(frozen=True)
class NbrReduce(Instr):
    """target[x] = op over adjacency entries of x (in-, out-, all or distinct neighbours: `dir`) where
    `mask` holds, of `value`.

    `value` and `mask` are domain-A expressions. Reads at `nbr` are message
    fields (sent by the neighbour); reads at `self`/`edge` are local to x.
    """

    target: str
    op: AggOp
    dir: NbrDir
    value: Ex
    mask: Ex | None
    elem: Elem  # result element type
    exchange = True

    def defs(self) -> tuple[str, ...]:
        return (self.target,)

    def uses(self) -> set[str]:
        return reads(self.value) | reads(self.mask)


@dataclass(frozen=True)
class CommonReduce(Instr):
    """target[e] = op over the common neighbours w of edge e = (u, v) where `mask` holds, of `value`.

    w ranges over the neighbours of u and of v (in-, out- or distinct in/out-neighbours, as `outs`
    says for u and v: False, True, or "set");
    `value` and `mask` are domain-W expressions.  With `within` (an edge set), only triangles whose
    three edges are in it count, and edges outside it get an unspecified value (the lowering sets it
    only where the enclosing comprehension ranges over that set).
    """

    target: str
    op: AggOp
    value: Ex
    mask: Ex | None
    elem: Elem
    outs: tuple[CommonSide, CommonSide] = (False, False)
    within: str | None = None
    exchange = True

    def defs(self) -> tuple[str, ...]:
        return (self.target,)

    def uses(self) -> set[str]:
        return reads(self.value) | reads(self.mask) | ({self.within} if self.within is not None else set())


@dataclass(frozen=True)
class GlobalReduce(Instr):
    """Scalar target = op over the elements of domain `dom` (V or E) where `mask` holds (an aggregator)."""

    target: str
    op: ReduceOp
    dom: ElemDom
    value: Ex
    mask: Ex | None
    elem: Elem
    exchange = True

    def defs(self) -> tuple[str, ...]:
        return (self.target,)

    def uses(self) -> set[str]:
        return reads(self.value) | reads(self.mask)


@dataclass(frozen=True)
class EndpointExchange(Instr):
    """Make vertex values available on edges: targets[i] = vertex var fields[i][0] read at endpoint fields[i][1]."""

    fields: tuple[tuple[str, Side, Elem], ...]  # (vertex var, endpoint it is read at, its elem)
    targets: tuple[str, ...]
    # edge condition (over edge vars) outside which the values are never used (what the lowering knows;
    # prune decides whether the exchange sends only there: `exchange.EndpointRecord.need`)
    need: Ex | None = None
    exchange = True

    def defs(self) -> tuple[str, ...]:
        return self.targets

    def conjunction(self) -> str:
        """`X@src && Y@dst`: the edge set an edgeset exchange defines, for plans, logs and comments."""
        return " && ".join(f"{var}@{side}" for var, side, _elem in self.fields)

    def uses(self) -> set[str]:
        return {f[0] for f in self.fields} | reads(self.need)


@dataclass(frozen=True)
class RemoteRead(Instr):
    """target = var read at the vertex whose original ID is `index` (request + reply: two supersteps)."""

    target: str
    var: str
    var_kind: Kind
    dom: ElemDom  # where the requests come from
    index: Ex
    elem: Elem
    exchange = True

    def defs(self) -> tuple[str, ...]:
        return (self.target,)

    def uses(self) -> set[str]:
        return {self.var} | reads(self.index)


@dataclass(frozen=True)
class RemoteMark(Instr):
    """target = vertex set of the original IDs `index` sent from elements of `dom` where `mask` holds."""

    target: str
    dom: ElemDom
    index: Ex
    mask: Ex | None
    exchange = True

    def defs(self) -> tuple[str, ...]:
        return (self.target,)

    def uses(self) -> set[str]:
        return reads(self.index) | reads(self.mask)


@dataclass(frozen=True)
class KeyedReduce(Instr):
    """Keyed aggregation (`AGG [ head | ... ] by KEY`): `op` of `value` over the elements of `dom`
    where `mask` holds, grouped by the vertex whose original ID each key names; the remote-write
    counterpart of `RemoteRead`.  Each element goes to every distinct key of `keys` (vid expressions;
    -1 and IDs that are no vertex are dropped).  With no keys, one group: the whole domain.

    `result` says what the target is: `vertex` (one value per key vertex, the aggregation's empty
    value where nothing arrived), `edge` (argmin/argmax over edges: the edge set of the winners) or
    `scalar` (argmin/argmax with a payload and no key).  argmin/argmax pick the element with the
    least/greatest value, ties to the smaller (u, v) original IDs for edges, the smaller ID for
    vertices; the result is the winner's ID (vertices), the winner itself (edges), or `payload`
    evaluated at the winner (`argmin [[value, payload] | ...]`).  One exchange: combined per key at
    the sender, one record per key to its owner rank.
    """

    target: str
    op: AggOp
    dom: ElemDom
    keys: tuple[Ex, ...]
    value: Ex
    payload: Ex | None
    mask: Ex | None
    elem: Elem  # the target's element type
    result: Kind
    exchange = True

    def defs(self) -> tuple[str, ...]:
        return (self.target,)

    def uses(self) -> set[str]:
        out = reads(self.value) | reads(self.payload) | reads(self.mask)
        for k in self.keys:
            out |= reads(k)
        return out

    def describe(self) -> str:
        """`min of W by C, C2`: the aggregation in words (plans, logs, comments)."""
        what = show_ex(self.value) if self.payload is None else f"[{show_ex(self.value)}, {show_ex(self.payload)}]"
        by = f" by {', '.join(show_ex(k) for k in self.keys)}" if self.keys else ""
        mask = f" where {show_ex(self.mask)}" if self.mask is not None else ""
        return f"{self.op} over {self.dom} of {what}{by}{mask}"


@dataclass(frozen=True)
class WhileI(Instr):
    cond_pre: tuple[Instr, ...]
    cond: Ex
    body: tuple[Instr, ...]

    def defs(self) -> tuple[str, ...]:
        return tuple(d for i in self.cond_pre + self.body for d in i.defs())

    def uses(self) -> set[str]:
        out = reads(self.cond)
        for i in self.cond_pre + self.body:
            out |= i.uses()
        return out


@dataclass(frozen=True)
class IfI(Instr):
    cond: Ex
    then: tuple[Instr, ...]
    other: tuple[Instr, ...]

    def defs(self) -> tuple[str, ...]:
        return tuple(d for i in self.then + self.other for d in i.defs())

    def uses(self) -> set[str]:
        out = reads(self.cond)
        for i in self.then + self.other:
            out |= i.uses()
        return out


@dataclass(frozen=True)
class RetVal:
    name: str  # output name: the variable's name or retN
    var: str  # IR variable holding the value
    ty: Ty


@dataclass(frozen=True)
class ReturnI(Instr):
    values: tuple[RetVal, ...]

    def defs(self) -> tuple[str, ...]:
        return ()

    def uses(self) -> set[str]:
        return {v.var for v in self.values}


@dataclass
class ProcIR:
    """A lowered procedure: structured instructions plus the symbol table."""

    name: str
    params: list[tuple[str, Ty]]  # (param name, type); IR var of a param is its name
    body: list[Instr]
    vars: dict[str, Ty]  # every IR variable (user vars, params, temps) -> type
    user_names: dict[str, str] = field(default_factory=dict)  # IR var -> source name (for comments/outputs)
    rand_sites: int = 0
    statements: tuple[Span, ...] = ()  # the span of every source statement, by id (`Instr.origin`)
    source_lines: list[str] = field(default_factory=list)
    file: str = "<input>"


# ---------------------------------------------------------------- printing


def show_ex(e: Ex) -> str:
    """Compact rendering of a local expression, used by plan/IR dumps and code comments."""
    if isinstance(e, Const):
        v = e.value
        if isinstance(v, bool):
            return "true" if v else "false"
        return repr(v)
    if isinstance(e, Load):
        if e.pos in EDGE_TEST_POS:  # an edge test, as the source writes it
            ends = {"rev": "(dst, src)", "nbr_self": "(nbr, self)", "self_nbr": "(self, nbr)"}[e.pos]
            return f"({ends} in {'E' if e.var == ALL_EDGES_VAR else e.var})"
        return e.var if e.pos == "here" else f"{e.var}@{e.pos}"
    if isinstance(e, Ids):
        return "id" if e.pos == "here" else f"id@{e.pos}"
    if isinstance(e, Op):
        if len(e.args) == 2 and not e.op.isalpha():
            return f"({show_ex(e.args[0])} {e.op} {show_ex(e.args[1])})"
        if len(e.args) == 1 and e.op in ("-", "!"):
            return f"{e.op}{show_ex(e.args[0])}"
        return f"{e.op}({', '.join(show_ex(a) for a in e.args)})"
    if isinstance(e, Where):
        return f"({show_ex(e.cond)} ? {show_ex(e.then)} : {show_ex(e.other)})"
    if isinstance(e, Rand):
        return f"rand#{e.site}()"
    raise TypeError(type(e).__name__)


def show_instr(i: Instr) -> str:
    if isinstance(i, Compute):
        sparse = f"  (only at the members of {show_ex(i.ex.args[0])} when few)" if i.sparse else ""  # type: ignore[attr-defined]
        return f"{i.target} = [{i.dom}] {show_ex(i.ex)}{sparse}"
    if isinstance(i, MarkEndpoints):
        return f"{i.target} = mark-endpoints[{','.join(i.sides)}] where {show_ex(i.mask)}"
    if isinstance(i, NbrReduce):
        mask = f" where {show_ex(i.mask)}" if i.mask is not None else ""
        return f"{i.target} = {i.op} over {nbr_words(i.dir)} of {show_ex(i.value)}{mask}"
    if isinstance(i, GlobalReduce):
        mask = f" where {show_ex(i.mask)}" if i.mask is not None else ""
        return f"{i.target} = {i.op} over {i.dom} of {show_ex(i.value)}{mask}"
    if isinstance(i, CommonReduce):
        mask = f" where {show_ex(i.mask)}" if i.mask is not None else ""
        within = f" within {i.within}" if i.within is not None else ""
        sides = "/".join(common_side_word(o) for o in i.outs)
        return f"{i.target} = {i.op} over common {sides}-neighbours of {show_ex(i.value)}{within}{mask}"
    if isinstance(i, EndpointExchange):
        return ", ".join(f"{t} = {f[0]}@{f[1]}" for f, t in zip(i.fields, i.targets)) + "  (endpoint exchange)"
    if isinstance(i, RemoteRead):
        return f"{i.target} = {i.var}[{show_ex(i.index)}]  (remote read from {i.dom})"
    if isinstance(i, RemoteMark):
        mask = f" where {show_ex(i.mask)}" if i.mask is not None else ""
        return f"{i.target} = mark vertices {show_ex(i.index)} from {i.dom}{mask}  (remote write)"
    if isinstance(i, KeyedReduce):
        return f"{i.target} = {i.describe()}  (keyed: to the key's owner)"
    if isinstance(i, ReturnI):
        return "return " + ", ".join(f"{v.name}={v.var}" for v in i.values)
    raise TypeError(type(i).__name__)


def dump_instrs(instrs: list[Instr] | tuple[Instr, ...], indent: int = 0) -> str:
    pad = "  " * indent
    out: list[str] = []
    for i in instrs:
        tag = f"  @{i.span.line}"
        if isinstance(i, WhileI):
            out.append(f"{pad}while:  @{i.span.line}")
            if i.cond_pre:
                out.append(dump_instrs(i.cond_pre, indent + 2))
            out.append(f"{pad}  cond {show_ex(i.cond)}")
            out.append(f"{pad}  do:")
            out.append(dump_instrs(i.body, indent + 2))
        elif isinstance(i, IfI):
            out.append(f"{pad}if {show_ex(i.cond)}:{tag}")
            out.append(dump_instrs(i.then, indent + 1))
            if i.other:
                out.append(f"{pad}else:")
                out.append(dump_instrs(i.other, indent + 1))
        else:
            mark = "!" if i.exchange else " "
            out.append(f"{pad}{mark} {show_instr(i)}{tag}")
    return "\n".join(x for x in out if x)
