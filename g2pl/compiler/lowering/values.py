"""The values lowering works with: where an expression is evaluated (`Ctx`), the names generators
bind (`Binder`), a lowered expression with its kind and type (`Val`), and the words error messages
use.  Shared by the lowering of procedures, common-neighbour and keyed aggregations."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from g2pl.compiler import ir
from g2pl.contract import DEFAULTS
from g2pl.errors import Span

#: what a lowering context evaluates over: the top level (T), every vertex, every edge, every
#: adjacency entry of a neighbourhood aggregation (A), or every common neighbour of an edge's ends (W)
CtxDom = Literal["T", "V", "E", "A", "W"]
#: a lowered expression's kind: a variable's, or per adjacency entry
ValKind = Literal[ir.Kind, "adj"]
#: what a generator ranges over: vertices or edges
SourceKind = Literal["vertex", "edge"]


def default_of(elem: ir.Elem) -> bool | int | float:
    return DEFAULTS[elem]


def join_elem(a: ir.Elem, b: ir.Elem) -> ir.Elem | None:
    """Least common element type for assignment/branches; None if incompatible."""
    if a == b:
        return a
    s = {a, b}
    if s <= {"int", "float", "vid"}:
        return "float" if "float" in s else "vid"
    return None


def arith_elem(a: ir.Elem, b: ir.Elem) -> ir.Elem:
    return "float" if "float" in (a, b) else "int"


@dataclass
class Binder:
    """A generator-bound name: an element (vertex or edge) with a value."""

    name: str
    ekind: SourceKind
    pos: ir.Pos
    src_var: str | None  # variable ranged over (None: all of V / E)
    src_kind: ir.Kind  # vertex | edge
    src_elem: ir.Elem  # element type of the source (bool for sets)
    span: Span
    has_value: bool = True

    def value_at(self, pos: ir.Pos, span: Span) -> ir.Ex:
        if self.src_var is None:
            return ir.Const("bool", span, True)
        return ir.Load(self.src_elem, span, self.src_var, self.src_kind, pos)

    @property
    def elem(self) -> ir.Elem:
        if self.ekind == "vertex" and self.pos in ("src", "dst"):
            return "vid"
        return self.src_elem if self.src_var is not None else "bool"


@dataclass
class Ctx:
    """Where an expression is evaluated: T (top level), V, E or A (an aggregation over neighbours)."""

    dom: CtxDom
    elems: dict[str, Binder] = field(default_factory=dict)
    centre: Binder | None = None
    blocked: dict[str, str] = field(default_factory=dict)
    nbr_dir: ir.NbrDir = "in"  # A: the neighbours the aggregation ranges over
    gen_set: str | None = None  # E: the edge-set variable the generator ranges over (its members only)

    def local_kind(self) -> ValKind:
        return _LOCAL_KIND[self.dom]


#: the kind of a value per element of a context's domain
_LOCAL_KIND: dict[CtxDom, ValKind] = {"V": "vertex", "E": "edge", "A": "adj", "W": "adj", "T": "scalar"}
TOP = Ctx("T")


@dataclass(frozen=True)
class Val:
    """A lowered expression: IR expression plus its kind (scalar/vertex/edge/adj) and element type."""

    ex: ir.Ex
    kind: ValKind
    elem: ir.Elem

    def ty(self) -> ir.Ty:
        """The type of a variable holding this value (a scalar or a whole graph: not per adjacency entry)."""
        assert self.kind != "adj"
        return ir.Ty(self.kind, self.elem)


class Poison(Val):
    """The value of an operand whose error is already recorded (`g2pl check`): operators given one
    give one, so a bad operand silences only the expression it is in, not its siblings."""


def article(word: str) -> str:
    """`word` with its indefinite article."""
    return ("an " if word.lstrip("`")[:1].lower() in "aeiou" else "a ") + word


def chain(names: list[str]) -> str:
    """`f30 -> f29 -> ... -> f0`: a call chain, its middle elided when long."""
    if len(names) > 6:
        names = [*names[:3], "...", *names[-2:]]
    return " -> ".join(names)


def kind_word(kind: ValKind, elem: ir.Elem) -> str:
    if kind == "adj":
        return f"per-neighbour {elem}"
    return ir.Ty(kind, elem).word()
