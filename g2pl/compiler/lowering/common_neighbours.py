"""Lowering of common-neighbour aggregations: `AGG [ h | w <- nvals u, w <- nvals v, ... ]`.

Inside an edge comprehension `{ ... | (u, e, v) <- A }`, two neighbour
generators (`nvals`, `outnvals` or `nbrs`) binding the same vertex name, one
centred at each endpoint, range over the common neighbours w of u and v (the third vertex of each triangle
through the edge); `w in nvals v` is the second generator written as a
filter.  Each generator may bind its connecting edge too:
`(w, f) <- nvals u, (w, g) <- nvals v` (f joins u and w, g joins v and w).
The aggregation gives one value per edge: a `CommonReduce` over domain W
(one element per common neighbour), whose reads are at `src`/`dst` (u, v),
`nbr` (w), `here` (the edge) and `src_nbr`/`dst_nbr` (f, g).

When the comprehension ranges over an edge set K and the filters include
`f in K` and `g in K`, the triangles are listed within K only
(`CommonReduce.within`): in k-truss each round then costs what the
remaining truss does, not the whole graph.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from g2pl.compiler import ast as A
from g2pl.compiler import ir
from g2pl.compiler.lowering.inline import display
from g2pl.compiler.lowering.values import Binder, Ctx, Val

if TYPE_CHECKING:  # the lowerer calls this module: only its type is needed here
    from g2pl.compiler.lowering.lower import Lowerer

#: the neighbours each generator lists (`ir.CommonSide`): in (`nvals`), out (`outnvals`), either (`nbrs`)
_SIDE: dict[ir.NbrDir, ir.CommonSide] = {"in": False, "out": True, "set": "set"}

#: the positions of the edges joining the common neighbour to the edge's src and dst endpoint
_NBR_EDGES: tuple[ir.Pos, ir.Pos] = ("src_nbr", "dst_nbr")


def is_common(e: A.Agg) -> bool:
    """Does aggregation `e` range over common neighbours (two neighbour generators)?"""
    return sum(isinstance(q, A.Generator) and isinstance(q.source, A.NvalsSource) for q in e.quals) == 2


def lower_common(lw: Lowerer, e: A.Agg, ctx: Ctx) -> Val:
    """The edge graph of `e` over each edge of the enclosing edge comprehension (see the module doc)."""
    gens = [q for q in e.quals if isinstance(q, A.Generator)]
    if len(gens) != 2:
        raise lw.err(f"`{e.op} [ ... ]` over common neighbours takes exactly two generators "
                     f"(`w <- nvals u, w <- nvals v`); found {len(gens)}", gens[2].span)
    if not all(isinstance(g.source, A.NvalsSource) for g in gens):
        raise lw.err("both generators of a common-neighbour aggregation range over neighbours "
                     "(`w <- nvals u, w <- nvals v`)", gens[1].span)
    for g in gens:
        lw.check_binders(g)
        if len(g.names) > 2:
            raise lw.err("a neighbour generator binds `w` or `(w, f)`", g.span)
    w = gens[0].names[0]
    if gens[1].names[0] != w:
        raise lw.err(f"the two neighbour generators bind different vertices (`{display(w)}` and "
                     f"`{display(gens[1].names[0])}`); bind the same name to range over common neighbours",
                     gens[1].span)
    if len(gens[0].names) == 2 and len(gens) == 2 and len(gens[1].names) == 2 \
            and gens[0].names[1] == gens[1].names[1]:
        raise lw.err("the two connecting edges need different names, e.g. `(w, f) <- nvals u, "
                     "(w, g) <- nvals v`", gens[1].span)
    sources = [g.source for g in gens if isinstance(g.source, A.NvalsSource)]
    assert len(sources) == len(gens)  # (checked above)
    centres = [s.centre for s in sources]
    for s in sources:
        c = s.centre
        if c in ctx.blocked:
            raise lw.err(ctx.blocked[c], s.span)
        el = ctx.elems.get(c)
        if ctx.dom != "E" or el is None or el.ekind != "vertex" or el.pos not in ("src", "dst"):
            raise lw.err(
                f"common neighbours are those of an edge's two endpoints: `{display(c)}` must be an endpoint "
                f"bound by the enclosing edge comprehension, e.g. `{{ {e.op} [ ... | w <- nvals u, "
                f"w <- nvals v ] | (u, v) <- E }}`", s.span)
    if centres[0] == centres[1]:
        raise lw.err(f"both neighbour generators are centred at `{display(centres[0])}`; common neighbours "
                     "need one at each endpoint of the edge", sources[1].span)
    if e.op == "union":
        raise lw.err("`union` over common neighbours would give a set per edge; use `or [ ... ]` "
                     "to test membership instead", e.op_span)
    if len(e.heads) != 1:
        raise lw.err(f"a list head `[x, y]` is only allowed in `union`, not `{e.op}`", e.span)
    # which generator is at u (src) and which at v (dst)
    first_src = ctx.elems[centres[0]].pos == "src"
    by_side = (gens[0], gens[1]) if first_src else (gens[1], gens[0])
    sources_by_side = (sources[0], sources[1]) if first_src else (sources[1], sources[0])
    for s in sources:
        if s.dir == "all":
            raise lw.err("`allnvals` lists a neighbour linked both ways twice, but common neighbours are a "
                         "set; write `nbrs` for the in- and out-neighbours, each once", s.span)
    outs = (_SIDE[sources_by_side[0].dir], _SIDE[sources_by_side[1].dir])
    elems = dict(ctx.elems)
    for name, el in ctx.elems.items():
        if el.ekind == "edge":  # the edge itself: read at `here`, with the value of its source graph
            elems[name] = Binder(name, "edge", "here", el.src_var, "edge", el.src_elem, el.span, el.has_value)
    elems[w] = Binder(w, "vertex", "nbr", None, "vertex", "bool", gens[0].span)
    for g, pos in zip(by_side, _NBR_EDGES):
        if len(g.names) == 2:
            elems[g.names[1]] = Binder(g.names[1], "edge", pos, None, "edge", "bool", g.span, has_value=False)
    inner = Ctx("W", elems, ctx.centre, blocked=ctx.blocked)
    fs = [q for q in e.quals if isinstance(q, A.Filter)]
    mask = lw.filters(fs, inner, None)
    if e.op == "count":
        head = Val(ir.Const("bool", e.span, True), "adj", "bool")
    else:
        head = lw.ex(e.heads[0], inner)
    if e.op in ("argmin", "argmax") and head.elem not in ("int", "float", "vid", "bool"):
        raise lw.err(f"`{e.op}` needs a number", e.heads[0].span)
    elem, value = lw.agg_head(e, head, e.heads[0].span)
    within, mask = _within(ctx.gen_set, mask)
    t = lw.temp(ir.Ty("edge", elem))
    lw.emit(ir.CommonReduce(e.span, t, e.op, value, mask, elem, outs, within, origin=lw.origin))
    return Val(ir.Load(elem, e.span, t, "edge", "here"), "edge", elem)


def _within(gen_set: str | None, mask: ir.Ex | None) -> tuple[str | None, ir.Ex | None]:
    """(the edge set triangles are listed in, the rest of the filter): K when the comprehension ranges
    over K and the filter requires both connecting edges in K."""
    if gen_set is None:
        return None, mask
    parts = ir.conjuncts(mask)
    on = {p.pos for p in parts if isinstance(p, ir.Load) and p.var == gen_set and p.kind == "edge"}
    if not {"src_nbr", "dst_nbr"} <= on:
        return None, mask
    rest = [p for p in parts if not (isinstance(p, ir.Load) and p.var == gen_set and p.kind == "edge")]
    return gen_set, ir.conjoin(rest)
