"""Lowering of keyed aggregations and edge-valued argmin/argmax to `ir.KeyedReduce`.

* `AGG [ head | x <- ..., filters ] by KEY` (or `by [K1, K2]`) combines the heads at the vertex
  whose original ID the key names: a vertex graph (Pregel's "send to any vertex").
* `argmin`/`argmax` over an edge generator yield the winning edge as an edge set (keyed: the set of
  every key's winner); `argmin [[value, payload] | ...]` yields the payload at the winner.

Kept out of `lower.py` so the rules live in one place; `Lowerer.ex_Agg` calls `lower_keyed`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from g2pl.compiler import ast as A
from g2pl.compiler import ir
from g2pl.compiler.lowering.values import Ctx, SourceKind, Val, article, kind_word

if TYPE_CHECKING:  # the lowerer calls this module: only its type is needed here
    from g2pl.compiler.lowering.lower import Lowerer


def wants_keyed(e: A.Agg) -> bool:
    """Is `e` lowered here whatever its generator (a `by`, or an argmin/argmax payload list)?"""
    return bool(e.keys) or e.is_list and e.op in ("argmin", "argmax")


def lower_keyed(lw: Lowerer, e: A.Agg, g: A.Generator, fs: list[A.Filter], ctx: Ctx,
                pre: tuple[Ctx, ir.Ex | None, SourceKind] | None = None) -> Val:
    """`e` as a `KeyedReduce`; `pre`: the generator's context, mask and kind when already lowered."""
    what = f"`{e.op} [ ... ] by ...`" if e.keys else f"`{e.op} [ ... ]`"
    if e.keys and ctx.dom != "T":
        raise lw.err(f"a keyed aggregation {what} builds a whole vertex graph; it cannot be nested in a "
                     "comprehension (assign it to a variable first)", e.span)
    if isinstance(g.source, A.NvalsSource):
        raise lw.err(f"{what} ranges over vertices or edges (`x <- V`, `(u, e, v) <- E`), not over "
                     "neighbours", g.source.span)
    if e.op == "union":
        raise lw.err("`union` collects vertices itself; `by` groups the other aggregations", e.op_span)
    if e.is_list and (e.op not in ("argmin", "argmax") or len(e.heads) != 2):
        raise lw.err(f"a list head is `[x, y, ...]` in `union` or `[value, payload]` in argmin/argmax, "
                     f"not this in `{e.op}`", e.span)
    inner, mask, kind = pre if pre is not None else lw.source_elems(g, ctx)
    if pre is None:
        mask = lw.filters(fs, inner, mask)
    local = inner.local_kind()
    if e.op == "count":
        head = Val(ir.Const("bool", e.span, True), local, "bool")
    else:
        head = lw.ex(e.heads[0], inner)
    elem, value = lw.agg_head(e, head, e.heads[0].span)
    payload = None
    if e.is_list:
        p = lw.ex(e.heads[1], inner)
        if p.kind not in ("scalar", local):
            raise lw.err(f"the payload is {article(kind_word(p.kind, p.elem))}; it must be a value per element",
                         e.heads[1].span)
        payload, elem = p.ex, p.elem
    keys: list[ir.Ex] = []
    for k in e.keys:
        el = inner.elems.get(k.id) if isinstance(k, A.Name) else None
        if el is not None and el.ekind == "vertex":  # a vertex binder: its original ID
            keys.append(ir.Ids("vid", k.span, el.pos))
            continue
        kv = lw.ex(k, inner)
        if kv.elem not in ("vid", "int") or kv.kind not in ("scalar", local):
            raise lw.err(f"a key names a vertex by its ID (a vid per element); this is "
                         f"{article(kind_word(kv.kind, kv.elem))}", k.span)
        keys.append(kv.ex)
    winner_edges = kind == "edge" and e.op in ("argmin", "argmax") and payload is None
    result: ir.Kind
    if winner_edges:
        result, elem = "edge", "bool"
    elif keys:
        result = "vertex"
    else:
        result = "scalar"
    dom: ir.ElemDom = "V" if kind == "vertex" else "E"
    if dom == "E":
        exs = lw.finish_edge([value, payload, mask, *keys], e.span)
        edge_value, payload, mask, edge_keys = exs[0], exs[1], exs[2], exs[3:]
        # (finish_edge maps each expression to one)
        assert edge_value is not None and all(k is not None for k in edge_keys)
        value, keys = edge_value, [k for k in edge_keys if k is not None]
    t = lw.temp(ir.Ty(result, elem))
    lw.emit(ir.KeyedReduce(e.span, t, e.op, dom, tuple(keys), value, payload, mask, elem, result,
                           origin=lw.origin))
    return Val(ir.Load(elem, e.span, t, result, "here"), result, elem)
