"""Runtime kernels against brute force: segmented reductions (the empty and tie rules of docs/language.md, "Aggregators") and the RNG."""

from __future__ import annotations

import ctypes
import math
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from select_operands import operand

import g2pl
from g2pl.compiler.exchange import Spec
from g2pl.runtime import array_kernels as AK
from g2pl.runtime import cpu_kernels
from g2pl.runtime import kernels as K
from g2pl.runtime import partials as P

OPS = ["sum", "min", "max", "and", "or", "count", "avg", "argmin", "argmax"]


def brute(op, vals, mask, ids, elem):
    sel = [i for i in range(len(vals)) if mask is None or mask[i]]
    if not sel:
        return K.empty_value(op, elem)
    v = [vals[i] for i in sel]
    if op == "sum":
        return sum(v)
    if op == "min":
        return min(v)
    if op == "max":
        return max(v)
    if op == "and":
        return all(v)
    if op == "or":
        return any(v)
    if op == "count":
        return len(v)
    if op == "avg":
        return sum(v) / len(v)
    best = min(v) if op == "argmin" else max(v)
    return min(ids[i] for i in sel if vals[i] == best)


@settings(max_examples=150, deadline=None)
@given(
    rows=st.lists(st.integers(0, 4), min_size=1, max_size=8),
    data=st.data(),
    op=st.sampled_from(OPS),
    use_mask=st.booleans(),
)
def test_seg_reduce_matches_brute_force(rows, data, op, use_mask):
    indptr = np.concatenate([[0], np.cumsum(rows)]).astype(np.int64)
    k = int(indptr[-1])
    elem = "bool" if op in ("and", "or") else "int"
    if elem == "bool":
        vals = np.array(data.draw(st.lists(st.booleans(), min_size=k, max_size=k)), dtype=bool)
    else:
        vals = np.array(data.draw(st.lists(st.integers(-3, 3), min_size=k, max_size=k)), dtype=np.int64)
    mask = np.array(data.draw(st.lists(st.booleans(), min_size=k, max_size=k)), dtype=bool) if use_mask else None
    ids = np.array(data.draw(st.lists(st.integers(0, 50), min_size=k, max_size=k)), dtype=np.int64)
    res_elem = "vid" if op in ("argmin", "argmax") else ("float" if op == "avg" else elem)
    got = K.seg_reduce(K.Segments(indptr), op, vals, mask, res_elem if op != "count" else "int", ids)
    for r in range(len(rows)):
        a, b = indptr[r], indptr[r + 1]
        exp = brute(op, vals[a:b].tolist(), None if mask is None else mask[a:b].tolist(), ids[a:b].tolist(),
                    res_elem if op != "count" else "int")
        if op == "avg" and np.isnan(exp):
            assert np.isnan(got[r])
        else:
            assert got[r] == exp, (op, r)


def test_empty_rules():
    assert K.empty_value("min", "int") == np.iinfo(np.int64).max
    assert K.empty_value("max", "float") == -np.inf
    assert K.empty_value("argmin", "vid") == -1
    assert K.empty_value("and", "bool") is True


def _global(op, vals, ids, elem, split):
    """Aggregate in `split` pieces (as ranks would) and combine the partials."""
    vk = P.value_kind(op, vals, elem)
    parts = [P.partial(op, vals[a:b], None, elem, ids[a:b], vk) for a, b in zip(split[:-1], split[1:])]
    acc = parts[0].copy()
    for p in parts[1:]:
        P.combine(((op, vk),), p, acc)
    return P.finish(op, elem, vk, acc)


def test_global_reduce_ties_to_smaller_id_across_ranks():
    vals = np.array([3.0, 1.0, 1.0, 2.0])
    ids = np.array([10, 42, 7, 1])
    for split in ([0, 4], [0, 2, 4], [0, 1, 2, 3, 4], [0, 0, 3, 4]):
        assert _global("argmin", vals, ids, "vid", split) == 7
        assert _global("argmax", vals, ids, "vid", split) == 10
        assert _global("sum", vals, ids, "float", split) == 7.0
        assert _global("min", vals, ids, "float", split) == 1.0
        assert _global("avg", vals, ids, "float", split) == 1.75
        assert _global("count", vals, ids, "int", split) == 4
    empty = np.zeros(0)
    assert _global("min", empty, np.zeros(0, np.int64), "float", [0, 0, 0]) == np.inf
    assert _global("max", empty.astype(np.int64), np.zeros(0, np.int64), "vid", [0, 0]) == -1
    assert _global("argmin", empty, np.zeros(0, np.int64), "vid", [0, 0, 0]) == -1


def test_uniform_is_keyed_by_element_not_position():
    ids = np.array([5, 99, 1234567, 0])
    a = K.uniform(7, 2, 3, ids)
    perm = np.array([2, 0, 3, 1])
    b = K.uniform(7, 2, 3, ids[perm])
    assert np.array_equal(a[perm], b)
    assert ((a >= 0) & (a < 1)).all()
    assert not np.array_equal(a, K.uniform(8, 2, 3, ids))  # seed matters
    assert not np.array_equal(a, K.uniform(7, 2, 4, ids))  # execution count matters
    big = K.uniform(1, 0, 0, np.arange(100000))
    assert abs(big.mean() - 0.5) < 0.01


@settings(max_examples=100, deadline=None)
@given(rows=st.lists(st.integers(0, 12), min_size=1, max_size=10), data=st.data())
def test_any_pull_matches_segment_or(rows, data):
    indptr = np.concatenate([[0], np.cumsum(rows)]).astype(np.int64)
    k = int(indptr[-1])
    ncols = 6
    nbr = np.array(data.draw(st.lists(st.integers(0, ncols - 1), min_size=k, max_size=k)), dtype=np.int64)
    x = np.array(data.draw(st.lists(st.booleans(), min_size=ncols, max_size=ncols)), dtype=bool)
    got = K.any_pull(K.Segments(indptr), nbr, x)
    exp = [bool(x[nbr[indptr[r]:indptr[r + 1]]].any()) for r in range(len(rows))]
    assert got.tolist() == exp


@settings(max_examples=100, deadline=None)
@given(rows=st.lists(st.integers(0, 40), min_size=1, max_size=10), data=st.data(),
       budget=st.one_of(st.none(), st.integers(0, 200)))
def test_any_pull_with_budget_is_exact_or_gives_up(rows, data, budget):
    indptr = np.concatenate([[0], np.cumsum(rows)]).astype(np.int64)
    k = int(indptr[-1])
    nbr = np.array(data.draw(st.lists(st.integers(0, 5), min_size=k, max_size=k)), dtype=np.int64)
    x = np.array(data.draw(st.lists(st.booleans(), min_size=6, max_size=6)), dtype=bool)
    got = K.any_pull(K.Segments(indptr), nbr, x, budget=budget)
    exp = [bool(x[nbr[indptr[r]:indptr[r + 1]]].any()) for r in range(len(rows))]
    if budget is None or budget >= k:  # never more reads than entries: a budget of k always finishes
        assert got is not None
    if got is not None:
        assert got.tolist() == exp


@settings(max_examples=100, deadline=None)
@given(rows=st.lists(st.integers(0, 40), min_size=1, max_size=10), data=st.data())
def test_any_pull_over_some_rows_only(rows, data):
    indptr = np.concatenate([[0], np.cumsum(rows)]).astype(np.int64)
    k = int(indptr[-1])
    nbr = np.array(data.draw(st.lists(st.integers(0, 5), min_size=k, max_size=k)), dtype=np.int64)
    x = np.array(data.draw(st.lists(st.booleans(), min_size=6, max_size=6)), dtype=bool)
    pick = np.array(data.draw(st.lists(st.booleans(), min_size=len(rows), max_size=len(rows))), dtype=bool)
    got = K.any_pull(K.Segments(indptr), nbr, x, rows=np.flatnonzero(pick))
    exp = [bool(pick[r] and x[nbr[indptr[r]:indptr[r + 1]]].any()) for r in range(len(rows))]
    assert got.tolist() == exp


@settings(max_examples=100, deadline=None)
@given(rows=st.lists(st.integers(0, 30), min_size=1, max_size=12), data=st.data(), heads=st.booleans(),
       budget=st.one_of(st.none(), st.integers(0, 300)))
def test_any_pull_with_and_without_the_head_table(rows, data, heads, budget):
    """The first rounds read each row's first neighbours from a table (rows shorter than the table
    repeat their last entry); with it or without it, every row's answer is the segment's `or`."""
    indptr = np.concatenate([[0], np.cumsum(rows)]).astype(np.int64)
    k = int(indptr[-1])
    nbr = np.array(data.draw(st.lists(st.integers(0, 7), min_size=k, max_size=k)), dtype=np.int64)
    x = np.array(data.draw(st.lists(st.booleans(), min_size=8, max_size=8)), dtype=bool)
    pick = np.array(data.draw(st.lists(st.booleans(), min_size=len(rows), max_size=len(rows))), dtype=bool)
    seg = K.Segments(indptr)
    if not heads:
        seg.__dict__["_heads"] = (nbr, None)  # as for an adjacency too sparse for the table
    got = K.pull_rounds(seg, nbr, x, budget=budget, rows=np.flatnonzero(pick))  # (the NumPy rounds)
    if heads and any(p and r for p, r in zip(pick, rows)) and K.HEADS * len(rows) * 4 <= k * 8:
        assert seg.__dict__["_heads"][1] is not None
    exp = [bool(pick[r] and x[nbr[indptr[r]:indptr[r + 1]]].any()) for r in range(len(rows))]
    if budget is None or budget >= k:
        assert got is not None
    if got is not None:
        assert got.tolist() == exp
    other = nbr[::-1].copy()  # the same rows with other neighbours: the table is made again
    got = K.pull_rounds(seg, other, x)
    assert got.tolist() == [bool(x[other[indptr[r]:indptr[r + 1]]].any()) for r in range(len(rows))]


def test_segment_count_and_vid_min_max_empty_rows():
    rng = np.random.default_rng(5)
    for _ in range(30):
        rows = rng.integers(0, 5, size=rng.integers(1, 12))
        indptr = np.concatenate([[0], np.cumsum(rows)]).astype(np.int64)
        k = int(indptr[-1])
        mask = rng.random(k) < 0.5
        seg = K.Segments(indptr)
        assert seg.count(mask).tolist() == [int(mask[a:b].sum()) for a, b in zip(indptr[:-1], indptr[1:])]
        vals = rng.integers(0, 1000, size=k)
        for op in ("min", "max"):
            got = K.seg_reduce(seg, op, vals, mask, "vid")
            for r, (a, b) in enumerate(zip(indptr[:-1], indptr[1:])):
                sel = vals[a:b][mask[a:b]]
                exp = -1 if len(sel) == 0 else (sel.min() if op == "min" else sel.max())
                assert got[r] == exp


def _runtime(spec: str, directed: bool = False):
    import types

    import g2pl
    from g2pl.runtime.engine import Runtime

    g = g2pl.load_graph(spec, seed=3, directed=directed)
    return g, Runtime(g, types.SimpleNamespace())


def _brute_nbr(op, g, v, msk, elem):
    out = []
    for r in range(g.n):
        s = g.in_nbr[g.in_indptr[r]:g.in_indptr[r + 1]]
        s = s[msk[s]] if msk is not None else s
        if len(s) == 0:
            out.append(K.empty_value(op, elem))
            continue
        vals = v[s]
        if op in ("argmin", "argmax"):
            best = vals.min() if op == "argmin" else vals.max()
            out.append(int(g.ids[s[vals == best]].min()))
        else:
            out.append({"min": vals.min, "max": vals.max, "sum": vals.sum, "or": vals.any, "and": vals.all,
                        "count": vals.__len__, "avg": vals.mean}[op]())
    return out


def test_nbr_combine_over_restricted_views_matches_brute_force():
    """Pulls over restricted adjacency views (sparse, shrinking, repeated sender sets), the int32
    min/max path and the any-pull/push fallback all give the plain masked answer."""
    for directed in (False, True):
        g, rt = _runtime("er:300:1500", directed)
        rng = np.random.default_rng(11)
        alive = np.ones(g.n, dtype=bool)
        for step in range(8):
            # a shrinking sender set: views are filtered from views (a new array, as program values are
            # never written once made: the runtime may remember facts about an array by identity)
            alive = alive & (rng.random(g.n) < 0.7)
            cases = [("min", rng.integers(-5, 5, g.n), "int"), ("max", rng.integers(-2**40, 2**40, g.n), "int"),
                     ("min", rng.integers(2**31 - 3, 2**31 + 3, g.n), "int"), ("min", rng.integers(0, 50, g.n), "vid"),
                     ("max", rng.integers(0, 50, g.n), "vid"), ("min", rng.random(g.n), "float"),
                     ("sum", rng.random(g.n), "float"), ("sum", rng.integers(-9, 9, g.n), "int"),
                     ("count", np.ones(g.n, dtype=bool), "int"), ("avg", rng.random(g.n), "float"),
                     ("argmin", rng.integers(0, 4, g.n), "vid"), ("argmax", rng.integers(0, 4, g.n), "vid"),
                     ("argmin", rng.integers(0, 3, g.n) * 2**24, "vid"),  # int64 packed keys
                     ("argmax", rng.integers(0, 3, g.n) * 2**24, "vid"),
                     ("argmin", rng.integers(0, 2**40, g.n), "vid"),  # too wide to pack
                     ("or", rng.random(g.n) < 0.1, "bool"), ("and", rng.random(g.n) < 0.9, "bool")]
            for msk in (alive, None, alive.copy()):
                for op, v, elem in cases:
                    spec = Spec(0, "nbr", op=op, elem=elem)
                    if msk is None:
                        got = rt.nbr_combine(spec, (v,), lambda x: (x, None))
                    else:
                        got = rt.nbr_combine(spec, (v, msk), lambda x, m: (x, m))
                    exp = _brute_nbr(op, g, v, msk, elem)
                    if op in ("avg", "sum") and elem == "float":
                        assert np.allclose(got, exp, equal_nan=True, rtol=1e-12), (op, step)
                    else:
                        assert got.tolist() == [e.item() if hasattr(e, "item") else e for e in exp], (op, elem, step)
            got = rt.nbr_combine(Spec(0, "nbr", op="sum", elem="int"), (alive,), lambda m: (1, m))  # counts
            assert got.tolist() == _brute_nbr("count", g, np.ones(g.n), alive, "int")


def test_min_max_pulls_with_a_receiver_filter_match_brute_force_at_its_receivers():
    """A min/max pull given a receiver filter (the direction pass's `recv`) reduces only the filter's
    rows when they hold few entries (Adjacency.of_rows): at those receivers the plain masked answer,
    int32 path, int64, vid (empty rows) and float alike, with and without a sender mask; a filter
    over most rows takes the whole adjacency."""
    for directed in (False, True):
        g, rt = _runtime("er:300:1500", directed)
        rng = np.random.default_rng(12)
        for frac in (0.05, 0.2, 0.9):
            recv = rng.random(g.n) < frac
            senders = rng.random(g.n) < 0.6
            for op, v, elem in [("min", rng.integers(-5, 5, g.n), "int"), ("max", rng.integers(-2**40, 2**40, g.n), "int"),
                                ("min", rng.integers(0, 50, g.n), "vid"), ("max", rng.random(g.n), "float")]:
                for msk in (None, senders):
                    spec = Spec(0, "nbr", op=op, elem=elem)
                    if msk is None:
                        got = rt.nbr_combine(spec, (v,), lambda x: (x, None), recv=recv)
                    else:
                        got = rt.nbr_combine(spec, (v, msk), lambda x, m: (x, m), recv=recv)
                    exp = np.array(_brute_nbr(op, g, v, msk, elem))
                    assert got[recv].tolist() == exp[recv].tolist(), (op, elem, frac, directed)
        adj = rt.nbr.adj(False)
        few = np.zeros(g.n, dtype=bool)
        few[:5] = True
        view = adj.of_rows(few, 0.25)
        assert view is not None and view.entries == int(adj.seg.counts[:5].sum())
        assert adj.of_rows(np.ones(g.n, dtype=bool), 0.25) is None


def test_restricted_view_float_sums_are_bit_identical():
    g, rt = _runtime("er:400:3000")
    adj = rt.nbr.adj(False)
    rng = np.random.default_rng(2)
    v = rng.standard_normal(g.n) * 10.0 ** rng.integers(-5, 5, g.n)
    msk = rng.random(g.n) < 0.2
    work = int(np.dot(adj.sender_counts(), msk))
    assert adj.restricted(msk, work, 1.0, adj.count_use(msk)) is None  # first sighting: a masked pass
    view, masked = adj.restricted(msk, work, 1.0, adj.count_use(msk))
    assert not masked and view.entries < adj.entries
    full = adj.matrix("f") @ np.where(msk, v, 0.0)
    assert np.array_equal(view.matrix("f") @ v, full)


def test_views_for_some_receivers_hold_only_their_rows():
    """A pull whose result only some receivers read (the receivers pass) gets a view of just those
    receivers' rows: every entry from a sender in the set into such a receiver, nothing else, and the
    same reductions there.  A later pull reuses the view only when its receivers are among the view's."""
    for directed in (False, True):
        g, rt = _runtime("er:400:3000", directed)
        adj = rt.nbr.adj(False)
        rng = np.random.default_rng(8)
        msk = rng.random(g.n) < 0.3
        rows = rng.random(g.n) < 0.2
        work = int(np.dot(adj.sender_counts(), msk))
        view, masked = adj.restricted(msk, work, 1.0, True, rows)
        owner = adj.owner
        want = np.flatnonzero(msk[adj.nbr] & rows[owner])
        assert not masked and view.entries == len(want) < int(np.count_nonzero(msk[adj.nbr]))
        assert np.array_equal(view.nbr, adj.nbr[want]) and np.array_equal(view.owner, owner[want])
        assert np.array_equal(view.rows, rows)
        v = rng.standard_normal(g.n)
        full = adj.matrix("f") @ np.where(msk, v, 0.0)
        assert np.array_equal((view.matrix("f") @ v)[rows], full[rows])
        assert adj.restricted(msk.copy(), work, 1.0, True, rows & (rng.random(g.n) < 0.5)) == (view, False)
        fewer = msk & (rng.random(g.n) < 0.5)  # a subset of the senders: the view with their mask
        assert adj.restricted(fewer, int(np.dot(adj.sender_counts(), fewer)), 1.0, True, rows) == (view, True)
        other = ~rows & (rng.random(g.n) < 0.2)  # receivers outside the view's: not this view
        got = adj.restricted(msk.copy(), work, 1.0, True, other)
        assert got is not None and got[0] is not view and np.array_equal(got[0].rows, other)


def test_known_receiver_counts_from_a_view_only_where_it_has_the_rows():
    """Messages of a known-receiver pull (sent only to the receivers in the senders' copy `known`)
    come from the row counts of a view over the same senders only when the view holds every known
    receiver's row: a view made for the receivers' own set `recv` (a copy of all of them was known)
    lacks the rows of the receivers that left it since their copies were sent."""
    g, rt = _runtime("er:400:3000")
    adj = rt.nbr.adj(False)
    rng = np.random.default_rng(4)
    senders = rng.random(g.n) < 0.3
    recv = senders & (rng.random(g.n) < 0.5)
    known = recv | (senders & (rng.random(g.n) < 0.5))  # a lagging copy: more than `recv`
    assert np.any(known & ~recv)
    owner = adj.owner

    def pull(op, kn, *value):
        spec = Spec(0, "nbr", op=op, elem="int" if op == "sum" else "vid", presence=True, counted=True,
                    known="k")
        rt.tally.messages, rt.tally.pending = 0, []
        head = (lambda x: (x, None)) if value else (lambda: (np.int64(1), None))
        got = rt.nbr_combine(spec, value, head, send=senders, recv=recv, known=kn)
        return got, rt.tally.messages + int(sum(int(p) for p in rt.tally.pending))

    every = np.ones(g.n, dtype=bool)
    adj.count_use(every), adj.count_use(every.copy())  # a set that served several pulls: a view at once
    deps, sent = pull("sum", every)  # matching's Deps: a view of the `recv` rows, their counts kept
    assert adj._views and np.array_equal(adj._views[-1][1].rows, recv)
    assert sent == int(np.count_nonzero(senders[adj.nbr]))  # every receiver known: every entry
    assert deps[recv].tolist() == [int(np.count_nonzero(senders[adj.nbr[owner == r]])) for r in np.flatnonzero(recv)]
    kept = rt.nbr._sent_rows[1]
    assert rt.nbr._rows_from(adj, kept, None, recv) is not None  # within the view's rows: its counts serve
    assert rt.nbr._rows_from(adj, kept, None, known) is None  # receivers outside them: counted afresh
    _best, sent = pull("argmin", known, deps)
    assert sent == int(np.count_nonzero(senders[adj.nbr] & known[owner]))


def test_views_from_all_entries_only_for_sender_sets_seen_before():
    """A view costs about two masked passes to make: a sender set few enough gets one only when it is
    within a set seen before (a shrinking frontier, a repeated set) or the set before it served several
    pulls in a row; otherwise the first time it is pulled over all entries with its mask."""
    g, rt = _runtime("er:400:3000")
    adj = rt.nbr.adj(False)
    rng = np.random.default_rng(5)

    def ask(msk, frac=0.5):
        return adj.restricted(msk, int(np.dot(adj.sender_counts(), msk)), frac, adj.count_use(msk))

    a = rng.random(g.n) < 0.2
    b = ~a & (rng.random(g.n) < 0.2)
    assert ask(a) is None and ask(b) is None  # first sightings (both remembered)
    assert ask(rng.random(g.n) < 0.9) is None  # too many senders: no view, nothing remembered
    view, masked = ask(a & (rng.random(g.n) < 0.8))  # within `a`: a view
    assert not masked and view.entries < adj.entries
    assert ask(b) is None  # the sightings were spent on that view: `b` starts again
    got, _ = ask(b.copy())
    assert got.entries < adj.entries and got is not view
    adj.forget_views()
    assert ask(a) is None
    assert ask(a.copy())[0].entries < adj.entries  # the same set again: within one seen before
    view, _ = ask(b)  # the last set served two pulls in a row: this one likely does too, a view at once
    assert view.entries < adj.entries and ask(b.copy())[0] is view
    adj.forget_views()
    every = np.ones(g.n, dtype=bool)
    adj.count_use(every), adj.count_use(every.copy())  # two pulls where every sender sends (no view asked)
    assert ask(a)[0].entries < adj.entries  # matching's Deps and argmin: the set after them gets a view


def test_constant_weights_view_and_sparse_endpoint_buffers():
    import types

    import g2pl
    from g2pl.runtime.engine import Runtime

    g, rt = _runtime("er:200:900")
    assert rt.weight.strides == (0,) and np.array_equal(rt.weight, g.weight)
    g2 = g2pl.load_graph("er:200:900", seed=3)
    g2.weight = np.arange(g2.m, dtype=np.float64)
    rt2 = Runtime(g2, types.SimpleNamespace())
    assert rt2.weight is g2.weight
    rng = np.random.default_rng(4)
    ext = rng.integers(1, 100, g.n)
    held = []
    for step in range(6):
        need = rng.random(g.m) < 0.05
        a = rt.edges.at_endpoint(ext, "dst", need)
        b = rt.edges.at_endpoint(ext, "src", need)
        assert np.array_equal(a, np.where(need, ext[g.dst], 0)) and np.array_equal(b, np.where(need, ext[g.src], 0))
        if step % 2:
            held.append((a, a.copy()))  # the program keeps this one: it must not be reused
        rt.barrier(0)
    for a, snapshot in held:
        assert np.array_equal(a, snapshot)


def test_endpoint_reads_updated_from_earlier_answers():
    """at_endpoint without `need` re-gathers only the edges at changed vertices (one rank): answers stay
    equal to a plain gather, bitwise (-0.0, NaN), while the program holds some of the earlier ones."""
    for directed in (False, True):
        g, rt = _runtime("er:300:1200", directed)
        rng = np.random.default_rng(8)
        vals = {"f": rng.standard_normal(g.n), "b": rng.random(g.n) < 0.5, "i": rng.integers(0, 9, g.n)}
        held = []
        for step in range(12):
            for key, v in vals.items():
                v = v.copy()
                flip = rng.random(g.n) < (0.6 if step % 5 == 0 else 0.02)
                if key == "f":
                    v[flip] = rng.choice([0.0, -0.0, np.nan, 1.5], size=int(flip.sum()))
                elif key == "b":
                    v[flip] = ~v[flip]
                else:
                    v[flip] += 1
                vals[key] = v
                for side, ends in (("src", g.src), ("dst", g.dst)):
                    got = rt.edges.at_endpoint(v, side)
                    exp = v[ends]
                    assert got.dtype == exp.dtype and np.array_equal(got.view(np.uint8), exp.view(np.uint8))
                    if rng.random() < 0.3:
                        held.append((got, exp))
            rt.barrier(0)
        for got, exp in held:
            assert np.array_equal(got.view(np.uint8), exp.view(np.uint8))


def test_gather_reduce_in_blocks_matches_plain_reduce(monkeypatch):
    rng = np.random.default_rng(3)
    monkeypatch.setattr(K.Segments, "BLOCK", 7)  # many blocks, rows longer than a block
    for _ in range(20):
        rows = rng.integers(0, 30, size=rng.integers(1, 40))
        rows[rng.random(len(rows)) < 0.3] = 0
        indptr = np.concatenate([[0], np.cumsum(rows)]).astype(np.int64)
        seg = K.Segments(indptr)
        table = rng.integers(-50, 50, size=25)
        idx = rng.integers(0, 25, size=int(indptr[-1]))
        for ufunc, fill in ((np.minimum, K.INT64_MAX), (np.maximum, K.INT64_MIN)):
            assert np.array_equal(seg.gather_reduce(ufunc, table, idx, fill), seg.reduce(ufunc, table[idx], fill))
        ft = rng.standard_normal(25)
        assert np.array_equal(seg.gather_reduce(np.minimum, ft, idx, np.inf), seg.reduce(np.minimum, ft[idx], np.inf))


def test_edges_within_matches_the_literal_conjunction_as_sets_shrink_and_grow():
    """`Edges.within` (the edgeset pass) equals `X[src] & Y[dst]` every round: while both sets only
    shrink it re-checks just the previous members, a set that grows again forces a full pass, and
    the members it remembers serve `Members.if_few` and `mark`."""
    for directed in (False, True):
        g, rt = _runtime("er:400:1200", directed)
        rng = np.random.default_rng(5)
        x = np.ones(g.n, dtype=bool)
        y = rng.random(g.n) < 0.9
        for step in range(12):
            if step == 6:
                x = x | (rng.random(g.n) < 0.5)  # grows: the previous answer is no bound any more
            else:
                x = x & (rng.random(g.n) < 0.75)
                y = y & (rng.random(g.n) < 0.9)
            got = rt.edges.within(1, ((x, "src"), (y, "dst")))
            exp = x[g.src] & y[g.dst]
            assert got.tolist() == exp.tolist(), (directed, step)
            few = rt.members.if_few(got)
            if few is not None:
                assert few.tolist() == np.flatnonzero(exp).tolist()
            marked = rt.mark(got, sides=("src",))
            assert np.flatnonzero(marked).tolist() == sorted(set(g.src[exp].tolist()))
        assert rt.stats.edge_sets["shrunk"] > 0 and rt.stats.edge_sets["full"] >= 2


@pytest.mark.parametrize("density", [0.0, 0.001, 0.05, 0.3, 0.5, 0.97, 0.999, 1.0])
@pytest.mark.parametrize("kinds", [("i8", "i8"), ("f8", "f8"), ("i8", "s"), ("s", "f8"), ("f8", "si"),
                                   ("i4", "s4"), ("b", "b"), ("b", "sb"), ("i8", "f8"), ("c8", "f8")])
def test_select_is_bit_identical_to_where(density, kinds):
    """The branch-free select (kernels.select) must give np.where's answer bit for bit: dtype, NaN
    payloads, infinities, signed zeros, scalar operands on either side, 4- and 8-byte and bool values."""
    rng = np.random.default_rng(int(density * 1000) + len(kinds[0]))
    n = 3 * K.SELECT_BLOCK + 123  # several blocks and a short last one
    cond = rng.random(n) < density

    a, b = operand(rng, kinds[0], n), operand(rng, kinds[1], n)
    got, want = K.select(cond, a, b), np.where(cond, a, b)
    assert got.dtype == want.dtype and got.shape == want.shape
    if want.dtype == np.bool_:
        assert np.array_equal(got, want)
    else:
        assert np.array_equal(got.view(f"i{want.dtype.itemsize}"), want.view(f"i{want.dtype.itemsize}"))


_MALLINFO = """
import ctypes

import numpy as np
from g2pl.graph import alloc

class Info(ctypes.Structure):
    _fields_ = [(k, ctypes.c_size_t) for k in
                "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost".split()]

info = ctypes.CDLL("libc.so.6").mallinfo2
info.restype = Info
"""

_MMAPPED = _MALLINFO + """
before = np.ones(1 << 23)  # 64 MB: glibc maps it on its own by default
mapped_before = info().hblkhd
del before
applied = alloc.tune()
after = np.ones(1 << 23)
print(applied, mapped_before >= 1 << 26, info().hblkhd < 1 << 26)
"""


def _has_mallinfo2() -> bool:
    try:
        return hasattr(ctypes.CDLL("libc.so.6"), "mallinfo2")
    except OSError:
        return False


@pytest.mark.skipif(not _has_mallinfo2(), reason="glibc >= 2.33 (mallinfo2) only")
def test_allocator_tuning_serves_large_arrays_from_the_heap():
    """After alloc.tune(), a 64 MB array is no longer an mmap of its own (which free() would unmap,
    so the next superstep faults the pages in again); G2PL_MALLOC_TUNING=0 leaves glibc as it was."""
    env = dict(os.environ, G2PL_MALLOC_TUNING="1")
    out = subprocess.run([sys.executable, "-c", _MMAPPED], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.split() == ["True", "True", "True"]
    env["G2PL_MALLOC_TUNING"] = "0"
    out = subprocess.run([sys.executable, "-c", _MMAPPED], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.split() == ["False", "True", "False"]


_WARM = _MALLINFO + """
free_before = info().fordblks
alloc.warm(1 << 27)
print(info().fordblks - free_before >= 0.9 * (1 << 27))
"""


@pytest.mark.skipif(not _has_mallinfo2(), reason="glibc >= 2.33 (mallinfo2) only")
def test_warming_leaves_faulted_heap_free_for_later_arrays():
    """alloc.warm(n): n bytes are faulted in and stay in the process as free heap (a rank that received
    its graph part starts as warm as rank 0); with the tuning off it does nothing."""
    for tuning, want in (("1", "True"), ("0", "False")):
        env = dict(os.environ, G2PL_MALLOC_TUNING=tuning)
        out = subprocess.run([sys.executable, "-c", _WARM], capture_output=True, text=True, env=env, check=True)
        assert out.stdout.split() == [want]


BLOCK_PROG = """
main() {
  X = { float(id) * 0.37 | v <- V };
  C = { imod(id, 5) | v <- V };
  S = { imod(id, 3) != 0 | v <- V };
  A = { min [ x + Weight[e] | (x, e) <- nvals v, x in S ] | v <- X };
  B = { sum [ x * Weight[e] | (x, e) <- nvals v ] | v <- X };
  G = { argmin [ u | (u, e) <- nvals v, Weight[e] > 0.3 ] | v <- C };
  M = { mode [ C[u] + imod(int(Weight[e] * 10.0), 2) | (u, e) <- nvals v ] | v <- V };
  R = { sum [ rand() * x | (x, e) <- nvals v ] | v <- X };
  W = { and [ p < u || (p == u && id < id[u]) | u <- nvals p, u in S ] | p <- X };
  return A, B, G, M, R, W;
}
"""


@pytest.mark.parametrize("directed", [False, True], ids=["undirected", "directed"])
def test_per_entry_heads_in_row_blocks_give_the_same_bits(monkeypatch, directed: bool) -> None:
    """Per-entry heads evaluated a block of whole rows at a time (NumPy: entry-length temporaries in
    cache) give exactly the one-pass answers: float sums in row order, argmin ties, mode, the receiver's
    own values, and rand() draws (one draw per evaluation, keyed by edge)."""
    from oracles import random_graph

    import g2pl
    from g2pl.runtime.numpy_backend import NumPyBackend

    g = random_graph(11, 500, directed=directed, weighted=True).g
    prog = g2pl.compile(BLOCK_PROG)
    monkeypatch.setenv("G2PL_NUMBA", "0")  # (the heads themselves: no compiled one-pass reduction)
    monkeypatch.setattr(NumPyBackend, "entry_block", 0)
    whole = prog.run(g, seed=4).output()
    blocks = []
    real = K.Segments.row_blocks
    monkeypatch.setattr(K.Segments, "row_blocks", lambda seg, size: blocks.append(size) or real(seg, size))
    monkeypatch.setattr(NumPyBackend, "entry_block", 16)
    assert prog.run(g, seed=4).output() == whole
    assert len(blocks) == 6  # every per-entry head went through the blocks


def test_row_blocks_cover_every_row_once() -> None:
    rng = np.random.default_rng(3)
    counts = rng.integers(0, 40, 300)
    counts[[5, 77]] = 500  # rows longer than a block: blocks of their own
    counts[:3] = 0
    seg = K.Segments(np.concatenate([[0], np.cumsum(counts)]))
    got = seg.row_blocks(64)
    assert got[0][:3:2] == (0, 0) and got[-1][1] == seg.n and got[-1][3] == seg.indptr[-1]
    for (a, b, lo, hi), nxt in zip(got, got[1:] + [None]):
        assert a < b and (lo, hi) == (seg.indptr[a], seg.indptr[b])
        assert nxt is None or nxt[0] == b
        assert hi - lo <= 64 + counts[b - 1] or b - a == 1


def test_take_into_widens_int32_indices_a_block_at_a_time(monkeypatch) -> None:
    from g2pl.runtime.numpy_backend import NumPyBackend

    monkeypatch.setattr(K.Segments, "BLOCK", 64)
    rng = np.random.default_rng(8)
    table = rng.standard_normal(300)
    for idx in (rng.integers(0, 300, 1000).astype(np.int32), rng.integers(0, 300, 1000), np.zeros(0, np.int32)):
        out = np.full(len(idx), np.nan)
        NumPyBackend.take_into(table, idx, out)
        assert np.array_equal(out, table[idx])


@pytest.mark.parametrize("op", ["min", "max", "argmin", "argmax"])
def test_pushed_min_max_tell_empty_receivers_from_identity_values(op: str) -> None:
    """A receiver is empty when no entry reaches it, also when entries carry the identity itself
    (inf for a float min): the push gives what the segment reduction gives."""
    from g2pl.runtime.numpy_backend import NumPyBackend

    bk, rng = NumPyBackend(), np.random.default_rng(4)
    n, k = 40, 200
    recv = rng.integers(0, n - 5, k).astype(np.int32)  # the last receivers get nothing
    ids = rng.permutation(1000)[:k].astype(np.int64)
    ident = np.inf if "min" in op else -np.inf
    for vals in (rng.standard_normal(k), np.where(rng.random(k) < 0.3, ident, rng.standard_normal(k)), np.full(k, ident)):
        order = np.argsort(recv, kind="stable")
        seg = K.Segments(np.concatenate([[0], np.cumsum(np.bincount(recv, minlength=n))]))
        want = bk.seg_reduce(seg, op, vals[order], None, "float", ids[order])
        got = bk.scatter_reduce(op, recv, vals, None, n, "float", ids if "arg" in op else None)
        assert np.array_equal(got, want, equal_nan=True), (op, vals[:3])


EDGE_READS_PROG = """
main() {
  X = { float(id) * 0.37 | v <- V };
  i = 0;
  while (i < 4) {
    D = { X[a] - X[b] | (a, b) <- E };
    S = { x > 1.0 | x <- X };
    X = { min [ x + Weight[e] | (x, e) <- nvals v, x in S ] | v <- X };
    Y = { max [ x + D[e] | (x, e) <- nvals v ] | v <- X };
    X = { (Y[x] > 0.0) ? x : Y[x] | x <- X };
    i = i + 1;
  }
  return X;
}
"""


@pytest.mark.parametrize("block", [0, 16], ids=["whole", "blocks"])
@pytest.mark.parametrize("directed", [False, True], ids=["undirected", "directed"])
def test_edge_arrays_read_per_entry_from_the_kept_copy_give_the_same_bits(monkeypatch, directed: bool,
                                                                          block: int) -> None:
    """An edge array read by per-entry heads in several evaluations (the weights, every round) is read
    from a copy in entry order; one that changes every round (D) is gathered afresh: the answers equal
    those with every read a gather, whole or in blocks of rows."""
    from oracles import random_graph

    import g2pl
    from g2pl.runtime.adjacency import Adjacency
    from g2pl.runtime.numpy_backend import NumPyBackend

    g = random_graph(12, 400, directed=directed, weighted=True).g
    prog = g2pl.compile(EDGE_READS_PROG)
    monkeypatch.setattr(NumPyBackend, "entry_block", block)
    kept = []
    real = Adjacency.edge_values
    monkeypatch.setattr(Adjacency, "edge_values",
                        lambda adj, arr, first: kept.append(got := real(adj, arr, first)) or got)
    with_copy = prog.run(g).output()
    assert any(k is not None for k in kept)
    monkeypatch.setattr(Adjacency, "edge_values", lambda adj, arr, first: None)
    assert prog.run(g).output() == with_copy


@pytest.mark.parametrize("numba", ["0", "1"])
def test_narrow_and_widen_int32_compiled_and_not(monkeypatch, numba):
    """The min/max pull's int32 narrowing, one compiled pass or NumPy's, alike: the masked values as
    int32 and the identity elsewhere; None where any value is int32's least or greatest or beyond; the
    widened result with the int64 identity back and its count."""
    monkeypatch.setenv("G2PL_NUMBA", numba)
    rng = np.random.default_rng(7)
    v = rng.integers(-(2**31) + 1, 2**31 - 1, 5000)
    mask = rng.random(5000) < 0.6
    for ident32 in (2**31 - 1, -(2**31)):
        for m in (None, mask):
            got = K.narrow_int32(v, m, ident32)
            want = v.astype(np.int32) if m is None else np.where(m, v, ident32).astype(np.int32)
            assert got.dtype == np.int32 and np.array_equal(got, want)
        for bad in (2**31 - 1, -(2**31), 2**40):
            w = v.copy()
            w[17] = bad
            assert K.narrow_int32(w, None, ident32) is None
            assert K.narrow_int32(w, np.arange(5000) == 17, ident32) is None
            assert K.narrow_int32(w, np.arange(5000) != 17, ident32) is None
        r32 = rng.integers(-5, 5, 5000).astype(np.int32)
        r32[rng.random(5000) < 0.3] = ident32
        ident = np.iinfo(np.int64).max if ident32 > 0 else np.iinfo(np.int64).min
        r, at = K.widen_int32(r32, ident32, ident)
        want_r, want_at = AK.widen_int32(AK.HostOps, r32, ident32, ident)
        assert r.dtype == np.int64 and np.array_equal(r, want_r) and at == want_at == int((r32 == ident32).sum())


def _fsum_cases() -> list[np.ndarray]:
    rng = np.random.default_rng(11)
    wide = rng.standard_normal(3000) * 10.0 ** rng.integers(-300, 300, 3000)
    cancel = np.concatenate([rng.standard_normal(2000) * 1e16, -rng.standard_normal(2000) * 1e16, [0.1, 0.2, 0.3]])
    cancel[2000:4000] = -cancel[:2000]  # everything cancels but the last three
    tiny = np.array([5e-324, -5e-324, 1e-320, 2.2250738585072014e-308, -1e-310] * 50)
    return [wide, cancel, tiny, rng.random(5000), -rng.random(7) * 1e300]


@pytest.mark.parametrize("numba", ["0", "1"])
def test_global_float_sums_are_exact_on_any_split(monkeypatch, numba):
    """A global float sum (and avg) is the correctly rounded sum of its values (math.fsum's), with the
    same bits however they are split among ranks: partials are exact integers, rounded once at the end;
    the compiled bins and NumPy's alike."""
    monkeypatch.setenv("G2PL_NUMBA", numba)
    for vals in _fsum_cases():
        ids = np.arange(len(vals))
        want = math.fsum(vals.tolist())
        n = len(vals)
        for split in ([0, n], [0, n // 2, n], [0, 1, n // 3, n - 1, n], [0, 0, n, n]):
            got = _global("sum", vals, ids, "float", split)
            assert got == want and math.copysign(1.0, got) == math.copysign(1.0, want), (split, got, want)
            assert _global("avg", vals, ids, "float", split) == want / n
        shuffled = vals[np.random.default_rng(1).permutation(n)]
        assert _global("sum", shuffled, ids, "float", [0, n // 3, n]) == want
        if cpu_kernels.use(n):
            hi, lo, counts = K.float_bins(vals.view(np.int64))
            assert (AK.bins_total(hi, lo), counts) == AK.float_total(AK.HostOps, vals, np.asarray)


@pytest.mark.parametrize("vals, want", [
    ([], 0.0), ([-0.0], 0.0), ([-0.0, -0.0], 0.0), ([1e308, 1e308], math.inf), ([-1e308, -1e308, 1.0], -math.inf),
    ([1e308, 1e308, -1e308], 1e308), ([math.inf, 1.0], math.inf), ([-math.inf, 2.0], -math.inf),
    ([math.inf, -math.inf], math.nan), ([math.nan, 1.0], math.nan), ([0.1] * 10, math.fsum([0.1] * 10)),
])
def test_global_float_sum_special_values(vals, want):
    v = np.array(vals, dtype=np.float64)
    for split in ([0, len(v)], [0, len(v) // 2, len(v)]):
        got = _global("sum", v, np.arange(len(v)), "float", split)
        assert (math.isnan(got) and math.isnan(want)) or (got == want and math.copysign(1, got) == math.copysign(1, want))


def test_a_programs_float_sums_have_the_same_bits_on_any_rank_count():
    """Through the runtime on 1, 2 and 3 ranks (threads), with and without renumbering: a global float
    sum over every vertex, a masked one, and an average give the same bits, math.fsum's."""
    from thread_comm import run_program

    src = ("main() { F = { 1.0 / float(id + 3) | v <- V }; s = sum [ x | x <- F ]; "
           "t = sum [ x * 1e16 | x <- F, id > 5 ]; a = avg [ x | x <- F ]; return s, t, a; }")
    src_ids, dst_ids = np.arange(0, 3000, 3) * 7 + 5, np.arange(1, 3001, 3) * 7 + 5
    g = g2pl.Graph.from_edges(src_ids, dst_ids)
    prog = g2pl.compile(src)
    got = [prog.run(g)] + [run_program(prog, g, size, renumber=r) for size in (2, 3) for r in (None, "degree")]
    vals = [[r["s"], r["t"], r["a"]] for r in got]
    assert all(v == vals[0] for v in vals), vals
    f = [1.0 / float(i + 3) for i in sorted(set(src_ids.tolist()) | set(dst_ids.tolist()))]
    assert vals[0][0] == math.fsum(f) and vals[0][2] == math.fsum(f) / len(f)


def test_pagerank_on_a_directed_graph_has_the_same_bits_on_any_rank_count():
    """programs/pagerank.g2pl's dangling-rank sum is a global float sum over vertices of differing ranks
    on a directed graph: on 1, 2 and 3 ranks the returned ranks are the same bits (before the sums were
    exact, hundreds of kron:13's 8,192 differed in their last bits on 2 and 3 ranks)."""
    from pathlib import Path

    from thread_comm import run_program

    g = g2pl.load_graph("kron:13", directed=True)
    prog = g2pl.compile_file(Path(__file__).resolve().parents[2] / "programs" / "pagerank.g2pl")
    args = {"iters": 15, "damping": 0.85}
    want = prog.run(g, args).array("PR")
    for size in (2, 3):
        got = run_program(prog, g, size, args).array("PR")
        assert np.array_equal(got.view(np.int64), want.view(np.int64)), size
