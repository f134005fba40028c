"""Optimizer passes: golden before/after per pass, the verifier between passes, equivalence across
-O levels and disabled passes, and each pass's effect on supersteps / messages / bytes."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from cli_util import run_proc
from program_args import program_args

import g2pl
from g2pl.compiler import ir
from g2pl.compiler.lowering.lower import lower_procedure
from g2pl.compiler.parser import parse
from g2pl.compiler.passes import PIPELINE, prerequisites
from g2pl.compiler.passlog import PassLog
from g2pl.compiler.pipeline import compile_module, dump_stage
from g2pl.compiler.plan import Plan, build_plan
from g2pl.compiler.verify import PlanError, verify_ir, verify_plan
from g2pl.graph import build_graph

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "passes"
PASSES = {p.name: p for p in PIPELINE}
CASES = sorted(FIXTURES.glob("*/*.g2pl"))


def _unit_before(pass_name: str, src: Path):
    """The input a single pass sees: the lowered IR (IR passes) or the -O0 plan (plan passes)."""
    mod = parse(src.read_text(), src.name)
    proc = lower_procedure(mod, next(iter(mod.procedures.values())))
    if PASSES[pass_name].stage == "ir":
        return proc
    plan = build_plan(proc)
    for p in prerequisites(pass_name):  # the passes whose decisions it reads (its `requires`)
        plan = p.run(plan, [])
    return plan


@pytest.mark.parametrize("case", CASES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_golden_before_after(case: Path, request) -> None:
    name = case.parent.name
    unit = _unit_before(name, case)
    before = dump_stage(unit)
    log: PassLog = []
    after_unit = PASSES[name].run(unit, log)
    if isinstance(after_unit, Plan):
        verify_plan(after_unit)
    after = dump_stage(after_unit)
    text = f"--- before {name} ---\n{before}\n--- after {name} ---\n{after}\n--- log ---\n" + "\n".join(map(str, log)) + "\n"
    golden = case.with_suffix(".golden")
    if request.config.getoption("--update-golden"):
        golden.write_text(text)
    assert golden.exists(), f"{golden.name} is missing: write it with --update-golden and review it"
    assert text == golden.read_text(), f"golden mismatch for {case}; rerun with --update-golden and review"
    # a case changes the unit, unless it is a negative case (its first line says `// negative: why`),
    # which must come out unchanged with a log line of the pass saying why it did not apply
    negative = case.read_text().startswith("// negative:")
    assert (before == after) == negative, f"{case.name}: {'changed' if negative else 'unchanged'} by {name}"
    assert not negative or any(note.pass_name == name for note in log), f"{name} did not say why"


PROGRAMS = sorted((ROOT / "programs").glob("*.g2pl"))


@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: p.stem)
@pytest.mark.parametrize("opt", [0, 1, 2])
def test_verifier_between_every_pass(path: Path, opt: int) -> None:
    seen: list[str] = []

    def hook(name, unit):
        seen.append(name)
        if isinstance(unit, Plan):
            verify_plan(unit)
        else:
            assert isinstance(unit, ir.ProcIR)
            verify_ir(unit)

    mod = parse(path.read_text(), str(path))
    for entry in mod.procedures:
        compile_module(mod, entry, opt=opt, after_pass=hook)
    assert "plan" in seen and seen[0] == "lower"


def _graphs():
    rng = np.random.default_rng(42)
    out = []
    for directed, weighted in ((False, False), (True, True), (False, True)):
        ids = rng.choice(10**8, 120, replace=False)
        parts = [ids[:60], ids[60:100]]  # two components plus isolated vertices
        src = np.concatenate([rng.choice(p, 2 * len(p)) for p in parts])
        dst = np.concatenate([rng.choice(p, 2 * len(p)) for p in parts])
        w = rng.uniform(0.5, 3.0, len(src)) if weighted else None
        out.append(build_graph(src, dst, w, directed=directed, name=f"g{len(out)}", extra_ids=ids))
    return out


GRAPHS = _graphs()
CONFIGS = [(0, ()), (1, ()), (2, ())] + [(2, (p.name,)) for p in PIPELINE]


def _args(prog: str, g) -> dict:
    return program_args(ROOT / "programs" / f"{prog}.g2pl", int(g.ids[g.src[0]]))


@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: p.stem)
def test_every_level_and_disabled_pass_gives_identical_outputs(path: Path) -> None:
    for g in GRAPHS:
        results = {}
        for opt, disable in CONFIGS:
            prog = g2pl.compile(path, opt=opt, disable=disable)
            results[(opt, disable)] = prog.run(g, args=_args(path.stem, g), seed=5).values
        ref = results[(0, ())]
        for cfg, vals in results.items():
            assert vals == ref, f"{path.stem} on {g.name}: {cfg} differs from -O0"


EDGE_SET_PROGRAMS = {
    # two sets shrinking at different rates, one per endpoint; the set is read after the loop
    "two_sets": """p() {
  X = V; Y = { id % 3 != 0 | v <- V }; k = 0; Last = emptyE;
  while (k < 6) {
    Inner = { u in X && v in Y | (u, v) <- E };
    Last = Inner;
    X = X \\ union [ [u] | (u, v) <- Inner, (id[u] + k) % 4 == 0 ];
    Y = Y \\ { id % 5 == k | v <- V };
    k = k + 1;
  }
  return Last;
}""",
    # three memberships; the set grows back every third round (a full pass again)
    "grows_back": """p() {
  X = V; Y = V; k = 0; c = 0;
  while (k < 8) {
    S = { u in X && v in X && u in Y | (u, v) <- E };
    c = c + count [ e | e <- S ];
    X = (k % 3 == 2) ? V : X \\ union [ [v] | (u, v) <- S, id[u] < id[v] ];
    Y = Y \\ { id % 7 == k | v <- V };
    k = k + 1;
  }
  return c;
}""",
}


@pytest.mark.parametrize("name", sorted(EDGE_SET_PROGRAMS))
def test_edge_set_programs_agree_on_every_level(name: str) -> None:
    src = EDGE_SET_PROGRAMS[name]
    assert any(str(e).startswith("edgeset: line") and "shrink" in e.text
               for e in g2pl.compile(src).compilation("p").plan.log)
    for g in GRAPHS:
        ref = g2pl.compile(src, opt=0).run(g).values
        for opt, disable in ((2, ()), (2, ("edgeset",)), (2, ("prune",)), (1, ())):
            assert g2pl.compile(src, opt=opt, disable=disable).run(g).values == ref, (name, g.name, opt, disable)


def _stats(src: str | Path, graph, opt=2, disable=(), args=None) -> dict:
    return g2pl.compile(src, opt=opt, disable=disable).run(graph, args=args or {}).stats


def test_spec_reorder_example_supersteps() -> None:
    src = FIXTURES / "reorder" / "spec_example.g2pl"
    g = g2pl.load_graph("er:50:100", seed=1)
    assert _stats(src, g, 0, args={"x": 2})["supersteps"] == 3
    assert _stats(src, g, 2, args={"x": 2})["supersteps"] == 2
    assert _stats(src, g, 2, ("reorder",), args={"x": 2})["supersteps"] == 3


def test_each_pass_changes_what_it_claims() -> None:
    g = g2pl.load_graph("ws:2000:10:0.3", seed=3)
    # reuse: the repeated aggregation sends nothing (and at -O0 + reuse costs no superstep)
    rep = FIXTURES / "reuse" / "repeated_degree.g2pl"
    assert _stats(rep, g)["messages"] < _stats(rep, g, disable=("reuse",))["messages"]
    # merge: fewer supersteps for matching
    mm = ROOT / "programs" / "matching.g2pl"
    assert _stats(mm, g)["supersteps"] < _stats(mm, g, disable=("merge",))["supersteps"]
    # prune: fewer messages (only unmatched vertices send)
    assert _stats(mm, g)["messages"] < _stats(mm, g, disable=("prune",))["messages"]
    # -O0 follows the naive formula; -O2 is far below it
    s0 = _stats(mm, g, 0)
    assert s0["messages"] == (s0["supersteps"] - 1) * 2 * g.m
    assert _stats(mm, g)["messages"] * 3 <= s0["messages"]


def test_delta_sends_only_changed_values_and_counts_them(tmp_path: Path) -> None:
    """Min-label propagation compared at both endpoints of every edge: round k's endpoint exchange
    sends one message per adjacency entry of each vertex whose label changed in round k - 1 (every
    vertex in round 0), counted exactly so on one rank and on two; the labels are those of -O0."""
    src = FIXTURES / "delta" / "changed_only.g2pl"
    g = g2pl.load_graph("er:400:600", seed=4)  # sparse: several components, labels settle over rounds
    deg = np.diff(g.in_indptr)
    nbrs = [g.in_nbr[g.in_indptr[v]:g.in_indptr[v + 1]] for v in range(g.n)]
    lab, want = g.ids.astype(np.int64), []
    prev = None
    for _k in range(5):  # the program's rounds, directly
        new = np.array([min(lab[v], lab[nbrs[v]].min(initial=lab[v])) for v in range(g.n)])
        sent = deg.sum() if prev is None else deg[lab != prev].sum()
        want.append(int(sent) + int(deg.sum()))  # + the min over neighbours: every vertex sends
        prev, lab = lab, new
    ref = g2pl.compile(src, opt=0).run(g)
    got = g2pl.compile(src).run(g)
    assert got.values == ref.values
    assert [s["messages"] for s in got.stats["per_superstep"] if s["state"] == 2] == want
    r = run_proc("g2pl", "run", src, "--graph", "er:400:600", "--seed", "4", "--np", "2", "--quiet",
                 "--stats", tmp_path / "s.json", "--output", tmp_path / "o.json", timeout=120)
    assert r.returncode == 0, r.stderr
    two = json.loads((tmp_path / "s.json").read_text())
    assert json.loads((tmp_path / "o.json").read_text()) == ref.output()
    assert [s["messages"] for s in two["per_superstep"] if s["state"] == 2] == want
    off = g2pl.compile(src, disable=("delta",)).run(g).stats
    assert [s["messages"] for s in off["per_superstep"] if s["state"] == 2] == [2 * int(deg.sum())] * 5


@pytest.mark.parametrize("directed", [False, True])
def test_edge_subset_aggregations_send_only_along_the_subset(tmp_path: Path, directed: bool) -> None:
    """`sum [ 1 | (u, e) <- nvals v, e in S ]` sends along S's entries only; `sum [ ... | (u, v) <- S ]`
    and `sum [ ... | (u, e, v) <- E, e in S ]` read endpoint values along S's edges only: counted so
    (against the graph's arrays directly) on one rank and two, with the answer of -O0."""
    src = FIXTURES / "prune" / "edge_subset.g2pl"
    rng = np.random.default_rng(11)
    ids = rng.choice(10**6, size=300, replace=False) * 7 + 5  # non-contiguous IDs; a few components
    el = tmp_path / "g.el"
    el.write_text("".join(f"{ids[a]} {ids[b]}\n" for a, b in rng.integers(0, 300, size=(700, 2)) if a != b))
    flags = ["--directed"] if directed else []
    g = g2pl.load_graph(str(el), directed=directed)
    xs = (g.ids % 3 == 0)
    s = xs[g.src] | xs[g.dst]  # S, per edge
    k = int(s.sum())
    entries = k * (1 if directed else 2)  # in-neighbour entries along S (both directions when undirected)
    want = [int(g.m) * 2, entries, 2 * k, 0]  # X's memberships (first run: all), D along S, D at S's ends
    ref = g2pl.compile(src, opt=0).run(g)
    for ranks in (1, 2):
        r = run_proc("g2pl", "run", src, "--graph", el, *flags, "--np", str(ranks), "--quiet",
                     "--stats", tmp_path / "s.json", "--output", tmp_path / "o.json", timeout=120)
        assert r.returncode == 0, r.stderr
        st = json.loads((tmp_path / "s.json").read_text())
        assert json.loads((tmp_path / "o.json").read_text()) == ref.output()
        assert [x["messages"] for x in st["per_superstep"][:4]] == want, ranks
    o1 = g2pl.compile(src, opt=1).run(g)
    assert o1.values == ref.values and o1.stats["messages"] > sum(want)


def _matching_rounds(g) -> list[tuple]:
    """Greedy matching (paper Fig. 4) directly: per round, the unmatched set before it, after it, and
    how many vertices propose (have an unmatched neighbour)."""
    nbrs = [g.in_nbr[g.in_indptr[v]:g.in_indptr[v + 1]] for v in range(g.n)]
    nm, rounds = np.ones(g.n, dtype=bool), []
    while nm.any():
        deps = np.array([nm[nbrs[v]].sum() for v in range(g.n)])
        cand = np.full(g.n, -1)
        for v in range(g.n):
            us = [u for u in nbrs[v] if nm[u]]
            if us:
                cand[v] = min(us, key=lambda u: (deps[u], g.ids[u]))
        matched = np.array([cand[v] >= 0 and nm[v] and cand[cand[v]] == v for v in range(g.n)], dtype=bool)
        rounds.append((nm.copy(), nm & ~matched, int((nm & (cand >= 0)).sum())))
        if not matched.any():
            break
        nm &= ~matched
    return rounds


def test_receivers_send_only_to_the_receivers_that_read(tmp_path: Path) -> None:
    """Matching: Deps goes from unmatched senders to the neighbours they last knew unmatched, the
    argmin to unmatched neighbours only, each Candidate only along the edge to the candidate (the
    reader, `id[u] == Candidate[v] && ...`, can use it nowhere else), and the endpoint exchange sends
    the changed memberships: the counts of a direct simulation, on one rank and on two, with -O0's
    matching."""
    g = g2pl.load_graph("ws:600:6:0.3", seed=2)
    deg = np.diff(g.in_indptr)
    src, dst = g.in_nbr, np.repeat(np.arange(g.n), deg)  # every adjacency entry: sender -> receiver
    rounds = _matching_rounds(g)
    tests = [r[0] for r in rounds] + [rounds[-1][1]]  # the unmatched set at each loop test
    want: dict[int, list[int]] = {1: [], 3: [], 4: []}
    for k, nm in enumerate(tests):  # state 1: Deps, plus the memberships that changed since last time
        known = True if k == 0 else tests[k - 1][dst]  # the senders' copy: from the last loop test
        changed = deg.sum() if k == 0 else deg[nm != tests[k - 1]].sum()
        want[1].append(int((nm[src] & known).sum() + changed))
    for nm, _after, proposers in rounds:  # the argmin to unmatched neighbours; Candidate to the candidate
        want[3].append(int((nm[src] & nm[dst]).sum()))
        want[4].append(proposers)
    assert len(rounds) > 3 and want[3][-1] < want[3][0] / 4
    mm = ROOT / "programs" / "matching.g2pl"
    ref = g2pl.compile(mm, opt=0).run(g)
    got = g2pl.compile(mm).run(g)
    assert got.values == ref.values

    def per_state(st: dict) -> dict[int, list[int]]:
        return {k: [x["messages"] for x in st["per_superstep"] if x["state"] == k] for k in (1, 3, 4)}

    assert per_state(got.stats) == want
    r = run_proc("g2pl", "run", mm, "--graph", "ws:600:6:0.3", "--seed", "2", "--np", "2", "--quiet",
                 "--stats", tmp_path / "s.json", "--output", tmp_path / "o.json", timeout=120)
    assert r.returncode == 0, r.stderr
    assert json.loads((tmp_path / "o.json").read_text()) == ref.output()
    assert per_state(json.loads((tmp_path / "s.json").read_text())) == want
    off = g2pl.compile(mm, disable=("receivers",)).run(g).stats
    assert off["messages"] > got.stats["messages"]


def test_record_bytes_without_prune_are_the_packed_records() -> None:
    """With prune off every vertex still sends along every entry each exchange superstep, but pack
    leaves only the superstep's fields in each record: that record's size (bits rounded up to bytes),
    not 0, per message."""
    g = g2pl.load_graph("ws:2000:10:0.3", seed=3)
    st = _stats(ROOT / "programs" / "matching.g2pl", g, disable=("prune",))
    size = {1: 1, 3: 9, 4: 8}  # NotMatched and the Deps filter (2 bits); argmin key + bit; Candidate
    for x in st["per_superstep"]:
        assert x["record_bytes"] == x["messages"] * size.get(x["state"], 0), x
    assert st["record_bytes"] > 0


def test_pack_shrinks_the_record_layout() -> None:
    prog = g2pl.compile(FIXTURES / "pack" / "sender_value.g2pl")
    text = prog.plan_text()
    assert "S.value:float" in text and "PR:float" not in text.split("state 0")[1]
    unpacked = g2pl.compile(FIXTURES / "pack" / "sender_value.g2pl", disable=("pack",)).plan_text()
    assert "bytes per mirror" in unpacked and "bytes per mirror" not in text and "packed S.value:float" in text


def test_direction_pushes_small_frontiers() -> None:
    g = g2pl.load_graph("kron:12", seed=2)
    root = int(g.ids[g.src[0]])
    on = g2pl.compile(ROOT / "programs" / "bfs.g2pl").run(g, args={"root": root})
    off = g2pl.compile(ROOT / "programs" / "bfs.g2pl", disable=("direction",)).run(g, args={"root": root})
    assert on.values == off.values
    assert on.stats["directions"]["push"] > 0 and on.stats["directions"]["pull"] > 0
    assert off.stats["directions"] == {"push": 0, "pull": 0}


def test_edgeset_rechecks_only_the_shrinking_edge_set() -> None:
    """Matching's Edges(NotMatched) becomes one shrinking edge set: after the first rounds only its
    previous members are checked again; the matching is the same without the pass."""
    g = g2pl.load_graph("ws:3000:10:0.3", seed=4)
    # (receivers off in both: it sees Candidate's guard through the edge set edgeset makes)
    on = g2pl.compile(ROOT / "programs" / "matching.g2pl", disable=("receivers",)).run(g)
    off = g2pl.compile(ROOT / "programs" / "matching.g2pl", disable=("edgeset", "receivers")).run(g)
    assert on.values == off.values
    assert on.stats["edge_sets"]["shrunk"] > 0 and on.stats["edge_sets"]["full"] >= 1
    assert off.stats["edge_sets"] == {"full": 0, "shrunk": 0}
    assert (on.stats["supersteps"], on.stats["messages"]) == (off.stats["supersteps"], off.stats["messages"])
    assert "within=True" in g2pl.compile(ROOT / "programs" / "matching.g2pl").python()


def test_edgeset_leaves_a_set_read_before_its_computation_alone() -> None:
    """`B = Inner` runs after the endpoint exchange and before `Inner` is computed, reading the
    previous round's `Inner`: defining `Inner` at the exchange would change `B`, so the pass does not
    apply (and the answer is that of the literal code)."""
    src = """p() {
  Active = V; Inner = E; B = emptyE;
  while (Inner != emptyE) {
    B = Inner;
    Inner = { u in Active && v in Active | (u, v) <- E };
    Active = Active \\ union [ [u, v] | (u, v) <- Inner, id[u] < id[v] ];
  }
  return B;
}"""
    prog = g2pl.compile(src)
    log = [str(note) for note in prog.compilation(prog.entry_name()).plan.log]
    assert "edgeset: line 5: Inner is read between the exchange and its computation: left as endpoint reads" in log
    g = g2pl.load_graph("er:200:800", seed=1)
    assert prog.run(g).values == g2pl.compile(src, opt=0).run(g).values


def _recv_filters(src: str, opt: int = 2) -> list:
    prog = g2pl.compile(src, opt=opt)
    plan = prog.compilation(prog.entry_name()).plan
    return [x.recv for s in plan.states for x in s.exchange if isinstance(x.instr, ir.NbrReduce)]


BFS_LOOP = """p(root: vid) {
  F = { id == root | v <- V };
  Seen = F;
  while (F != empty) {
    %s
  }
  return Seen;
}"""


def test_receiver_filter_only_when_nothing_changes_it_before_the_use() -> None:
    ok = BFS_LOOP % "F = { or [ true | u <- nvals v, u in F ] | v <- V } \\ Seen;\n    Seen = Seen || F;"
    assert [ir.show_ex(r) for r in _recv_filters(ok)] == ["!Seen"]
    assert _recv_filters(ok, opt=1) == [None]  # direction is an -O2 pass
    # merge runs the aggregation in the loop-condition superstep, before `Seen = Seen || F`: the filter
    # would be read too early, so the pull must look at every receiver
    early = BFS_LOOP % "Seen = Seen || F;\n    F = { or [ true | u <- nvals v, u in F ] | v <- V } \\ Seen;"
    assert _recv_filters(early) == [None]
    # the result is used twice (also unfiltered): no filter
    twice = BFS_LOOP % ("N = { or [ true | u <- nvals v, u in F ] | v <- V };\n    F = N \\ Seen;\n"
                        "    Seen = Seen || N;")
    assert _recv_filters(twice) == [None]


def test_receiver_filter_gives_the_same_levels_with_less_work() -> None:
    g = g2pl.load_graph("kron:12", seed=3)
    root = int(g.ids[g.src[0]])
    for src in (ROOT / "programs" / "bfs.g2pl", BFS_LOOP % "Seen = Seen || F;\n    F = { or [ true | u <- nvals v, "
                                                         "u in F ] | v <- V } \\ Seen;"):
        on = g2pl.compile(src).run(g, args={"root": root})
        off = g2pl.compile(src, disable=("direction",)).run(g, args={"root": root})
        assert on.values == off.values


# ---------------------------------------------------------------- type inference settles


def _copy_chain(n: int) -> str:
    """`v0 = v1; ...; v{n-1} = 1.5;` in a loop: the float widens one variable a round, back to v0."""
    body = "".join(f"    v{k} = v{k + 1};\n" for k in range(n - 1))
    init = "".join(f"  v{k} = 0;\n" for k in range(n))
    return (f"p() {{\n{init}  x = 0;\n  while (x < 3) {{\n{body}    v{n - 1} = 1.5;\n    x = x + 1;\n  }}\n"
            "  return v0;\n}\n")


def test_type_inference_runs_until_nothing_changes() -> None:
    # more rounds than the 8 lowering used to stop after (leaving v0..v3 int, assigned floats)
    mod = parse(_copy_chain(12), "chain.g2pl")
    proc = lower_procedure(mod, mod.procedures["p"])
    assert {proc.vars[f"v{k}"].elem for k in range(12)} == {"float"}
    assert g2pl.compile(_copy_chain(12)).plan_text()


def test_type_inference_that_never_settles_is_an_internal_error() -> None:
    from g2pl.compiler.lowering.lower import InferenceError, Lowerer, inference_rounds
    from g2pl.errors import G2PLError

    mod = parse(_copy_chain(2), "chain.g2pl")

    class Restless(Lowerer):  # a (buggy) lowerer that reports a change every round
        def lower_proc(self):
            out = super().lower_proc()
            self.changed = True
            return out

    rounds = 0
    with pytest.raises(InferenceError) as err:
        for lw in inference_rounds(lambda vt, pt: Restless(mod, mod.procedures["p"], vt, pt)):
            lw.lower_proc()
            rounds += 1
    assert not isinstance(err.value, G2PLError) and "still changes types" in str(err.value)
    assert rounds <= 3 * 3 + 1  # bounded by the variables (v0, v1, x): three widenings each at most


# ---------------------------------------------------------------- the verifier catches broken plans


def _bfs(opt: int = 2):
    path = ROOT / "programs" / "bfs.g2pl"
    return compile_module(parse(path.read_text(), str(path)), "bfs", opt=opt)


def _nbr_exchange(plan: Plan):
    return next((s, k, x) for s in plan.states for k, x in enumerate(s.exchange) if isinstance(x.instr, ir.NbrReduce))


def test_verifier_accepts_the_real_plan() -> None:
    comp = _bfs()
    verify_plan(comp.plan)
    verify_ir(comp.proc)


def test_verifier_finds_a_read_before_the_definition() -> None:
    # drop `d = 0`: `d = d + 1` in the loop reads d before it is assigned on the first iteration
    comp = _bfs()
    s0 = comp.plan.states[0]
    s0.instrs = [i for i in s0.instrs if i.defs() != ("d",)]
    with pytest.raises(PlanError, match="reads d before it is assigned"):
        verify_plan(comp.plan)
    # the same in the structured IR
    proc = comp.proc
    proc.body = [i for i in proc.body if i.defs() != ("d",)]
    with pytest.raises(PlanError, match="reads d before it is assigned"):
        verify_ir(proc)


def test_verifier_finds_a_variable_assigned_only_in_the_loop_read_after_it() -> None:
    comp = _bfs()
    s0 = comp.plan.states[0]
    s0.instrs = [i for i in s0.instrs if i.defs() != ("Level",)]
    s4 = next(s for s in comp.plan.states if any(i.defs() == ("Level",) for i in s.instrs))
    first = s4.instrs[0]
    s4.instrs = [ir.Compute(first.span, "Level", "V", ir.Const("int", first.span, 0), origin=first.origin), *s4.instrs]
    with pytest.raises(PlanError, match="reads Level before it is assigned"):  # the return, if the loop never ran
        verify_plan(comp.plan)


def test_verifier_checks_send_and_receiver_conditions() -> None:

    comp = _bfs()
    s, k, x = _nbr_exchange(comp.plan)
    assert x.send is not None and x.recv is not None  # prune and direction decided both
    sp = x.instr.span
    bad = {
        "not bool": dict(send=ir.Const("int", sp, 1)),
        "reads more than the sender": dict(send=ir.Load("bool", sp, "Seen", "vertex", "self")),
        "reads more than the receiver": dict(
            recv=ir.Op("bool", sp, "<", (ir.Rand("float", sp, 0), ir.Const("float", sp, 0.5)))),
        "reads F as int": dict(send=ir.Op("bool", sp, "==", (
            ir.Load("int", sp, "F", "vertex", "nbr"), ir.Const("int", sp, 1)))),
    }
    for what, change in bad.items():
        plan = _bfs().plan
        s2, k2, _x = _nbr_exchange(plan)
        s2.exchange[k2] = s2.exchange[k2].but(**change)
        with pytest.raises(PlanError, match=what):
            verify_plan(plan)


def test_verifier_checks_exchange_groups_and_fields() -> None:
    import dataclasses

    # a receiver filter reading an aggregator of its own group: that value exists only after the barrier
    plan = _bfs().plan
    s, k, x = _nbr_exchange(plan)
    agg = next(y.instr for y in s.exchange if isinstance(y.instr, ir.GlobalReduce))
    s.exchange[k] = x.but(recv=ir.Load("bool", x.instr.span, agg.target, "scalar"))
    with pytest.raises(PlanError, match=f"reads {agg.target.replace('$', '[$]')} before it is assigned"):
        verify_plan(plan)
    # an aggregator whose target has another type than the reduction makes
    plan = _bfs().plan
    s, k, x = _nbr_exchange(plan)
    j = next(n for n, y in enumerate(s.exchange) if isinstance(y.instr, ir.GlobalReduce))
    s.exchange[j] = dataclasses.replace(s.exchange[j], instr=dataclasses.replace(s.exchange[j].instr, elem="int"))
    with pytest.raises(PlanError, match="scalar bool, but the instruction makes scalar int"):
        verify_plan(plan)


ENDPOINTS = """
p() {
  A = { id % 2 == 0 | v <- V };
  B = { id % 3 == 0 | v <- V };
  return sum [ 1 | (u, v) <- E, u in A, v in B ];
}
"""


def test_verifier_checks_endpoint_exchanges() -> None:
    import dataclasses

    def plan_and_exchange():
        plan = compile_module(parse(ENDPOINTS, "e.g2pl"), "p", opt=1).plan
        verify_plan(plan)
        s, k = next((s, k) for s in plan.states for k, x in enumerate(s.exchange)
                    if isinstance(x.instr, ir.EndpointExchange))
        return plan, s, k, s.exchange[k].instr

    plan, s, k, i = plan_and_exchange()
    t = i.targets[0]
    s.exchange[k] = dataclasses.replace(s.exchange[k], instr=dataclasses.replace(i, need=ir.Load("bool", i.span, t, "edge")))
    with pytest.raises(PlanError, match="which the exchange brings"):
        verify_plan(plan)
    plan, s, k, i = plan_and_exchange()
    (var, side, _e), *rest = i.fields
    s.exchange[k] = dataclasses.replace(s.exchange[k], instr=dataclasses.replace(i, fields=((var, side, "int"), *rest)))
    with pytest.raises(PlanError, match="vertex set, but the instruction makes vertex graph of int"):
        verify_plan(plan)
    plan, s, k, i = plan_and_exchange()
    s.exchange[k] = dataclasses.replace(s.exchange[k], instr=dataclasses.replace(i, targets=i.targets[:1]))
    with pytest.raises(PlanError, match="fields for 1 targets"):
        verify_plan(plan)


def test_verifier_checks_exchange_records() -> None:
    """The runtime trusts the spec derived from each record alone: a record whose decisions do not fit
    together (a send condition or a push without prune's counting, a record of another kind than its
    instruction) or whose id another exchange has (their caches would mix) is a PlanError."""
    from g2pl.compiler.exchange import AggregateExchange

    for change, what in ((dict(counted=False), "send condition before prune"),
                         (dict(send=None), "push without a send condition")):
        plan = _bfs().plan
        s, k, x = _nbr_exchange(plan)
        s.exchange[k] = x.but(**change)
        with pytest.raises(PlanError, match=f"record X{x.id} disagrees: {what}"):
            verify_plan(plan)
    plan = _bfs().plan
    s, k, x = _nbr_exchange(plan)
    other = next(n for n, y in enumerate(s.exchange) if n != k)
    s.exchange[other] = s.exchange[other].but(id=x.id)
    with pytest.raises(PlanError, match="share an id"):
        verify_plan(plan)
    plan = _bfs().plan
    s, k, x = _nbr_exchange(plan)
    s.exchange[k] = AggregateExchange(x.id, x.instr)
    with pytest.raises(PlanError, match="a AggregateExchange, not a NbrExchange"):
        verify_plan(plan)


RECV_FILTER_SAME_GROUP = """
main() {
  i = 0;
  n = 0;
  while (i < 3) {
    X = { or [ true | u <- nvals v ] | v <- V, and [ i > 0 | w <- V ] };
    n = n + count [ 1 | x <- X ];
    i = i + 1;
  }
  return n;
}
"""


def test_receiver_filter_never_reads_an_aggregator_of_its_own_superstep() -> None:
    # merge puts the aggregator `and [ i > 0 | ... ]` into the superstep of the neighbour exchange;
    # direction used it as the pull's receiver filter, read before the barrier combines it: the
    # previous iteration's value (false) skipped every receiver and -O2 counted 3 instead of 6
    # (found by verify_plan's definite-assignment check on a fuzz program)
    mod = parse(RECV_FILTER_SAME_GROUP, "r.g2pl")
    verify_plan(compile_module(mod, "main", opt=2).plan)
    g = g2pl.load_graph("kron:6", seed=1)
    want = g2pl.compile(RECV_FILTER_SAME_GROUP, opt=0).run(g).values
    assert g2pl.compile(RECV_FILTER_SAME_GROUP, opt=2).run(g).values == want


def test_pass_requirements_are_checked_and_unmet_ones_refuse_the_pass() -> None:
    """Dependencies are written once, in the pipeline: an order that breaks one is refused when the
    module loads, and a run with a requirement disabled refuses the pass and says why."""
    from g2pl.compiler.passes import PassInfo, _check_pipeline, schedule

    with pytest.raises(AssertionError, match="requires prune"):
        _check_pipeline((PassInfo("a", "plan", 2, lambda u, log: u, requires=("prune",)),
                         PassInfo("prune", "plan", 2, lambda u, log: u)))
    run, refused = schedule(2, ("prune",))
    assert "receivers" not in [p.name for p in run] and [(p.name, m) for p, m in refused] == [("receivers", ["prune"])]
    comp = _bfs()
    path = ROOT / "programs" / "matching.g2pl"
    comp = compile_module(parse(path.read_text(), str(path)), "mm", opt=2, disable=("prune",))
    assert "receivers: not run: it needs prune, which is not run" in comp.plan_text()
    assert [p.name for p in prerequisites("receivers")] == ["prune", "pack", "edgeset", "delta"]


def test_sparse_pass_owns_the_evaluation_at_a_sets_members() -> None:
    """The sparse pass marks `M && rest`: the generated code evaluates `rest` at M's members when they
    are few, the plan and the log say so; disabled, the literal code; the answers are the same."""
    path = ROOT / "programs" / "matching.g2pl"
    mod = parse(path.read_text(), str(path))
    on = compile_module(mod, "mm", opt=0)
    off = compile_module(mod, "mm", opt=0, disable=("sparse",))
    assert "within=t7)" in on.python and "within=" not in off.python.split("def run")[1].split("nbr_combine")[0]
    assert "(only at the members of $7 when few)" in on.plan_text()
    assert "sparse: line 9: A evaluated only at the members of $7 when they are few" in on.plan_text()
    prog_on, prog_off = g2pl.compile(path, opt=0), g2pl.compile(path, opt=0, disable=("sparse",))
    graph = g2pl.load_graph("ws:200:4:0.3", seed=3)
    a, b = prog_on.run(graph, seed=1), prog_off.run(graph, seed=1)
    assert json.dumps(a.values, sort_keys=True, default=str) == json.dumps(b.values, sort_keys=True, default=str)


def test_g2plc_verify_checks_between_every_pass() -> None:
    """`verify=True` (g2plc --verify) runs the verifier after lowering and every pass."""
    path = ROOT / "programs" / "matching.g2pl"
    comp = compile_module(parse(path.read_text(), str(path)), "mm", opt=2, verify=True)
    assert comp.python
