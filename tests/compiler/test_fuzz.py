"""Compiler fuzzing, CI subset (the big runs: `python bench/fuzz.py`; the generator: tests/fuzzgen.py).

* 100 random well-typed programs through the differential oracle: identical `--output` values at
  -O0, -O1, -O2 and -O2 with each pass disabled alone, on small random graphs (undirected and
  directed, non-contiguous IDs; every fifth program also on a graph of hundreds of vertices), with no exception but a clean G2PLError, and (programs without
  rand()) the values of fuzzgen's reference interpreter; a handful of them also with
  `g2pl run --np 2` (skipped without mpi4py/mpiexec).
* 500 robustness cases (hypothesis): mutated real programs and random text only ever compile or
  raise a G2PLError rendered `file:line:col: error: ...`.
* Malformed graph files: a G2PLError naming the file (and the line where one applies).
* Every file in tests/fuzz_regressions/ at every configuration.

`G2PL_FUZZ_SEED=N` shifts the program seeds (default 0) to explore other programs.
"""

from __future__ import annotations

import os
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import g2pl
from g2pl.graph import build_graph

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import fuzzgen  # noqa: E402

BASE = int(os.environ.get("G2PL_FUZZ_SEED", "0"))
N_PROGRAMS = 100
MPI_SEEDS = (3, 11, 27, 58)  # a handful of the 100 also run on 2 ranks

ROBUST = settings(max_examples=200, deadline=None, database=None, derandomize=True,
                  suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                         HealthCheck.filter_too_much])


# ---------------------------------------------------------------- the differential oracle


def test_generator_is_deterministic() -> None:
    for s in (0, 1, 99):
        assert fuzzgen.generate(BASE + s).source == fuzzgen.generate(BASE + s).source
    assert fuzzgen.generate(BASE).source != fuzzgen.generate(BASE + 1).source


@pytest.mark.parametrize("seed", range(BASE, BASE + N_PROGRAMS))
def test_differential(seed: int) -> None:
    prog = fuzzgen.generate(seed)
    # every fifth program also on a graph of hundreds of vertices with hubs (the runtime's size-dependent paths)
    failures, info = fuzzgen.differential(prog, fuzzgen.random_graphs(seed, medium=seed % 5 == 0))
    assert info["compiled"], f"seed {seed}: a generated (well-typed) program does not compile"
    assert not failures, (
        f"seed {seed}: " + "\n".join(str(f) for f in failures[:6]) + f"\n--- program ---\n{prog.source}"
    )


@pytest.mark.parametrize("path", sorted((fuzzgen.ROOT / "programs").glob("*.g2pl")), ids=lambda p: p.stem)
def test_reference_interpreter_on_programs(path: Path) -> None:
    """The reference interpreter (the second oracle of test_differential) agrees with programs/."""
    src = path.read_text()
    if "rand()" in src:
        pytest.skip("the reference interpreter does not model rand()")
    prog = g2pl.compile(src)
    entry = prog.procedures[0]
    for tg in fuzzgen.random_graphs(5) + fuzzgen.random_graphs(9, 2):
        args = {name: {"int": 3, "vid": int(tg.graph.ids[0]), "float": 0.85, "bool": True}[ty.elem]
                for name, ty in prog.params(entry)}
        if path.stem == "pagerank":
            args["iters"] = 5
        ref = fuzzgen.reference_values(src, tg.graph, args, entry=entry)
        got = prog.run(tg.graph, args=args).values
        assert fuzzgen._values_equal(ref, got), f"{tg.name}: {fuzzgen._first_diff(ref, got)}"


def test_reference_interpreter_keeps_the_keys_of_a_keyed_aggregation_in_a_function() -> None:
    """A function body holding `AGG [ ... ] by KEY`, inlined by the reference interpreter: the keys stay
    (they were dropped, making the aggregation a scalar and a whole-graph `!=` beside it elementwise;
    found by bench/fuzz.py seed 109232 as a disagreement the compiler was right in)."""
    src = ("fk(q) = ((min [ id | x <- V ] by (id[x] + 0)) != ({ id[y] | y <- q }) ? 1 : 0);\n"
           "main() {\n  K = fk(V);\n  S = sum [ 1 | e <- E ] by (min [ id | x <- V ] + 0);\n  return K, S;\n}\n")
    for tg in fuzzgen.random_graphs(7):
        ref = fuzzgen.reference_values(src, tg.graph, {})
        got = g2pl.compile(src).run(tg.graph).values
        assert fuzzgen._values_equal(ref, got), f"{tg.name}: {fuzzgen._first_diff(ref, got)}"
        assert ref[0]["kind"] == "scalar" and ref[0]["value"] == 0  # the same graph both sides: not different


@pytest.fixture(scope="module")
def mpi_cmd() -> list[str]:
    cmd = fuzzgen.mpi_command()
    if cmd is None:
        pytest.skip("no MPI here (mpi4py + mpiexec; or set G2PL_FUZZ_G2PL=/path/to/g2pl)")
    return cmd


@pytest.mark.parametrize("k", range(len(MPI_SEEDS)))
def test_two_ranks(k: int, mpi_cmd: list[str]) -> None:
    seed = BASE + MPI_SEEDS[k]
    prog = fuzzgen.generate(seed)
    graphs = fuzzgen.random_graphs(seed)
    which = k % 2  # graph 0 is undirected, graph 1 directed
    label = "O0" if k == 1 else "O2"
    failures, info = fuzzgen.differential(prog, graphs, configs=fuzzgen.CONFIGS[:3])
    assert not failures, "\n".join(map(str, failures))
    failures = fuzzgen.mpi_check(prog, mpi_cmd, info, which=which, opt_label=label)
    assert not failures, f"seed {seed}: " + "\n".join(map(str, failures)) + f"\n--- program ---\n{prog.source}"


# ---------------------------------------------------------------- robustness: programs

CORPUS = fuzzgen.program_corpus() + [(f"gen{s}.g2pl", fuzzgen.generate(10_000 + s).source) for s in range(8)]
TINY = build_graph([1, 2, 3, 5], [2, 3, 1, 1], [1.0, 2.0, 0.5, 3.0], directed=False, name="tiny")


def _robust(text: str) -> None:
    f = fuzzgen.check_robust(text, file="mut.g2pl", run_graph=TINY)
    if f is not None and fuzzgen.known_bug(f):
        return  # an open bug with its own regression file (fuzzgen.KNOWN_BUGS)
    assert f is None, f"{f}\n--- text ---\n{text!r}"


@ROBUST
@given(base=st.sampled_from(CORPUS), other=st.sampled_from(CORPUS), rnd=st.randoms(use_true_random=False))
def test_robust_mutations(base, other, rnd) -> None:
    _robust(fuzzgen.mutate(base[1], rnd, other=other[1]))


@ROBUST
@given(base=st.sampled_from(CORPUS), cut=st.integers(0, 10_000), reps=st.integers(1, 8))
def test_robust_truncate_and_repeat(base, cut, reps) -> None:
    text = base[1]
    _robust(text[: cut % (len(text) + 1)])
    _robust(text[cut % (len(text) + 1):] + text * (reps % 3))


@settings(max_examples=100, deadline=None, database=None, derandomize=True)
@given(text=st.one_of(st.text(max_size=200), st.randoms(use_true_random=False).map(fuzzgen.random_text)))
def test_robust_random_text(text) -> None:
    _robust(text)


def test_robust_cli_messages(tmp_path: Path) -> None:
    """Through `g2pl check`: exit status 2 and `file:line:col: error:` on stderr, no traceback."""
    rng = random.Random(5)
    name, text = CORPUS[0]
    seen = 0
    for _ in range(40):
        mutant = fuzzgen.mutate(text, rng)
        try:
            g2pl.compile(mutant, file="m.g2pl")
            continue
        except g2pl.G2PLError:
            pass
        path = tmp_path / "m.g2pl"
        path.write_text(mutant)
        env = {**os.environ, "PYTHONPATH": str(fuzzgen.ROOT)}
        p = subprocess.run([sys.executable, "-m", "g2pl.cli", "check", str(path)], capture_output=True, text=True,
                           env=env)
        assert p.returncode == 2, p.stderr
        assert re.match(re.escape(str(path)) + r":\d+:\d+: error: ", p.stderr), p.stderr
        assert "Traceback" not in p.stderr
        seen += 1
        if seen == 3:
            break
    assert seen == 3


# ---------------------------------------------------------------- robustness: graph files


@pytest.mark.parametrize("case", fuzzgen.graph_file_cases(), ids=lambda c: c.name)
def test_graph_file(case: fuzzgen.GraphCase, tmp_path: Path) -> None:
    path = tmp_path / case.filename
    path.write_bytes(case.data)
    problem = fuzzgen.check_graph_file(path, case.line, case.ok)
    assert problem is None, f"{case.name}: {problem}"


GOOD_EDGES = b"# comment\n1 2 0.5\n2 3 1.5\n% another\n3 10 2\n10 1 0\n"


@settings(max_examples=60, deadline=None, database=None, derandomize=True)
@given(data=st.binary(max_size=300), suffix=st.sampled_from([".txt", ".csv", ".tsv", ".el", ".mtx", ".npz"]))
def test_graph_random_bytes(data: bytes, suffix: str, tmp_path_factory) -> None:
    d = tmp_path_factory.mktemp("g")
    problem = fuzzgen.check_graph_bytes(data, suffix, d)
    assert problem is None, f"{problem}\n{data!r}"


@settings(max_examples=60, deadline=None, database=None, derandomize=True)
@given(rnd=st.randoms(use_true_random=False), suffix=st.sampled_from([".txt", ".csv", ".mtx"]))
def test_graph_mutated_files(rnd, suffix: str, tmp_path_factory) -> None:
    if suffix == ".mtx":
        base = b"%%MatrixMarket matrix coordinate real general\n% c\n4 4 3\n1 2 0.5\n2 3 1.5\n4 1 2\n"
    elif suffix == ".csv":
        base = GOOD_EDGES.replace(b" ", b",")
    else:
        base = GOOD_EDGES
    text = fuzzgen.mutate(base.decode(), rnd).encode("utf-8", "surrogatepass")
    if rnd.random() < 0.2:
        i = rnd.randrange(len(text) + 1)
        text = text[:i] + bytes([rnd.randrange(256)]) + text[i:]
    d = tmp_path_factory.mktemp("g")
    problem = fuzzgen.check_graph_bytes(text, suffix, d)
    assert problem is None, f"{problem}\n{text!r}"


# ---------------------------------------------------------------- regression files

REGRESSIONS = fuzzgen.regression_files()


@pytest.mark.parametrize("path", REGRESSIONS, ids=lambda p: p.stem)
def test_regression(path: Path, request) -> None:
    if path.stem in fuzzgen.KNOWN_BUGS:
        request.applymarker(pytest.mark.xfail(reason=fuzzgen.KNOWN_BUGS[path.stem], strict=True))
    # files marked `// ranks: 2` also run on 2 ranks where MPI is available
    problems = fuzzgen.check_regression(path, mpi_cmd=fuzzgen.mpi_command())
    assert not problems, "\n".join(problems[:8])


def test_minimizing_a_refused_program_keeps_its_error() -> None:
    """A program the compiler refuses is minimized to one that still shows that error, not to any
    text that fails to compile (such as `0 = 0;`), so the saved regression file holds a program."""
    text = (fuzzgen.REGRESSION_DIR / "fuzz_compile-error_3386227.g2pl").read_text()
    with pytest.raises(g2pl.G2PLError) as err:
        g2pl.compile(text, file="fuzz.g2pl")
    pred = fuzzgen.failure_predicate(("compile-error", "O0"), fuzzgen.random_graphs(1)[:1], 1,
                                     detail=err.value.render())
    assert pred(text)
    assert not pred("0 = 0;\n")
    small = fuzzgen.minimize(text, pred, budget=40)
    assert "rand()" in small and "nvals" in small and pred(small)
