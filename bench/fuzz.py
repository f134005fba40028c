#!/usr/bin/env python3
"""Compiler fuzzing at full size: differential testing of random programs, and robustness.

    python bench/fuzz.py --programs 1000 --robust 10000 [--ranks 2] [--seed S] [--jobs J]
    python bench/fuzz.py --quick            # a smoke run (a few seconds)

1. Programs: `tests/fuzzgen.generate(seed)` for seeds S .. S+N-1 (random well-typed programs), each
   compiled at -O0, -O1, -O2 and -O2 with each pass disabled alone and run on three small random
   graphs (1 rank, in process); every configuration's `--output` values must equal -O0's, and any
   exception but a clean G2PLError is a failure. Programs without rand() are also run by the
   reference interpreter of tests/fuzzgen.py, whose values must equal -O0's. With `--ranks 2`, `g2pl run --np 2` (the `g2pl`
   of `--g2pl`, default: next to this Python, else on PATH) on an edge-list file of one of
   those graphs must give the 1-rank values (every `--mpi-every`-th program; alternately -O2 / -O0,
   undirected / directed).
2. Robustness (hypothesis, seeded by S): mutated real programs (character and token edits,
   truncation, splicing) and random text must compile or raise a G2PLError rendered
   `file:line:col: error: ...`; mutants that compile are run on a tiny graph (only G2PLErrors may
   come out). Then the malformed graph files of `fuzzgen.graph_file_cases()` and random/mutated
   graph files (`--robust / 10` of them) must give a G2PLError naming the file (and line).
3. Every failure is listed with its seed. Failures that match an open bug (fuzzgen.KNOWN_BUGS,
   which already has a regression file) are counted apart; each new kind of failure is
   minimized (delta debugging over lines and sub-expressions, `--minimize-budget` tries) and
   saved to tests/fuzz_regressions/ (at most `--max-per-class` files per kind; `--no-save` to skip).

Output: the summary on stdout, OUT/fuzz.md and OUT/fuzz.json (OUT: `--out`, default bench/results;
fuzz_quick.* with `--quick`).
Exit status 1 when there was a failure that is not a known open bug.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import harness

REPO = harness.ROOT
sys.path.insert(0, str(REPO / "tests"))

import fuzzgen  # noqa: E402

# ---------------------------------------------------------------- phase 1: programs


MEDIUM = False  # --medium: also a graph of hundreds to thousands of vertices (set before the pool forks)


def graphs_for(seed: int) -> list:
    return fuzzgen.random_graphs(seed, medium=MEDIUM)


def _one_program(seed: int) -> dict[str, Any]:
    """Worker: generate, compile and compare one program (runs in a pool process)."""
    t0 = time.perf_counter()
    out: dict[str, Any] = {"seed": seed, "generated": False, "compiled": False, "compared": False,
                           "failures": [], "codes": 0, "lines": 0}
    try:
        prog = fuzzgen.generate(seed)
    except Exception as e:  # noqa: BLE001 - a generator bug: report it, keep going
        out["failures"].append({"kind": "generator", "config": "-", "detail": repr(e), "graph": ""})
        out["time"] = time.perf_counter() - t0
        return out
    out["generated"] = True
    out["lines"] = prog.source.count("\n")
    out["rand"] = "rand()" in prog.source
    try:
        fails, info = fuzzgen.differential(prog, graphs_for(seed))
        for label, _, _ in fuzzgen.CONFIGS:
            info["outcomes"][label] = [(st, v if st != "ok" else None) for st, v in info["outcomes"][label]]
    except Exception as e:  # noqa: BLE001
        out["failures"].append({"kind": "harness", "config": "-", "detail": fuzzgen._exc_text(e), "graph": ""})
        out["time"] = time.perf_counter() - t0
        return out
    out["compiled"] = info["compiled"]
    out["reference"] = info.get("reference", "")
    out["codes"] = info["codes"]
    out["compared"] = info["compiled"] and all(
        st == "ok" for outs in info["outcomes"].values() for st, _ in outs)
    out["failures"] = [f.__dict__ for f in fails]
    out["time"] = time.perf_counter() - t0
    return out


def failure_class(f: dict) -> str:
    """A coarse key telling failures apart: kind, where it happened, the exception type and place."""
    kind, detail = f["kind"], str(f["detail"])
    if kind in ("mismatch", "mpi-mismatch", "wrong-values"):
        return f"{kind}: {f['config'].split()[0]}"
    m = re.search(r"(\w+(?:Error|Exception)): .*? at ([\w.<>:-]+?)(?::\d+)? \((\w+|<genexpr>|<listcomp>)\)", detail)
    if m:
        return f"{kind}: {m.group(1)} in {m.group(2).split(':')[0]} {m.group(3)}"
    m = re.search(r"error: (.*)", detail)  # the message, with the names it quotes left out
    return f"{kind}: {re.sub(r'`[^`]*`', '`...`', m.group(1))[:50].strip() if m else detail[:50]}"


def running(label: str, p: str) -> bool:
    """Does configuration `label` run optimizer pass `p`?"""
    opt, disable = {lbl: (o, d) for lbl, o, d in fuzzgen.CONFIGS}[label]
    from g2pl.compiler.passes import PIPELINE

    return any(q.name == p and opt >= q.level for q in PIPELINE) and p not in disable


def seed_classes(failures: list[dict]) -> list[tuple[str, dict]]:
    """The failures of one program as (class, a representative failure); the mismatches of several
    configurations are one class, naming the pass they point at when that is clear."""
    out: dict[str, dict] = {}
    mism = [f for f in failures if f["kind"] == "mismatch"]
    if mism:
        bad = {f["config"].split()[0] for f in mism}
        others = [lbl for lbl, _, _ in fuzzgen.CONFIGS[1:]]
        from g2pl.compiler.passes import PASS_NAMES

        passes = [p for p in PASS_NAMES if {lbl for lbl in others if running(lbl, p)} == bad]
        what = f"pass {passes[0]}" if len(passes) == 1 else ", ".join(sorted(bad))
        out[f"mismatch: {what}"] = mism[0]
    for f in failures:
        if f["kind"] != "mismatch":
            out.setdefault(failure_class(f), f)
    return list(out.items())


def known_class(f: dict) -> str | None:
    """The open bug (fuzzgen.KNOWN_BUGS, by its message) a failure is, if any."""
    return fuzzgen.known_bug(fuzzgen.Failure(**f))


def run_programs(args, log) -> dict[str, Any]:
    seeds = list(range(args.seed, args.seed + args.programs))
    results: list[dict] = []
    t0 = time.perf_counter()
    ctx = mp.get_context("fork")
    with ctx.Pool(args.jobs) as pool:
        for i, r in enumerate(pool.imap_unordered(_one_program, seeds, chunksize=4), 1):
            results.append(r)
            if r["failures"]:
                for f in r["failures"][:3]:
                    known = fuzzgen.known_bug(fuzzgen.Failure(**f))
                    log(f"  seed {r['seed']}: {'(known ' + known + ') ' if known else ''}"
                        f"{fuzzgen._short(str(fuzzgen.Failure(**f)), 300)}")
            if i % 100 == 0:
                log(f"  ... {i}/{len(seeds)} programs, {time.perf_counter() - t0:.0f} s")
    results.sort(key=lambda r: r["seed"])
    return {"results": results, "time_s": time.perf_counter() - t0}


# ---------------------------------------------------------------- phase 1b: two ranks


def run_mpi(args, progs: list[dict], log) -> dict[str, Any]:
    cmd = args.g2pl_cmd
    todo = [r for r in progs if r["compared"] and not r["failures"]][:: args.mpi_every]
    t0 = time.perf_counter()
    out = {"runs": 0, "compared": 0, "failures": [], "seeds": []}
    for i, r in enumerate(todo):
        seed = r["seed"]
        prog = fuzzgen.generate(seed)
        graphs = graphs_for(seed)
        which = i % 2  # graph 0 undirected, graph 1 directed
        label = "O2" if (i // 2) % 2 == 0 else "O0"
        _, info = fuzzgen.differential(prog, graphs, configs=tuple(c for c in fuzzgen.CONFIGS if c[0] == label))
        info["outcomes"] = {label: info["outcomes"][label]}
        fails = fuzzgen.mpi_check(prog, cmd, info, which=which, opt_label=label)
        out["runs"] += 1
        out["seeds"].append(seed)
        if not fails:
            out["compared"] += 1
        for f in fails:
            d = dict(f.__dict__, seed=seed)
            out["failures"].append(d)
            log(f"  seed {seed} (np 2, {label}, {graphs[which].name}): {fuzzgen._short(str(f), 300)}")
        if (i + 1) % 50 == 0:
            log(f"  ... {i + 1}/{len(todo)} two-rank runs, {time.perf_counter() - t0:.0f} s")
    out["time_s"] = time.perf_counter() - t0
    return out


# ---------------------------------------------------------------- phase 2: robustness


def run_robust(args, log) -> dict[str, Any]:
    from hypothesis import HealthCheck, given, seed, settings
    from hypothesis import strategies as st

    from g2pl.graph import build_graph

    corpus = fuzzgen.program_corpus() + [
        (f"gen{s}.g2pl", fuzzgen.generate(args.seed + 10_000_000 + s).source) for s in range(20)]
    tiny = build_graph([1, 2, 3, 5], [2, 3, 1, 1], [1.0, 2.0, 0.5, 3.0], directed=False, name="tiny")
    stats: Counter = Counter()
    failures: list[dict] = []

    def check(text: str, how: str) -> None:
        stats["cases"] += 1
        f = fuzzgen.check_robust(text, file="mut.g2pl", run_graph=tiny)
        if f is None:
            try:
                fuzzgen.g2pl.compile(text + "\n", opt=0, file="mut.g2pl")
                stats["compiled"] += 1
            except fuzzgen.G2PLError:
                stats["clean_errors"] += 1
            return
        d = dict(f.__dict__, text=text, how=how)
        d["known"] = fuzzgen.known_bug(f)
        failures.append(d)

    settings_ = settings(max_examples=max(1, args.robust // 2), deadline=None, database=None,
                         suppress_health_check=list(HealthCheck), phases=["generate"])
    strat_prog = st.sampled_from(corpus)

    @seed(args.seed)
    @settings_
    @given(base=strat_prog, other=strat_prog, rnd=st.randoms(use_true_random=False))
    def mutations(base, other, rnd) -> None:
        check(fuzzgen.mutate(base[1], rnd, other=other[1]), f"mutation of {base[0]}")

    @seed(args.seed + 1)
    @settings(max_examples=max(1, args.robust - args.robust // 2 - args.robust // 10), deadline=None, database=None,
              suppress_health_check=list(HealthCheck), phases=["generate"])
    @given(base=strat_prog, cut=st.integers(0, 10**6), rnd=st.randoms(use_true_random=False))
    def truncations(base, cut, rnd) -> None:
        text = base[1]
        if rnd.random() < 0.5:
            check(text[: cut % (len(text) + 1)], f"truncation of {base[0]}")
        else:
            check(fuzzgen.mutate(text, rnd, n_ops=rnd.randint(5, 15)), f"heavy mutation of {base[0]}")

    @seed(args.seed + 2)
    @settings(max_examples=max(1, args.robust // 10), deadline=None, database=None,
              suppress_health_check=list(HealthCheck), phases=["generate"])
    @given(text=st.one_of(st.text(max_size=300), st.randoms(use_true_random=False).map(fuzzgen.random_text)))
    def texts(text) -> None:
        check(text, "random text")

    t0 = time.perf_counter()
    for fn in (mutations, truncations, texts):
        fn()
        log(f"  ... {stats['cases']} robustness cases, {time.perf_counter() - t0:.0f} s")
    out = {"programs": dict(stats), "failures": failures, "time_s": time.perf_counter() - t0}

    # graph files
    t1 = time.perf_counter()
    gstats: Counter = Counter()
    gfail: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="g2plfuzz") as td:
        d = Path(td)
        for c in fuzzgen.graph_file_cases():
            path = d / c.filename
            path.write_bytes(c.data)
            gstats["cases"] += 1
            p = fuzzgen.check_graph_file(path, c.line, c.ok)
            if p:
                gfail.append({"case": c.name, "problem": p.replace(str(d) + "/", "")})
        rng = random.Random(args.seed)
        base_txt = "# c\n1 2 0.5\n2 3 1.5\n% c\n3 10 2\n10 1 0\n"
        base_mtx = "%%MatrixMarket matrix coordinate real general\n% c\n4 4 3\n1 2 0.5\n2 3 1.5\n4 1 2\n"
        for i in range(max(1, args.robust // 10)):
            suffix = rng.choice([".txt", ".csv", ".tsv", ".el", ".mtx", ".npz"])
            if rng.random() < 0.4:
                data = bytes(rng.randrange(256) for _ in range(rng.randint(0, 200)))
            else:
                base = base_mtx if suffix == ".mtx" else base_txt.replace(" ", "," if suffix == ".csv" else " ")
                data = fuzzgen.mutate(base, rng).encode("utf-8", "surrogatepass")
            gstats["cases"] += 1
            p = fuzzgen.check_graph_bytes(data, suffix, d)
            if p:
                gfail.append({"case": f"random #{i} ({suffix})", "problem": p.replace(str(d) + "/", ""),
                              "data": data.decode("latin-1")})
    out["graphs"] = {"cases": gstats["cases"], "failures": gfail, "time_s": time.perf_counter() - t1}
    return out


# ---------------------------------------------------------------- minimization and saving


def save_failures(args, progs: dict, mpi: dict | None, robust: dict | None, log) -> list[dict]:
    saved: list[dict] = []
    per_class: dict[str, int] = defaultdict(int)
    cmd = args.g2pl_cmd
    # programs (1 rank)
    for r in progs["results"]:
        for cls, f in seed_classes(r["failures"]):
            fail = fuzzgen.Failure(**f)
            if known_class(f) or per_class[cls] >= args.max_per_class:
                continue
            per_class[cls] += 1
            prog = fuzzgen.generate(r["seed"])
            graphs = [g for g in graphs_for(r["seed"]) if g.name == fail.graph] or graphs_for(r["seed"])
            pred = fuzzgen.failure_predicate(fail.signature(), graphs, r["seed"], detail=fail.detail)
            t0 = time.perf_counter()
            small = fuzzgen.minimize(prog.source, pred, budget=args.minimize_budget) if pred(prog.source) \
                else prog.source
            path = fuzzgen.save_regression(small, fail, r["seed"], graph=graphs[0], rand_seed=r["seed"] % 1000)
            saved.append({"seed": r["seed"], "class": cls, "file": str(path.relative_to(REPO)),
                          "lines": small.count("\n"), "minimize_s": round(time.perf_counter() - t0, 1)})
            log(f"  saved {path.relative_to(REPO)} ({cls}; {prog.source.count(chr(10))} -> "
                f"{small.count(chr(10))} lines)")
            break  # one file per program
    # two ranks
    for f in (mpi or {}).get("failures", []):
        cls = failure_class(f)
        if per_class[cls] >= args.max_per_class:
            continue
        per_class[cls] += 1
        seed = f["seed"]
        fail = fuzzgen.Failure(**{k: f[k] for k in ("kind", "config", "detail", "graph")})
        graphs = [g for g in graphs_for(seed) if g.name == fail.graph]
        prog = fuzzgen.generate(seed)
        parts = fail.config.split()
        label = parts[1] if len(parts) > 1 else "O2"
        pred = fuzzgen.failure_predicate(fail.signature(), graphs, seed, mpi_cmd=cmd, mpi_label=label)
        small = fuzzgen.minimize(prog.source, pred, budget=min(args.minimize_budget, 80)) \
            if cmd and pred(prog.source) else prog.source
        path = fuzzgen.save_regression(small, fail, seed, graph=graphs[0], rand_seed=seed % 1000)
        saved.append({"seed": seed, "class": cls, "file": str(path.relative_to(REPO))})
        log(f"  saved {path.relative_to(REPO)} ({cls})")
    # robustness
    for i, f in enumerate((robust or {}).get("failures", [])):
        if f.get("known"):
            continue
        cls = failure_class(f)
        if per_class[cls] >= args.max_per_class:
            continue
        per_class[cls] += 1
        fail = fuzzgen.Failure(f["kind"], f["config"], f["detail"])
        sig_type = re.match(r"(\w+)", str(f["detail"]))
        key = (f["config"], sig_type.group(1) if sig_type else "")

        def pred(text: str, key=key) -> bool:
            g = fuzzgen.check_robust(text, file="mut.g2pl", run_graph=_tiny())
            return g is not None and (g.config, (re.match(r"(\w+)", g.detail) or [""])[0]) == key

        small = fuzzgen.minimize(f["text"], pred, budget=args.minimize_budget) if pred(f["text"]) else f["text"]
        path = fuzzgen.save_regression(small, fail, args.seed * 100_000 + i, tag="_robust")
        saved.append({"seed": f"robust #{i}", "class": cls, "file": str(path.relative_to(REPO))})
        log(f"  saved {path.relative_to(REPO)} ({cls})")
    return saved


def _tiny():
    from g2pl.graph import build_graph

    return build_graph([1, 2, 3, 5], [2, 3, 1, 1], [1.0, 2.0, 0.5, 3.0], directed=False, name="tiny")


# ---------------------------------------------------------------- report


def summarize(args, progs, mpi, robust, saved, total_s) -> tuple[str, dict, bool]:
    res = progs["results"]
    n_gen = sum(r["generated"] for r in res)
    n_comp = sum(r["compiled"] for r in res)
    n_cmp = sum(r["compared"] for r in res)
    runs = sum(r["codes"] for r in res)
    fails = [(r["seed"], f) for r in res for f in r["failures"]]
    by_class: dict[str, list[int]] = defaultdict(list)
    known_cls: dict[str, str] = {}
    for r in res:
        for cls, f in seed_classes(r["failures"]):
            by_class[cls].append(r["seed"])
            k = known_class(f)
            if k:
                known_cls[cls] = k
    new_failure = any(cls not in known_cls for cls in by_class)
    lines = ["# Compiler fuzzing (bench/fuzz.py)", ""]
    lines.append(f"`python bench/fuzz.py --programs {args.programs} --robust {args.robust} --ranks {args.ranks} "
                 f"--seed {args.seed}{' --medium' if args.medium else ''}` — {harness.describe(args.machine)}, "
                 f"{args.jobs} worker(s); g2pl commit {args.commit}; total {total_s:.0f} s.")
    lines += ["", f"## Differential (1 rank, {len(fuzzgen.CONFIGS)} configurations x {3 + args.medium} graphs per program)",
              ""]
    lines.append(f"* programs generated: {n_gen}/{len(res)}; compiled under every configuration: {n_comp}; "
                 f"compared (every configuration ran on every graph): {n_cmp}")
    lines.append(f"* distinct generated modules run: {runs} (identical modules are run once); "
                 f"programs with rand(): {sum(1 for r in res if r.get('rand'))}; "
                 f"mean size {sum(r['lines'] for r in res) / max(1, len(res)):.1f} lines; "
                 f"time {progs['time_s']:.0f} s")
    refs = Counter("skipped (rand())" if "rand()" in r.get("reference", "") else
                   "skipped (other)" if r.get("reference", "").startswith("skipped") else r.get("reference", "")
                   for r in res)
    lines.append("* reference interpreter vs -O0: " + ", ".join(f"{k or 'not run'}: {v}" for k, v in
                                                               sorted(refs.items())))
    lines.append(f"* programs with a failure: {len({s for s, _ in fails})}")
    for cls, seeds in sorted(by_class.items(), key=lambda t: -len(t[1])):
        tag = f" (known open bug {known_cls[cls]})" if cls in known_cls else " (NEW)"
        lines.append(f"  * {cls}{tag}: {len(seeds)} program(s), seeds {seeds[:20]}{' ...' if len(seeds) > 20 else ''}")
    if mpi is not None:
        lines += ["", "## Two ranks (`g2pl run --np 2` vs 1 rank, same configuration)", ""]
        lines.append(f"* runs: {mpi['runs']}; identical: {mpi['compared']}; failures: {len(mpi['failures'])}; "
                     f"time {mpi['time_s']:.0f} s")
        for f in mpi["failures"]:
            new_failure = True
            lines.append(f"  * seed {f['seed']}: {fuzzgen._short(str(fuzzgen.Failure(f['kind'], f['config'], f['detail'], f['graph'])), 300)}")
    if robust is not None:
        p = robust["programs"]
        lines += ["", "## Robustness", ""]
        lines.append(f"* program texts (mutations, truncations, splices, random text): {p.get('cases', 0)}; "
                     f"compiled: {p.get('compiled', 0)}; clean positioned G2PLErrors: {p.get('clean_errors', 0)}; "
                     f"failures: {len(robust['failures'])} "
                     f"({sum(1 for f in robust['failures'] if f.get('known'))} known); time {robust['time_s']:.0f} s")
        rc = Counter(failure_class(f) + (f" (known {f['known']})" if f.get("known") else " (NEW)")
                     for f in robust["failures"])
        for cls, n in rc.most_common():
            lines.append(f"  * {cls}: {n}")
            if "(NEW)" in cls:
                new_failure = True
        g = robust["graphs"]
        lines.append(f"* graph files (fixed malformed cases + random/mutated files): {g['cases']}; "
                     f"failures: {len(g['failures'])}; time {g['time_s']:.0f} s")
        for f in g["failures"][:20]:
            new_failure = True
            lines.append(f"  * {f['case']}: {f['problem']}")
    if saved:
        lines += ["", "## Saved regression files", ""]
        lines += [f"* {s['file']} ({s['class']}, seed {s['seed']})" for s in saved]
    data = {"args": vars(args), "total_s": total_s,
            "programs": {"n": len(res), "generated": n_gen, "compiled": n_comp, "compared": n_cmp, "modules": runs,
                         "time_s": progs["time_s"],
                         "failures": [{"seed": s, **f, "class": failure_class(f)} for s, f in fails]},
            "mpi": mpi, "robust": robust and {k: v for k, v in robust.items()}, "saved": saved}
    return "\n".join(lines) + "\n", data, new_failure


def main(argv: list[str] | None = None) -> int:
    ap = harness.parser(__doc__, quick="20 programs, 200 robustness cases")
    ap.add_argument("--programs", type=int, default=1000, help="random programs to compare (default 1000)")
    ap.add_argument("--robust", type=int, default=10000, help="robustness cases (default 10000)")
    ap.add_argument("--ranks", type=int, choices=(1, 2), default=1, help="2: also compare `g2pl run --np 2`")
    ap.add_argument("--seed", type=int, default=0, help="first program seed; also seeds hypothesis")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="worker processes for phase 1")
    ap.add_argument("--mpi-every", type=int, default=1, help="with --ranks 2: every K-th clean program")
    ap.add_argument("--g2pl", default=None, help="the g2pl executable for --np 2 (needs mpi4py + mpiexec; "
                    "default: next to this Python, else on PATH)")
    ap.add_argument("--no-save", action="store_true", help="do not write tests/fuzz_regressions/ files")
    ap.add_argument("--max-per-class", type=int, default=2, help="regression files per kind of failure")
    ap.add_argument("--minimize-budget", type=int, default=800, help="oracle calls per minimization")
    ap.add_argument("--medium", action="store_true",
                    help="also run every program on a graph of 200-3000 vertices with hubs")
    args = ap.parse_args(argv)
    args.commit, args.machine = harness.git_commit("g2pl"), harness.machine(("numpy", "hypothesis"))
    args.g2pl_cmd = None
    global MEDIUM
    MEDIUM = args.medium
    if args.quick:
        args.programs, args.robust = min(args.programs, 20), min(args.robust, 200)
    if args.ranks == 2:
        args.g2pl_cmd = [args.g2pl] if args.g2pl else harness.g2pl_command()
        probe = subprocess.run([*args.g2pl_cmd, "--help"], capture_output=True, text=True, cwd=REPO)
        if probe.returncode != 0:
            ap.error(f"{' '.join(args.g2pl_cmd)} --help failed: {probe.stderr.strip()[:200]}")
    log = harness.log

    t0 = time.perf_counter()
    log(f"phase 1: {args.programs} programs from seed {args.seed}, {len(fuzzgen.CONFIGS)} configurations, "
        f"{args.jobs} worker(s)")
    progs = run_programs(args, log)
    mpi = None
    if args.ranks == 2:
        log(f"phase 1b: two ranks with {' '.join(args.g2pl_cmd)}")
        mpi = run_mpi(args, progs["results"], log)
    robust = None
    if args.robust > 0:
        log(f"phase 2: {args.robust} robustness cases (+ graph files)")
        robust = run_robust(args, log)
    saved: list[dict] = []
    if not args.no_save:
        log("minimizing and saving new failures")
        saved = save_failures(args, progs, mpi, robust, log)
    text, data, new_failure = summarize(args, progs, mpi, robust, saved, time.perf_counter() - t0)
    print()
    print(text)
    harness.write_report(args.out, harness.stem("fuzz", args.quick), text, data)
    return 1 if new_failure else 0


if __name__ == "__main__":
    sys.exit(main())
