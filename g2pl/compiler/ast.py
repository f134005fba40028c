"""Surface syntax tree of G2PL, as parsed (docs/language.md, "Grammar").

Small frozen dataclasses; every node carries the `Span` of the source text it
came from so that errors found late (typing, lowering) still point at source.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Literal

from g2pl.compiler.ir import AggOp, Elem, Kind, NbrDir
from g2pl.compiler.limits import deep_stack
from g2pl.errors import Span

#: a binary operator, as the grammar spells it (`\` is set difference, `in` membership)
BinOpWord = Literal["+", "-", "*", "/", "%", "\\", "==", "!=", "<", "<=", ">", ">=", "&&", "||", "in"]
#: an aggregation's name: the IR's aggregations and `union` (a vertex set)
AggWord = Literal[AggOp, "union"]

# ---------------------------------------------------------------- types


@dataclass(frozen=True)
class TypeAnn:
    """A written type: `int`, `vset`, `vertex<float>`, `edge<bool>`, ..."""

    kind: Kind
    elem: Elem
    span: Span


# ---------------------------------------------------------------- expressions


@dataclass(frozen=True)
class Expr:
    span: Span


@dataclass(frozen=True)
class Name(Expr):
    id: str


@dataclass(frozen=True)
class IntLit(Expr):
    value: int


@dataclass(frozen=True)
class FloatLit(Expr):
    value: float


@dataclass(frozen=True)
class BinOp(Expr):
    op: BinOpWord
    left: Expr
    right: Expr
    op_span: Span


@dataclass(frozen=True)
class UnOp(Expr):
    op: str  # - !
    operand: Expr


@dataclass(frozen=True)
class Cond(Expr):
    cond: Expr
    then: Expr
    other: Expr


@dataclass(frozen=True)
class Call(Expr):
    func: str
    args: tuple[Expr, ...]
    name_span: Span


@dataclass(frozen=True)
class Index(Expr):
    base: Expr
    index: Expr


#: the neighbour generators' words, by the neighbours they range over (`ir.NbrDir`)
NBR_WORDS: dict[NbrDir, str] = {"in": "nvals", "out": "outnvals", "all": "allnvals", "set": "nbrs"}


@dataclass(frozen=True)
class NvalsSource:
    """`nvals x` / `outnvals x` / `allnvals x` / `nbrs x` as a generator source; `dir` says which
    neighbours (in, out, every in- and out-entry, or each adjacent vertex once)."""

    centre: str
    dir: NbrDir
    span: Span

    @property
    def word(self) -> str:
        return NBR_WORDS[self.dir]


@dataclass(frozen=True)
class InNvals(Expr):
    """`w in nvals v`: as a qualifier of its own, the generator `w <- nvals v` (a second neighbour
    generator binding the same name ranges over common neighbours); anywhere else an error."""

    name: Expr
    source: NvalsSource


@dataclass(frozen=True)
class Pair(Expr):
    """`(a, b)`: two generator variables, as the left side of an edge test `(a, b) in A` (anywhere
    else an error)."""

    names: tuple[str, str]


@dataclass(frozen=True)
class Generator:
    names: tuple[str, ...]  # 1, 2 or 3 bound names
    source: Expr | NvalsSource
    span: Span


@dataclass(frozen=True)
class Filter:
    expr: Expr
    span: Span


Qualifier = Generator | Filter


@dataclass(frozen=True)
class SetComp(Expr):
    """`{ head | qualifiers }`: a vertex or edge graph."""

    head: Expr
    quals: tuple[Qualifier, ...]


@dataclass(frozen=True)
class Agg(Expr):
    """`op [ head | qualifiers ]`; `heads` has several items for `union [[u, v] | ...]` and
    `argmin [[value, payload] | ...]`; `keys` (read in the qualifiers' scope) for `... by KEY`."""

    op: AggWord
    heads: tuple[Expr, ...]
    quals: tuple[Qualifier, ...]
    op_span: Span
    is_list: bool = False
    keys: tuple[Expr, ...] = ()


# ---------------------------------------------------------------- statements


@dataclass(frozen=True)
class Stmt:
    span: Span


@dataclass(frozen=True)
class Assign(Stmt):
    target: str
    ann: TypeAnn | None
    value: Expr
    target_span: Span


@dataclass(frozen=True)
class While(Stmt):
    cond: Expr
    body: tuple[Stmt, ...]


@dataclass(frozen=True)
class If(Stmt):
    cond: Expr
    then: tuple[Stmt, ...]
    other: tuple[Stmt, ...]


@dataclass(frozen=True)
class Return(Stmt):
    values: tuple[Expr, ...]


def walk_statements(body: tuple[Stmt, ...]) -> Iterator[tuple[Stmt, While | None]]:
    """Every statement of `body`, nested ones included, with its innermost enclosing `while`, in
    pre-order (a `while` or `if` before the statements in it, `then` before `else`).

    A statement's index in this order is its id: the `origin` of the IR instructions lowered from
    it, by which `g2pl explain` and the pass log name it (functions are expressions, so inlining
    adds no statements and the ids are those of the source).  Iterative: statements nest
    thousands deep."""
    todo: list[tuple[Iterator[Stmt], While | None]] = [(iter(body), None)]
    while todo:
        it, loop = todo[-1]
        s = next(it, None)
        if s is None:
            todo.pop()
            continue
        yield s, loop
        if isinstance(s, While):
            todo.append((iter(s.body), s))
        elif isinstance(s, If):
            todo.append((iter(s.then + s.other), loop))


# ---------------------------------------------------------------- definitions


@dataclass(frozen=True)
class Param:
    name: str
    ann: TypeAnn | None
    span: Span


@dataclass(frozen=True)
class Procedure:
    name: str
    params: tuple[Param, ...]
    body: tuple[Stmt, ...]
    span: Span


@dataclass(frozen=True)
class Function:
    name: str
    params: tuple[Param, ...]
    body: Expr
    span: Span


@dataclass
class Module:
    """A parsed program file."""

    procedures: dict[str, Procedure] = field(default_factory=dict)
    functions: dict[str, Function] = field(default_factory=dict)
    source: str = ""
    file: str = "<input>"


# ---------------------------------------------------------------- printing (for --emit ast)


@deep_stack
def dump(node: object, indent: int = 0) -> str:
    """Readable indented dump of an AST (used by `g2plc --emit ast`)."""
    pad = "  " * indent
    if isinstance(node, Module):
        parts = [dump(p, indent) for p in node.functions.values()]
        parts += [dump(p, indent) for p in node.procedures.values()]
        return "\n".join(parts)
    if isinstance(node, (list, tuple)):
        return "\n".join(dump(n, indent) for n in node)
    if isinstance(node, Procedure):
        head = f"{pad}procedure {node.name}({', '.join(_param(p) for p in node.params)})  @{node.span.line}"
        return head + "\n" + dump(node.body, indent + 1)
    if isinstance(node, Function):
        return f"{pad}function {node.name}({', '.join(_param(p) for p in node.params)}) = {show(node.body)}  @{node.span.line}"
    if isinstance(node, Assign):
        ann = f" : {_ann(node.ann)}" if node.ann else ""
        return f"{pad}{node.target}{ann} = {show(node.value)};  @{node.span.line}"
    if isinstance(node, While):
        return f"{pad}while ({show(node.cond)})  @{node.span.line}\n" + dump(node.body, indent + 1)
    if isinstance(node, If):
        out = f"{pad}if ({show(node.cond)})  @{node.span.line}\n" + dump(node.then, indent + 1)
        if node.other:
            out += f"\n{pad}else\n" + dump(node.other, indent + 1)
        return out
    if isinstance(node, Return):
        return f"{pad}return {', '.join(show(v) for v in node.values)};  @{node.span.line}"
    raise TypeError(f"cannot dump {type(node).__name__}")


def _ann(a: TypeAnn) -> str:
    return a.elem if a.kind == "scalar" else f"{a.kind}<{a.elem}>"


def _param(p: Param) -> str:
    return p.name + (f": {_ann(p.ann)}" if p.ann else "")


def show(e: Expr | NvalsSource | Qualifier) -> str:
    """Source-like rendering of an expression (fully parenthesised binary ops)."""
    if isinstance(e, Name):
        return e.id
    if isinstance(e, IntLit):
        return str(e.value)
    if isinstance(e, FloatLit):
        return repr(e.value)
    if isinstance(e, BinOp):
        return f"({show(e.left)} {e.op} {show(e.right)})"
    if isinstance(e, UnOp):
        return f"{e.op}{show(e.operand)}"
    if isinstance(e, Cond):
        return f"({show(e.cond)} ? {show(e.then)} : {show(e.other)})"
    if isinstance(e, Call):
        return f"{e.func}({', '.join(show(a) for a in e.args)})"
    if isinstance(e, Index):
        return f"{show(e.base)}[{show(e.index)}]"
    if isinstance(e, NvalsSource):
        return f"{e.word} {e.centre}"
    if isinstance(e, InNvals):
        return f"({show(e.name)} in {show(e.source)})"
    if isinstance(e, Pair):
        return f"({e.names[0]}, {e.names[1]})"
    if isinstance(e, Generator):
        names = e.names[0] if len(e.names) == 1 else "(" + ", ".join(e.names) + ")"
        return f"{names} <- {show(e.source)}"
    if isinstance(e, Filter):
        return show(e.expr)
    if isinstance(e, SetComp):
        return "{ " + show(e.head) + " | " + ", ".join(show(q) for q in e.quals) + " }"
    if isinstance(e, Agg):
        head = ", ".join(show(h) for h in e.heads)
        if e.is_list:
            head = f"[{head}]"
        by = ""
        if e.keys:
            by = " by " + (show(e.keys[0]) if len(e.keys) == 1 else "[" + ", ".join(show(k) for k in e.keys) + "]")
        return f"{e.op} [ {head} | " + ", ".join(show(q) for q in e.quals) + " ]" + by
    raise TypeError(f"cannot show {type(e).__name__}")
