"""Compiler fuzzing for G2PL: random well-typed programs, a differential oracle, mutation fuzzing.

Three parts, used by `tests/compiler/test_fuzz.py` (a CI-sized subset) and `bench/fuzz.py` (the big runs):

* `generate(seed)` builds a random WELL-TYPED program (`GenProgram`) from the grammar and the
  type rules of docs/language.md: scalar / vertex / edge values of bool, int, float and vid; sets and
  edge sets with `||`, `&&`, `\\`, `!`; lifted arithmetic; `?:`; vertex and edge comprehensions;
  global, neighbourhood (`nvals`, `outnvals`, `allnvals`, `nbrs`, `(u, e) <- nvals v`) and edge
  aggregations; common-neighbour aggregations in edge comprehensions (`w <- nvals u, w in nbrs v`,
  `(w, f) <- outnvals u, (w, g) <- nvals v`, heads and filters over u, v, w, e, f, g); edge tests
  `(v, u) in E`, `(u, v) in S` over edges and per neighbour; the built-in `directed`;
  nested comprehensions; keyed aggregations `AGG [ ... ] by KEY` / `by [K1, K2]` (keys that are
  bare binders, vids, or ints that mostly name no vertex), argmin/argmax payloads `[value, payload]`
  and edge-valued argmin/argmax (edge sets); macro functions; remote reads `G[p]`; `rand()`; `if`/`else`; `while`
  loops whose trip count is bounded by a counter (`i < K`, K <= 4); a multi-value `return`.
  Values are kept deterministic for any evaluation order: no float `sum`/`avg` results (floats
  only through elementwise operations and `min`/`max`), no NaN (no `0/0`, `inf - inf`,
  `inf * 0`, `log`, `sqrt` of negatives, and `max` over possibly-empty float sets is clamped),
  remote reads only at valid vertex IDs or -1.  Integer functions (`idiv`, `imod`/`%` by any
  divisor, 0 included; `bitand` `bitor` `bitxor` `bitnot`; `shl`/`shr` by counts past 63 and
  negative ones) and `mode` (int, vid and bool heads, global and per neighbourhood) are drawn too. Int literals are
  now and then int64 extremes and `int()` takes floats too, so int64 wrap-around and `int(inf)`
  (saturating) are compared on every path.
* `differential(prog, graphs)` compiles the program at -O0, -O1, -O2 and -O2 with each pass
  disabled alone, runs every configuration on every graph (1 rank, in process) and compares
  the `--output` values; programs without rand() are also run by an independent reference
  interpreter (`Reference`: the parsed program evaluated directly with NumPy, no IR / plan /
  generated code), whose values must equal -O0's. `run_mpi(...)` runs `g2pl run --np 2` on an
  edge-list file for the 2-rank comparison. Any exception other than a clean `G2PLError` is a
  failure too.
* Robustness: `mutate(text, rng)` (character/token edits, truncation, splicing) and
  `check_robust(text, file)` (compiling may only raise a `G2PLError` rendered as
  `file:line:col: error: ...`); `graph_file_cases()` lists malformed graph files that
  `g2pl.load_graph` must reject with a `G2PLError` naming the file (and the line).

Failing programs are kept in `tests/fuzz_regressions/` (`save_regression`), after
`minimize(...)` (delta debugging over blocks and lines, sub-expressions, returned values).
"""

from __future__ import annotations

import json
import math
import os
import random
import re
import subprocess
import sys
import tempfile
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from program_args import arg_options  # noqa: E402

import g2pl  # noqa: E402
from g2pl.compiler.passes import PASS_NAMES  # noqa: E402
from g2pl.errors import G2PLError  # noqa: E402
from g2pl.graph import Graph, build_graph  # noqa: E402

REGRESSION_DIR = ROOT / "tests" / "fuzz_regressions"

#: (label, -O level, disabled passes): the configurations whose outputs must agree
CONFIGS: tuple[tuple[str, int, tuple[str, ...]], ...] = (
    ("O0", 0, ()),
    ("O1", 1, ()),
    ("O2", 2, ()),
    *((f"O2-no-{p}", 2, (p,)) for p in PASS_NAMES),
)

ELEMS = ("bool", "int", "float", "vid")
NUMERIC = ("int", "float", "vid")
#: the neighbour generators, weighted (`nvals` the most common), and those a common-neighbour
#: aggregation takes (`allnvals` is a multiset: refused there)
NBR_WORDS = ("nvals", "nvals", "outnvals", "allnvals", "nbrs")
COMMON_WORDS = ("nvals", "nvals", "outnvals", "nbrs")


# =====================================================================================
# Types and generation contexts
# =====================================================================================


@dataclass(frozen=True)
class Ty:
    kind: str  # scalar | vertex | edge
    elem: str  # bool | int | float | vid

    def ann(self, rng: random.Random) -> str:
        """A type annotation spelling this type."""
        if self.kind == "scalar":
            return self.elem
        if self.elem == "bool" and rng.random() < 0.6:
            return "vset" if self.kind == "vertex" else "eset"
        return f"{self.kind}<{self.elem}>"


@dataclass(frozen=True)
class VB:
    """A generator-bound vertex: its name and the element type of its bare value (None: no value)."""

    name: str
    value: str | None


@dataclass
class Ctx:
    """Where an expression is generated.

    T: top level (whole graphs and scalars); V: the head/filters of a vertex comprehension
    centred at `centre`; E: an edge comprehension (`verts` = the endpoints u, v; `edge` = e);
    A: a neighbourhood aggregation (`centre` = the vertex, `nbr` = the neighbour, `edge` = e);
    W: a common-neighbour aggregation (`verts` = u, v and the common neighbour w; `edge` = e;
    `edges` = the connecting edges f, g, no values of their own).
    """

    dom: str
    centre: VB | None = None
    nbr: VB | None = None
    verts: tuple[VB, ...] = ()
    edge: str | None = None
    edge_value: str | None = None  # element type of the bare edge binder (None: an edge set, no value)
    edges: tuple[str, ...] = ()  # W: the connecting edges

    @property
    def vbinders(self) -> tuple[VB, ...]:
        if self.dom == "V":
            return (self.centre,)
        if self.dom == "A":
            return (self.centre, self.nbr)
        return self.verts  # E: u, v; W: u, v, w


TOP = Ctx("T")


@dataclass
class GraphFn:
    """A generated function definition: `name(params) = body;`."""

    name: str
    params: list[tuple[str, Ty]]
    result: Ty
    macro: bool  # elementwise (callable anywhere; kinds follow the arguments) vs. whole-graph (top level)
    used: set[str] = field(default_factory=set)
    # Calls are macro expansions: an argument lands where its parameter stands. Per common neighbour no
    # rand() may be drawn, and inside a comprehension `A == B` compares values at the element instead of
    # whole graphs; so such parameters take no argument (and such places no call) that does either.
    rand_free: set[str] = field(default_factory=set)  # parameters read per common neighbour
    per_element: set[str] = field(default_factory=set)  # parameters read inside a comprehension
    draws_rand: bool = False  # the body calls rand() (directly or through another function)
    whole_compare: bool = False  # the body compares whole graphs (directly or through another function)


@dataclass
class GenProgram:
    """A generated program: its text and the procedure parameters of `main`."""

    seed: int
    source: str
    params: list[tuple[str, str]]  # (name, elem)

    def args_for(self, graph: Graph, rng: random.Random) -> dict[str, Any]:
        return make_args(self.params, graph, rng)


def make_args(params: list[tuple[str, str]], graph: Graph, rng: random.Random) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, elem in params:
        if elem == "int":
            out[name] = rng.randint(0, 3)
        elif elem == "vid":
            ids = graph.ids.tolist()
            out[name] = rng.choice(ids) if ids and rng.random() < 0.9 else -1
        elif elem == "float":
            out[name] = rng.choice([0.0, 0.5, 1.5, 2.0])
        else:
            out[name] = rng.random() < 0.5
    return out


def params_of(source: str) -> list[tuple[str, str]]:
    """`(name, elem)` of the parameters of procedure `main` (annotated), read back from the text."""
    m = re.search(r"^(?:procedure )?main\(([^)]*)\)", source, re.M)
    if not m or not m.group(1).strip():
        return []
    out = []
    for p in m.group(1).split(","):
        name, _, ty = p.partition(":")
        out.append((name.strip(), ty.strip() or "int"))
    return out


class _Budget(Exception):
    pass


# =====================================================================================
# The generator
# =====================================================================================


class ProgramGenerator:
    """Builds one random well-typed program from a seed (see the module docstring)."""

    MAX_DEPTH = 3

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self.dead = 0  # > 0 while generating a macro argument that the macro ignores
        self.history: list[tuple[str, Ty]] = []  # (expression, type) of earlier assignments
        self.fn_used: set[str] = set()
        self.rng = random.Random(seed)
        self.n = 0  # name counter
        self.scope: dict[str, Ty] = {}  # definitely assigned variables (and parameters) here
        self.counters: set[str] = set()
        self.params: list[tuple[str, str]] = []
        self.all_names: dict[str, Ty] = {}  # every variable ever created (a name keeps one type)
        self.fns: list[GraphFn] = []
        self.macro_mode = False  # generating an elementwise function body
        self.in_fn = False  # generating any function body (no procedure variables)
        self.no_rand = 0  # > 0 while generating an argument that a function expands per common neighbour
        self.no_whole = 0  # > 0 while generating an argument that a function expands inside a comprehension
        self.fn_rand_free: set[str] = set()  # of the function being generated: GraphFn.rand_free
        self.fn_per_element: set[str] = set()  # GraphFn.per_element
        self.fn_draws_rand = False  # GraphFn.draws_rand
        self.fn_whole_compare = False  # GraphFn.whole_compare
        self.lines: list[str] = []
        self.size = 0

    # ---------------------------------------------------------------- helpers

    def fresh(self, prefix: str) -> str:
        self.n += 1
        return f"{prefix}{self.n}"

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    def pick(self, seq):
        return self.rng.choice(list(seq))

    def rand_ok(self, ctx: Ctx) -> bool:
        """May `rand()` be drawn here? Not per common neighbour (docs/language.md), nor in an argument
        that a function expands per common neighbour."""
        return ctx.dom != "W" and self.no_rand == 0

    def drew_rand(self) -> None:
        self.fn_draws_rand = True

    def callable_here(self, ctx: Ctx, f: GraphFn) -> bool:
        """May `f` be expanded here (see GraphFn.rand_free)?"""
        return (self.rand_ok(ctx) or not f.draws_rand) and (ctx.dom == "T" and not self.no_whole
                                                            or not f.whole_compare)

    def vars_of(self, ty: Ty) -> list[str]:
        return [n for n, t in self.scope.items() if t == ty]

    def tick(self) -> None:
        self.size += 1
        if self.size > 4000:
            raise _Budget

    # ---------------------------------------------------------------- literals

    def lit(self, elem: str) -> str:
        r = self.rng
        if elem == "bool":
            return r.choice(["true", "false"])
        if elem == "int":
            # now and then an extreme (int64 wrap-around: docs/language.md, "Integer arithmetic ...")
            v = r.choice([INT64_MAX, -INT64_MAX, 2**62, 3037000500]) if r.random() < 0.04 else \
                r.choice([0, 1, 1, 2, 2, 3, 5, 7, -1, -2, 10])
            return f"({v})" if v < 0 else str(v)
        if elem == "float":
            return r.choice(["0.5", "1.0", "2.5", "0.25", "3.0", ".5", "1e-1", "2.0", "inf", "0.0", "1.5e0"])
        raise ValueError(elem)

    def poslit(self) -> str:
        return self.rng.choice(["2", "3", "2.0", "0.5", "4", "1.5"])

    # ---------------------------------------------------------------- expressions
    #
    # gen(ctx, kind, elem, d): an expression of element type `elem`. At top level `kind` is
    # "scalar", "vertex" or "edge" (the exact kind wanted); inside comprehensions it is
    # "local" (a per-element value; scalars broadcast, so any scalar expression fits too).

    def gen(self, ctx: Ctx, kind: str, elem: str, d: int) -> str:
        self.tick()
        if d <= 0 or self.chance(0.25):
            s = self.leaf(ctx, kind, elem)
            if s is not None:
                return s
            if d <= 0:
                return self.fallback(ctx, kind, elem)
        for _ in range(8):
            s = getattr(self, "g_" + elem)(ctx, kind, max(d, 1))
            if s is not None:
                return s
        s = self.leaf(ctx, kind, elem)
        if s is not None:
            return s
        return self.fallback(ctx, kind, elem)

    def fallback(self, ctx: Ctx, kind: str, elem: str) -> str:
        """An expression of this type that always exists."""
        if kind in ("vertex", "edge"):
            return self.comprehension(kind, elem, 1, simple=True)
        if elem in ("bool", "int", "float"):
            return self.lit(elem)
        # vid
        if ctx.dom in ("V", "A") and not self.macro_mode:
            return "id"
        if ctx.dom == "E" and ctx.verts:
            return self.pick(ctx.verts).name
        if self.macro_mode:
            return "(-1)"
        x = self.fresh("x")
        return f"min [ id | {x} <- V ]"

    def operand_kinds(self, kind: str, n: int) -> list[str]:
        """Kinds of n operands of a lifted operator producing `kind` (at least one graph at top level)."""
        if kind in ("scalar", "local"):
            return [kind] * n
        ks = [kind if self.chance(0.6) else "scalar" for _ in range(n)]
        if kind not in ks:
            ks[self.rng.randrange(n)] = kind
        return ks

    def leaf(self, ctx: Ctx, kind: str, elem: str) -> str | None:
        """A variable, literal, binder or graph read of this type; None if there is none.

        Inside comprehensions, binder-based values (`x`, `G[u]`, `u in S`, `Weight[e]`) are
        preferred over variables and literals, so that values differ from element to element."""
        lits: list[str] = []
        vars_: list[str] = []
        local: list[str] = []
        scalar_ok = kind in ("scalar", "local")
        if scalar_ok:
            vars_ += self.vars_of(Ty("scalar", elem))
            if elem != "vid":
                lits.append(self.lit(elem))
            if elem == "int" and self.counters and not self.in_fn:
                vars_ += [c for c in sorted(self.counters) if c in self.scope]
        if kind in ("vertex", "edge"):
            vars_ += self.vars_of(Ty(kind, elem))
            if elem == "bool":
                lits += ["V", "empty"] if kind == "vertex" else ["E", "emptyE"]
        if scalar_ok and elem == "bool" and self.chance(0.1):
            vars_.append("directed")
            if kind == "vertex" and elem == "vid" and not self.macro_mode:
                vars_.append("id")
            if kind == "edge" and elem == "float" and not self.macro_mode:
                vars_.append("Weight")
        if ctx.dom in ("V", "A") and kind == "local":
            for b in ctx.vbinders:
                if b.value == elem:
                    local.append(b.name)
            if not self.in_fn:  # (a function's graph parameter may be replaced by a whole comprehension)
                local += self.vars_of(Ty("vertex", elem))  # bare: the value at the centre
            if elem == "vid":
                local.append("id")
        if ctx.dom in ("E", "W") and kind == "local":
            if not self.in_fn:
                local += self.vars_of(Ty("edge", elem))  # bare: the value at this edge
            if elem == "float":
                local.append("Weight")
            if ctx.edge and ctx.edge_value == elem:
                local.append(ctx.edge)
            if elem == "vid":
                local += [b.name for b in ctx.verts]
        if kind == "local" and ctx.dom != "T":
            # reads at binders: X[b], H[e], Weight[e], id[b], b in S, e in A
            for b in ctx.vbinders:
                for g in self.vars_of(Ty("vertex", elem)):
                    local.append(f"{g}[{b.name}]")
                if elem == "vid":
                    local.append(f"id[{b.name}]")
                if elem == "bool":
                    for s in self.vars_of(Ty("vertex", "bool")):
                        local.append(f"({b.name} in {s})")
            for edge in (ctx.edge, *ctx.edges) if ctx.edge else ctx.edges:
                for h in self.vars_of(Ty("edge", elem)):
                    local.append(f"{h}[{edge}]")
                if elem == "float":
                    local.append(f"Weight[{edge}]")
                if elem == "bool":
                    for s in self.vars_of(Ty("edge", "bool")):
                        local.append(f"({edge} in {s})")
            if elem == "bool":  # edge tests: the centre edge or its reverse, the edge to or from a neighbour
                ends = ctx.verts[:2] if ctx.dom == "E" else (ctx.centre, ctx.nbr) if ctx.dom == "A" else ()
                if len(ends) == 2 and not (self.in_fn and self.chance(0.7)):
                    a, b = (x.name for x in (ends if self.chance(0.5) else ends[::-1]))
                    for s in ["E", *self.vars_of(Ty("edge", "bool"))]:
                        local.append(f"(({a}, {b}) in {s})")
        p_lit = 0.1 if elem == "bool" else 0.25
        if local and self.chance(0.7):
            choice = self.pick(local)
        elif lits and (self.chance(p_lit) or not (vars_ or local)):
            choice = self.pick(lits)
        elif vars_ or local:
            choice = self.pick(vars_ + local)
        else:
            return None
        if self.macro_mode and self.dead == 0 and choice in self.scope:
            self.fn_used.add(choice)  # this parameter decides the kind of the macro's result
        if self.in_fn and (ctx.dom != "T" or self.no_whole):
            names = [n for n in re.findall(r"[A-Za-z_]\w*", choice) if n in self.scope]
            self.fn_per_element.update(names)  # a parameter read inside a comprehension
            if ctx.dom == "W" or self.no_rand:
                self.fn_rand_free.update(names)  # ... per common neighbour
        return choice

    # ---- per element type

    def sub(self, ctx: Ctx, kind: str, elem: str, d: int) -> str:
        return self.gen(ctx, kind, elem, d - 1)

    def g_bool(self, ctx: Ctx, kind: str, d: int) -> str | None:
        if kind in ("vertex", "edge") and ctx.dom == "T" and not self.macro_mode and self.chance(0.06):
            return self.keyed(kind, "bool", d)
        r = self.rng.random()
        if r < 0.25:  # comparison of numbers
            a, b = self.operand_kinds(kind, 2)
            ea, eb = self.pick(NUMERIC), self.pick(NUMERIC)
            ops = ["<", "<=", ">", ">="]
            if a == "scalar" or b == "scalar" or kind in ("local", "scalar"):
                if not (self.macro_mode and a == b):
                    ops += ["==", "!="]
            op = self.pick(ops)
            if ea == "float" or eb == "float":
                ea = eb = "float" if self.chance(0.5) else ea
            return f"({self.sub(ctx, a, ea, d)} {op} {self.sub(ctx, b, eb, d)})"
        if r < 0.45:  # logic
            a, b = self.operand_kinds(kind, 2)
            op = self.pick(["&&", "||"])
            if kind in ("vertex", "edge") and not self.macro_mode and self.chance(0.4):
                op = "\\"
                a = b = kind
            return f"({self.sub(ctx, a, 'bool', d)} {op} {self.sub(ctx, b, 'bool', d)})"
        if r < 0.52:
            return f"(!{self.sub(ctx, kind, 'bool', d)})"
        if r < 0.57 and kind in ("scalar", "local") and (ctx.dom != "T" or kind == "scalar") and self.rand_ok(ctx):
            self.drew_rand()
            return f"(rand() < {self.pick(['0.5', '0.3', '0.8'])})"
        if r < 0.62:
            return self.cond(ctx, kind, "bool", d)
        if r < 0.67 and kind in ("scalar", "local") and not self.macro_mode:
            op = self.pick(["==", "!="])
            return f"({self.sub(ctx, kind, 'bool', d)} {op} {self.sub(ctx, kind, 'bool', d)})"
        if self.macro_mode:
            return self.call_macro(ctx, kind, "bool", d)
        if r < 0.71 and kind in ("scalar", "local"):
            return self.avg_bool(ctx, d)
        if r < 0.80 and kind in ("scalar", "local"):
            return self.aggregation(ctx, "bool", d)
        if r < 0.86 and kind == "scalar" and ctx.dom == "T" and not self.no_whole:  # whole-graph comparison
            self.fn_whole_compare = True
            gk = self.pick(["vertex", "edge"])
            ge = self.pick(ELEMS)
            a = self.gen(ctx, gk, ge, d - 1)
            if ge == "bool" and self.chance(0.5):
                b = "empty" if gk == "vertex" else "emptyE"
            else:
                b = self.gen(ctx, gk, ge, d - 1)
            return f"({a} {self.pick(['==', '!='])} {b})"
        if r < 0.92 and kind in ("scalar", "local") and ctx.dom not in ("A", "W"):  # remote membership `p in S`
            p = self.vid_index(ctx, d)
            s = self.tgraph("vertex", "bool", d - 1)
            return f"({p} in {s})"
        if r < 0.96 and kind in ("vertex", "edge"):
            return self.comprehension(kind, "bool", d)
        if kind == "vertex" and self.chance(0.5):
            return self.union(d)
        return self.call_fn(ctx, kind, "bool", d)

    def g_int(self, ctx: Ctx, kind: str, d: int) -> str | None:
        if kind in ("vertex", "edge") and ctx.dom == "T" and not self.macro_mode and self.chance(0.06):
            return self.keyed(kind, "int", d)
        r = self.rng.random()
        if r < 0.30:
            a, b = self.operand_kinds(kind, 2)
            op = self.pick(["+", "-", "*", "+", "-"])
            ea = self.pick(["int", "int", "vid"])
            return f"({self.sub(ctx, a, ea, d)} {op} {self.sub(ctx, b, 'int', d)})"
        if r < 0.36:
            return f"(-{self.sub(ctx, kind, 'int', d)})"
        if r < 0.39:
            return f"({self.sub(ctx, kind, self.pick(['int', 'vid']), d)} % {self.pick(['2', '3', '5', '7'])})"
        if r < 0.45:
            return self.int_fn(ctx, kind, d)
        if r < 0.50:
            a, b = self.operand_kinds(kind, 2)
            f = self.pick(["min", "max"])
            return f"{f}({self.sub(ctx, a, 'int', d)}, {self.sub(ctx, b, 'int', d)})"
        if r < 0.54:
            return f"abs({self.sub(ctx, kind, self.pick(['int', 'vid']), d)})"
        if r < 0.60:
            return f"int({self.sub(ctx, kind, self.pick(['bool', 'vid', 'float']), d)})"
        if r < 0.66:
            return self.cond(ctx, kind, "int", d)
        if self.macro_mode:
            return self.call_macro(ctx, kind, "int", d)
        if r < 0.82 and kind in ("scalar", "local"):
            return self.aggregation(ctx, "int", d)
        if r < 0.86:
            return self.remote(ctx, kind, "int", d)
        if r < 0.94 and kind in ("vertex", "edge"):
            return self.comprehension(kind, "int", d)
        return self.call_fn(ctx, kind, "int", d)

    def int_fn(self, ctx: Ctx, kind: str, d: int) -> str:
        """An integer function: division and remainder (any divisor, 0 and negatives too), bitwise
        operations and shifts (counts past 63 and negative ones too)."""
        f = self.pick(["idiv", "imod", "%", "bitand", "bitor", "bitxor", "bitnot", "shl", "shr"])
        lits = ["0", "1", "3", "63", "64", "70", "(-2)"] if f in ("shl", "shr") else ["0", "3", "(-2)", "(-1)", "7"]
        if f == "bitnot" or self.chance(0.6 if f in ("shl", "shr") else 0.4):  # x has the result's kind
            a, y = kind, self.pick(lits)
        else:
            a, b = self.operand_kinds(kind, 2)
            y = self.sub(ctx, b, "int", d)
        x = self.sub(ctx, a, self.pick(["int", "int", "vid"]), d)
        if f == "bitnot":
            return f"bitnot({x})"
        return f"({x} % {y})" if f == "%" else f"{f}({x}, {y})"

    def g_float(self, ctx: Ctx, kind: str, d: int) -> str | None:
        # Invariant: never NaN, never -inf (see the module docstring).
        if kind in ("vertex", "edge") and ctx.dom == "T" and not self.macro_mode and self.chance(0.06):
            return self.keyed(kind, "float", d)
        r = self.rng.random()
        if r < 0.20:
            a, b = self.operand_kinds(kind, 2)
            eb = self.pick(["float", "int"])
            x, y = self.sub(ctx, a, "float", d), self.sub(ctx, b, eb, d)
            return f"({x} + {y})" if self.chance(0.5) else f"({y} + {x})"
        if r < 0.28:
            return f"({self.sub(ctx, kind, 'float', d)} * {self.pick(['2.0', '0.5', '3'])})"
        if r < 0.34:
            return f"({self.sub(ctx, kind, self.pick(['float', 'int']), d)} / {self.pick(['2', '4.0', '0.5'])})"
        if r < 0.42:
            a, b = self.operand_kinds(kind, 2)
            f = self.pick(["min", "max"])
            eb = self.pick(["float", "int"])
            return f"{f}({self.sub(ctx, a, 'float', d)}, {self.sub(ctx, b, eb, d)})"
        if r < 0.48:
            f = self.pick(["abs", "floor", "ceil", "sqrt"])
            x = self.sub(ctx, kind, "float", d)
            return f"sqrt(abs({x}))" if f == "sqrt" else f"{f}({x})"
        if r < 0.54:
            f = self.pick(["float", "float", "float32"])
            return f"{f}({self.sub(ctx, kind, self.pick(['int', 'vid', 'bool', 'float'] if f == 'float32' else ['int', 'vid', 'bool']), d)})"
        if r < 0.58:
            return self.cond(ctx, kind, "float", d)
        if r < 0.62 and kind in ("scalar", "local") and self.rand_ok(ctx):
            self.drew_rand()
            return "rand()"
        if self.macro_mode:
            return self.call_macro(ctx, kind, "float", d)
        if r < 0.78 and kind in ("scalar", "local"):
            return self.aggregation(ctx, "float", d)
        if r < 0.83:
            return self.remote(ctx, kind, "float", d)
        if r < 0.92 and kind in ("vertex", "edge"):
            return self.comprehension(kind, "float", d)
        return self.call_fn(ctx, kind, "float", d)

    def g_vid(self, ctx: Ctx, kind: str, d: int) -> str | None:
        # Invariant: a vid is a vertex's original ID or -1 (so remote reads stay in range).
        if kind in ("vertex", "edge") and ctx.dom == "T" and not self.macro_mode and self.chance(0.06):
            return self.keyed(kind, "vid", d)
        r = self.rng.random()
        if r < 0.20:
            if self.chance(0.3):
                c = self.sub(ctx, self.operand_kinds(kind, 1)[0] if kind != "local" else kind, "bool", d)
                return f"({c} ? {self.sub(ctx, kind, 'vid', d)} : (-1))"
            return self.cond(ctx, kind, "vid", d)
        if r < 0.32:
            a, b = self.operand_kinds(kind, 2)
            return f"{self.pick(['min', 'max'])}({self.sub(ctx, a, 'vid', d)}, {self.sub(ctx, b, 'vid', d)})"
        if self.macro_mode:
            return self.call_macro(ctx, kind, "vid", d)
        if r < 0.62 and kind in ("scalar", "local"):
            return self.aggregation(ctx, "vid", d)
        if r < 0.80:
            return self.remote(ctx, kind, "vid", d)
        if r < 0.92 and kind in ("vertex", "edge"):
            return self.comprehension(kind, "vid", d)
        return self.call_fn(ctx, kind, "vid", d)

    def cond(self, ctx: Ctx, kind: str, elem: str, d: int) -> str:
        c, a, b = self.operand_kinds(kind, 3)
        return f"({self.sub(ctx, c, 'bool', d)} ? {self.sub(ctx, a, elem, d)} : {self.sub(ctx, b, elem, d)})"

    # ---- graphs used inside other expressions (hoisted to top level)

    def tgraph(self, kind: str, elem: str, d: int) -> str:
        """A whole-graph expression usable where a graph is read (a generator source, `G[x]`, `x in S`)."""
        s = self.gen(TOP, kind, elem, max(d, 0))
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", s) and not s.startswith("("):
            s = f"({s})"
        return s

    def vsource(self, d: int) -> tuple[str, str]:
        """A vertex graph/set to range over: (text, element type)."""
        r = self.rng.random()
        if r < 0.35:
            return "V", "bool"
        if r < 0.45:
            return "id", "vid"
        elem = self.pick(ELEMS)
        vs = self.vars_of(Ty("vertex", elem))
        if vs and r < 0.8:
            return self.pick(vs), elem
        return self.tgraph("vertex", elem, d - 1), elem

    def esource(self, d: int) -> tuple[str, str]:
        r = self.rng.random()
        if r < 0.35:
            return "E", "bool"
        if r < 0.45:
            return "Weight", "float"
        elem = self.pick(ELEMS)
        es = self.vars_of(Ty("edge", elem))
        if es and r < 0.8:
            return self.pick(es), elem
        return self.tgraph("edge", elem, d - 1), elem

    def filters(self, ctx: Ctx, d: int, k: int | None = None) -> list[str]:
        n = self.rng.choice([0, 0, 1, 1, 2]) if k is None else k
        return [self.gen(ctx, "local", "bool", d - 1) for _ in range(n)]

    def vctx(self, d: int) -> tuple[str, Ctx]:
        """A vertex generator `x <- SRC` and the context it opens."""
        src, se = self.vsource(d)
        x = self.fresh("x")
        return f"{x} <- {src}", Ctx("V", centre=VB(x, se))

    def ectx(self, d: int, need_verts: bool = False) -> tuple[str, Ctx]:
        src, se = self.esource(d)
        u, e, v = self.fresh("u"), self.fresh("e"), self.fresh("w")
        form = "uev" if need_verts else self.pick(["uev", "uev", "uv", "e"])
        ev = se if se != "bool" else None
        if form == "uev":
            return f"({u}, {e}, {v}) <- {src}", Ctx("E", verts=(VB(u, "vid"), VB(v, "vid")), edge=e, edge_value=ev)
        if form == "uv":
            return f"({u}, {v}) <- {src}", Ctx("E", verts=(VB(u, "vid"), VB(v, "vid")))
        return f"{e} <- {src}", Ctx("E", edge=e, edge_value=ev)

    def quals(self, gen: str, ctx: Ctx, d: int) -> str:
        return ", ".join([gen, *self.filters(ctx, d)])

    def comprehension(self, kind: str, elem: str, d: int, simple: bool = False) -> str:
        if kind == "vertex":
            g, ctx = self.vctx(0 if simple else d)
        else:
            g, ctx = self.ectx(0 if simple else d)
        head = self.gen(ctx, "local", elem, 0 if simple else d - 1)
        q = g if simple else self.quals(g, ctx, d)
        return f"{{ {head} | {q} }}"

    def union(self, d: int) -> str:
        if self.chance(0.5):
            g, ctx = self.vctx(d)
            x = ctx.centre.name
            if self.chance(0.5):
                heads = x
            else:
                ps = [self.gen(ctx, "local", "vid", d - 1) for _ in range(self.rng.randint(1, 2))]
                heads = f"[{', '.join([x, *ps])}]" if self.chance(0.5) else (ps[0] if len(ps) == 1
                                                                              else f"[{', '.join(ps)}]")
            return f"union [ {heads} | {self.quals(g, ctx, d)} ]"
        g, ctx = self.ectx(d, need_verts=True)
        u, v = (b.name for b in ctx.verts)
        parts = self.rng.choice([[u, v], [u], [v], [u, "P"], ["P"]])
        parts = [self.gen(ctx, "local", "vid", d - 1) if p == "P" else p for p in parts]
        heads = parts[0] if len(parts) == 1 and self.chance(0.5) else f"[{', '.join(parts)}]"
        return f"union [ {heads} | {self.quals(g, ctx, d)} ]"

    # ---- remote reads

    def vid_index(self, ctx: Ctx, d: int) -> str:
        """A vid-valued index that is not a bare binder (so `G[p]` is a remote read)."""
        kind = "scalar" if ctx.dom == "T" else "local"
        p = self.gen(ctx, kind, "vid", d - 1)
        if any(p == b.name for b in ctx.vbinders) or p == ctx.edge:
            p = f"max({p}, (-1))"  # a bare binder would read the graph AT that element instead
        return p

    def remote(self, ctx: Ctx, kind: str, elem: str, d: int) -> str | None:
        if ctx.dom in ("A", "W") or self.macro_mode:
            return None
        base = self.tgraph("vertex", elem, d - 1) if self.chance(0.4) else None
        if base is None:
            vs = self.vars_of(Ty("vertex", elem))
            base = self.pick(vs) if vs else ("id" if elem == "vid" else self.tgraph("vertex", elem, d - 1))
        if kind in ("vertex", "edge"):  # at top level: G[P] with P a vid graph of that kind
            idx = self.gen(TOP, kind, "vid", d - 1)
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", idx):
                idx = f"({idx})"
        else:
            idx = self.vid_index(ctx, d)
        return f"{base}[{idx}]"

    # ---- aggregations

    def small_int(self, ctx: Ctx, d: int) -> str:
        """A small int head (sums stay far from overflow)."""
        r = self.rng.random()
        if r < 0.3:
            return self.lit("int")
        if r < 0.55:
            return f"int({self.gen(ctx, 'local', 'bool', d - 1)})"
        if r < 0.65:
            return self.gen(ctx, "local", "bool", d - 1)  # sum over bools counts the trues
        return f"({self.gen(ctx, 'local', self.pick(['int', 'vid']), d - 1)} % {self.pick(['2', '3', '5'])})"

    def agg_body(self, ctx: Ctx, elem: str, d: int, vertex_gen: bool) -> tuple[str, str] | None:
        """(op, head) of an aggregation producing `elem`, with the head generated in `ctx`."""
        if elem == "bool":
            return self.pick(["and", "or", "and", "or", "mode"]), self.gen(ctx, "local", "bool", d - 1)
        if elem == "int":
            op = self.pick(["sum", "sum", "count", "min", "max", "mode"])
            if op == "sum":
                return op, self.small_int(ctx, d)
            if op == "count":
                return op, self.gen(ctx, "local", self.pick(ELEMS), d - 2)
            return op, self.gen(ctx, "local", "int", d - 1)
        if elem == "float":
            return self.pick(["min", "max"]), self.gen(ctx, "local", "float", d - 1)
        # vid
        if vertex_gen and self.chance(0.7):
            return self.pick(["argmin", "argmax"]), self.gen(ctx, "local", self.pick(["int", "float"]), d - 1)
        return self.pick(["min", "max", "mode"]), self.gen(ctx, "local", "vid", d - 1)

    def wrap_agg(self, op: str, elem: str, text: str) -> str:
        if op == "max" and elem == "float":
            return f"max({text}, {self.pick(['(-1000.0)', '0.0', '(-1.5)'])})"  # an empty max is -inf
        if op in ("min", "max") and elem == "int" and self.chance(0.6):
            return f"min(max({text}, (-100)), 100)"  # the empty min/max is +-2^63
        return text

    def aggregation(self, ctx: Ctx, elem: str, d: int) -> str | None:
        """A global aggregation (hoisted when nested) or a neighbourhood aggregation."""
        if self.macro_mode:
            return None
        if ctx.dom == "E" and len(ctx.verts) == 2 and self.chance(0.5):
            return self.common_agg(ctx, elem, d)
        centres: list[tuple[VB, str | None]] = []
        if ctx.dom == "V":
            centres.append((ctx.centre, ctx.centre.value))
        elif ctx.dom in ("E", "W"):
            centres += [(b, "bool") for b in ctx.verts]  # hoisted: computed for all vertices first
        elif ctx.dom == "A":
            centres.append((ctx.nbr, ctx.nbr.value))
        if centres and self.chance(0.6):
            centre, val = self.pick(centres)
            return self.nbr_agg(centre, val, elem, d)
        if self.chance(0.7) or elem == "vid":
            g, inner = self.vctx(d)
            vgen = True
        else:
            g, inner = self.ectx(d)
            vgen = False
        body = self.agg_body(inner, elem, d, vgen)
        if body is None:
            return None
        op, head = body
        return self.wrap_agg(op, elem, f"{op} [ {head} | {self.quals(g, inner, d)} ]")

    def nbr_agg(self, centre: VB, val: str | None, elem: str, d: int) -> str:
        u = self.fresh("y")
        e = self.fresh("f") if self.chance(0.4) else None
        kw = self.pick(NBR_WORDS)
        pat = f"({u}, {e})" if e else u
        inner = Ctx("A", centre=VB(centre.name, val), nbr=VB(u, val), edge=e, edge_value=None)
        if elem == "float" and self.chance(0.4):  # a sum of single-precision values: at -O2 4-byte messages
            graphs = self.vars_of(Ty("vertex", "float")) + self.vars_of(Ty("vertex", "int"))
            if graphs and self.chance(0.7):  # a vertex value read at the neighbour: a sender-side message
                x = f"({self.pick(graphs)}[{u}] {self.pick(['*', '/', '+'])} {self.pick(['0.1', '1.5', '3', '1e30'])})"
            else:
                x = self.gen(inner, 'local', self.pick(['float', 'int']), d - 1)
            op, head = "sum", f"float32({x})"
        else:
            op, head = self.agg_body(inner, elem, d, True)
        return self.wrap_agg(op, elem, f"{op} [ {head} | {self.quals(f'{pat} <- {kw} {centre.name}', inner, d)} ]")

    def common_agg(self, ctx: Ctx, elem: str, d: int) -> str:
        """An aggregation over the common neighbours of the edge's endpoints (one value per edge)."""
        u, v = ctx.verts
        w = self.fresh("y")
        f = self.fresh("f") if self.chance(0.5) else None
        g = self.fresh("f") if self.chance(0.5) else None
        k1, k2 = (self.pick(COMMON_WORDS) for _ in range(2))
        g1 = f"({w}, {f}) <- {k1} {u.name}" if f else f"{w} <- {k1} {u.name}"
        if g:
            g2 = f"({w}, {g}) <- {k2} {v.name}"
        else:
            g2 = f"{w} {self.pick(['in', '<-'])} {k2} {v.name}"
        gens = [g1, g2] if self.chance(0.7) else [g2.replace(f"{w} in ", f"{w} <- "), g1]
        inner = Ctx("W", verts=(u, v, VB(w, "vid")), edge=ctx.edge, edge_value=ctx.edge_value,
                    edges=tuple(x for x in (f, g) if x))
        op, head = self.agg_body(inner, elem, d, True)
        return self.wrap_agg(op, elem, f"{op} [ {head} | {', '.join([*gens, *self.filters(inner, d)])} ]")

    def avg_bool(self, ctx: Ctx, d: int) -> str:
        """`avg [...] OP c`: an avg is only compared (an empty avg is NaN; every comparison is false)."""
        if ctx.dom == "V" and self.chance(0.6):
            u = self.fresh("y")
            inner = Ctx("A", centre=ctx.centre, nbr=VB(u, ctx.centre.value))
            g = f"{u} <- {self.pick(NBR_WORDS)} {ctx.centre.name}"
        else:
            g, inner = self.vctx(d)
        head = f"({self.gen(inner, 'local', self.pick(['int', 'vid']), d - 1)} % {self.pick(['3', '4'])})"
        return f"(avg [ {head} | {self.quals(g, inner, d)} ] {self.pick(['<', '>=', '>'])} {self.pick(['1.0', '0.5'])})"

    # ---- keyed aggregations and argmin/argmax winners

    def key(self, ctx: Ctx, d: int) -> str:
        """A key naming a vertex by ID: a bare vertex binder, a vid expression, or now and then an
        int that is mostly no vertex (dropped)."""
        binders = [b.name for b in ctx.vbinders]
        r = self.rng.random()
        if r < 0.35 and binders:
            return self.pick(binders)
        if r < 0.45:
            return f"({self.gen(ctx, 'local', 'vid', d - 1)} + {self.pick(['1', '2'])})"
        k = self.gen(ctx, "local", "vid", d - 1)
        return k if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*(\[[A-Za-z0-9_#]+\])?", k) else f"({k})"

    def keyed(self, kind: str, elem: str, d: int) -> str | None:
        """`AGG [ head | ... ] by KEY` (a vertex graph), `argmin [[value, payload] | ...] by KEY`, or
        an edge argmin/argmax (the winning edges: an edge set)."""
        arg = self.pick(["argmin", "argmax"])
        if kind == "edge":
            if elem != "bool":
                return None
            g, inner = self.ectx(d)
            head = self.gen(inner, "local", self.pick(["int", "float", "vid"]), d - 1)
            by = ""
            if self.chance(0.7):
                keys = [self.key(inner, d) for _ in range(self.rng.choice([1, 1, 2]))]
                by = " by " + (keys[0] if len(keys) == 1 else f"[{', '.join(keys)}]")
            return f"({arg} [ {head} | {self.quals(g, inner, d)} ]{by})"
        g, inner = self.vctx(d) if self.chance(0.6) else self.ectx(d)
        vgen = inner.dom == "V"
        keys = [self.key(inner, d) for _ in range(self.rng.choice([1, 1, 1, 2]))]
        by = keys[0] if len(keys) == 1 else f"[{', '.join(keys)}]"
        if self.chance(0.25):  # a payload read at the winner
            head = self.gen(inner, "local", self.pick(["int", "float", "vid"]), d - 1)
            payload = self.gen(inner, "local", elem, d - 1)
            return f"({arg} [ [{head}, {payload}] | {self.quals(g, inner, d)} ] by {by})"
        body = self.agg_body(inner, elem, d, vgen)
        if body is None:
            return None
        op, head = body
        if elem == "vid" and op in ("argmin", "argmax") and not vgen:
            op = self.pick(["min", "max"])
            head = self.gen(inner, "local", "vid", d - 1)
        return self.wrap_agg(op, elem, f"({op} [ {head} | {self.quals(g, inner, d)} ] by {by})")

    # ---- functions

    def call_fn(self, ctx: Ctx, kind: str, elem: str, d: int) -> str | None:
        """A call of a whole-graph function returning (kind, elem) (top level only), or of a macro."""
        if ctx.dom == "T" and kind in ("scalar", "vertex", "edge"):
            cands = [f for f in self.fns if not f.macro and f.result == Ty(kind, elem) and self.callable_here(ctx, f)]
            if cands and self.chance(0.7):
                f = self.pick(cands)
                args = [self.fn_arg(ctx, f, p, t.kind, t.elem, d - 1) for p, t in f.params]
                return f"{f.name}({', '.join(args)})"
        return self.call_macro(ctx, kind, elem, d)

    def fn_arg(self, ctx: Ctx, f: GraphFn, p: str, kind: str, elem: str, d: int) -> str:
        """The argument for parameter `p` of `f`, fit for where `f` reads `p` (GraphFn.rand_free)."""
        self.fn_draws_rand |= f.draws_rand
        self.fn_whole_compare |= f.whole_compare
        self.no_rand += p in f.rand_free
        self.no_whole += p in f.per_element
        try:
            return self.gen(ctx, kind, elem, d)
        finally:
            self.no_rand -= p in f.rand_free
            self.no_whole -= p in f.per_element

    def call_macro(self, ctx: Ctx, kind: str, elem: str, d: int) -> str | None:
        cands = [f for f in self.fns if f.macro and f.result.elem == elem and f.used and self.callable_here(ctx, f)]
        if not cands:
            return None
        f = self.pick(cands)
        if kind in ("vertex", "edge"):
            gparam = self.pick(sorted(f.used))
            kinds = [kind if (p == gparam or (p in f.used and self.chance(0.4))) else "scalar" for p, _ in f.params]
        else:
            kinds = [kind] * len(f.params)
        args = []
        for (p, t), k in zip(f.params, kinds):
            self.dead += p not in f.used
            try:
                args.append(self.fn_arg(ctx, f, p, k, t.elem, d - 1))
            finally:
                self.dead -= p not in f.used
        return f"{f.name}({', '.join(args)})"

    def gen_function(self) -> str:
        macro = self.chance(0.5)
        name = self.fresh("fn")
        params: list[tuple[str, Ty]] = []
        for _ in range(self.rng.randint(1, 3)):
            if macro:
                t = Ty("scalar", self.pick(ELEMS))
            else:
                t = Ty(self.pick(["scalar", "vertex", "vertex", "edge"]), self.pick(ELEMS))
            params.append((self.fresh("q"), t))
        result = Ty("scalar" if macro else self.pick(["scalar", "vertex", "vertex", "edge"]), self.pick(ELEMS))
        saved_scope, saved_counters = self.scope, self.counters
        self.scope = {p: t for p, t in params}
        self.counters = set()
        self.macro_mode, self.in_fn = macro, True
        self.fn_used, self.fn_rand_free, self.fn_per_element = set(), set(), set()
        self.fn_draws_rand = self.fn_whole_compare = False
        try:
            body = self.gen(TOP, result.kind, result.elem, self.rng.randint(1, 3))
        finally:
            self.scope, self.counters = saved_scope, saved_counters
            self.macro_mode, self.in_fn = False, False
        used = set(self.fn_used) if macro else {p for p, _ in params}
        self.fns.append(GraphFn(name, params, result, macro, used, set(self.fn_rand_free), set(self.fn_per_element),
                                self.fn_draws_rand, self.fn_whole_compare))
        kw = "function " if self.chance(0.15) else ""
        return f"{kw}{name}({', '.join(p for p, _ in params)}) = {body};"

    # ---------------------------------------------------------------- statements

    def emit(self, depth: int, text: str) -> None:
        self.lines.append("  " * depth + text)

    def assignable(self) -> list[str]:
        return [n for n in self.scope if n not in self.counters and n not in dict(self.params)]

    def new_var(self, depth: int) -> None:
        kind = self.pick(["scalar", "scalar", "vertex", "vertex", "vertex", "edge", "edge"])
        elem = self.pick(ELEMS)
        ty = Ty(kind, elem)
        prefix = {"scalar": "c", "vertex": "S" if elem == "bool" else "G", "edge": "M" if elem == "bool" else "H"}
        name = self.fresh(prefix[kind])
        d = self.rng.randint(1, self.MAX_DEPTH)
        if kind != "scalar" and self.chance(0.08):  # a scalar broadcast into an annotated graph
            ann = f" : {ty.ann(self.rng)}"
            value = self.gen(TOP, "scalar", elem, d)
        else:
            ann = f" : {ty.ann(self.rng)}" if self.chance(0.2) else ""
            value = self.repeat(ty) or self.gen(TOP, kind, elem, d)
            self.history.append((value, ty))
        self.emit(depth, f"{name}{ann} = {value};")
        self.scope[name] = ty
        self.all_names[name] = ty

    def repeat(self, ty: Ty) -> str | None:
        """Sometimes an expression generated before again (for reuse / merge / reorder to act on)."""
        if not self.chance(0.15):
            return None
        cands = []
        for text, t in self.history:
            if t != ty:
                continue
            names = set(re.findall(r"[A-Za-z_]\w*", text))
            if all(n in self.scope for n in names if n in self.all_names or n in dict(self.params)):
                cands.append(text)
        return self.pick(cands) if cands else None

    def reassign(self, depth: int, name: str | None = None) -> bool:
        names = self.assignable()
        if not names:
            return False
        name = name or self.pick(names)
        ty = self.scope[name]
        d = self.rng.randint(1, self.MAX_DEPTH)
        if ty.kind != "scalar" and self.chance(0.1):
            value = self.gen(TOP, "scalar", ty.elem, d)  # broadcast
        elif ty.kind == "vertex" and ty.elem == "bool" and self.chance(0.4):
            op = self.pick(["\\", "&&", "||"])
            value = f"{name} {op} {self.gen(TOP, 'vertex', 'bool', d)}"
        else:
            value = self.repeat(ty) or self.gen(TOP, ty.kind, ty.elem, d)
            self.history.append((value, ty))
        self.emit(depth, f"{name} = {value};")
        return True

    def block(self, depth: int, n: int, loop_level: int) -> None:
        for _ in range(n):
            self.statement(depth, loop_level)

    def statement(self, depth: int, loop_level: int) -> None:
        r = self.rng.random()
        if r < 0.45 or not self.assignable():
            self.new_var(depth)
        elif r < 0.72:
            self.reassign(depth)
        elif r < 0.86 and depth < 3:
            self.if_stmt(depth, loop_level)
        elif loop_level < 2 and depth < 3:
            self.while_stmt(depth, loop_level)
        else:
            self.reassign(depth)

    def scoped(self, fn: Callable[[], None]) -> None:
        """Run fn with a copy of the scope (variables first assigned inside do not escape)."""
        saved = dict(self.scope)
        fn()
        self.scope = saved

    def if_stmt(self, depth: int, loop_level: int) -> None:
        c = self.gen(TOP, "scalar", "bool", self.rng.randint(1, 2))
        then = self.pick(["", "then "])
        self.emit(depth, f"if ({c}) {then}{{")
        self.scoped(lambda: self.block(depth + 1, self.rng.randint(1, 3), loop_level))
        r = self.rng.random()
        if r < 0.4:
            self.emit(depth, "}")
        elif r < 0.85:
            self.emit(depth, "} else {")
            self.scoped(lambda: self.block(depth + 1, self.rng.randint(1, 2), loop_level))
            self.emit(depth, "}")
        else:
            c2 = self.gen(TOP, "scalar", "bool", 1)
            self.emit(depth, f"}} else if ({c2}) {{")
            self.scoped(lambda: self.block(depth + 1, 1, loop_level))
            self.emit(depth, "} else {")
            self.scoped(lambda: self.block(depth + 1, 1, loop_level))
            self.emit(depth, "}")

    def while_stmt(self, depth: int, loop_level: int) -> None:
        i = self.fresh("i")
        k = self.rng.randint(1, 4 if loop_level == 0 else 2)
        self.emit(depth, f"{i} = 0;")
        self.scope[i] = Ty("scalar", "int")
        self.all_names[i] = Ty("scalar", "int")
        self.counters.add(i)
        cond = f"{i} < {k}"
        sets = [n for n in self.vars_of(Ty("vertex", "bool")) if n in self.assignable()]
        shrink = None
        r = self.rng.random()
        if sets and r < 0.35:
            shrink = self.pick(sets)
            cond = f"{shrink} != empty && {cond}" if self.chance(0.5) else f"{cond} && ({shrink} != empty)"
        elif r < 0.55:
            cond = f"{cond} && {self.gen(TOP, 'scalar', 'bool', 2)}"
        self.emit(depth, f"while ({cond}) {{")

        def body() -> None:
            if shrink:
                self.emit(depth + 1, f"{shrink} = {shrink} \\ {self.gen(TOP, 'vertex', 'bool', 2)};")
            self.block(depth + 1, self.rng.randint(1, 4), loop_level + 1)
            self.emit(depth + 1, f"{i} = {i} + 1;")

        self.scoped(body)
        self.emit(depth, "}")

    def return_stmt(self, depth: int) -> None:
        vals: list[str] = []
        names = [n for n in self.scope if n not in self.counters]
        self.rng.shuffle(names)
        vals += names[: self.rng.randint(1, 3)]
        if not vals or self.chance(0.4):
            kind = self.pick(["scalar", "vertex", "edge"])
            elem = self.pick(ELEMS)
            e = self.gen(TOP, kind, elem, 2)
            vals.append(e)
        self.emit(depth, f"return {', '.join(vals)};")

    # ---------------------------------------------------------------- whole program

    def program(self) -> GenProgram:
        r = self.rng
        fn_lines = [self.gen_function() for _ in range(r.choice([0, 0, 1, 1, 2, 3]))]
        for pname, elem in (("pk", "int"), ("pr", "vid"), ("pt", "float"), ("pb", "bool")):
            if self.chance(0.3):
                self.params.append((pname, elem))
                self.scope[pname] = Ty("scalar", elem)
        n = r.randint(3, 9)
        for j in range(n):
            self.statement(1, 0)
            if j == n // 2 and self.chance(0.08):  # an early return under a condition
                self.emit(1, f"if ({self.gen(TOP, 'scalar', 'bool', 1)}) {{")
                self.scoped(lambda: self.return_stmt(2))
                self.emit(1, "}")
        self.return_stmt(1)
        kw = "procedure " if self.chance(0.15) else ""
        head = f"{kw}main({', '.join(f'{p}: {e}' for p, e in self.params)}) {{"
        proc = [head, *self.lines, "}"]
        if fn_lines and self.chance(0.5):
            text = "\n".join([*fn_lines, *proc])
        else:
            text = "\n".join([*proc, *fn_lines])
        if self.chance(0.1):  # a second procedure (must compile too; `main` is the entry)
            text += "\naux(z: int) {\n  w = z + 1;\n  return w;\n}"
        if self.chance(0.1):
            text = "// generated by tests/fuzzgen.py\n" + text.replace("\n  return", "\n  /* out */ return", 1)
        return GenProgram(self.seed, text + "\n", list(self.params))


def generate(seed: int) -> GenProgram:
    """A random well-typed program for `seed` (deterministic)."""
    for attempt in range(20):
        try:
            return ProgramGenerator(seed * 1000 + attempt).program() if attempt else ProgramGenerator(seed).program()
        except _Budget:
            continue
    raise RuntimeError(f"seed {seed}: could not generate a program within the size budget")


# =====================================================================================
# Graphs
# =====================================================================================


@dataclass
class TestGraph:
    name: str
    directed: bool
    edges: list[tuple[int, int, float]]  # self-loops give isolated vertices
    graph: Graph

    def edge_list_text(self) -> str:
        return "".join(f"{a} {b} {w!r}\n" for a, b, w in self.edges)


def medium_graph(seed: int, directed: bool) -> TestGraph:
    """A graph of a few hundred to a few thousand vertices with hubs (preferential attachment) and
    isolated vertices: big enough for the runtime's size-dependent choices (push or pull, early-exit
    rounds, narrow index types, reused buffers) to take both sides, which tiny graphs never do."""
    rng = random.Random(seed ^ 0x3D1A)
    n = rng.randint(200, 3000)
    ids = sorted(rng.sample(range(0, 40 * n), n))
    ends: list[int] = [ids[0]]
    edges = []
    for x in ids[1:]:
        if rng.random() < 0.05:
            continue  # isolated
        for _ in range(rng.choice([1, 1, 2, 3, 6])):
            y = rng.choice(ends) if rng.random() < 0.7 else rng.choice(ids)
            edges.append((x, y, rng.choice([0.5, 1.0, 1.5, 2.0, 3.25])))
            ends += [x, y]
    touched = {x for a, b, _ in edges for x in (a, b)}
    edges += [(x, x, 1.0) for x in ids if x not in touched]
    name = f"gm-{'dir' if directed else 'und'}"
    g = build_graph(np.array([a for a, _, _ in edges], np.int64), np.array([b for _, b, _ in edges], np.int64),
                    np.array([w for _, _, w in edges], np.float64), directed=directed, name=name)
    return TestGraph(name, directed, edges, g)


def random_graphs(seed: int, count: int = 3, medium: bool = False) -> list[TestGraph]:
    """Small random graphs: undirected and directed, non-contiguous IDs, isolated vertices, weights;
    with `medium`, also one `medium_graph`."""
    rng = random.Random(seed)
    out = []
    for j in range(count):
        directed = j % 2 == 1
        n = rng.choice([1, 2, 4, 6, 8, 11, 14, 20, 30]) if j != 0 else rng.randint(6, 14)
        ids = sorted(rng.sample(range(0, 60 + 10 * n), n))
        m = rng.randint(0, 2 * n) if n > 1 else 0
        edges = []
        for _ in range(m):
            a, b = rng.sample(ids, 2)
            edges.append((a, b, rng.choice([0.0, 0.5, 1.0, 1.5, 2.0, 3.25, 7.0])))
        if edges and rng.random() < 0.3:  # duplicates (merged, smallest weight kept) and reversed copies
            a, b, w = rng.choice(edges)
            edges.append((b, a, w + 1.0) if rng.random() < 0.5 else (a, b, max(0.0, w - 0.5)))
        touched = {x for a, b, _ in edges for x in (a, b)}
        if touched and rng.random() < 0.3:  # a dropped self-loop on a vertex with edges
            x = rng.choice(sorted(touched))
            edges.append((x, x, 2.0))
        edges += [(x, x, 1.0) for x in ids if x not in touched]  # isolated vertices
        src = [a for a, _, _ in edges]
        dst = [b for _, b, _ in edges]
        w = [c for _, _, c in edges]
        name = f"g{j}-{'dir' if directed else 'und'}"
        g = build_graph(np.array(src, np.int64), np.array(dst, np.int64), np.array(w, np.float64),
                        directed=directed, name=name)
        out.append(TestGraph(name, directed, edges, g))
    if medium:
        out.append(medium_graph(seed, directed=seed % 2 == 1))
    return out


# =====================================================================================
# The differential oracle
# =====================================================================================


@dataclass
class Failure:
    kind: str  # compile-error | crash | runtime-error | mismatch | mpi-mismatch | mpi-error | robust
    config: str
    detail: str
    graph: str = ""

    def signature(self) -> tuple[str, str]:
        return (self.kind, self.config.split()[0])

    def __str__(self) -> str:
        g = f" on {self.graph}" if self.graph else ""
        return f"[{self.kind}] {self.config}{g}: {self.detail}"


class TimeLimit(Exception):
    """Raised inside `time_limit` when the time is up."""


class time_limit:  # noqa: N801 - used as a context manager
    """`with time_limit(s):` raises TimeLimit after s seconds (SIGALRM; a no-op off the main thread)."""

    def __init__(self, seconds: float | None) -> None:
        import threading

        self.seconds = seconds
        self.active = bool(seconds) and threading.current_thread() is threading.main_thread()

    def __enter__(self):
        import signal

        if self.active:
            def on_alarm(*_):
                raise TimeLimit

            self.old = signal.signal(signal.SIGALRM, on_alarm)
            signal.setitimer(signal.ITIMER_REAL, self.seconds)
        return self

    def __exit__(self, *exc):
        import signal

        if self.active:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, self.old)
        return False


def _canon(values: list[dict]) -> str:
    return json.dumps(values, sort_keys=True)


def _short(s: str, n: int = 600) -> str:
    return s if len(s) <= n else s[: n // 2] + " ... " + s[-n // 2:]


def _first_diff(a: list[dict], b: list[dict]) -> str:
    if len(a) != len(b):
        return f"{len(a)} values vs {len(b)}"
    for x, y in zip(a, b):
        if _canon([x]) != _canon([y]):
            name = x.get("name")
            vx, vy = x.get("value"), y.get("value")
            if isinstance(vx, dict) and isinstance(vy, dict):
                keys = [k for k in sorted(set(vx) | set(vy), key=str) if vx.get(k) != vy.get(k)]
                return f"`{name}` differs at ids {keys[:8]}: " + ", ".join(
                    f"{k}: {vx.get(k)!r} vs {vy.get(k)!r}" for k in keys[:4])
            return f"`{name}`: {_short(json.dumps(vx), 300)} vs {_short(json.dumps(vy), 300)}"
    return "?"


def _exc_text(exc: BaseException) -> str:
    tb = traceback.extract_tb(exc.__traceback__)
    where = ""
    for fr in reversed(tb):
        if "/g2pl/" in fr.filename or fr.filename.startswith("<g2pl"):
            where = f" at {Path(fr.filename).name}:{fr.lineno} ({fr.name})"
            break
    return f"{type(exc).__name__}: {exc}{where}"


def _strip_loc(s: str) -> str:
    """A crash message without its generated-code line number (which differs between configs)."""
    return re.sub(r" at <g2pl:[^>]*>:\d+", "", s) if isinstance(s, str) else s


def run_configs(source: str, graphs: list[TestGraph], args: list[dict], seed: int = 0,
                configs=CONFIGS, file: str = "fuzz.g2pl", timeout: float | None = None
                ) -> tuple[list[Failure], dict[str, Any]]:
    """Compile `source` under every configuration and run it on every graph; compare to -O0.

    Returns (failures, info) where info has `compiled` (bool), `outcomes` (config -> per-graph
    results) and `codes` (number of distinct generated modules).
    """
    failures: list[Failure] = []
    outcomes: dict[str, list[tuple[str, Any]]] = {}
    by_code: dict[str, list[tuple[str, Any]]] = {}
    compiled_any = False
    for label, opt, disable in configs:
        try:
            prog = g2pl.compile(source, opt=opt, disable=disable, file=file)
            code = prog.python("main" if "main" in prog.procedures else None)
            compiled_any = True
        except G2PLError as e:
            outcomes[label] = [("compile-error", e.render())] * len(graphs)
            continue
        except Exception as e:  # noqa: BLE001 - a crash of the compiler is a finding
            outcomes[label] = [("crash", "compile: " + _exc_text(e))] * len(graphs)
            continue
        if code in by_code:  # identical generated module: identical results
            outcomes[label] = by_code[code]
            continue
        res = []
        for tg, a in zip(graphs, args):
            try:
                with time_limit(timeout):
                    r = prog.run(tg.graph, args=a, seed=seed, entry="main" if "main" in prog.procedures else None,
                                 max_supersteps=20000)
                res.append(("ok", r.values))
            except TimeLimit:
                res.append(("timeout", f"no result after {timeout} s"))
            except G2PLError as e:
                res.append(("runtime-error", e.render()))
            except Exception as e:  # noqa: BLE001
                res.append(("crash", "run: " + _exc_text(e)))
        outcomes[label] = by_code[code] = res
    ref_label = configs[0][0]
    ref = outcomes[ref_label]
    for label, _, _ in configs:
        out = outcomes[label]
        for gi, tg in enumerate(graphs):
            st, val = out[gi]
            if st != "ok":
                if st == "compile-error" and label != ref_label and ref[gi][0] == "compile-error" \
                        and ref[gi][1] == val:
                    continue  # reported once, for the reference configuration
                if st != "compile-error" and label != ref_label and ref[gi][0] == st \
                        and _strip_loc(ref[gi][1]) == _strip_loc(val):
                    continue  # the same failure as the reference configuration: reported once
                failures.append(Failure(st, label, _short(val, 1500), tg.name))
                if st == "compile-error":
                    break
                continue
            rst, rval = ref[gi]
            if rst != "ok":
                continue  # the reference failed: reported above
            if _canon(val) != _canon(rval):
                failures.append(Failure("mismatch", f"{label} vs {ref_label}", _first_diff(rval, val), tg.name))
    info = {"compiled": compiled_any and all(o[0][0] != "compile-error" for o in outcomes.values()),
            "outcomes": outcomes, "codes": len(by_code)}
    return failures, info


def differential(prog: GenProgram | str, graphs: list[TestGraph] | None = None, seed: int = 0,
                 configs=CONFIGS, reference: bool = True) -> tuple[list[Failure], dict[str, Any]]:
    """The 1-rank differential oracle for a generated program (or source text) on small graphs.

    With `reference`, programs without rand() are also run by the reference interpreter, whose
    values must equal those of the first configuration (-O0): a `wrong-values` failure if not.
    `info["reference"]` says what happened: "agree", "skipped: why", or "differs".
    """
    if isinstance(prog, str):
        src, params, pseed = prog, params_of(prog), seed
    else:
        src, params, pseed = prog.source, prog.params, prog.seed
    graphs = graphs if graphs is not None else random_graphs(pseed)
    rng = random.Random(pseed ^ 0x5EED)
    args = [make_args(params, tg.graph, rng) for tg in graphs]
    failures, info = run_configs(src, graphs, args, seed=pseed % 1000, configs=configs)
    info["args"] = args
    info["graphs"] = graphs
    info["reference"] = "skipped: not asked"
    if reference:
        failures += reference_check(src, graphs, args, info)
    return failures, info


def reference_check(src: str, graphs: list[TestGraph], args: list[dict], info: dict[str, Any]) -> list[Failure]:
    """Compare the first configuration's values with the reference interpreter's (see `differential`)."""
    label = next(iter(info["outcomes"]))
    out: list[Failure] = []
    status = "agree"
    for gi, tg in enumerate(graphs):
        st, val = info["outcomes"][label][gi]
        if st != "ok":
            continue
        try:
            with time_limit(60):
                ref = reference_values(src, tg.graph, args[gi])
        except RefUnsupported as e:
            info["reference"] = f"skipped: {e}"
            return []
        except Exception as e:  # noqa: BLE001 - a problem of the reference itself, not of the compiler
            info["reference"] = f"skipped: reference error {_exc_text(e)}"
            return []
        if not _values_equal(ref, val):
            status = "differs"
            out.append(Failure("wrong-values", f"{label} vs reference", _first_diff(ref, val), tg.name))
    info["reference"] = status
    return out


# ---- two ranks


def mpi_command() -> list[str] | None:
    """How to start `g2pl` with MPI from here, or None (skip the 2-rank part).

    `G2PL_FUZZ_G2PL` may name a `g2pl` executable (e.g. /tmp/vm/bin/g2pl); otherwise this Python
    is used when it has mpi4py and `find_mpiexec()` finds mpiexec.
    """
    exe = os.environ.get("G2PL_FUZZ_G2PL")
    if exe:
        return [exe] if Path(exe).exists() else None
    from g2pl.runtime.launch import find_mpiexec

    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return None
    if find_mpiexec() is None:
        return None
    return [sys.executable, "-m", "g2pl.cli"]


def run_mpi(source: str, tg: TestGraph, args: dict, seed: int, cmd: list[str], np_: int = 2,
            extra: tuple[str, ...] = (), timeout: float = 120) -> tuple[str, Any]:
    """Run `g2pl run --np N` on an edge-list file: ("ok", values) or (status, message)."""
    with tempfile.TemporaryDirectory(prefix="g2plfuzz") as td:
        tdp = Path(td)
        prog = tdp / "prog.g2pl"
        prog.write_text(source)
        gpath = tdp / "graph.txt"
        gpath.write_text(tg.edge_list_text())
        out = tdp / "out.json"
        argv = [*cmd, "run", str(prog), "--graph", str(gpath), "--np", str(np_), "--output", str(out),
                "--seed", str(seed), "--quiet", "--entry", "main", *extra]
        if tg.directed:
            argv.append("--directed")
        argv += arg_options(args)
        env = os.environ.copy()
        env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        # a session of its own, so that a hung run (g2pl -> mpiexec -> ranks) can be killed as a whole
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=td,
                                start_new_session=True)
        try:
            _, stderr = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            import signal

            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.communicate()
            return "mpi-error", f"timed out after {timeout} s (a hang: no result)"
        if proc.returncode != 0 or not out.exists():
            return "mpi-error", f"exit {proc.returncode}: {_short(stderr.strip(), 1500)}"
        return "ok", json.loads(out.read_text())["values"]


def mpi_check(prog: GenProgram | str, cmd: list[str], info: dict[str, Any], which: int = 0,
              opt_label: str = "O2", timeout: float = 60, seed: int | None = None) -> list[Failure]:
    """Compare `g2pl run --np 2` (config `opt_label`) with the 1-rank result of the same config."""
    src = prog if isinstance(prog, str) else prog.source
    if seed is None:
        seed = (prog.seed if not isinstance(prog, str) else 0) % 1000
    tg = info["graphs"][which]
    args = info["args"][which]
    one = info["outcomes"].get(opt_label)
    if one is None or one[which][0] != "ok":
        return []
    opt = dict((lbl, (o, d)) for lbl, o, d in CONFIGS)[opt_label]
    extra = (f"-O{opt[0]}", *(x for p in opt[1] for x in ("--disable-pass", p)))
    st, val = run_mpi(src, tg, args, seed, cmd, extra=extra, timeout=timeout)
    if st != "ok":
        return [Failure("mpi-error", f"np2 {opt_label}", val, tg.name)]
    if _canon(val) != _canon(one[which][1]):
        return [Failure("mpi-mismatch", f"np2 {opt_label} vs np1 {opt_label}", _first_diff(one[which][1], val),
                        tg.name)]
    return []


# =====================================================================================
# A reference interpreter: an independent oracle for programs without rand()
# =====================================================================================
#
# Evaluates the parsed program directly on the whole graph with NumPy (no IR, no plan, no
# supersteps, no generated code), following docs/language.md: binders are index arrays over a
# domain (all vertices, all edges, or the adjacency entries of a neighbourhood aggregation),
# whole-graph sub-expressions are evaluated at top level, neighbourhood aggregations are
# computed for every vertex and read at their centre. Only the variables' element types come
# from the compiler (its type inference joins every assignment). It catches wrong results
# that every configuration shares (the differential oracle cannot).

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
_NPT = {"bool": np.bool_, "int": np.int64, "float": np.float64, "vid": np.int64}
_DEF = {"bool": False, "int": 0, "float": 0.0, "vid": -1}


class RefUnsupported(Exception):
    """The reference interpreter does not handle this program (it is skipped, not failed)."""


class _Return(Exception):
    def __init__(self, values):
        self.values = values


def _rjoin(a: str, b: str) -> str:
    if a == b:
        return a
    if {a, b} <= {"int", "float", "vid"}:
        return "float" if "float" in (a, b) else "vid"
    raise RefUnsupported(f"join of {a} and {b}")


@dataclass
class RV:
    kind: str  # scalar | vertex | edge (top level) | local (inside a comprehension)
    elem: str
    data: Any  # a NumPy scalar or array


@dataclass
class RB:
    """A bound element: per domain element, the vertex/edge index and the value."""

    ekind: str  # vertex | edge
    idx: np.ndarray
    value: np.ndarray | None  # None: no value of its own
    velem: str
    src: np.ndarray | None = None  # vertex binders: their source graph over ALL vertices (None: true)
    selem: str = "bool"


@dataclass
class RCtx:
    dom: str  # T V E A
    size: int = 0
    binders: dict[str, RB] = field(default_factory=dict)
    centre: str | None = None
    eidx: np.ndarray | None = None  # E: the edge of each domain element


_RTOP = RCtx("T")


def _float_to_int(x: float) -> int:
    """`int(x)` of a float: truncation toward zero, saturating at the int64 range, nan -> 0."""
    if math.isnan(x):
        return 0
    if x >= 2.0**63:
        return INT64_MAX
    if x < -(2.0**63):
        return INT64_MIN
    return int(x)


def _wrap64(x: int) -> int:
    x %= 2**64
    return x - 2**64 if x >= 2**63 else x


def _ref_mod(a: int, b: int) -> int:
    return a if b == 0 else a % b  # Python's %: the sign of the divisor


def _ref_shl(a: int, n: int) -> int:
    return _wrap64(a << min(n, 64)) if n >= 0 else a >> min(-n, 64)


#: the integer functions with Python integers, element by element (independent of runtime/intops.py)
_INT_REF: dict[str, Callable[..., int]] = {
    "idiv": lambda a, b: 0 if b == 0 else _wrap64(a // b),
    "imod": _ref_mod,
    "bitand": lambda a, b: a & b,
    "bitor": lambda a, b: a | b,
    "bitxor": lambda a, b: a ^ b,
    "bitnot": lambda a: ~a,
    "shl": _ref_shl,
    "shr": lambda a, n: _ref_shl(a, -n) if n < 0 else a >> min(n, 64),
}


def _int_ref(fn: Callable[..., int], *args):
    """`fn` over int64 arrays or scalars (broadcast), with Python integers."""
    arrs = np.broadcast_arrays(*(np.asarray(a, dtype=np.int64) for a in args))
    out = np.array([fn(*(int(v) for v in vals)) for vals in zip(*(a.ravel() for a in arrs))], dtype=np.int64)
    out = out.reshape(arrs[0].shape)
    return out if any(isinstance(a, np.ndarray) and a.ndim for a in args) else np.int64(out[()])


def _cast(data, elem: str):
    if elem == "int" and np.asarray(data).dtype.kind == "f":  # not NumPy's cast (undefined out of range)
        a = np.asarray(data)
        r = np.array([_float_to_int(float(x)) for x in a.ravel()], dtype=np.int64).reshape(a.shape)
        return r if isinstance(data, np.ndarray) else np.int64(r[()])
    return np.asarray(data).astype(_NPT[elem]) if isinstance(data, np.ndarray) else _NPT[elem](data)


def _rkind(*vals: RV) -> str:
    kinds = {v.kind for v in vals} - {"scalar"}
    if not kinds:
        return "scalar"
    if len(kinds) > 1:
        raise RefUnsupported(f"kinds {kinds}")
    return kinds.pop()


_fresh_ref = iter(range(1, 10**9))


def _ref_expand(fn, args):
    """Hygienic inlining, written independently of g2pl.compiler.inline."""
    from g2pl.compiler import ast as A

    def rebuild(e, f):
        """`e` with `f` applied to its operands; None for names and comprehensions (each walker
        handles those itself: renaming vs substitution, and generator scopes)."""
        if isinstance(e, (A.IntLit, A.FloatLit)):
            return e
        if isinstance(e, A.BinOp):
            return A.BinOp(e.span, e.op, f(e.left), f(e.right), e.op_span)
        if isinstance(e, A.UnOp):
            return A.UnOp(e.span, e.op, f(e.operand))
        if isinstance(e, A.Cond):
            return A.Cond(e.span, f(e.cond), f(e.then), f(e.other))
        if isinstance(e, A.Call):
            return A.Call(e.span, e.func, tuple(f(a) for a in e.args), e.name_span)
        if isinstance(e, A.Index):
            return A.Index(e.span, f(e.base), f(e.index))
        return None

    def ren(e, m):
        if isinstance(e, A.Name):
            return A.Name(e.span, m.get(e.id, e.id))
        if isinstance(e, A.Pair):
            return A.Pair(e.span, (m.get(e.names[0], e.names[0]), m.get(e.names[1], e.names[1])))
        done = rebuild(e, lambda x: ren(x, m))
        if done is not None:
            return done
        if isinstance(e, (A.SetComp, A.Agg)):
            m2 = dict(m)
            quals = []
            bound: dict[str, str] = {}  # this comprehension's binders: a repeated one (common neighbours) stays
            for q in e.quals:
                if isinstance(q, A.Generator):
                    src = q.source
                    src = A.NvalsSource(m2.get(src.centre, src.centre), src.dir, src.span) \
                        if isinstance(src, A.NvalsSource) else ren(src, m2)
                    new = {n: bound.get(n) or f"{n}%{next(_fresh_ref)}" for n in q.names}
                    bound.update(new)
                    m2.update(new)
                    quals.append(A.Generator(tuple(new[n] for n in q.names), src, q.span))
                else:
                    quals.append(A.Filter(ren(q.expr, m2), q.span))
            if isinstance(e, A.SetComp):
                return A.SetComp(e.span, ren(e.head, m2), tuple(quals))
            return A.Agg(e.span, e.op, tuple(ren(h, m2) for h in e.heads), tuple(quals), e.op_span, e.is_list,
                         tuple(ren(k, m2) for k in e.keys))  # (`by` keys: read in the qualifiers' scope)
        raise RefUnsupported(type(e).__name__)

    def sub(e, env):
        if isinstance(e, A.Name):
            return env.get(e.id, e)
        if isinstance(e, A.Pair):
            if any(n in env for n in e.names):
                raise RefUnsupported("a parameter in an edge test")
            return e
        done = rebuild(e, lambda x: sub(x, env))
        if done is not None:
            return done
        quals = []
        for q in e.quals:
            if isinstance(q, A.Generator):
                src = q.source
                if isinstance(src, A.NvalsSource):
                    a = env.get(src.centre)
                    if a is not None:
                        if not isinstance(a, A.Name):
                            raise RefUnsupported("nvals of a non-name argument")
                        src = A.NvalsSource(a.id, src.dir, src.span)
                else:
                    src = sub(src, env)
                quals.append(A.Generator(q.names, src, q.span))
            else:
                quals.append(A.Filter(sub(q.expr, env), q.span))
        if isinstance(e, A.SetComp):
            return A.SetComp(e.span, sub(e.head, env), tuple(quals))
        return A.Agg(e.span, e.op, tuple(sub(h, env) for h in e.heads), tuple(quals), e.op_span, e.is_list,
                     tuple(sub(k, env) for k in e.keys))

    return sub(ren(fn.body, {}), {p.name: a for p, a in zip(fn.params, args)})


class Reference:
    """Runs procedure `entry` of a parsed module on a Graph (see the section comment)."""

    MAX_ITERS = 10_000

    def __init__(self, module, graph: Graph, var_types: dict[str, tuple[str, str]]) -> None:
        self.mod = module
        self.g = graph
        self.vt = var_types
        self.n, self.m = int(graph.n), int(graph.m)
        self.ids = graph.ids.astype(np.int64)
        self.env: dict[str, RV] = {}
        # the adjacency entries (receiver, neighbour, edge) of `nvals` (in), `outnvals` (out), `allnvals`
        # (all: both, every entry) and `nbrs` (set: each neighbour once, by its out-edge when both exist)
        self.adj = {}
        for d, out in (("in", False), ("out", True)):
            indptr = graph.out_indptr if out else graph.in_indptr
            nbr = graph.out_nbr if out else graph.in_nbr
            eid = graph.out_eid if out else graph.in_eid
            owner = np.repeat(np.arange(self.n), np.diff(indptr))
            self.adj[d] = (owner.astype(np.int64), np.asarray(nbr, np.int64), np.asarray(eid, np.int64))
        self.adj["all"] = self.adj["set"] = self.adj["in"]
        # the edge a -> b of each pair of vertex indices (either way on an undirected graph)
        su, sd = np.asarray(graph.src, np.int64).tolist(), np.asarray(graph.dst, np.int64).tolist()
        self.edge_of = {(a, b): k for k, (a, b) in enumerate(zip(su, sd))}
        if graph.directed:
            ins, outs = self.adj["in"], self.adj["out"]
            self.adj["all"] = tuple(np.concatenate([x, y]) for x, y in zip(ins, outs))
            rows: list[dict[int, int]] = [{} for _ in range(self.n)]
            for o, x, k in zip(*(a.tolist() for a in ins)):
                rows[o][x] = k
            for o, x, k in zip(*(a.tolist() for a in outs)):
                rows[o][x] = k  # the out-edge wins
            trip = [(o, x, k) for o, row in enumerate(rows) for x, k in row.items()]
            self.adj["set"] = tuple(np.array([t[j] for t in trip], np.int64) for j in range(3))
        else:
            self.edge_of.update({(b, a): k for (a, b), k in list(self.edge_of.items())})

    # ---------------------------------------------------------------- statements

    def run(self, entry: str, args: dict[str, Any]) -> list[dict]:
        proc = self.mod.procedures[entry]
        for p in proc.params:
            _, elem = self.vt[p.name]
            self.env[p.name] = RV("scalar", elem, _NPT[elem](args[p.name]))
        with np.errstate(all="ignore"):
            try:
                self.block(proc.body)
            except _Return as r:
                return [self.output(name, v) for name, v in r.values]
        return []

    def block(self, stmts) -> None:
        for s in stmts:
            self.stmt(s)

    def stmt(self, s) -> None:
        from g2pl.compiler import ast as A

        if isinstance(s, A.Assign):
            v = self.ev(s.value, _RTOP)
            kind, elem = self.vt[s.target]
            data = v.data
            if v.kind == "scalar" and kind != "scalar":
                data = np.full(self.n if kind == "vertex" else self.m, data)
            self.env[s.target] = RV(kind, elem, _cast(data, elem))
        elif isinstance(s, A.While):
            for _ in range(self.MAX_ITERS):
                if not bool(self.ev(s.cond, _RTOP).data):
                    return
                self.block(s.body)
            raise RefUnsupported("too many loop iterations")
        elif isinstance(s, A.If):
            self.block(s.then if bool(self.ev(s.cond, _RTOP).data) else s.other)
        elif isinstance(s, A.Return):
            vals = []
            for i, e in enumerate(s.values):
                if isinstance(e, A.Name) and e.id in self.env:
                    vals.append((e.id, self.env[e.id]))
                else:
                    vals.append((f"ret{i}", self.ev(e, _RTOP)))
            raise _Return(vals)
        else:
            raise RefUnsupported(type(s).__name__)

    def output(self, name: str, v: RV) -> dict:
        def num(x):
            if v.elem == "bool":
                return bool(x)
            if v.elem == "float":
                f = float(x)
                return "nan" if math.isnan(f) else ("inf" if f == math.inf else "-inf" if f == -math.inf else f)
            return int(x)

        if v.kind == "scalar":
            val: Any = num(v.data)
        elif v.kind == "vertex":
            val = [int(i) for i in self.ids[np.asarray(v.data, bool)]] if v.elem == "bool" else \
                {str(int(i)): num(x) for i, x in zip(self.ids, v.data)}
        else:
            su, sd = self.ids[self.g.src], self.ids[self.g.dst]
            if v.elem == "bool":
                val = [[int(a), int(b)] for a, b, x in zip(su, sd, v.data) if x]
            else:
                val = [[int(a), int(b), num(x)] for a, b, x in zip(su, sd, v.data)]
        return {"name": name, "kind": v.kind, "type": v.elem, "value": val}

    # ---------------------------------------------------------------- expressions

    def ev(self, e, ctx: RCtx) -> RV:
        return getattr(self, "e_" + type(e).__name__)(e, ctx)

    def local(self, ctx: RCtx) -> str:
        return "scalar" if ctx.dom == "T" else "local"

    def e_IntLit(self, e, ctx):
        return RV("scalar", "int", np.int64(e.value))

    def e_FloatLit(self, e, ctx):
        return RV("scalar", "float", np.float64(e.value))

    def centre_idx(self, ctx: RCtx) -> np.ndarray:
        return ctx.binders[ctx.centre].idx

    def e_Name(self, e, ctx):
        n = e.id
        if n in ctx.binders:
            b = ctx.binders[n]
            if b.value is None:
                raise RefUnsupported(f"`{n}` has no value")
            return RV("local", b.velem, b.value)
        if n in self.env:
            v = self.env[n]
            if v.kind == "scalar" or ctx.dom == "T":
                return v
            if v.kind == "vertex" and ctx.dom in ("V", "A"):
                return RV("local", v.elem, v.data[self.centre_idx(ctx)])
            if v.kind == "edge" and ctx.dom in ("E", "W"):
                return RV("local", v.elem, v.data[ctx.eidx])
            raise RefUnsupported(f"bare {v.kind} `{n}` in {ctx.dom}")
        if n in ("true", "false"):
            return RV("scalar", "bool", np.bool_(n == "true"))
        if n == "inf":
            return RV("scalar", "float", np.float64(np.inf))
        if n in ("V", "empty"):
            if ctx.dom == "T":
                return RV("vertex", "bool", np.full(self.n, n == "V"))
            return RV("scalar", "bool", np.bool_(n == "V"))
        if n in ("E", "emptyE"):
            if ctx.dom == "T":
                return RV("edge", "bool", np.full(self.m, n == "E"))
            return RV("scalar", "bool", np.bool_(n == "E"))
        if n == "Weight":
            if ctx.dom == "T":
                return RV("edge", "float", self.g.weight.astype(np.float64))
            if ctx.dom in ("E", "W"):
                return RV("local", "float", self.g.weight[ctx.eidx].astype(np.float64))
        if n == "id":
            if ctx.dom == "T":
                return RV("vertex", "vid", self.ids.copy())
            if ctx.dom in ("V", "A"):
                return RV("local", "vid", self.ids[self.centre_idx(ctx)])
        if n == "directed":
            return RV("scalar", "bool", np.bool_(self.g.directed))
        raise RefUnsupported(f"name `{n}` in {ctx.dom}")

    def e_BinOp(self, e, ctx):
        from g2pl.compiler import ast as A

        op = e.op
        if op == "in" and isinstance(e.left, A.Pair):  # the edge a -> b, looked up, read in the set
            a, b = (ctx.binders[n] for n in e.left.names)
            s = np.asarray(self.whole(e.right).data, bool)
            s = np.broadcast_to(s, (self.m,)) if s.ndim == 0 else s
            k = [self.edge_of.get((x, y), -1) for x, y in zip(a.idx.tolist(), b.idx.tolist())]
            return RV("local", "bool", np.array([x >= 0 and bool(s[x]) for x in k], bool))
        if op == "in":
            if isinstance(e.left, A.Name) and e.left.id in ctx.binders:
                b = ctx.binders[e.left.id]
                s = self.whole(e.right)
                return RV("local", "bool", np.asarray(s.data, bool)[b.idx])
            return self.e_Index(A.Index(e.span, e.right, e.left), ctx)
        a, b = self.ev(e.left, ctx), self.ev(e.right, ctx)
        if op in ("==", "!=") and ctx.dom == "T" and a.kind != "scalar" and b.kind != "scalar":
            same = bool(np.all(np.asarray(a.data) == np.asarray(b.data)))
            return RV("scalar", "bool", np.bool_(same if op == "==" else not same))
        kind = _rkind(a, b) if ctx.dom == "T" else ("local" if "local" in (a.kind, b.kind) else "scalar")
        x, y = a.data, b.data
        if op in ("&&", "||", "\\"):
            r = np.logical_and(x, y) if op == "&&" else np.logical_or(x, y) if op == "||" else \
                np.logical_and(x, np.logical_not(y))
            return RV(kind, "bool", r)
        if op in ("==", "!=", "<", "<=", ">", ">="):
            if "float" in (a.elem, b.elem):
                x, y = _cast(x, "float"), _cast(y, "float")
            r = {"==": np.equal, "!=": np.not_equal, "<": np.less, "<=": np.less_equal, ">": np.greater,
                 ">=": np.greater_equal}[op](x, y)
            return RV(kind, "bool", r)
        if op == "/":
            return RV(kind, "float", np.true_divide(_cast(x, "float"), _cast(y, "float")))
        if op == "%":
            return RV(kind, "int", _int_ref(_ref_mod, _cast(x, "int"), _cast(y, "int")))
        elem = "float" if "float" in (a.elem, b.elem) else "int"
        x, y = _cast(x, elem), _cast(y, elem)
        r = {"+": np.add, "-": np.subtract, "*": np.multiply}[op](x, y)
        return RV(kind, elem, r)

    def e_UnOp(self, e, ctx):
        v = self.ev(e.operand, ctx)
        if e.op == "!":
            return RV(v.kind, "bool", np.logical_not(v.data))
        elem = "int" if v.elem == "vid" else v.elem
        return RV(v.kind, elem, np.negative(_cast(v.data, elem)))

    def e_Cond(self, e, ctx):
        c, a, b = self.ev(e.cond, ctx), self.ev(e.then, ctx), self.ev(e.other, ctx)
        elem = _rjoin(a.elem, b.elem)
        kind = _rkind(c, a, b) if ctx.dom == "T" else (
            "local" if "local" in (c.kind, a.kind, b.kind) else "scalar")
        r = np.where(c.data, _cast(a.data, elem), _cast(b.data, elem))
        return RV(kind, elem, r if kind != "scalar" else _NPT[elem](r[()]))

    def e_Call(self, e, ctx):
        f = e.func
        if f in self.mod.functions:
            return self.ev(_ref_expand(self.mod.functions[f], e.args), ctx)
        if f == "rand":
            raise RefUnsupported("rand()")
        args = [self.ev(a, ctx) for a in e.args]
        kind = _rkind(*args) if ctx.dom == "T" else ("local" if any(a.kind == "local" for a in args) else "scalar")
        a = args[0]
        if f in ("min", "max"):
            b = args[1]
            elem = _rjoin(a.elem, b.elem)
            fn = np.minimum if f == "min" else np.maximum
            return RV(kind, elem, fn(_cast(a.data, elem), _cast(b.data, elem)))
        if f == "abs":
            elem = "int" if a.elem == "vid" else a.elem
            return RV(kind, elem, np.abs(_cast(a.data, elem)))
        if f == "int":
            return RV(kind, "int", _cast(a.data, "int"))
        if f == "float":
            return RV(kind, "float", _cast(a.data, "float"))
        if f == "float32":  # float(x) rounded to single precision (±inf beyond its range)
            with np.errstate(over="ignore"):
                r = np.asarray(_cast(a.data, "float"), dtype=np.float64).astype(np.float32).astype(np.float64)
            return RV(kind, "float", r if isinstance(a.data, np.ndarray) else np.float64(r[()]))
        if f in _INT_REF:
            return RV(kind, "int", _int_ref(_INT_REF[f], *(_cast(x.data, "int") for x in args)))
        fn = {"sqrt": np.sqrt, "log": np.log, "exp": np.exp, "floor": np.floor, "ceil": np.ceil}[f]
        return RV(kind, "float", fn(_cast(a.data, "float")))

    def whole(self, e) -> RV:
        """A whole-graph sub-expression (evaluated at top level, like a temporary)."""
        return self.ev(e, _RTOP)

    def e_Index(self, e, ctx):
        from g2pl.compiler import ast as A

        idx = e.index
        if isinstance(idx, A.Name) and idx.id in ctx.binders:
            b = ctx.binders[idx.id]
            g = self.whole(e.base)
            if g.kind == "scalar":
                raise RefUnsupported("reading a scalar at an element")
            return RV("local", g.elem, np.asarray(g.data)[b.idx])
        g = self.whole(e.base)
        if g.kind != "vertex":
            raise RefUnsupported("remote read of a non-vertex graph")
        p = self.ev(idx, ctx)
        pos = self.g.id_to_index(np.asarray(p.data, np.int64))
        vals = np.asarray(g.data)[np.maximum(pos, 0)] if self.n else np.zeros(np.shape(pos), _NPT[g.elem])
        r = np.where(pos >= 0, vals, _DEF[g.elem]).astype(_NPT[g.elem])
        return RV(p.kind, g.elem, r if p.kind != "scalar" else r[()])

    # ---- comprehensions

    def domain(self, gen, ctx_outer) -> tuple[RCtx, np.ndarray | None, str]:
        """The context a `{...}`/global generator opens, its membership mask and its kind."""
        from g2pl.compiler import ast as A

        src = self.whole(gen.source)
        const = isinstance(gen.source, A.Name) and gen.source.id in ("V", "E", "empty", "emptyE") \
            and gen.source.id not in self.env
        data = np.asarray(src.data)
        mask = data.astype(bool) if src.elem == "bool" else None
        if src.kind == "vertex":
            (x,) = gen.names
            b = RB("vertex", np.arange(self.n), data, src.elem, src=data, selem=src.elem)
            return RCtx("V", self.n, {x: b}, centre=x), mask, "vertex"
        if src.kind != "edge":
            raise RefUnsupported("generator over a scalar")
        names = gen.names
        binders: dict[str, RB] = {}
        eidx = np.arange(self.m)
        if len(names) in (1, 3):
            en = names[0] if len(names) == 1 else names[1]
            binders[en] = RB("edge", eidx, None if const else data, src.elem)
        if len(names) >= 2:
            su, sd = np.asarray(self.g.src, np.int64), np.asarray(self.g.dst, np.int64)
            binders[names[0]] = RB("vertex", su, self.ids[su], "vid", src=None)
            binders[names[-1]] = RB("vertex", sd, self.ids[sd], "vid", src=None)
        return RCtx("E", self.m, binders, eidx=eidx), mask, "edge"

    def qualified(self, quals, ctx_outer):
        from g2pl.compiler import ast as A

        gens = [q for q in quals if isinstance(q, A.Generator)]
        if len(gens) != 1:
            raise RefUnsupported("generators")
        inner, mask, kind = self.domain(gens[0], ctx_outer)
        for q in quals:
            if isinstance(q, A.Filter):
                f = np.broadcast_to(np.asarray(self.ev(q.expr, inner).data, bool), (inner.size,))
                mask = f if mask is None else np.logical_and(mask, f)
        return gens[0], inner, mask, kind

    def e_SetComp(self, e, ctx):
        _, inner, mask, kind = self.qualified(e.quals, ctx)
        h = self.ev(e.head, inner)
        data = np.broadcast_to(np.asarray(h.data), (inner.size,))
        if h.elem == "bool":
            r = data.astype(bool) if mask is None else np.logical_and(mask, data)
        else:
            r = data.astype(_NPT[h.elem]) if mask is None else np.where(mask, data, _DEF[h.elem]).astype(_NPT[h.elem])
        return RV(kind, h.elem, np.array(r))

    def reduce(self, op: str, vals: np.ndarray, elem: str, vids: np.ndarray | None):
        """One aggregation over the selected values -> (result elem, NumPy scalar)."""
        if op == "count":
            return "int", np.int64(len(vals))
        if op in ("and", "or"):
            return "bool", np.bool_(np.all(vals) if op == "and" else np.any(vals))
        if op == "sum":
            out = "float" if elem == "float" else "int"
            return out, _NPT[out](np.sum(vals.astype(_NPT[out]))) if len(vals) else _NPT[out](0)
        if op == "avg":
            return "float", np.float64(np.sum(vals.astype(np.float64)) / len(vals)) if len(vals) else np.float64(np.nan)
        if op in ("min", "max"):
            if len(vals) == 0:
                if elem == "float":
                    return elem, np.float64(np.inf if op == "min" else -np.inf)
                if elem == "vid":
                    return elem, np.int64(-1)
                return elem, np.int64(INT64_MAX if op == "min" else INT64_MIN)
            return elem, _NPT[elem](vals.min() if op == "min" else vals.max())
        if op == "mode":  # most frequent, ties to the smaller value, the default for none
            if len(vals) == 0:
                return elem, _NPT[elem](_DEF[elem])
            counts: dict = {}
            for x in vals.tolist():
                counts[x] = counts.get(x, 0) + 1
            return elem, _NPT[elem](min(counts, key=lambda x: (-counts[x], x)))
        if op in ("argmin", "argmax"):
            if len(vals) == 0:
                return "vid", np.int64(-1)
            best = vals.min() if op == "argmin" else vals.max()
            return "vid", np.int64(vids[vals == best].min())
        raise RefUnsupported(op)

    def e_Agg(self, e, ctx):
        from g2pl.compiler import ast as A

        gens = [q for q in e.quals if isinstance(q, A.Generator)]
        if len(gens) == 1 and isinstance(gens[0].source, A.NvalsSource):
            return self.nbr(e, gens[0], ctx)
        if len(gens) == 2 and all(isinstance(g.source, A.NvalsSource) for g in gens):
            return self.common(e, gens, ctx)
        if e.op == "union":
            return self.union(e, ctx)
        if e.keys or e.is_list:
            return self.keyed(e, ctx)
        _, inner, mask, kind = self.qualified(e.quals, ctx)
        if kind == "edge" and e.op in ("argmin", "argmax"):
            return self.keyed(e, ctx, (inner, mask, kind))
        h = self.ev(e.heads[0], inner)
        data = np.broadcast_to(np.asarray(h.data), (inner.size,))
        sel = np.ones(inner.size, bool) if mask is None else mask
        vids = None
        if kind == "vertex":
            vids = self.ids[inner.binders[inner.centre].idx][sel]
        elem = "int" if h.elem == "bool" and e.op == "sum" else h.elem
        out, r = self.reduce(e.op, data[sel].astype(_NPT[elem]) if e.op != "count" else data[sel], elem, vids)
        return RV("scalar", out, r)

    def nbr(self, e, gen, ctx):
        centre = gen.source.centre
        cb = ctx.binders.get(centre)
        if cb is None or cb.ekind != "vertex":
            raise RefUnsupported("nvals centre")
        direct = ctx.dom == "V" and ctx.centre == centre
        if direct:
            src, selem = cb.value, cb.velem
        else:
            src, selem = cb.src, cb.selem
        if src is None:
            src, selem = np.ones(self.n, bool), "bool"
        owner, nb, eid = self.adj[gen.source.dir]
        binders = {centre: RB("vertex", owner, src[owner], selem, src=src, selem=selem),
                   gen.names[0]: RB("vertex", nb, src[nb], selem, src=src, selem=selem)}
        if len(gen.names) == 2:
            binders[gen.names[1]] = RB("edge", eid, None, "bool")
        inner = RCtx("A", len(owner), binders, centre=centre)
        out_elem, full = self.group_reduce(e, inner, owner, self.n, nb)
        return RV("local" if ctx.dom != "T" else "vertex", out_elem, full[cb.idx])

    def group_reduce(self, e, inner, group, n: int, member) -> tuple:
        """(element type, one value per group 0..n-1): `e`'s head over the elements of `inner` where
        its filters hold, reduced per `group` (ties by the original ID of each element's `member`)."""
        from g2pl.compiler import ast as A

        k = len(group)
        mask = np.ones(k, bool)
        for q in e.quals:
            if isinstance(q, A.Filter):
                mask &= np.broadcast_to(np.asarray(self.ev(q.expr, inner).data, bool), (k,))
        h = self.ev(e.heads[0], inner)
        data = np.broadcast_to(np.asarray(h.data), (k,))
        elem = "int" if h.elem == "bool" and e.op == "sum" else h.elem
        out_elem, res = None, []
        for c in range(n):
            sel = mask & (group == c)
            vals = data[sel] if e.op == "count" else data[sel].astype(_NPT[elem])
            out_elem, x = self.reduce(e.op, vals, elem, self.ids[member[sel]])
            res.append(x)
        if out_elem is None:
            out_elem, _ = self.reduce(e.op, np.zeros(0, _NPT[elem]), elem, np.zeros(0, np.int64))
        return out_elem, np.array(res, dtype=_NPT[out_elem]) if res else np.zeros(0, _NPT[out_elem])

    def common(self, e, gens, ctx):
        """Per edge of the enclosing edge comprehension: the aggregation over the w that are neighbours
        (in- or out-, per generator) of both endpoints, by dictionaries of each vertex's neighbours."""

        if ctx.dom != "E":
            raise RefUnsupported("common neighbours outside an edge comprehension")
        lists = {}
        for side in ("in", "out", "set"):
            owner, nb, eid = self.adj[side]
            d: list[dict[int, int]] = [{} for _ in range(self.n)]
            for o, x, k in zip(owner.tolist(), nb.tolist(), eid.tolist()):
                d[o][x] = k
            lists[side] = d
        (b1, l1), (b2, l2) = ((ctx.binders[g.source.centre], lists[g.source.dir]) for g in gens)
        rows, ws, fs, gs = [], [], [], []
        for i in range(ctx.size):
            other = l2[int(b2.idx[i])]
            for w, k in l1[int(b1.idx[i])].items():
                if w in other:
                    rows.append(i)
                    ws.append(w)
                    fs.append(k)
                    gs.append(other[w])
        r = np.array(rows, np.int64)
        binders = {}
        for name, b in ctx.binders.items():
            binders[name] = RB(b.ekind, b.idx[r], None if b.value is None else np.asarray(b.value)[r], b.velem,
                               src=b.src, selem=b.selem)
        wa = np.array(ws, np.int64)
        binders[gens[0].names[0]] = RB("vertex", wa, self.ids[wa], "vid", src=None)
        for gen, es in zip(gens, (fs, gs)):
            if len(gen.names) == 2:
                binders[gen.names[1]] = RB("edge", np.array(es, np.int64), None, "bool")
        inner = RCtx("W", len(r), binders, eidx=ctx.eidx[r])
        return RV("local", *self.group_reduce(e, inner, r, ctx.size, wa))

    def keyed(self, e, ctx, pre=None):
        """`AGG [ ... ] by KEY`, argmin/argmax with a payload, edge argmin/argmax: grouped directly
        (a Python loop over the groups), written from the language reference."""
        from g2pl.compiler import ast as A

        inner, mask, kind = pre if pre is not None else self.qualified(e.quals, ctx)[1:]
        size = inner.size
        sel = np.flatnonzero(np.ones(size, bool) if mask is None else mask)
        if kind == "vertex":
            t1, t2 = self.ids[inner.binders[inner.centre].idx], np.zeros(size, np.int64)
        else:
            t1, t2 = self.ids[np.asarray(self.g.src, np.int64)], self.ids[np.asarray(self.g.dst, np.int64)]

        def per_element(x) -> np.ndarray:
            return np.broadcast_to(np.asarray(self.ev(x, inner).data), (size,))

        h = None if e.op == "count" else self.ev(e.heads[0], inner)
        vals = np.ones(size, np.int64) if h is None else per_element(e.heads[0])
        payload = per_element(e.heads[1]) if e.is_list else None
        keys = []
        for k in e.keys:
            if isinstance(k, A.Name) and k.id in inner.binders and inner.binders[k.id].ekind == "vertex":
                keys.append(self.ids[inner.binders[k.id].idx])
            else:
                keys.append(np.broadcast_to(np.asarray(self.ev(k, inner).data, np.int64), (size,)))
        arg = e.op in ("argmin", "argmax")

        def winner(members: list[int]) -> int | None:
            cand = [i for i in members if not (vals.dtype.kind == "f" and math.isnan(vals[i]))]
            if not cand:
                return None
            sign = 1 if e.op == "argmin" else -1
            return min(cand, key=lambda i: (sign * float(vals[i]) if vals.dtype.kind == "f" else sign * int(vals[i]),
                                            int(t1[i]), int(t2[i])))

        if not keys:  # one group: an edge set (edge argmin) or a payload scalar
            w = winner(list(sel))
            if payload is None:
                out = np.zeros(self.m, bool)
                if w is not None:
                    out[w] = True
                return RV("edge", "bool", out)
            pe = self.ev(e.heads[1], inner).elem
            return RV("scalar", pe, _NPT[pe](_DEF[pe] if w is None else payload[w]))
        groups: dict[int, list[int]] = {}
        for i in sel:
            for kv in dict.fromkeys(int(k[i]) for k in keys):
                if kv != -1:
                    groups.setdefault(kv, []).append(int(i))
        pos = {int(v): i for i, v in enumerate(self.ids)}
        if arg and payload is None and kind == "edge":
            out = np.zeros(self.m, bool)
            for kv, members in groups.items():
                w = winner(members)
                if kv in pos and w is not None:
                    out[w] = True
            return RV("edge", "bool", out)
        if arg:
            pe = "vid" if payload is None else self.ev(e.heads[1], inner).elem
            out = np.full(self.n, _DEF[pe], _NPT[pe])
            for kv, members in groups.items():
                w = winner(members)
                if kv in pos and w is not None:
                    out[pos[kv]] = t1[w] if payload is None else payload[w]
            return RV("vertex", pe, out)
        elem = "int" if (h is None or h.elem == "bool" and e.op == "sum") else h.elem
        res_elem, _ = self.reduce(e.op, np.zeros(0, _NPT[elem]), elem, None)
        out = np.array([self.reduce(e.op, np.zeros(0, _NPT[elem]), elem, None)[1]] * self.n, _NPT[res_elem])
        for kv, members in groups.items():
            if kv in pos:
                out[pos[kv]] = self.reduce(e.op, vals[members].astype(_NPT[elem]), elem, None)[1]
        return RV("vertex", res_elem, out)

    def union(self, e, ctx):
        from g2pl.compiler import ast as A

        _, inner, mask, kind = self.qualified(e.quals, ctx)
        sel = np.ones(inner.size, bool) if mask is None else mask
        out = np.zeros(self.n, bool)
        for h in e.heads:
            if isinstance(h, A.Name) and h.id in inner.binders and inner.binders[h.id].ekind == "vertex":
                out[inner.binders[h.id].idx[sel]] = True
                continue
            p = np.broadcast_to(np.asarray(self.ev(h, inner).data, np.int64), (inner.size,))[sel]
            pos = self.g.id_to_index(p)
            out[pos[pos >= 0]] = True
        return RV("vertex", "bool", out)


def reference_values(source: str, graph: Graph, args: dict[str, Any], entry: str = "main") -> list[dict]:
    """The `--output` values of `entry` on `graph` according to the reference interpreter."""
    from g2pl.compiler.parser import parse

    if re.search(r"\brand\s*\(", source):
        raise RefUnsupported("rand()")
    mod = parse(source, "ref.g2pl")
    prog = g2pl.compile(source, opt=0, file="ref.g2pl")
    proc = prog.compilation(entry).proc
    vt = {k: (t.kind, t.elem) for k, t in proc.vars.items()}
    vt.update({k: (t.kind, t.elem) for k, t in proc.params})
    return Reference(mod, graph, vt).run(entry, args)


def _values_equal(a: list[dict], b: list[dict]) -> bool:
    """Exact equality, except floats within 1e-12 (relative)."""
    def eq(x, y) -> bool:
        if isinstance(x, float) and isinstance(y, float):
            return x == y or abs(x - y) <= 1e-12 * max(abs(x), abs(y))
        if isinstance(x, list) and isinstance(y, list):
            return len(x) == len(y) and all(eq(p, q) for p, q in zip(x, y))
        if isinstance(x, dict) and isinstance(y, dict):
            return x.keys() == y.keys() and all(eq(x[k], y[k]) for k in x)
        return type(x) is type(y) and x == y

    return eq(a, b)


# =====================================================================================
# Minimization (delta debugging over lines) and regression files
# =====================================================================================


def _ddmin(lines: list[str], test: Callable[[list[str]], bool]) -> list[str]:
    n = 2
    while len(lines) >= 2:
        chunk = max(1, len(lines) // n)
        reduced = False
        for start in range(0, len(lines), chunk):
            cand = lines[:start] + lines[start + chunk:]
            if cand and test(cand):
                lines = cand
                n = max(n - 1, 2)
                reduced = True
                break
        if not reduced:
            if chunk == 1:
                break
            n = min(len(lines), n * 2)
    return lines


def _blocks(lines: list[str]) -> list[tuple[int, int]]:
    """(start, end) of every `... {` line through its matching `}` line."""
    out = []
    stack: list[int] = []
    for i, ln in enumerate(lines):
        s = ln.strip()
        if s.startswith("}") and stack:
            start = stack.pop()
            if not s.endswith("{"):
                out.append((start, i))
            else:
                stack.append(start)
        elif s.endswith("{"):
            stack.append(i)
    return out


def _split_top(s: str) -> list[str]:
    parts, depth, cur = [], 0, ""
    for ch in s:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    return [p.strip() for p in parts]


def _loops_bounded(lines: list[str]) -> bool:
    """Every `while (iN < K ...)` still increments iN (else a candidate could loop forever)."""
    text = "\n".join(lines)
    for m in re.finditer(r"while \(.*?\b(i\d+) < \d+", text):
        if not re.search(rf"^\s*{m.group(1)} = {m.group(1)} \+ 1;", text, re.M):
            return False
    for ln in lines:
        if re.match(r"\s*while \(", ln) and not re.search(r"\bi\d+ < \d+", ln):
            return False
    return True


_PAIRS = {"(": ")", "{": "}", "[": "]"}
_ATOMS = ("0", "1", "true", "false", "0.5", "(-1)", "id", "V", "E", "empty", "emptyE", "inf")


def _groups(line: str) -> list[tuple[int, int, list[str]]]:
    """Bracketed groups of a line: (start, end, replacement candidates), biggest first."""
    out = []
    stack: list[int] = []
    for i, ch in enumerate(line):
        if ch in _PAIRS:
            stack.append(i)
        elif ch in _PAIRS.values() and stack:
            a = stack.pop()
            if _PAIRS[line[a]] != ch:
                return out
            inner = line[a + 1:i]
            kids = [k for k in _split_top(inner) if k]
            # pieces of a comprehension/aggregation body `head | quals`
            for k in list(kids):
                if "|" in k:
                    kids += [x.strip() for x in k.split("|", 1)]
            start = a
            m = re.search(r"([A-Za-z_]\w*)\s*$", line[:a])
            if m and not re.fullmatch(r"while|if|return", m.group(1)):
                start = m.start(1)  # a call `f(...)` or an aggregation `sum [ ... ]`
            cands = [f"({k})" for k in kids] + list(_ATOMS)
            out.append((start, i + 1, cands))
            if start != a:
                out.append((a, i + 1, [f"({k})" for k in kids]))
    out.sort(key=lambda t: t[0] - t[1])
    return out


def _reduce_exprs(lines: list[str], test: Callable[[list[str]], bool], budget: Callable[[], bool]) -> list[str]:
    """Replace bracketed sub-expressions by one of their parts or by an atom while the failure stays."""
    changed = True
    while changed and budget():
        changed = False
        for li in range(len(lines)):
            for a, b, cands in _groups(lines[li]):
                for c in cands:
                    if not budget():
                        return lines
                    if c == lines[li][a:b]:
                        continue
                    new = lines[li][:a] + c + lines[li][b:]
                    if test(lines[:li] + [new] + lines[li + 1:]):
                        lines = lines[:li] + [new] + lines[li + 1:]
                        changed = True
                        break
                if changed:
                    break
            # filters: drop `, expr` qualifiers one at a time
            if not changed:
                for m in re.finditer(r", [^,|{}\[\]]+(?= [}\]])", lines[li]):
                    new = lines[li][:m.start()] + lines[li][m.end():]
                    if budget() and test(lines[:li] + [new] + lines[li + 1:]):
                        lines = lines[:li] + [new] + lines[li + 1:]
                        changed = True
                        break
            if changed:
                break
    return lines


def minimize(source: str, still_fails: Callable[[str], bool], budget: int = 600, exprs: bool = True) -> str:
    """Shrink `source` while `still_fails(text)` holds: whole blocks, lines (ddmin), sub-expressions,
    returned values (at most `budget` calls of `still_fails`)."""
    calls = [0]

    def test(lines: list[str]) -> bool:
        if calls[0] >= budget or not _loops_bounded(lines):
            return False
        calls[0] += 1
        try:
            return still_fails("\n".join(lines) + "\n")
        except Exception:  # noqa: BLE001
            return False

    lines = source.rstrip("\n").split("\n")
    changed = True
    while changed and calls[0] < budget:
        changed = False
        for a, b in sorted(_blocks(lines), key=lambda t: t[0] - t[1]):
            if b < len(lines) and test(lines[:a] + lines[b + 1:]):
                lines = lines[:a] + lines[b + 1:]
                changed = True
                break
        if changed:
            continue
        new = _ddmin(lines, test)
        if len(new) < len(lines):
            lines, changed = new, True
            continue
        if not changed and exprs:
            new = _reduce_exprs(lines, test, lambda: calls[0] < budget)
            if new != lines:
                lines, changed = new, True
                continue
        for i, ln in enumerate(lines):  # drop returned values one at a time
            m = re.match(r"(\s*(?:/\* out \*/ )?return )(.*);\s*$", ln)
            if not m:
                continue
            vals = _split_top(m.group(2))
            for j in range(len(vals)):
                if len(vals) == 1:
                    break
                cand_vals = vals[:j] + vals[j + 1:]
                cand = lines[:i] + [f"{m.group(1)}{', '.join(cand_vals)};"] + lines[i + 1:]
                if test(cand):
                    lines, changed = cand, True
                    break
            if changed:
                break
    return "\n".join(lines) + "\n"


def error_message(detail: str) -> str | None:
    """The message of a rendered G2PLError (`file:line:col: error: MESSAGE`), without its place."""
    m = re.search(r"error: (.*)", detail)
    return m.group(1).strip() if m else None


def failure_predicate(sig: tuple[str, str], graphs: list[TestGraph], params_seed: int,
                      mpi_cmd: list[str] | None = None, mpi_label: str = "O2",
                      detail: str | None = None) -> Callable[[str], bool]:
    """`text -> bool`: does `text` compile at -O0 and fail with the same (kind, config) signature?

    For a compile or runtime error with its `detail`, the error message must be the same too: any
    text (`0 = 0;`) fails to compile somehow, and minimizing must keep the program that shows *this*
    error, not shrink it to another."""
    message = error_message(detail) if detail is not None and sig[0] in ("compile-error", "runtime-error") \
        else None

    def same(f: Failure) -> bool:
        return f.signature() == sig and (message is None or error_message(f.detail) == message)

    def pred(text: str) -> bool:
        rng = random.Random(params_seed ^ 0x5EED)
        params = params_of(text)
        args = [make_args(params, tg.graph, rng) for tg in graphs]
        if sig[0] in ("mpi-mismatch", "mpi-error"):
            configs = tuple(c for c in CONFIGS if c[0] == mpi_label)
            fails, info = run_configs(text, graphs, args, seed=params_seed % 1000, configs=configs, timeout=20)
            if fails or not info["compiled"] or mpi_cmd is None:
                return False
            info["graphs"], info["args"] = graphs, args
            got = []
            for gi in range(len(graphs)):
                got += mpi_check(text, mpi_cmd, info, which=gi, timeout=20, seed=params_seed % 1000,
                                 opt_label=mpi_label)
            return any(f.kind == sig[0] for f in got)
        configs = tuple(c for c in CONFIGS if c[0] in (CONFIGS[0][0], sig[1]))
        fails, info = run_configs(text, graphs, args, seed=params_seed % 1000, configs=configs, timeout=20)
        if sig[0] != "compile-error":
            ref = info["outcomes"][CONFIGS[0][0]]
            if any(st == "compile-error" for st, _ in ref):
                return False
        return any(same(f) for f in fails)

    return pred


def save_regression(source: str, failure: Failure, seed: int, directory: Path = REGRESSION_DIR,
                    graph: TestGraph | None = None, rand_seed: int | None = None, tag: str = "") -> Path:
    """Write a failing program as `fuzz_<kind>_<seed>.g2pl` with a comment header saying what failed
    (and the graph and rand() seed that show it; see `check_regression`)."""
    directory.mkdir(parents=True, exist_ok=True)
    kind = re.sub(r"[^a-z0-9]+", "-", failure.kind)
    path = directory / f"fuzz_{kind}_{seed}{tag}.g2pl"
    header = [f"// fuzz seed {seed}: {failure.kind} in {failure.config}"
              + (f" on {failure.graph}" if failure.graph else "")]
    for line in _short(str(failure.detail), 900).splitlines()[:12]:
        header.append(f"//   {line}")
    header.append(f"// expect: {'robust' if failure.kind == 'robust' else 'well-typed'}")
    if rand_seed is not None:
        header.append(f"// rand-seed: {rand_seed}")
    if graph is not None:
        header.append(f"// graph ({'directed' if graph.directed else 'undirected'}; u v weight): "
                      + "; ".join(f"{a} {b} {w!r}" for a, b, w in graph.edges))
    path.write_text("\n".join(header) + "\n" + source)
    return path


def regression_graphs(text: str) -> list[TestGraph]:
    """The standard graphs for a regression file, plus the one recorded in its header, if any."""
    graphs = random_graphs(7, 3) + random_graphs(11, 2)
    m = re.search(r"^// graph \((directed|undirected); u v weight\): (.*)$", text, re.M)
    if m:
        edges = []
        for part in m.group(2).split(";"):
            a, b, w = part.split()
            edges.append((int(a), int(b), float(w)))
        directed = m.group(1) == "directed"
        g = build_graph(np.array([e[0] for e in edges], np.int64), np.array([e[1] for e in edges], np.int64),
                        np.array([e[2] for e in edges]), directed=directed, name="recorded")
        graphs.insert(0, TestGraph("recorded", directed, edges, g))
    return graphs


# =====================================================================================
# Robustness: mutations of real programs, random text, malformed graph files
# =====================================================================================

TOKENS = (
    "{", "}", "(", ")", "[", "]", ";", ",", "|", "<-", "=", "==", "!=", "<", "<=", ">", ">=", "+", "-", "*",
    "/", "%", "\\", "!", "&&", "||", "?", ":", "in", "while", "if", "then", "else", "return", "nvals",
    "outnvals", "allnvals", "nbrs", "directed", "procedure", "function", "sum", "min", "max", "and", "or", "union", "argmin", "argmax", "avg",
    "count", "V", "E", "empty", "emptyE", "id", "Weight", "inf", "true", "false", "rand()", "x", "u", "v",
    "e", "S", "X", "0", "1", "2.5", "1e-3", "99999999999999999999999", "vset", "eset", "vertex<int>",
    "edge<float>", "int", "float", "vid", "bool", "//", "/*", "*/", "\n", " ", "\t", "rand", "abs", "sqrt",
)
ODD_CHARS = "\x00\x01\x7f\u00e9\u2028\u200b\ufeff\U0001F600\r\x0b\x0c$@#`'\"~^"
_TOKEN_RE = re.compile(r"<-|==|!=|<=|>=|&&|\|\||[A-Za-z_][A-Za-z0-9_]*|\d+(?:\.\d*)?(?:[eE][+-]?\d+)?|\S")


def program_corpus() -> list[tuple[str, str]]:
    """(name, text) of every program in programs/, the spec-like examples and the regression files."""
    out = [(p.name, p.read_text()) for p in sorted((ROOT / "programs").glob("*.g2pl"))]
    out += [(p.name, p.read_text()) for p in regression_files() if p.stem not in KNOWN_BUGS]
    return out


def mutate(text: str, rng: random.Random, other: str | None = None, n_ops: int | None = None) -> str:
    """Apply 1-4 random edits: character/token deletion, insertion, replacement, duplication,
    swapping, truncation, splicing with `other`."""
    for _ in range(n_ops or rng.randint(1, 4)):
        op = rng.randrange(11)
        toks = [(m.start(), m.end()) for m in _TOKEN_RE.finditer(text)]
        if op == 0 and text:  # delete a character range
            i = rng.randrange(len(text))
            text = text[:i] + text[i + rng.randint(1, 3):]
        elif op == 1:  # insert a character
            i = rng.randint(0, len(text))
            ch = rng.choice(ODD_CHARS) if rng.random() < 0.3 else chr(rng.randint(32, 126))
            text = text[:i] + ch + text[i:]
        elif op == 2 and text:  # replace a character
            i = rng.randrange(len(text))
            text = text[:i] + chr(rng.randint(32, 126)) + text[i + 1:]
        elif op == 3 and toks:  # delete a token
            a, b = rng.choice(toks)
            text = text[:a] + text[b:]
        elif op == 4:  # insert a token
            i = rng.choice(toks)[rng.randrange(2)] if toks else 0
            text = text[:i] + " " + rng.choice(TOKENS) + " " + text[i:]
        elif op == 5 and toks:  # replace a token
            a, b = rng.choice(toks)
            text = text[:a] + rng.choice(TOKENS) + text[b:]
        elif op == 6 and toks:  # duplicate a token span
            a, _ = rng.choice(toks)
            _, b = rng.choice(toks)
            if a < b:
                text = text[:b] + text[a:b] + text[b:]
        elif op == 7 and len(toks) > 1:  # swap two tokens
            (a1, b1), (a2, b2) = sorted(rng.sample(toks, 2))
            text = text[:a1] + text[a2:b2] + text[b1:a2] + text[a1:b1] + text[b2:]
        elif op == 8 and text:  # truncate
            text = text[: rng.randrange(len(text))]
        elif op == 9 and other:  # splice
            i, j = rng.randint(0, len(text)), rng.randint(0, len(other))
            text = text[:i] + other[j:]
        elif op == 10 and toks:  # replace a name by another name of the program
            names = [text[a:b] for a, b in toks if re.fullmatch(r"[A-Za-z_]\w*", text[a:b])]
            if names:
                a, b = rng.choice(toks)
                text = text[:a] + rng.choice(names) + text[b:]
    return text


def random_text(rng: random.Random) -> str:
    """Random token soup, sometimes wrapped in a procedure."""
    toks = [rng.choice(TOKENS) for _ in range(rng.randint(0, 40))]
    body = " ".join(toks)
    if rng.random() < 0.5:
        body = f"main() {{ {body} }}"
    return body


POS_RE = r"^{file}:(\d+):(\d+): error: \S"


def check_robust(text: str, file: str = "mut.g2pl", run_graph: Graph | None = None) -> Failure | None:
    """Compile `text` at -O2 and -O0: a Program, or a G2PLError rendered as `file:line:col: error: ...`
    with the position inside the text. With `run_graph`, a program that compiles is also run
    (max 60 supersteps): only G2PLErrors may come out. Returns a Failure or None."""
    from g2pl.api import Program
    from g2pl.compiler.parser import parse

    n_lines = max(1, len(text.splitlines()) + 1)
    for opt in (2, 0):
        try:  # (not g2pl.compile: it would take a one-line text without `{`, `=` for a file name)
            prog = Program(parse(text, file), opt=opt)
        except G2PLError as e:
            try:
                msg = e.render()
            except Exception as e2:  # noqa: BLE001
                return Failure("robust", f"-O{opt} render", _exc_text(e2))
            m = re.match(POS_RE.format(file=re.escape(file)), msg)
            if not m:
                return Failure("robust", f"-O{opt} position", f"error without `{file}:line:col`: {_short(msg, 400)}")
            line, col = int(m.group(1)), int(m.group(2))
            if not (1 <= line <= n_lines and col >= 1):
                return Failure("robust", f"-O{opt} position", f"position {line}:{col} outside the text: "
                               + _short(msg, 300))
            if isinstance(e, g2pl.G2PLRuntimeError):
                return Failure("robust", f"-O{opt} exit", "a compile error has runtime exit status 1: " + msg)
            continue
        except RecursionError as e:
            return Failure("robust", f"-O{opt} crash", _exc_text(e))
        except Exception as e:  # noqa: BLE001
            return Failure("robust", f"-O{opt} crash", _exc_text(e))
        if run_graph is not None and opt == 2:
            f = _run_bounded(prog, run_graph)
            if f is not None:
                return f
    return None


def _run_bounded(prog, graph: Graph, seconds: float = 2.0) -> Failure | None:
    import signal
    import threading

    entry = prog.procedures[0] if "main" not in prog.procedures else "main"
    args = {}
    for name, ty in prog.params(entry):
        args[name] = {"bool": True, "int": 2, "float": 1.5, "vid": int(graph.ids[0]) if graph.n else -1}[ty.elem]

    class _Timeout(Exception):
        pass

    def on_alarm(*_):
        raise _Timeout

    main_thread = threading.current_thread() is threading.main_thread()
    old = None
    if main_thread:
        old = signal.signal(signal.SIGALRM, on_alarm)
        signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        prog.run(graph, args=args, entry=entry, max_supersteps=60)
    except _Timeout:
        return None  # a legitimately endless loop without supersteps
    except G2PLError:
        return None
    except RecursionError as e:
        return Failure("robust", "run crash", _exc_text(e))
    except Exception as e:  # noqa: BLE001
        return Failure("robust", "run crash", _exc_text(e))
    finally:
        if main_thread:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old)
    return None


# ---- graph files


@dataclass
class GraphCase:
    name: str
    filename: str
    data: bytes
    line: int | None  # the line the error must name (None: no line required)
    ok: bool = False  # True: the file is valid and must load


def graph_file_cases() -> list[GraphCase]:
    """Malformed (and a few tricky but valid) graph files."""
    good = b"# ok\n1 2 0.5\n2 3 1.5\n3 1 2.0\n"
    c = [
        GraphCase("empty", "empty.txt", b"", None),
        GraphCase("only-comments", "comments.txt", b"# nothing\n% here\n", None),
        GraphCase("truncated-line", "trunc.txt", b"1 2\n3 4\n5", 3),
        GraphCase("truncated-weight", "truncw.txt", b"1 2 0.5\n3 4 1.", None, ok=True),
        GraphCase("binary", "bin.txt", bytes(range(256)) * 4, None),
        GraphCase("nul-bytes", "nul.txt", b"1 2\n3\x004\n", 2),
        GraphCase("non-utf8", "latin.txt", b"1 2\n3 4 # caf\xe9\n\xff\xfe 5\n", 2),
        GraphCase("non-utf8-later", "latin2.txt", b"1 2\n3 4\n5 6\n\xff\xfe 5\n", 4),
        GraphCase("negative-id", "neg.txt", b"1 2\n-3 4\n", 2),
        GraphCase("huge-id", "huge.txt", b"1 2\n99999999999999999999999 4\n", 2),
        GraphCase("id-2^62", "big62.txt", b"1 2\n4611686018427387904 4\n", 2),
        GraphCase("id-2^63", "big63.txt", b"1 2\n9223372036854775808 4\n", 2),
        GraphCase("float-id", "fid.txt", b"1 2\n3.5 4\n", 2),
        GraphCase("nan-weight", "nan.txt", b"1 2 1.0\n3 4 nan\n", 2),
        GraphCase("inf-weight", "inf.txt", b"1 2 1.0\n3 4 inf\n", 2),
        GraphCase("neg-inf-weight", "ninf.txt", b"1 2 -inf\n", 1),
        GraphCase("negative-weight", "negw.txt", b"1 2 1.0\n2 3 0.5\n3 4 -2\n", 3),
        GraphCase("word-weight", "ww.txt", b"1 2 heavy\n", 1),
        GraphCase("too-many-columns", "cols.txt", b"1 2 3 4 5\n", 1),
        GraphCase("one-column", "one.txt", b"1 2\n3\n", 2),
        GraphCase("csv-bad", "bad.csv", b"1,2\n3,,4\n", 2),
        GraphCase("csv-nan", "nan.csv", b"1,2,1.0\n2,3,NaN\n", 2),
        GraphCase("tsv-huge", "huge.tsv", b"1\t2\n3\t1e400\n", 2),
        GraphCase("crlf-ok", "crlf.txt", b"1 2\r\n2 3\r\n", None, ok=True),
        GraphCase("valid", "good.el", good, None, ok=True),
        GraphCase("mtx-empty", "e.mtx", b"", None),
        GraphCase("mtx-bad-header", "h.mtx", b"%%MatrixMarket matrix array real general\n2 2\n1\n2\n3\n4\n", 1),
        GraphCase("mtx-truncated", "t.mtx", b"%%MatrixMarket matrix coordinate real general\n3 3 4\n1 2 1.0\n2 3 1.0\n",
                  None),
        GraphCase("mtx-out-of-range", "r.mtx", b"%%MatrixMarket matrix coordinate pattern general\n3 3 1\n1 9\n", 3),
        GraphCase("mtx-nan", "n.mtx", b"%%MatrixMarket matrix coordinate real general\n3 3 1\n1 2 nan\n", 3),
        GraphCase("mtx-negative-weight", "nw.mtx", b"%%MatrixMarket matrix coordinate real general\n3 3 1\n1 2 -1\n", 3),
        GraphCase("mtx-zero-index", "z.mtx", b"%%MatrixMarket matrix coordinate pattern general\n3 3 1\n0 1\n", 3),
        GraphCase("mtx-binary", "b.mtx", b"%%MatrixMarket\x00\xff\xfe", None),
        GraphCase("npz-garbage", "g.npz", b"PK\x03\x04garbage", None),
        GraphCase("npz-empty", "e.npz", b"", None),
    ]
    c += [_npz_case("npz-missing-dst", {"src": np.array([1, 2])}),
          _npz_case("npz-negative", {"src": np.array([1, -2]), "dst": np.array([2, 3])}),
          _npz_case("npz-float-ids", {"src": np.array([1.5, 2.0]), "dst": np.array([2.0, 3.0])}),
          _npz_case("npz-nan-weight", {"src": np.array([1, 2]), "dst": np.array([2, 3]),
                                       "weight": np.array([1.0, np.nan])}),
          _npz_case("npz-inf-weight", {"src": np.array([1, 2]), "dst": np.array([2, 3]),
                                       "weight": np.array([np.inf, 1.0])}),
          _npz_case("npz-neg-weight", {"src": np.array([1, 2]), "dst": np.array([2, 3]),
                                       "weight": np.array([1.0, -1.0])}),
          _npz_case("npz-huge", {"src": np.array([1, 2**63 - 1]), "dst": np.array([2, 3])}),
          _npz_case("npz-uint-huge", {"src": np.array([1, 2**64 - 1], np.uint64), "dst": np.array([2, 3], np.uint64)}),
          _npz_case("npz-2d", {"src": np.array([[1, 2]]), "dst": np.array([[2, 3]])}),
          _npz_case("npz-lengths", {"src": np.array([1, 2, 3]), "dst": np.array([2, 3])}),
          _npz_case("npz-strings", {"src": np.array(["a", "b"]), "dst": np.array(["c", "d"])})]
    return c


def _npz_case(name: str, arrays: dict[str, np.ndarray]) -> GraphCase:
    import io

    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return GraphCase(name, f"{name}.npz", buf.getvalue(), None)


def check_graph_file(path: Path, line: int | None = None, ok: bool = False, directed: bool = False) -> str | None:
    """Load `path`; None if it behaved (loaded when `ok`, else a G2PLError naming the file and `line`)."""
    try:
        g = g2pl.load_graph(str(path), directed=directed)
    except G2PLError as e:
        if ok:
            return f"a valid file was rejected: {e.render()}"
        msg = e.render()
        if not msg.startswith(str(path)):
            return f"the error does not start with the file name: {_short(msg, 300)}"
        if line is not None and not msg.startswith(f"{path}:{line}:"):
            return f"the error does not name line {line}: {_short(msg, 300)}"
        if "Traceback" in msg:
            return f"a traceback in the message: {_short(msg, 300)}"
        return None
    except Exception as e:  # noqa: BLE001
        return f"not a G2PLError: {_exc_text(e)}"
    if ok:
        if not isinstance(g, Graph):
            return "did not return a Graph"
        return None
    return f"loaded without an error ({g.summary()})"


def check_graph_bytes(data: bytes, suffix: str, directory: Path) -> str | None:
    """Random bytes as a graph file: a Graph, or a G2PLError naming the file; nothing else."""
    path = directory / f"rand{suffix}"
    path.write_bytes(data)
    try:
        g = g2pl.load_graph(str(path))
    except G2PLError as e:
        msg = e.render()
        if not msg.startswith(str(path)):
            return f"the error does not start with the file name: {_short(msg, 300)}"
        m = re.match(re.escape(str(path)) + r":(\d+)", msg)
        if m and int(m.group(1)) > data.count(b"\n") + 1:
            return f"line {m.group(1)} is past the end of the file: {_short(msg, 200)}"
        return None
    except Exception as e:  # noqa: BLE001
        return f"not a G2PLError: {_exc_text(e)}"
    if not (isinstance(g, Graph) and g.n >= 0 and all(math.isfinite(x) and x >= 0 for x in g.weight.tolist())):
        return "an invalid graph was accepted"
    return None


def regression_files() -> list[Path]:
    return sorted(REGRESSION_DIR.glob("*.g2pl")) if REGRESSION_DIR.is_dir() else []


#: Regression files of compiler/runtime bugs that are still open (file stem -> bug). The regression
#: test marks them xfail(strict=True): when a fix lands, the XPASS says to remove the entry here.
KNOWN_BUGS: dict[str, str] = {}


#: How the open bugs show up in a failure message (so big runs can count them apart from new ones).
KNOWN_PATTERNS: tuple[tuple[str, str], ...] = ()


def known_bug(failure: Failure | str) -> str | None:
    """The id of the open bug (KNOWN_BUGS) this failure looks like, if any."""
    text = str(failure)
    for bug, pat in KNOWN_PATTERNS:
        if re.search(pat, text):
            return bug
    return None


def _header(text: str, key: str) -> str | None:
    m = re.search(rf"^// {re.escape(key)}: (.*)$", text, re.M)
    return m.group(1).strip() if m else None


def refusal_problems(text: str, want: str, file: str = "fuzz.g2pl") -> list[str]:
    """Problems unless every configuration refuses `text` with a positioned error containing `want`."""
    problems: list[str] = []
    for label, opt, disable in CONFIGS:
        try:
            g2pl.compile(text, opt=opt, disable=disable, file=file)
        except G2PLError as e:
            rendered = e.render()
            if not rendered.startswith(f"{file}:") or want not in (error_message(rendered) or ""):
                problems.append(f"[wrong-error] {label}: {_short(rendered, 300)} (expected: {want})")
        except Exception as e:  # noqa: BLE001 - a crash of the compiler is a finding
            problems.append(f"[crash] {label}: {_exc_text(e)}")
        else:
            problems.append(f"[compiled] {label}: expected the error `{want}`")
    return problems


def generator_problems(seed: int) -> list[str]:
    """Problems unless the program generated for `seed` compiles under every configuration."""
    source = generate(seed).source
    problems: list[str] = []
    for label, opt, disable in CONFIGS:
        try:
            g2pl.compile(source, opt=opt, disable=disable)
        except G2PLError as e:
            problems.append(f"[generator] seed {seed} does not compile under {label}: {_short(e.render(), 300)}"
                            f"\n--- program ---\n{source}")
            break
    return problems


def check_regression(path: Path, mpi_cmd: list[str] | None = None, mpi_timeout: float = 30) -> list[str]:
    """Run one regression file; returns the problems (empty when it behaves).

    Header lines (all optional): `// expect: well-typed` (the default: it must compile under every
    configuration and give identical outputs) or `// expect: robust` (compiling may only raise a
    positioned G2PLError, and if it compiles the configurations must agree); `// rand-seed: N`;
    `// graph (undirected|directed; u v weight): a b w; ...` (run on that graph too);
    `// expect-values: JSON` (the exact `--output` values on that recorded graph, every configuration);
    `// ranks: 2` and `// mpi-opt: O0|O1|O2` (with `mpi_cmd`: also `g2pl run --np 2` on the recorded
    graph, which must give the 1-rank values within `mpi_timeout` seconds).
    `// expect: error` with `// expect-error: TEXT`: a program the language forbids, which every
    configuration must refuse with a positioned G2PLError whose message contains TEXT.
    `// generator-seed: N`: the generator once called this (ill-typed) program well-typed for seed N;
    what it generates for N now must compile under every configuration.
    """
    text = path.read_text()
    expect = _header(text, "expect") or "well-typed"
    seed = int(_header(text, "rand-seed") or 0)
    problems: list[str] = []
    gen_seed = _header(text, "generator-seed")
    if gen_seed is not None:
        problems += generator_problems(int(gen_seed))
    if expect == "error":
        return problems + refusal_problems(text, _header(text, "expect-error") or "", file=path.name)
    if expect == "robust":
        f = check_robust(text, file=path.name)
        if f is not None:
            return [str(f)]
        try:
            g2pl.compile(text, opt=0, file=path.name)
        except G2PLError:
            return []
    graphs = regression_graphs(text)
    params = params_of(text)
    rng = random.Random(seed ^ 0x5EED)
    args = [make_args(params, tg.graph, rng) for tg in graphs]
    fails, info = run_configs(text, graphs, args, seed=seed, file=path.name, timeout=60)
    problems += [str(f) for f in fails]
    want = _header(text, "expect-values")
    if want is not None and graphs and graphs[0].name == "recorded":
        want_v = json.loads(want)
        for label, outs in info["outcomes"].items():
            st, val = outs[0]
            if st == "ok" and _canon(val) != _canon(want_v):
                problems.append(f"[wrong-values] {label} on the recorded graph: {_first_diff(want_v, val)}")
    if mpi_cmd is not None and not problems and _header(text, "ranks") == "2":
        info["graphs"], info["args"] = graphs, args
        problems += [str(f) for f in mpi_check(text, mpi_cmd, info, which=0, timeout=mpi_timeout, seed=seed,
                                               opt_label=_header(text, "mpi-opt") or "O2")]
    return problems
