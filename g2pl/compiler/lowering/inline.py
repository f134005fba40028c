"""Hygienic inlining of G2PL functions (docs/language.md, "Programs": functions are pure macros).

A call `f(a, b)` is replaced by f's body with the parameters substituted by
the argument expressions. Every name bound by a generator inside the body is
renamed to a fresh `name#k` first, so argument expressions can never be
captured by the body's generators (and vice versa).
"""

from __future__ import annotations

import itertools

from g2pl.compiler import ast as A

_fresh = itertools.count(1)


def display(name: str) -> str:
    """User-facing spelling of a possibly renamed binder."""
    return name.split("#", 1)[0]


def _rename_quals(quals, head, mapping):
    new_quals: list[A.Qualifier] = []
    m = dict(mapping)
    bound: dict[str, str] = {}  # names bound by this comprehension's generators so far
    for q in quals:
        if isinstance(q, A.Generator):
            src = q.source
            if isinstance(src, A.NvalsSource):
                src = A.NvalsSource(m.get(src.centre, src.centre), src.dir, src.span)
            else:
                src = rename_bound(src, m)
            # a name a second neighbour generator binds again (common neighbours) keeps its fresh name
            fresh = {n: bound.get(n) or f"{display(n)}#{next(_fresh)}" for n in q.names}
            bound.update(fresh)
            m.update(fresh)
            new_quals.append(A.Generator(tuple(fresh[n] for n in q.names), src, q.span))
        else:
            new_quals.append(A.Filter(rename_bound(q.expr, m), q.span))
    return tuple(new_quals), m


def rename_bound(e: A.Expr, mapping: dict[str, str] | None = None) -> A.Expr:
    """Rename every generator-bound name in `e` to a fresh one (scope-aware)."""
    mapping = mapping or {}
    if isinstance(e, A.Name):
        return A.Name(e.span, mapping.get(e.id, e.id))
    if isinstance(e, (A.IntLit, A.FloatLit)):
        return e
    if isinstance(e, A.BinOp):
        return A.BinOp(e.span, e.op, rename_bound(e.left, mapping), rename_bound(e.right, mapping), e.op_span)
    if isinstance(e, A.UnOp):
        return A.UnOp(e.span, e.op, rename_bound(e.operand, mapping))
    if isinstance(e, A.Cond):
        return A.Cond(e.span, *(rename_bound(x, mapping) for x in (e.cond, e.then, e.other)))
    if isinstance(e, A.Call):
        return A.Call(e.span, e.func, tuple(rename_bound(a, mapping) for a in e.args), e.name_span)
    if isinstance(e, A.Index):
        return A.Index(e.span, rename_bound(e.base, mapping), rename_bound(e.index, mapping))
    if isinstance(e, A.SetComp):
        quals, m = _rename_quals(e.quals, e.head, mapping)
        return A.SetComp(e.span, rename_bound(e.head, m), quals)
    if isinstance(e, A.Agg):
        quals, m = _rename_quals(e.quals, e.heads, mapping)
        return A.Agg(e.span, e.op, tuple(rename_bound(h, m) for h in e.heads), quals, e.op_span, e.is_list,
                     tuple(rename_bound(k, m) for k in e.keys))
    if isinstance(e, A.InNvals):  # nested in an expression: refused when lowered
        return e
    if isinstance(e, A.Pair):  # generator variables of the enclosing comprehension
        return A.Pair(e.span, (mapping.get(e.names[0], e.names[0]), mapping.get(e.names[1], e.names[1])))
    raise TypeError(type(e).__name__)


def substitute(e: A.Expr, env: dict[str, A.Expr]) -> A.Expr:
    """Replace free occurrences of parameter names by argument expressions.

    Must run after `rename_bound`, so bound names never equal a parameter name.
    """
    if isinstance(e, A.Name):
        return env.get(e.id, e)
    if isinstance(e, (A.IntLit, A.FloatLit)):
        return e
    if isinstance(e, A.BinOp):
        return A.BinOp(e.span, e.op, substitute(e.left, env), substitute(e.right, env), e.op_span)
    if isinstance(e, A.UnOp):
        return A.UnOp(e.span, e.op, substitute(e.operand, env))
    if isinstance(e, A.Cond):
        return A.Cond(e.span, *(substitute(x, env) for x in (e.cond, e.then, e.other)))
    if isinstance(e, A.Call):
        return A.Call(e.span, e.func, tuple(substitute(a, env) for a in e.args), e.name_span)
    if isinstance(e, A.Index):
        return A.Index(e.span, substitute(e.base, env), substitute(e.index, env))
    if isinstance(e, (A.SetComp, A.Agg)):
        quals: list[A.Qualifier] = []
        for q in e.quals:
            if isinstance(q, A.Generator):
                src = q.source
                if isinstance(src, A.NvalsSource):
                    arg = env.get(src.centre)
                    if isinstance(arg, A.Name):
                        src = A.NvalsSource(arg.id, src.dir, src.span)
                else:
                    src = substitute(src, env)
                quals.append(A.Generator(q.names, src, q.span))
            else:
                quals.append(A.Filter(substitute(q.expr, env), q.span))
        if isinstance(e, A.SetComp):
            return A.SetComp(e.span, substitute(e.head, env), tuple(quals))
        return A.Agg(e.span, e.op, tuple(substitute(h, env) for h in e.heads), tuple(quals), e.op_span, e.is_list,
                     tuple(substitute(k, env) for k in e.keys))
    if isinstance(e, A.InNvals):  # nested in an expression: refused when lowered
        return e
    if isinstance(e, A.Pair):  # a parameter passed a generator variable names it
        a, b = (env.get(n) for n in e.names)
        return A.Pair(e.span, (a.id if isinstance(a, A.Name) else e.names[0],
                               b.id if isinstance(b, A.Name) else e.names[1]))
    raise TypeError(type(e).__name__)


def expand(fn: A.Function, args: tuple[A.Expr, ...]) -> A.Expr:
    """The body of `fn` with `args` substituted for its parameters (hygienic)."""
    body = rename_bound(fn.body)
    return substitute(body, {p.name: a for p, a in zip(fn.params, args)})
