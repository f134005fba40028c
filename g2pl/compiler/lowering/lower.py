"""Type checking and lowering: `ast.Procedure` -> `ir.ProcIR` (docs/language.md).

One walk both checks the kind/type rules and produces IR, so every error is
raised where the offending AST node (and its span) is at hand.  Aggregations
become exchange instructions writing fresh temporaries (`$N`); the rest
becomes local `Compute`s.  Variable element types are inferred as the join of
every assignment (int < vid, int < float), so the walk is repeated until the
types are stable (a handful of rounds at most).
"""

from __future__ import annotations

import difflib
import functools
from collections.abc import Callable, Iterator
from typing import Literal, TypeVar, cast, overload

from g2pl.compiler import ast as A
from g2pl.compiler import ir
from g2pl.compiler.hints import call_notes
from g2pl.compiler.limits import INLINE_BUDGET, MAX_EXPR_DEPTH
from g2pl.compiler.lowering import common_neighbours as common
from g2pl.compiler.lowering.inline import display, expand
from g2pl.compiler.lowering.keyed import lower_keyed, wants_keyed
from g2pl.compiler.lowering.values import (
    TOP,
    Binder,
    Ctx,
    Poison,
    SourceKind,
    Val,
    ValKind,
    arith_elem,
    article,
    chain,
    default_of,
    join_elem,
    kind_word,
)
from g2pl.compiler.parser import AGG_OPS
from g2pl.errors import G2PLError, Span

BUILTIN_VALUES = ("V", "E", "empty", "emptyE", "id", "Weight", "inf", "true", "false")
BUILTIN_FUNCS = {
    "min": 2, "max": 2, "abs": 1, "sqrt": 1, "log": 1, "exp": 1, "floor": 1, "ceil": 1,
    "int": 1, "float": 1, "rand": 0,
}
#: built-ins added later, soft names like the integer functions: `float32(x)` rounds to single precision
SOFT_FUNCS = {"float32": 1}
#: integer functions (total on int64, see docs/language.md): soft names, so a variable or function
#: of the same name still works (a user function wins at a call)
INT_FUNCS = {"idiv": 2, "imod": 2, "bitand": 2, "bitor": 2, "bitxor": 2, "bitnot": 1, "shl": 2, "shr": 2}
#: every built-in function's argument count
FUNC_ARITY = {**BUILTIN_FUNCS, **INT_FUNCS, **SOFT_FUNCS}
WEIGHT_VAR = "@Weight"
#: `directed`: a built-in scalar bool (true when the graph keeps edge direction); a soft name, so a
#: variable, parameter or generator variable of that name still works (and hides it)
DIRECTED = "directed"
DIRECTED_VAR = "@directed"
NUMERIC = ("int", "float", "vid")
#: aggregation names that cannot name a variable (`mode` came later and stays free for one)
RESERVED_AGGS = tuple(op for op in AGG_OPS if op != "mode")
INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)


@functools.lru_cache(maxsize=4)
def _source_lines(source: str) -> list[str]:
    """The program's lines, split once per program rather than once per procedure and round of
    type inference (a file of many procedures was quadratic). Shared: read only."""
    return source.splitlines()


class _Unknown(Exception):  # noqa: N818 - a control-flow signal, never shown
    """A use of a variable whose defining statement failed (error recovery): the use is not reported."""


class Lowerer:
    """Lowers one procedure. Create one per round of type inference."""

    def __init__(self, module: A.Module, proc: A.Procedure, var_types: dict[str, ir.Ty],
                 param_types: dict[str, ir.Elem], collect: list[G2PLError] | None = None) -> None:
        self.mod = module
        # Error recovery (`g2pl check`): with a list, a failing statement's error is appended and
        # lowering goes on with the next statement; without, the first error is raised.
        self.collect = collect
        self.unknown_vars: set[str] = set()  # targets of failed statements that never got a type
        self.proc = proc
        self.var_types = var_types  # persisted across rounds; updated in place
        self.param_types = param_types  # unannotated params' inferred element types
        self.changed = False
        self.temps: dict[str, ir.Ty] = {}
        self.n_temps = 0
        self.rand_sites = 0
        self.out: list[ir.Instr] = []
        self.call_stack: list[str] = []
        # id(argument expression) -> the call stack of the caller it belongs to: an argument
        # substituted into an inlined body is still the caller's code (`f(f(1))` is not recursion).
        self.arg_stacks: dict[int, list[str]] = {}
        # function calls being expanded (outermost first), with the span of the outermost call, and the
        # AST nodes lowered inside expansions so far: the budget against exponential macro growth
        self.expanding: list[str] = []
        self.expansion_site: Span | None = None
        self.inlined_nodes = 0
        self.budget_spent = False
        self.limit_hit = False  # a limit error is being raised: operand() must not recover from it
        self.expr_depth = 0
        self.assigned: set[str] = set()
        self.user_names: dict[str, str] = {}
        self.params: dict[str, ir.Ty] = {}
        # the statements by id (see `ast.walk_statements`), and the id of the one being lowered: the
        # `origin` of everything emitted meanwhile, function bodies inlined into it included
        self.statements = [s for s, _loop in A.walk_statements(proc.body)]
        self.stmt_ids = {id(s): n for n, s in enumerate(self.statements)}
        self.origin = -1  # outside every statement (where nothing is emitted)

    # ------------------------------------------------------------ helpers

    def err(self, msg: str, span: Span, *notes: str) -> G2PLError:
        return G2PLError(msg, span=span, notes=notes)

    def temp(self, ty: ir.Ty) -> str:
        self.n_temps += 1
        name = f"${self.n_temps}"
        self.temps[name] = ty
        return name

    def emit(self, instr: ir.Instr) -> None:
        self.out.append(instr)

    def known_names(self, ctx: Ctx) -> list[str]:
        names = list(BUILTIN_VALUES) + [DIRECTED] + list(self.var_types) + list(self.params) + list(self.mod.functions)
        names += [display(n) for n in ctx.elems]
        return names

    def unknown(self, name: str, span: Span, ctx: Ctx) -> G2PLError:
        close = difflib.get_close_matches(display(name), self.known_names(ctx), n=1, cutoff=0.6)
        hint = f"; did you mean `{close[0]}`?" if close else ""
        return self.err(f"undefined name `{display(name)}`{hint}", span)

    def report(self, err: G2PLError) -> None:
        """Raise `err`, or in collect mode record it and go on."""
        if self.collect is None:
            raise err
        self.collect.append(err)

    def recover(self, exc: Exception) -> None:
        """Record `exc` (being handled) in collect mode, or re-raise it."""
        if self.collect is None:
            raise exc
        if isinstance(exc, _Unknown):
            return  # a consequence of an error already recorded
        if isinstance(exc, G2PLError):
            self.collect.append(exc)
            return
        if not self.collect:
            raise exc  # an internal error in a program without user errors: not ours to hide
        # anything else after a recorded error is a consequence of the state that error left

    def var_ty(self, name: str) -> ir.Ty | None:
        if name in self.params:
            return self.params[name]
        return self.var_types.get(name)

    # ------------------------------------------------------------ procedure

    def lower_proc(self) -> ir.ProcIR:
        for p in self.proc.params:
            if p.name in BUILTIN_VALUES or p.name in BUILTIN_FUNCS or p.name in RESERVED_AGGS:
                self.report(self.err(f"parameter `{p.name}` shadows a built-in name", p.span))
                continue
            if p.ann is not None and p.ann.kind != "scalar":
                self.report(self.err(
                    f"procedure parameters are scalars supplied with --arg; `{p.name}` is declared {p.ann.kind}",
                    p.ann.span,
                ))
            elem = p.ann.elem if p.ann else self.param_types.get(p.name, "int")
            self.params[p.name] = ir.Ty("scalar", elem)
            self.assigned.add(p.name)
        body = self.block(self.proc.body, set(self.assigned))[0]
        all_vars: dict[str, ir.Ty] = {}
        all_vars.update(self.params)
        all_vars.update(self.var_types)
        all_vars.update(self.temps)
        all_vars[WEIGHT_VAR] = ir.Ty("edge", "float")
        all_vars[DIRECTED_VAR] = ir.Ty("scalar", "bool")
        all_vars[ir.ALL_EDGES_VAR] = ir.Ty("edge", "bool")
        return ir.ProcIR(
            name=self.proc.name,
            params=list(self.params.items()),
            body=body,
            vars=all_vars,
            user_names={v: v for v in self.var_types} | {p: p for p in self.params},
            rand_sites=self.rand_sites,
            statements=tuple(s.span for s in self.statements),
            source_lines=_source_lines(self.mod.source),
            file=self.mod.file,
        )

    def block(self, stmts: tuple[A.Stmt, ...], assigned: set[str]) -> tuple[list[ir.Instr], set[str], bool]:
        """Lower a statement list; returns (instrs, definitely-assigned vars after, ends with return)."""
        saved = self.out
        self.out = []
        returned = dead = False
        for s in stmts:
            if returned and not dead:
                dead = True  # reported once; in collect mode the rest is still checked
                self.report(self.err("this statement is never executed: it follows a `return`", s.span))
            assigned, r = self.stmt_or_recover(s, assigned)
            returned = returned or r
        instrs, self.out = self.out, saved
        return instrs, assigned, returned

    def stmt_or_recover(self, s: A.Stmt, assigned: set[str]) -> tuple[set[str], bool]:
        """`stmt`; in collect mode a failing statement's error is recorded and its code dropped, and an
        assignment's target keeps the type it had (or is marked unknown, so later uses stay quiet)."""
        if self.collect is None:
            return self.stmt(s, assigned)
        self.limit_hit = False
        out, mark = self.out, len(self.out)
        try:
            return self.stmt(s, assigned)
        except Exception as exc:  # noqa: BLE001 - sorted out by recover()
            self.recover(exc)
        self.out = out
        del self.out[mark:]
        if isinstance(s, A.Assign):
            name = s.target
            if self.var_ty(name) is None and name not in BUILTIN_VALUES and name not in self.mod.functions:
                if s.ann is not None:
                    self.var_types[name] = ir.Ty(s.ann.kind, s.ann.elem)
                else:
                    self.unknown_vars.add(name)
            assigned.add(name)  # in place: `block` owns the set (a copy per block), and copying per
            return assigned, False  # statement made a long block quadratic
        return assigned, isinstance(s, A.Return)

    def condition_or_recover(self, e: A.Expr, what: str) -> tuple[list[ir.Instr], ir.Ex]:
        """`condition`; in collect mode a failing condition is recorded and replaced by `true`, so the
        body is still checked."""
        if self.collect is None:
            return self.condition(e, what)
        out = self.out
        try:
            return self.condition(e, what)
        except Exception as exc:  # noqa: BLE001 - sorted out by recover()
            self.recover(exc)
        self.out = out
        return [], ir.Const("bool", e.span, True)

    def stmt(self, s: A.Stmt, assigned: set[str]) -> tuple[set[str], bool]:
        """Lower statement `s`; what it emits, but for its nested statements' code, gets its id as origin."""
        outer, self.origin = self.origin, self.stmt_ids[id(s)]
        try:
            return self.stmt_code(s, assigned)
        finally:
            self.origin = outer

    def stmt_code(self, s: A.Stmt, assigned: set[str]) -> tuple[set[str], bool]:
        self.assigned = assigned
        if isinstance(s, A.Assign):
            self.assign(s)
            assigned.add(s.target)  # in place, as in stmt_or_recover
            return assigned, False
        if isinstance(s, A.While):
            pre, cond = self.condition_or_recover(s.cond, "while")
            body, _, _ = self.block(s.body, set(assigned))
            self.emit(ir.WhileI(s.span, tuple(pre), cond, tuple(body), origin=self.origin))
            return assigned, False
        if isinstance(s, A.If):
            pre, cond = self.condition_or_recover(s.cond, "if")
            self.out.extend(pre)
            then, a1, r1 = self.block(s.then, set(assigned))
            other, a2, r2 = self.block(s.other, set(assigned))
            self.emit(ir.IfI(s.span, cond, tuple(then), tuple(other), origin=self.origin))
            if r1 and r2:
                return a1 | a2, True
            if r1:
                return a2, False
            if r2:
                return a1, False
            return a1 & a2, False
        if isinstance(s, A.Return):
            vals = []
            for i, e in enumerate(s.values):
                if isinstance(e, A.Name) and (e.id in self.var_types or e.id in self.params) and e.id in assigned:
                    ty = self.var_ty(e.id)
                    assert ty is not None  # a variable or a parameter
                    vals.append(ir.RetVal(e.id, e.id, ty))
                    continue
                v = self.top(e)
                name = f"ret{i}"
                t = self.materialize(v, e.span)
                vals.append(ir.RetVal(name, t, self.temps.get(t) or self.var_ty(t) or v.ty()))
            self.emit(ir.ReturnI(s.span, tuple(vals), origin=self.origin))
            return assigned, True
        raise TypeError(type(s).__name__)

    def condition(self, e: A.Expr, what: str) -> tuple[list[ir.Instr], ir.Ex]:
        saved = self.out
        self.out = []
        v = self.top(e)
        pre, self.out = self.out, saved
        if v.kind != "scalar":
            hint = ""
            if v.elem == "bool":
                set_name = e.id if isinstance(e, A.Name) else "X"
                hint = f" (did you mean `{set_name} != {'emptyE' if v.kind == 'edge' else 'empty'}`?)"
            raise self.err(
                f"{article(f'`{what}` condition')} must be a scalar bool, but this is {article(kind_word(v.kind, v.elem))}{hint}",
                e.span,
            )
        if v.elem != "bool":
            raise self.err(f"{article(f'`{what}` condition')} must be a scalar bool, but this is a scalar {v.elem}", e.span)
        return pre, v.ex

    def assign(self, s: A.Assign) -> None:
        name = s.target
        if name in BUILTIN_VALUES or name in BUILTIN_FUNCS or name in RESERVED_AGGS:
            raise self.err(f"cannot assign to the built-in name `{name}`", s.target_span)
        if name in self.mod.functions:
            raise self.err(f"`{name}` is a function; choose another variable name", s.target_span)
        v = self.top(s.value)
        assert v.kind != "adj"  # a top-level value: a scalar or a whole graph
        old = self.var_ty(name)
        ann = s.ann
        kind, elem = v.kind, v.elem
        if ann is not None:
            if ann.kind != kind and not (kind == "scalar" and ann.kind != "scalar"):
                raise self.err(
                    f"`{name}` is declared {ir.Ty(ann.kind, ann.elem).word()}, but the value is a "
                    f"{kind_word(kind, elem)}", s.value.span,
                )
            if join_elem(ann.elem, elem) != ann.elem:
                raise self.err(
                    f"`{name}` is declared {ir.Ty(ann.kind, ann.elem).word()}, but the value has element type {elem}",
                    s.value.span,
                )
            kind, elem = ann.kind, ann.elem
        if old is not None and name in self.params:
            raise self.err(f"cannot assign to parameter `{name}`", s.target_span)
        if old is not None:
            if old.kind != kind:
                if kind == "scalar" and ann is None and old.kind != "scalar":
                    kind = old.kind  # broadcast a scalar into a graph variable
                else:
                    raise self.err(
                        f"`{name}` is {article(old.word())}, but this assigns {article(kind_word(kind, elem))}; "
                        "a variable keeps one kind for its whole life", s.value.span,
                    )
            j = join_elem(old.elem, elem)
            if j is None:
                raise self.err(
                    f"`{name}` holds {old.elem} values, but this assigns {elem}", s.value.span,
                )
            if j != old.elem:
                self.changed = True
            elem = j
        else:
            self.changed = self.changed or name not in self.var_types
        self.var_types[name] = ir.Ty(kind, elem)
        dom = ir.DOMAIN_OF_KIND[kind]
        # Retarget the instruction that produced a temp instead of copying it.
        if (
            isinstance(v.ex, ir.Load) and v.ex.var.startswith("$") and self.out
            and self.out[-1].defs() == (v.ex.var,) and v.kind == kind and v.ex.kind == kind
            and not isinstance(self.out[-1], ir.EndpointExchange)
            and self.var_types[name].elem == v.elem
        ):
            last = self.out.pop()
            self.temps.pop(v.ex.var, None)
            self.emit(_retarget(last, name))
            return
        self.emit(ir.Compute(s.span, name, dom, v.ex, origin=self.origin))

    def materialize(self, v: Val, span: Span) -> str:
        """A variable holding `v` (a temp unless `v` already is a plain variable load)."""
        if isinstance(v.ex, ir.Load) and v.ex.pos == "here" and v.ex.kind == v.kind:
            return v.ex.var
        ty = v.ty()
        t = self.temp(ty)
        self.emit(ir.Compute(span, t, ir.DOMAIN_OF_KIND[ty.kind], v.ex, origin=self.origin))
        return t

    # ------------------------------------------------------------ expressions

    def top(self, e: A.Expr) -> Val:
        return self.ex(e, TOP)

    def ex(self, e: A.Expr, ctx: Ctx) -> Val:
        self.charge(e)
        self.expr_depth += 1
        try:
            v = self.ex_in_caller(e, ctx)
        finally:
            self.expr_depth -= 1
        if isinstance(v, Poison):
            raise _Unknown("poisoned")  # only operand() takes a poisoned value
        return v

    def operand(self, e: A.Expr, ctx: Ctx) -> Val:
        """`ex(e)` for an operand of an operator; in collect mode an error in it is recorded and the
        operand becomes a `Poison`, so the other operands are still checked."""
        if self.collect is None:
            return self.ex(e, ctx)
        try:
            return self.ex(e, ctx)
        except _Unknown:
            if self.limit_hit:
                raise
        except G2PLError as err:
            if self.limit_hit:
                raise
            self.collect.append(err)
        return Poison(ir.Const("bool", e.span, False), "scalar", "bool")

    def ex_in_caller(self, e: A.Expr, ctx: Ctx) -> Val:
        """Lower `e` with the call stack of the code it was written in (an argument is its caller's)."""
        method = getattr(self, "ex_" + type(e).__name__)
        caller = self.arg_stacks.get(id(e))
        if caller is None or caller is self.call_stack:
            return method(e, ctx)
        inner, self.call_stack = self.call_stack, caller
        try:
            return method(e, ctx)
        finally:
            self.call_stack = inner

    def charge(self, e: A.Expr) -> None:
        """Count `e` against the inlining budget and the nesting limit; raise once either is exceeded.

        Nodes are counted while any call is being expanded (arguments included: a
        parameter used twice lowers its argument twice), over the whole procedure.
        """
        if self.expr_depth >= MAX_EXPR_DEPTH:
            self.limit_hit = True
            raise self.err(f"expression nested too deeply (more than {MAX_EXPR_DEPTH} levels"
                           f"{' after inlining functions' if self.expanding else ''})", e.span)
        if not self.expanding:
            return
        self.inlined_nodes += 1
        if self.inlined_nodes <= INLINE_BUDGET:
            return
        self.limit_hit = True
        if self.budget_spent:
            raise _Unknown("inline budget")  # reported once, at the call that exhausted it
        self.budget_spent = True
        raise self.err(f"macro expansion too large: {chain(self.expanding)} expands to more than "
                       f"{INLINE_BUDGET:,} nodes", self.expansion_site or e.span,
                       "functions are macros: every call is replaced by the function's body, so calls of "
                       "calls multiply; compute shared values into variables instead")

    def ex_IntLit(self, e: A.IntLit, ctx: Ctx) -> Val:
        if e.value > INT64_MAX:
            raise self.err("integer literal does not fit in 64 bits", e.span)
        return Val(ir.Const("int", e.span, e.value), "scalar", "int")

    def ex_FloatLit(self, e: A.FloatLit, ctx: Ctx) -> Val:
        return Val(ir.Const("float", e.span, e.value), "scalar", "float")

    def ex_Name(self, e: A.Name, ctx: Ctx) -> Val:
        n = e.id
        if n in ctx.elems:
            el = ctx.elems[n]
            if not el.has_value:
                raise self.err(
                    f"`{display(n)}` is an edge of an edge set and has no value of its own; "
                    f"read a graph at it, e.g. `Weight[{display(n)}]`", e.span,
                )
            if el.ekind == "vertex" and (el.pos in ("src", "dst") or ctx.dom == "W"):
                return Val(ir.Ids("vid", e.span, el.pos), ctx.local_kind(), "vid")
            return Val(el.value_at(el.pos, e.span), ctx.local_kind(), el.elem)
        if n in ctx.blocked:
            raise self.err(ctx.blocked[n], e.span)
        ty = self.var_ty(n)
        if ty is not None:
            if n not in self.assigned:
                raise self.err(f"`{n}` may be read before it is assigned (on some path to here)", e.span)
            return self.load_var(n, ty, e.span, ctx)
        if n in self.unknown_vars:
            raise _Unknown(n)
        if n in BUILTIN_VALUES:
            return self.builtin_value(n, e.span, ctx)
        if n == DIRECTED:
            return Val(ir.Load("bool", e.span, DIRECTED_VAR, "scalar"), "scalar", "bool")
        if n in self.mod.functions:
            raise self.err(f"`{n}` is a function; call it with arguments, e.g. `{n}(...)`", e.span)
        if n in self.mod.procedures:
            raise self.err(f"`{n}` is a procedure; procedures cannot be used in expressions", e.span)
        raise self.unknown(n, e.span, ctx)

    def load_var(self, n: str, ty: ir.Ty, span: Span, ctx: Ctx) -> Val:
        if ty.kind == "scalar":
            return Val(ir.Load(ty.elem, span, n, "scalar"), "scalar", ty.elem)
        if ctx.dom == "T":
            return Val(ir.Load(ty.elem, span, n, ty.kind), ty.kind, ty.elem)
        if ty.kind == "vertex" and ctx.dom in ("V", "A"):
            pos: ir.Pos = "self" if ctx.dom == "A" else "here"
            return Val(ir.Load(ty.elem, span, n, "vertex", pos), ctx.local_kind(), ty.elem)
        if ty.kind == "edge" and ctx.dom in ("E", "W"):
            return Val(ir.Load(ty.elem, span, n, "edge"), ctx.local_kind(), ty.elem)
        if ty.kind == "vertex":
            raise self.err(
                f"`{display(n)}` is {article(ty.word())} used inside an edge comprehension; "
                f"read it at an endpoint, e.g. `{display(n)}[u]`", span,
            )
        raise self.err(
            f"`{display(n)}` is {article(ty.word())} used where values are per vertex; "
            f"read it at an edge, e.g. `{display(n)}[e]`", span,
        )

    def builtin_value(self, n: str, span: Span, ctx: Ctx) -> Val:
        if n in ("true", "false"):
            return Val(ir.Const("bool", span, n == "true"), "scalar", "bool")
        if n == "inf":
            return Val(ir.Const("float", span, float("inf")), "scalar", "float")
        if n in ("V", "empty"):
            if ctx.dom in ("E", "W"):
                raise self.err(f"`{n}` is a vertex set used inside an edge comprehension", span)
            k = "vertex" if ctx.dom == "T" else ctx.local_kind()
            return Val(ir.Const("bool", span, n == "V"), k, "bool")
        if n in ("E", "emptyE", "Weight"):
            if ctx.dom in ("V", "A"):
                raise self.err(f"`{n}` is an edge graph used where values are per vertex; read it at an edge", span)
            k = "adj" if ctx.dom == "W" else "edge"
            if n == "Weight":
                return Val(ir.Load("float", span, WEIGHT_VAR, "edge"), k, "float")
            return Val(ir.Const("bool", span, n == "E"), k, "bool")
        if n == "id":
            if ctx.dom in ("E", "W"):
                raise self.err("bare `id` inside an edge comprehension is ambiguous; write `id[u]` or `id[v]`", span)
            pos: ir.Pos = "self" if ctx.dom == "A" else "here"
            return Val(ir.Ids("vid", span, pos), "vertex" if ctx.dom == "T" else ctx.local_kind(), "vid")
        raise AssertionError(n)

    # ---- operators

    def combine_kinds(self, a: Val, b: Val, span: Span, what: str) -> ValKind:
        if a.kind == "scalar":
            return b.kind
        if b.kind == "scalar" or a.kind == b.kind:
            return a.kind
        raise self.err(
            f"{what} combines {article(kind_word(a.kind, a.elem))} with {article(kind_word(b.kind, b.elem))}; "
            "kinds never mix", span,
        )

    def hint_param(self, v: Val, other_elem: ir.Elem) -> None:
        """Unannotated parameters take the type they are combined with (float, vid or bool)."""
        ex = v.ex
        if isinstance(ex, ir.Load) and ex.var in self.params and ex.var not in self._annotated():
            cur = self.param_types.get(ex.var, "int")
            new = other_elem if other_elem in ("float", "vid", "bool") else cur
            if cur == "int" and new != "int" or cur == "vid" and new == "float":
                self.param_types[ex.var] = new
                self.changed = True

    def _annotated(self) -> set[str]:
        return {p.name for p in self.proc.params if p.ann is not None}

    def ex_BinOp(self, e: A.BinOp, ctx: Ctx) -> Val:
        op = e.op
        if op == "in":
            return self.membership(e, ctx)
        a = self.operand(e.left, ctx)
        b = self.operand(e.right, ctx)
        if isinstance(a, Poison) or isinstance(b, Poison):
            return a if isinstance(a, Poison) else b
        self.hint_param(a, b.elem)
        self.hint_param(b, a.elem)
        if op in ("==", "!=") and ctx.dom == "T" and a.kind != "scalar" and b.kind != "scalar":
            return self.whole_compare(e, a, b)
        kind = self.combine_kinds(a, b, e.op_span, f"`{op}`")
        sp = e.span
        if op in ("&&", "||", "\\"):
            word = {"&&": "`&&` (and / intersection)", "||": "`||` (or / union)", "\\": "`\\` (set difference)"}[op]
            for side in (a, b):
                if side.elem != "bool":
                    raise self.err(f"{word} needs bool operands (sets), but this is {article(kind_word(side.kind, side.elem))}",
                                   e.right.span if side is b else e.left.span)
            if op == "\\":
                if a.kind == "scalar" and b.kind == "scalar":
                    raise self.err("`\\` is set difference; it needs sets, not scalars", e.op_span)
                return Val(ir.Op("bool", sp, "&&", (a.ex, ir.Op("bool", sp, "!", (b.ex,)))), kind, "bool")
            return Val(ir.Op("bool", sp, op, (a.ex, b.ex)), kind, "bool")
        if op in ("==", "!="):
            if (a.elem == "bool") != (b.elem == "bool"):
                raise self.err(f"`{op}` compares {article(a.elem)} with {article(b.elem)}", e.op_span)
            return Val(ir.Op("bool", sp, op, (a.ex, b.ex)), kind, "bool")
        for side, node in ((a, e.left), (b, e.right)):
            if side.elem == "bool":
                raise self.err(f"`{op}` needs numbers, but this is {article(kind_word(side.kind, side.elem))}", node.span)
        if op in ("<", "<=", ">", ">="):
            return Val(ir.Op("bool", sp, op, (a.ex, b.ex)), kind, "bool")
        if op == "/":
            return Val(ir.Op("float", sp, "/", (a.ex, b.ex)), kind, "float")
        if op == "%":
            for side, node in ((a, e.left), (b, e.right)):
                if side.elem == "float":
                    raise self.err("`%` needs integers, but this is a float; use int(...)", node.span)
            return Val(ir.Op("int", sp, "%", (a.ex, b.ex)), kind, "int")
        elem = arith_elem(a.elem, b.elem)
        arith = cast(Literal["+", "-", "*"], op)  # the operators left: every other one returned above
        return Val(ir.Op(elem, sp, arith, (a.ex, b.ex)), kind, elem)

    def whole_compare(self, e: A.BinOp, a: Val, b: Val) -> Val:
        if a.kind != b.kind:
            raise self.err(
                f"`{e.op}` compares {article(kind_word(a.kind, a.elem))} with {article(kind_word(b.kind, b.elem))}", e.op_span
            )
        if (a.elem == "bool") != (b.elem == "bool"):
            raise self.err(f"`{e.op}` compares {article(a.elem)} graph with {article(b.elem)} graph", e.op_span)
        assert a.kind == "vertex" or a.kind == "edge"  # two whole graphs (see the caller)
        dom: ir.ElemDom = "V" if a.kind == "vertex" else "E"
        t = self.temp(ir.Ty("scalar", "bool"))
        ne = ir.Op("bool", e.span, "!=", (a.ex, b.ex))
        self.emit(ir.GlobalReduce(e.span, t, "or", dom, ne, None, "bool", origin=self.origin))
        res: ir.Ex = ir.Load("bool", e.span, t, "scalar")
        if e.op == "==":
            res = ir.Op("bool", e.span, "!", (res,))
        return Val(res, "scalar", "bool")

    def membership(self, e: A.BinOp, ctx: Ctx) -> Val:
        left = e.left
        if isinstance(left, A.Pair):
            return self.edge_test(e, left, ctx)
        if isinstance(left, A.Name) and left.id in ctx.elems:
            el = ctx.elems[left.id]
            sv = self.graph_var(e.right, ctx)
            if sv.elem != "bool" or sv.kind not in ("vertex", "edge"):
                raise self.err(f"the right side of `in` must be a set, but this is {article(kind_word(sv.kind, sv.elem))}",
                               e.right.span)
            if sv.kind != el.ekind:
                raise self.err(
                    f"`{display(left.id)}` is {'an edge' if el.ekind == 'edge' else 'a vertex'}, "
                    f"but the right side of `in` is {article(ir.Ty(sv.kind, 'bool').word())}", e.op_span,
                )
            return Val(self.read_at(sv, el, e.span), ctx.local_kind() if ctx.dom != "T" else "scalar", "bool")
        # `p in S` with p a vid expression: a remote read of S at p
        return self.ex_Index(A.Index(e.span, e.right, e.left), ctx)

    def read_at(self, gv: Val, el: Binder, span: Span) -> ir.Ex:
        """Graph `gv` (a Load of a variable or a constant) read at element `el`."""
        if isinstance(gv.ex, ir.Const):
            return gv.ex
        if isinstance(gv.ex, ir.Ids):
            return ir.Ids("vid", span, el.pos)
        assert isinstance(gv.ex, ir.Load)
        assert gv.kind != "adj"  # a whole graph (`graph_var`)
        return ir.Load(gv.elem, span, gv.ex.var, gv.kind, el.pos)

    def graph_var(self, e: A.Expr, ctx: Ctx) -> Val:
        """Lower a whole-graph expression (evaluated at top level) to a Load/Const/Ids of it."""
        if isinstance(e, A.Name):
            if e.id in ctx.elems:
                raise self.err(f"`{display(e.id)}` is an element, not a graph", e.span)
            if e.id in BUILTIN_VALUES and self.var_ty(e.id) is None:
                if e.id == "id":
                    return Val(ir.Ids("vid", e.span, "here"), "vertex", "vid")
                return self.builtin_value(e.id, e.span, TOP)
        v = self.ex(e, self.hoist_ctx(ctx))
        if v.kind == "scalar":
            return v
        if isinstance(v.ex, ir.Const) and v.elem == "bool" \
                or (isinstance(v.ex, ir.Ids) and v.ex.pos == "here" and v.kind == "vertex") \
                or (isinstance(v.ex, ir.Load) and v.ex.pos == "here" and v.ex.kind == v.kind):
            return v
        assert v.kind != "adj"  # evaluated at the top level
        t = self.materialize(v, e.span)
        return Val(ir.Load(v.elem, e.span, t, v.kind), v.kind, v.elem)

    def hoist_ctx(self, ctx: Ctx) -> Ctx:
        """Top-level context for a sub-expression hoisted out of a comprehension."""
        if ctx.dom == "T" and not ctx.blocked:
            return TOP
        blocked = dict(ctx.blocked)
        for n in ctx.elems:
            blocked[n] = (
                f"`{display(n)}` belongs to an enclosing comprehension and cannot be used in this "
                "whole-graph sub-expression (it is evaluated for all elements at once)"
            )
        return Ctx("T", blocked=blocked)

    def ex_InNvals(self, e: A.InNvals, ctx: Ctx) -> Val:
        w = e.source.word
        raise self.err(f"`x in {w} v` is a qualifier of its own (a generator: `x <- {w} v`), "
                       "not part of an expression", e.span)

    def ex_Pair(self, e: A.Pair, ctx: Ctx) -> Val:
        a, b = (display(n) for n in e.names)
        raise self.err(f"a pair `({a}, {b})` only tests for an edge: write `({a}, {b}) in E` (or another "
                       "edge set)", e.span)

    def edge_test(self, e: A.BinOp, pair: A.Pair, ctx: Ctx) -> Val:
        """`(a, b) in A`: is there an edge a -> b in edge set A?  `a` and `b` are the endpoints of the
        centre edge (either order) or the centre vertex and a neighbour (either order); the test reads
        A at the element's own edge when it is that edge, else at the edge the other way (`ir.Pos`)."""
        a, b = pair.names
        shown = f"`({display(a)}, {display(b)}) in ...`"
        for n in (a, b):
            if n in ctx.blocked:
                raise self.err(ctx.blocked[n], pair.span)
            el = ctx.elems.get(n)
            if el is None or el.ekind != "vertex":
                what = "an edge" if el is not None else "not a generator variable"
                raise self.err(f"{shown} tests for an edge between two vertices bound by generators, "
                               f"but `{display(n)}` is {what}", pair.span)
        if a == b:
            raise self.err(f"{shown} names the same vertex twice; an edge joins two vertices (self-loops "
                           "are dropped from every graph)", pair.span)
        sv = self.graph_var(e.right, ctx)
        if sv.kind != "edge" or sv.elem != "bool":
            raise self.err(f"the right side of {shown} must be an edge set, but this is "
                           f"{article(kind_word(sv.kind, sv.elem))}", e.right.span)
        pos = (ctx.elems[a].pos, ctx.elems[b].pos)
        at: ir.Pos
        if ctx.dom == "E" and pos in (("src", "dst"), ("dst", "src")):
            at = "here" if pos == ("src", "dst") else "rev"
        elif ctx.dom == "A" and pos in (("nbr", "self"), ("self", "nbr")):
            # the entry's own edge when the neighbours are in- (or out-) neighbours, else looked up
            own = {"in": ("nbr", "self"), "out": ("self", "nbr")}.get(ctx.nbr_dir)
            at = "edge" if pos == own else "nbr_self" if pos == ("nbr", "self") else "self_nbr"
        elif ctx.dom == "W":
            raise self.err(f"{shown} cannot be tested per common neighbour; test it on the edge "
                           "comprehension's own edge, or use the connecting edges: "
                           "`(w, f) <- nbrs u, (w, g) <- nbrs v, f in A`", pair.span)
        else:
            raise self.err(
                f"{shown} names either the two endpoints of the edge a comprehension ranges over "
                "(`{ ... | (u, v) <- E, (v, u) in E }`) or the centre vertex and a neighbour "
                "(`[ ... | u <- nbrs v, (u, v) in E ]`)", pair.span)
        kind = ctx.local_kind()
        if isinstance(sv.ex, ir.Const):  # E (every edge) or emptyE
            if not sv.ex.value:
                return Val(ir.Const("bool", e.span, False), kind, "bool")
            if at in ("here", "edge"):
                return Val(ir.Const("bool", e.span, True), kind, "bool")
            return Val(ir.Load("bool", e.span, ir.ALL_EDGES_VAR, "edge", at), kind, "bool")
        assert isinstance(sv.ex, ir.Load)  # an edge set variable (`graph_var`)
        return Val(ir.Load("bool", e.span, sv.ex.var, "edge", at), kind, "bool")

    def ex_UnOp(self, e: A.UnOp, ctx: Ctx) -> Val:
        v = self.operand(e.operand, ctx)
        if isinstance(v, Poison):
            return v
        if e.op == "!":
            if v.elem != "bool":
                raise self.err(f"`!` needs a bool or a set, but this is {article(kind_word(v.kind, v.elem))}", e.operand.span)
            return Val(ir.Op("bool", e.span, "!", (v.ex,)), v.kind, "bool")
        if v.elem == "bool":
            raise self.err(f"unary `-` needs a number, but this is {article(kind_word(v.kind, v.elem))}", e.operand.span)
        if isinstance(v.ex, ir.Const):
            return Val(ir.Const(v.elem if v.elem != "vid" else "int", e.span, -v.ex.value), v.kind,
                       v.elem if v.elem != "vid" else "int")
        elem = "int" if v.elem == "vid" else v.elem
        return Val(ir.Op(elem, e.span, "-", (v.ex,)), v.kind, elem)

    def ex_Cond(self, e: A.Cond, ctx: Ctx) -> Val:
        c, a, b = (self.operand(x, ctx) for x in (e.cond, e.then, e.other))
        for x in (c, a, b):
            if isinstance(x, Poison):
                return x
        if c.elem != "bool":
            raise self.err(f"the condition of `?:` must be bool, but this is {c.elem}", e.cond.span)
        kind = self.combine_kinds(a, b, e.span, "`?:`")
        kind = self.combine_kinds(c, Val(a.ex, kind, a.elem), e.span, "`?:`")
        elem = join_elem(a.elem, b.elem)
        if elem is None:
            raise self.err(f"the branches of `?:` have different types ({a.elem} and {b.elem})", e.span)
        return Val(ir.Where(elem, e.span, c.ex, a.ex, b.ex), kind, elem)

    def ex_Call(self, e: A.Call, ctx: Ctx) -> Val:
        f = e.func
        if f in self.mod.functions:
            fn = self.mod.functions[f]
            if len(e.args) != len(fn.params):
                raise self.err(
                    f"`{f}` takes {len(fn.params)} argument{'s' if len(fn.params) != 1 else ''}, "
                    f"but {len(e.args)} {'were' if len(e.args) != 1 else 'was'} given", e.span,
                    f"`{f}` is defined at line {fn.span.line}",
                )
            if f in self.call_stack:
                cycle = self.call_stack[self.call_stack.index(f):] + [f]
                raise self.err(
                    f"recursive function: {' -> '.join(cycle)}; functions are inlined and cannot recurse",
                    e.span,
                )
            added = [a for a in e.args if id(a) not in self.arg_stacks]
            for a in added:
                self.arg_stacks[id(a)] = self.call_stack
            self.call_stack = [*self.call_stack, f]
            if not self.expanding:
                self.expansion_site = e.span
            self.expanding.append(f)
            try:
                return self.ex(expand(fn, e.args), ctx)
            finally:
                self.expanding.pop()
                self.call_stack = self.call_stack[:-1]
                for a in added:
                    del self.arg_stacks[id(a)]
        if f in FUNC_ARITY:
            n = FUNC_ARITY[f]
            if len(e.args) != n:
                got = len(e.args)
                raise self.err(f"`{f}` takes {n} argument{'s' if n != 1 else ''}, but {got} "
                               f"{'was' if got == 1 else 'were'} given", e.span)
            return self.int_call(e, ctx) if f in INT_FUNCS else self.builtin_call(e, ctx)
        if f in AGG_OPS:
            raise self.err(f"`{f}` is an aggregation; write `{f} [ head | generator, filters ]`", e.name_span, *call_notes(e))
        if f in self.mod.procedures:
            raise self.err(f"`{f}` is a procedure; procedures cannot be called from expressions", e.name_span)
        close = difflib.get_close_matches(f, [*self.mod.functions, *FUNC_ARITY], n=1, cutoff=0.6)
        hint = f"; did you mean `{close[0]}`?" if close else ""
        raise self.err(f"undefined function `{f}`{hint}", e.name_span, *call_notes(e))

    def builtin_call(self, e: A.Call, ctx: Ctx) -> Val:
        f = e.func
        if f == "rand":
            if ctx.dom == "W":
                raise self.err("`rand()` cannot be drawn per common neighbour; draw it per edge or vertex "
                               "into a variable first", e.span)
            site = self.rand_sites
            self.rand_sites += 1
            kind = "scalar" if ctx.dom == "T" else ctx.local_kind()
            return Val(ir.Rand("float", e.span, site), kind, "float")
        operands = self.call_operands(e, ctx)
        if isinstance(operands, Poison):
            return operands
        args, kind = operands
        if f == "int":
            return Val(ir.Op("int", e.span, "int", (args[0].ex,)), kind, "int")
        if f in ("float", "float32"):  # float32: rounded to the nearest single-precision value
            conv = cast(Literal["float", "float32"], f)
            return Val(ir.Op("float", e.span, conv, (args[0].ex,)), kind, "float")
        for a, node in zip(args, e.args):
            if a.elem == "bool":
                raise self.err(f"`{f}` needs numbers, but this is {article(kind_word(a.kind, a.elem))}", node.span)
        if f in ("min", "max"):
            elem = join_elem(args[0].elem, args[1].elem) or "float"
            min_max = cast(Literal["min", "max"], f)
            return Val(ir.Op(elem, e.span, min_max, (args[0].ex, args[1].ex)), kind, elem)
        if f == "abs":
            elem = "int" if args[0].elem == "vid" else args[0].elem
            return Val(ir.Op(elem, e.span, "abs", (args[0].ex,)), kind, elem)
        # the built-ins left (`ex_Call` checked that `f` is one): every other one returned above
        fn = cast(Literal["sqrt", "log", "exp", "floor", "ceil"], f)
        return Val(ir.Op("float", e.span, fn, (args[0].ex,)), kind, "float")

    def call_operands(self, e: A.Call, ctx: Ctx) -> tuple[list[Val], ValKind] | Poison:
        """A built-in call's lowered operands and the kind they lift to (a Poison operand poisons the call)."""
        args = [self.operand(a, ctx) for a in e.args]
        for a in args:
            if isinstance(a, Poison):
                return a
        kind = args[0].kind
        for a in args[1:]:
            kind = self.combine_kinds(Val(args[0].ex, kind, args[0].elem), a, e.span, f"`{e.func}`")
        return args, kind

    def int_call(self, e: A.Call, ctx: Ctx) -> Val:
        """`idiv`, `imod`, `bitand`, ...: int64 operations on ints (and vids), giving an int."""
        f = e.func
        operands = self.call_operands(e, ctx)
        if isinstance(operands, Poison):
            return operands
        args, kind = operands
        for a, node in zip(args, e.args):
            if a.elem not in ("int", "vid"):
                hint = "; use int(...)" if a.elem == "float" else ""
                raise self.err(f"`{f}` needs integers, but this is {article(kind_word(a.kind, a.elem))}{hint}",
                               node.span)
        op: ir.ExOp = "%" if f == "imod" else cast(ir.ExOp, f)  # one of INT_FUNCS (`ex_Call` checked)
        return Val(ir.Op("int", e.span, op, tuple(a.ex for a in args)), kind, "int")

    def ex_Index(self, e: A.Index, ctx: Ctx) -> Val:
        idx = e.index
        if isinstance(idx, A.Name) and idx.id in ctx.elems:
            el = ctx.elems[idx.id]
            g = self.graph_var(e.base, ctx)
            if g.kind == "scalar":
                raise self.err(f"only graphs can be read at an element; this is a scalar {g.elem}", e.base.span)
            if g.kind != el.ekind:
                what = "an edge" if el.ekind == "edge" else "a vertex"
                raise self.err(
                    f"{article(kind_word(g.kind, g.elem))} cannot be read at `{display(idx.id)}`, which is {what}",
                    e.span,
                )
            return Val(self.read_at(g, el, e.span), "scalar" if ctx.dom == "T" else ctx.local_kind(), g.elem)
        if isinstance(idx, A.Name) and idx.id in ctx.blocked:
            raise self.err(ctx.blocked[idx.id], idx.span)
        return self.remote_read(e, ctx)

    def remote_read(self, e: A.Index, ctx: Ctx) -> Val:
        g = self.graph_var(e.base, ctx)
        if g.kind != "vertex":
            raise self.err(
                f"`G[p]` with a vid `p` reads a vertex graph at the vertex with original ID p; "
                f"this is {article(kind_word(g.kind, g.elem))}", e.base.span,
            )
        p = self.ex(e.index, ctx)
        if p.elem not in ("vid", "int"):
            raise self.err(f"a remote read needs a vid index, but this is {p.elem}", e.index.span)
        if ctx.dom == "A" or p.kind == "adj":
            raise self.err(
                "a remote read `G[p]` cannot appear inside a neighbourhood aggregation; "
                "compute it into a vertex graph first", e.span,
            )
        if p.kind == "scalar":
            t = self.temp(ir.Ty("scalar", g.elem))
            mask = ir.Op("bool", e.span, "==", (ir.Ids("vid", e.span, "here"), p.ex))
            self.emit(ir.GlobalReduce(e.span, t, "pick", "V", g.ex, mask, g.elem, origin=self.origin))
            return Val(ir.Load(g.elem, e.span, t, "scalar"), "scalar", g.elem)
        kind = p.kind  # vertex or edge
        dom: ir.ElemDom = "V" if kind == "vertex" else "E"
        if dom == "E":
            (pex,) = self.finish_edge([p.ex], e.span)
            p = Val(pex, kind, p.elem)
        if isinstance(g.ex, ir.Const):  # `p in V` (`empty`): is p a vertex?  Read its ID there (-1 if not)
            if not g.ex.value:
                return Val(ir.Const("bool", e.span, False), kind, "bool")
            t = self.temp(ir.Ty(kind, "vid"))
            self.emit(ir.RemoteRead(e.span, t, "@id", "vertex", dom, p.ex, "vid", origin=self.origin))
            found = ir.Op("bool", e.span, "!=", (ir.Load("vid", e.span, t, kind, "here"), ir.Const("int", e.span, -1)))
            return Val(found, kind, "bool")
        var = g.ex.var if isinstance(g.ex, ir.Load) else "@id"
        t = self.temp(ir.Ty(kind, g.elem))
        self.emit(ir.RemoteRead(e.span, t, var, "vertex", dom, p.ex, g.elem, origin=self.origin))
        return Val(ir.Load(g.elem, e.span, t, kind, "here"), kind, g.elem)

    # ---- comprehensions

    def split_quals(self, quals: tuple, span: Span, what: str) -> tuple[A.Generator, list[A.Filter]]:
        gens = [q for q in quals if isinstance(q, A.Generator)]
        if len(gens) != 1:
            if not gens:
                raise self.err(f"{what} needs a generator such as `v <- V`", span)
            raise self.err(f"{what} takes exactly one generator; found {len(gens)}", gens[1].span)
        return gens[0], [q for q in quals if isinstance(q, A.Filter)]

    def check_binders(self, g: A.Generator) -> None:
        for n in g.names:
            d = display(n)
            if d in BUILTIN_VALUES:
                raise self.err(f"a generator cannot bind the built-in name `{d}`", g.span)
        if len(set(g.names)) != len(g.names):
            raise self.err("a generator binds the same name twice", g.span)

    def source_elems(self, g: A.Generator, ctx: Ctx) -> tuple[Ctx, ir.Ex | None, SourceKind]:
        """Context for a `{...}`/global-aggregation generator; returns (ctx, membership mask, source kind)."""
        self.check_binders(g)
        if isinstance(g.source, A.NvalsSource):
            w = g.source.word
            raise self.err(f"`{w}` ranges over neighbours; use it inside an aggregation such as "
                           f"`sum [ ... | u <- {w} v ]` nested in `{{ ... | v <- V }}`", g.source.span)
        src = self.graph_var(g.source, ctx)
        if src.kind == "scalar":
            raise self.err(f"a generator ranges over a graph or set, but this is a scalar {src.elem}", g.source.span)
        gen_set = src.ex.var if src.elem == "bool" and isinstance(src.ex, ir.Load) else None
        is_set = src.elem == "bool"
        src_var = None
        if isinstance(src.ex, ir.Load):
            src_var = src.ex.var
        elif isinstance(src.ex, ir.Ids):
            src_var = "@id"
        mask: ir.Ex | None = None
        if is_set:
            if isinstance(src.ex, ir.Const):
                if src.ex.value is False:
                    mask = src.ex
            else:
                assert src_var is not None and src.kind != "adj"  # a set variable (`graph_var`: a Load)
                mask = ir.Load("bool", g.source.span, src_var, src.kind)
        if src.kind == "vertex":
            if len(g.names) != 1:
                raise self.err(
                    "a pattern `(u, v)` or `(u, e, v)` ranges over edges, but this generator ranges over a "
                    f"{ir.Ty(src.kind, src.elem).word()}", g.span,
                )
            if isinstance(src.ex, ir.Const):
                src_var = None
            el = Binder(g.names[0], "vertex", "here", src_var, "vertex", src.elem if src_var else "bool", g.span)
            new = Ctx("V", {g.names[0]: el}, el, blocked=self.blocked_for(ctx))
            return new, mask, "vertex"
        # edges
        if isinstance(src.ex, ir.Const):
            src_var = None
        elems: dict[str, Binder] = {}
        names = g.names
        edge_el = None
        if len(names) in (1, 3):
            en = names[0] if len(names) == 1 else names[1]
            edge_el = Binder(en, "edge", "here", src_var, "edge", src.elem if src_var else "bool", g.span,
                           has_value=src_var is not None)
            elems[en] = edge_el
        if len(names) >= 2:
            u, v = names[0], names[-1]
            elems[u] = Binder(u, "vertex", "src", None, "vertex", "bool", g.span)
            elems[v] = Binder(v, "vertex", "dst", None, "vertex", "bool", g.span)
        return Ctx("E", elems, edge_el, blocked=self.blocked_for(ctx), gen_set=gen_set), mask, "edge"

    def blocked_for(self, ctx: Ctx) -> dict[str, str]:
        return self.hoist_ctx(ctx).blocked

    def filters(self, fs: list[A.Filter], ctx: Ctx, mask: ir.Ex | None) -> ir.Ex | None:
        for f in fs:
            v = self.ex(f.expr, ctx)
            if v.elem != "bool":
                raise self.err(f"a filter must be bool, but this is {v.elem}", f.span)
            mask = v.ex if mask is None else ir.Op("bool", f.span, "&&", (mask, v.ex))
        return mask

    def ex_SetComp(self, e: A.SetComp, ctx: Ctx) -> Val:
        if ctx.dom != "T":
            raise self.err("a `{ ... }` comprehension builds a whole graph and cannot be a per-element value here; "
                           "use an aggregation `AGG [ ... ]` or read it at an element", e.span)
        g, fs = self.split_quals(e.quals, e.span, "a `{ ... }` comprehension")
        inner, mask, kind = self.source_elems(g, ctx)
        mask = self.filters(fs, inner, mask)
        head = self.ex(e.head, inner)
        if head.kind not in ("scalar", inner.local_kind()):
            raise self.err(f"the head is {article(kind_word(head.kind, head.elem))}", e.head.span)
        res = head.ex
        if mask is not None:
            if head.elem == "bool":
                res = ir.Op("bool", e.span, "&&", (mask, head.ex))
            else:
                res = ir.Where(head.elem, e.span, mask, head.ex, ir.Const(head.elem, e.span, default_of(head.elem)))
        if kind == "edge":
            res = self.finish_edge([res], e.span, need=mask)[0]
        return Val(res, kind, head.elem)

    @overload
    def finish_edge(self, exs: list[ir.Ex], span: Span, need: ir.Ex | None = None) -> list[ir.Ex]: ...

    @overload
    def finish_edge(self, exs: list[ir.Ex | None], span: Span, need: ir.Ex | None = None) -> list[ir.Ex | None]: ...

    def finish_edge(self, exs: list[ir.Ex] | list[ir.Ex | None], span: Span,
                    need: ir.Ex | None = None) -> list[ir.Ex] | list[ir.Ex | None]:
        """Insert the endpoint exchange an edge computation needs, and read its results instead (one for each
        of `exs`, None for None)."""
        fields: dict[tuple[str, ir.Side], str] = {}
        for x in exs:
            if x is None:
                continue
            for n in ir.walk(x):
                if isinstance(n, ir.Load) and n.pos in ("src", "dst") and (n.var, n.pos) not in fields:
                    fields[(n.var, n.pos)] = self.temp(ir.Ty("edge", n.elem))
        if not fields:
            return exs
        spec = tuple((var, pos, self.var_elem(var)) for (var, pos) in fields)
        if need is not None:  # the conjuncts that need no exchanged value (edge sets, edge values)
            need = ir.conjoin([c for c in ir.conjuncts(need)
                               if not any(isinstance(n, ir.Load) and n.pos in ("src", "dst") for n in ir.walk(c))])
        self.emit(ir.EndpointExchange(span, spec, tuple(fields.values()), need, origin=self.origin))

        def leaf(x: ir.Ex) -> ir.Ex:
            if isinstance(x, ir.Load) and x.pos in ("src", "dst"):
                return ir.Load(x.elem, x.span, fields[(x.var, x.pos)], "edge", "here")
            return x

        return [None if x is None else ir.map_leaves(x, leaf) for x in exs]

    def var_elem(self, var: str) -> ir.Elem:
        ty = self.var_ty(var) or self.temps.get(var)
        return ty.elem if ty else "bool"

    # ---- aggregations

    def ex_Agg(self, e: A.Agg, ctx: Ctx) -> Val:
        if common.is_common(e):
            return common.lower_common(self, e, ctx)
        g, fs = self.split_quals(e.quals, e.span, f"`{e.op} [ ... ]`")
        if wants_keyed(e):
            return lower_keyed(self, e, g, fs, ctx)
        if isinstance(g.source, A.NvalsSource):
            return self.nbr_agg(e, g, fs, ctx)
        if e.op == "union":
            return self.union(e, g, fs, ctx)
        inner, mask, kind = self.source_elems(g, ctx)
        mask = self.filters(fs, inner, mask)
        if len(e.heads) != 1:
            raise self.err(f"a list head `[x, y]` is only allowed in `union`, not `{e.op}`", e.span)
        if e.op == "count":  # counts elements: the head's value does not matter (it may have none)
            head = Val(ir.Const("bool", e.span, True), inner.local_kind(), "bool")
        else:
            head = self.ex(e.heads[0], inner)
        if kind == "edge":
            if e.op in ("argmin", "argmax"):  # the winning edge, as an edge set
                return lower_keyed(self, e, g, fs, ctx, pre=(inner, mask, kind))
            head_ex, mask = self.finish_edge([head.ex, mask], e.span, need=mask)  # values only where summed
            assert head_ex is not None  # (finish_edge maps each expression to one)
            head = Val(head_ex, head.kind, head.elem)
        elem, value = self.agg_head(e, head, e.heads[0].span)
        t = self.temp(ir.Ty("scalar", elem))
        self.emit(ir.GlobalReduce(e.span, t, e.op, "V" if kind == "vertex" else "E", value, mask, elem, origin=self.origin))
        return Val(ir.Load(elem, e.span, t, "scalar"), "scalar", elem)

    def agg_head(self, e: A.Agg, head: Val, span: Span) -> tuple[ir.Elem, ir.Ex]:
        """Result element type of aggregation `e.op` over `head`, and the value to aggregate."""
        op = e.op
        he = head.elem
        if op == "count":
            return "int", head.ex
        if op in ("and", "or"):
            if he != "bool":
                raise self.err(f"`{op}` aggregates bools, but the head is {he}", span)
            return "bool", head.ex
        if op == "mode":
            if he == "float":
                raise self.err("`mode` counts equal values of ints, vids or bools, but the head is float; "
                               "use int(...)", span)
            return he, head.ex
        if he == "bool":
            if op == "sum":
                return "int", ir.Op("int", span, "int", (head.ex,))
            raise self.err(f"`{op}` aggregates numbers, but the head is bool", span)
        if op == "sum":
            return ("float" if he == "float" else "int"), head.ex
        if op == "avg":
            return "float", head.ex
        if op in ("argmin", "argmax"):
            return "vid", head.ex
        return he, head.ex  # min, max

    def nbr_agg(self, e: A.Agg, g: A.Generator, fs: list[A.Filter], ctx: Ctx) -> Val:
        src = g.source
        assert isinstance(src, A.NvalsSource)
        self.check_binders(g)
        c = src.centre
        if c not in ctx.elems:
            if c in ctx.blocked:
                raise self.err(ctx.blocked[c], src.span)
            raise self.err(
                f"`{display(c)}` is not a vertex bound by an enclosing comprehension; `{src.word}` needs one as "
                f"its centre, e.g. `{{ {e.op} [ ... | u <- {src.word} v ] | v <- V }}`", src.span,
            )
        centre = ctx.elems[c]
        if centre.ekind != "vertex":
            raise self.err(f"`{display(c)}` is an edge; `{src.word}` needs a vertex", src.span)
        if not (ctx.dom == "V" and ctx.centre is centre):
            return self.hoisted_nbr(e, centre, ctx)
        if len(g.names) > 2:
            raise self.err("a neighbour generator binds `u` or `(u, e)`", g.span)
        if e.op == "union":
            raise self.err("`union` over neighbours would give a set per vertex; use `or [ ... ]` "
                           "to test membership instead", e.op_span)
        if len(e.heads) != 1:
            raise self.err(f"a list head `[x, y]` is only allowed in `union`, not `{e.op}`", e.span)
        u = g.names[0]
        elems = {
            c: Binder(c, "vertex", "self", centre.src_var, centre.src_kind, centre.src_elem, centre.span),
            u: Binder(u, "vertex", "nbr", centre.src_var, centre.src_kind, centre.src_elem, g.span),
        }
        if len(g.names) == 2:
            en = g.names[1]
            elems[en] = Binder(en, "edge", "edge", None, "edge", "bool", g.span, has_value=False)
        inner = Ctx("A", elems, elems[c], blocked=ctx.blocked, nbr_dir=src.dir)
        mask = self.filters(fs, inner, None)
        head = self.ex(e.heads[0], inner)
        elem, value = self.agg_head(e, head, e.heads[0].span)
        t = self.temp(ir.Ty("vertex", elem))
        self.emit(ir.NbrReduce(e.span, t, e.op, src.dir, value, mask, elem, origin=self.origin))
        return Val(ir.Load(elem, e.span, t, "vertex", "here"), "vertex", elem)

    def hoisted_nbr(self, e: A.Agg, centre: Binder, ctx: Ctx) -> Val:
        """A neighbourhood aggregation centred at a non-innermost vertex: compute it for all vertices first."""
        if ctx.dom == "A" and centre.pos == "self":
            raise self.err("a neighbourhood aggregation cannot be nested in another one centred at the same vertex",
                           e.span)
        el = Binder(centre.name, "vertex", "here", centre.src_var if centre.pos != "src" and centre.pos != "dst"
                  else None, "vertex", centre.src_elem if centre.pos not in ("src", "dst") else "bool", centre.span)
        hctx = Ctx("V", {centre.name: el}, el, blocked={
            n: f"`{display(n)}` cannot be used in a neighbourhood aggregation centred at `{display(centre.name)}` "
               "inside another comprehension" for n in ctx.elems if n != centre.name})
        v = self.ex(e, hctx)
        t = self.materialize(Val(v.ex, "vertex", v.elem), e.span)
        pos = centre.pos
        return Val(ir.Load(v.elem, e.span, t, "vertex", pos), ctx.local_kind(), v.elem)

    def union(self, e: A.Agg, g: A.Generator, fs: list[A.Filter], ctx: Ctx) -> Val:
        if ctx.dom != "T":
            raise self.err("`union [ ... ]` builds a vertex set; it cannot be nested in a comprehension", e.span)
        inner, mask, kind = self.source_elems(g, ctx)
        mask = self.filters(fs, inner, mask)
        parts: list[ir.Ex] = []
        sides: list[ir.Side] = []
        for h in e.heads:
            if isinstance(h, A.Name) and h.id in inner.elems and inner.elems[h.id].ekind == "vertex":
                pos = inner.elems[h.id].pos
                if pos == "here":
                    parts.append(mask if mask is not None else ir.Const("bool", h.span, True))
                else:
                    assert pos in ("src", "dst")  # a vertex of an edge generator: an endpoint
                    sides.append(pos)
                continue
            v = self.ex(h, inner)
            if v.elem not in ("vid", "int"):
                raise self.err(f"a `union` head lists vertices (generator variables or vid values); this is {v.elem}",
                               h.span)
            idx, m2 = v.ex, mask
            if kind == "edge":
                edge_idx, m2 = self.finish_edge([idx, m2], h.span)
                assert edge_idx is not None  # (finish_edge maps each expression to one)
                idx = edge_idx
            t = self.temp(ir.Ty("vertex", "bool"))
            self.emit(ir.RemoteMark(h.span, t, "V" if kind == "vertex" else "E", idx, m2, origin=self.origin))
            parts.append(ir.Load("bool", h.span, t, "vertex"))
        if sides:
            (m,) = self.finish_edge([mask if mask is not None else ir.Const("bool", e.span, True)], e.span)
            t = self.temp(ir.Ty("vertex", "bool"))
            self.emit(ir.MarkEndpoints(e.span, t, m, tuple(dict.fromkeys(sides)), origin=self.origin))
            parts.append(ir.Load("bool", e.span, t, "vertex"))
        res = parts[0]
        for p in parts[1:]:
            res = ir.Op("bool", e.span, "||", (res, p))
        return Val(res, "vertex", "bool")


#: the instructions that define one variable, their `target`
_TARGETED = (ir.Compute, ir.MarkEndpoints, ir.NbrReduce, ir.CommonReduce, ir.GlobalReduce, ir.RemoteRead,
             ir.RemoteMark, ir.KeyedReduce)


def _retarget(instr: ir.Instr, name: str) -> ir.Instr:
    import dataclasses

    assert isinstance(instr, _TARGETED)  # (`assign` retargets the one instruction that defined a temporary)
    return dataclasses.replace(instr, target=name)


L = TypeVar("L", bound=Lowerer)


class InferenceError(AssertionError):
    """Type inference did not settle (a compiler bug, never a user error)."""


def inference_rounds(make: Callable[[dict[str, ir.Ty], dict[str, ir.Elem]], L]) -> Iterator[L]:
    """The rounds of type inference: a fresh lowerer each (`make(var_types, param_types)`, the
    inferred types shared by all rounds), which the caller runs, until a round changes no type.

    A round that changes something adds a variable or widens a type along int < vid < float (a
    parameter's: int < vid < float or int < bool), and a widening assignment inside a loop may
    feed the assignment before it only in the next round: a chain of N copies takes N rounds.  So
    the rounds are not capped at a fixed number; only more than the lattice allows (every variable
    added once and widened twice, every parameter widened twice) raises `InferenceError`."""
    var_types: dict[str, ir.Ty] = {}
    param_types: dict[str, ir.Elem] = {}
    rounds = 0
    while True:
        lw = make(var_types, param_types)
        yield lw
        if not lw.changed:
            return
        rounds += 1
        if rounds > 3 * len(var_types) + 2 * len(lw.proc.params):
            raise InferenceError(f"type inference of {lw.proc.name} still changes types after {rounds} rounds")


def lower_procedure(module: A.Module, proc: A.Procedure, collect: list[G2PLError] | None = None) -> ir.ProcIR:
    """Type-check and lower one procedure, iterating type inference to a fixpoint.

    Without `collect` the first error is raised.  With a list, lowering recovers
    per statement and appends every error to it instead (in source order of
    discovery, the first one being the error raised without `collect`); the IR
    returned then is partial and must not be used.  For valid programs the
    result is the same either way.
    """
    result = None
    for lw in inference_rounds(lambda vt, pt: Lowerer(module, proc, vt, pt, collect=None if collect is None else [])):
        errors = lw.collect
        try:
            result = lw.lower_proc()
        except G2PLError as err:
            if errors is None:
                raise err.with_context(file=module.file, source=module.source) from None
            errors.append(err)
        if errors:  # like the raising mode, the first round with an error is the one reported
            collect.extend(e.with_context(file=module.file, source=module.source) for e in errors)  # type: ignore[union-attr]
            return result  # type: ignore[return-value]
    return result  # type: ignore[return-value]
