"""The typed IR: the verifier's checks of the words in typed fields and of instruction origins, the
statement ids lowering gives every instruction (inlined code and pass output included), the pass
log's records, and `g2pl explain` attributing code and notes by those ids."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

import g2pl
from g2pl.compiler import ir
from g2pl.compiler.explain import STMT_WIDTH, explain
from g2pl.compiler.passlog import PassNote
from g2pl.compiler.pipeline import Compilation
from g2pl.compiler.plan import Branch
from g2pl.compiler.verify import PlanError, verify_ir, verify_plan
from g2pl.errors import Span

ROOT = Path(__file__).resolve().parents[2]


def _compile(src: str, opt: int = 2) -> tuple[g2pl.Program, Compilation]:
    prog = g2pl.compile(src, opt=opt)
    return prog, prog.compilation(prog.entry_name())


def _plan_instrs(comp: Compilation) -> list[ir.Instr]:
    out: list[ir.Instr] = []
    for s in comp.plan.states:
        out += s.instrs + [x.instr for x in s.exchange]
    return out


def _rows(report: str) -> dict[str, str]:
    """Statement text -> its row of the explain report with the detail lines under it."""
    rows: dict[str, str] = {}
    for m in re.finditer(r"^ {0,3}\d+  (\S.*?)  .*\n(?: {6}.*\n?)*", report + "\n", re.M):
        rows[m.group(1).strip()] = m.group(0)
    return rows


def _states(row: str) -> str:
    """The STATES column of an explain row."""
    return row[4 + 2 + STMT_WIDTH + 2:].split()[0]


# ---------------------------------------------------------------- the verifier: words


def test_verifier_reports_a_word_outside_its_literal_type() -> None:
    _prog, comp = _compile((ROOT / "programs" / "bfs.g2pl").read_text())
    state = next(s for s in comp.plan.states if any(isinstance(i, ir.Compute) for i in s.instrs))
    k = next(k for k, i in enumerate(state.instrs) if isinstance(i, ir.Compute))
    good = state.instrs[k]
    state.instrs[k] = dataclasses.replace(good, dom="X")
    with pytest.raises(PlanError, match=r"Compute\.dom holds 'X', not one of S, V, E"):
        verify_plan(comp.plan)
    state.instrs[k] = good
    verify_plan(comp.plan)


def test_verifier_reports_a_bad_word_inside_an_expression_and_a_field_tuple() -> None:
    _prog, comp = _compile("p() { X = { id < 5 | v <- V }; n = sum [ 1 | (u, v) <- E, u in X ]; return n; }", 0)
    proc = comp.proc
    k = next(k for k, i in enumerate(proc.body) if isinstance(i, ir.EndpointExchange))
    ends = proc.body[k]
    assert isinstance(ends, ir.EndpointExchange)
    proc.body[k] = dataclasses.replace(ends, fields=tuple((v, "mid", e) for v, _s, e in ends.fields))
    with pytest.raises(PlanError, match=r"EndpointExchange\.fields holds 'mid', not one of src, dst"):
        verify_ir(proc)
    far = ir.Load("bool", ends.span, "X", "vertex", "far")  # type: ignore[arg-type]
    proc.body[k] = ends
    j = next(j for j, i in enumerate(proc.body) if isinstance(i, ir.Compute) and i.dom == "V")
    proc.body[j] = dataclasses.replace(proc.body[j], ex=ir.Op("bool", ends.span, "!", (far,)))
    with pytest.raises(PlanError, match=r"Load\.pos holds 'far'"):
        verify_ir(proc)


def test_verifier_reports_a_bad_type_in_the_symbol_table() -> None:
    _prog, comp = _compile((ROOT / "programs" / "bfs.g2pl").read_text())
    comp.proc.vars["Level"] = ir.Ty("vertex", "string")  # type: ignore[arg-type]
    with pytest.raises(PlanError, match=r"variable Level: Ty\.elem holds 'string'"):
        verify_ir(comp.proc)
    comp.plan.vars["Level"] = ir.Ty("vertex", "string")  # type: ignore[arg-type]
    with pytest.raises(PlanError, match=r"variable Level: Ty\.elem holds 'string'"):
        verify_plan(comp.plan)  # the plan's own copy of the symbol table


# ---------------------------------------------------------------- the verifier: origins


def test_verifier_reports_an_instruction_naming_no_statement() -> None:
    _prog, comp = _compile((ROOT / "programs" / "bfs.g2pl").read_text())
    n = len(comp.proc.statements)
    assert n == 10
    state = next(s for s in comp.plan.states if s.exchange)
    x = state.exchange[0]
    state.exchange[0] = dataclasses.replace(x, instr=dataclasses.replace(x.instr, origin=n))
    with pytest.raises(PlanError, match=f"origin {n} names no statement \\(the procedure has {n}\\)"):
        verify_plan(comp.plan)
    state.exchange[0] = x
    test = next(s for s in comp.plan.states if isinstance(s.term, Branch))
    test.term = dataclasses.replace(test.term, origin=n + 1)
    with pytest.raises(PlanError, match=f"state {test.id}: origin {n + 1} names no statement"):
        verify_plan(comp.plan)
    loop = next(i for i in comp.proc.body if isinstance(i, ir.WhileI))
    inner = dataclasses.replace(loop.body[0], origin=-1)
    comp.proc.body[comp.proc.body.index(loop)] = dataclasses.replace(loop, body=(inner, *loop.body[1:]))
    with pytest.raises(PlanError, match="origin -1 names no statement"):
        verify_ir(comp.proc)


def test_an_instruction_cannot_be_made_without_an_origin() -> None:
    span = Span.point(1, 1)
    with pytest.raises(TypeError, match="origin"):
        ir.Compute(span, "x", "S", ir.Const("int", span, 1))  # type: ignore[call-arg]


# ---------------------------------------------------------------- origins from lowering and the passes

TWO_CALLS = """p() {
  S = { id % 2 == 0 | v <- V };
  T = { id % 3 == 0 | v <- V };
  U = { id % 5 == 0 | v <- V };
  A = Deg(S);
  B = Deg(T);
  A = Deg(U);
  return A, B;
}
Deg(X) = { sum [ 1 | u <- nvals v, u in X ] | v <- V };
"""


def test_inlined_code_belongs_to_the_calling_statement() -> None:
    _prog, comp = _compile(TWO_CALLS, 0)
    starts = [(sp.line, sp.col) for sp in comp.proc.statements]
    assert starts == [(line, 3) for line in range(2, 9)]  # ids in source (pre-)order
    reduces = [i for i in _plan_instrs(comp) if isinstance(i, ir.NbrReduce)]
    assert {i.span.line for i in reduces} == {10}  # all three spans point into the function body
    assert [(i.target, comp.proc.statements[i.origin].line) for i in reduces] == [("A", 5), ("B", 6), ("A", 7)]


def test_explain_gives_inlined_code_and_its_notes_to_the_calling_statement() -> None:
    prog, comp = _compile(TWO_CALLS)
    rows = _rows(explain(prog.module, comp))
    first, again = rows["A = Deg(S);"], rows["A = Deg(U);"]
    assert "sum over in-neighbours -> A; records only from senders where S@nbr" in first
    assert "U@nbr" not in first  # the old (defs, span) matching gave both `A = Deg(..)` to the last one
    assert "sum over in-neighbours -> A; records only from senders where U@nbr" in again
    assert "opt      prune: line 10: A sent only if S@nbr" in first
    assert "opt      prune: line 10: A sent only if U@nbr" in again and "S@nbr" not in again
    assert "prune: line 10: B sent only if T@nbr" in rows["B = Deg(T);"]


def test_pass_output_keeps_the_origin() -> None:
    src = (ROOT / "tests" / "fixtures" / "passes" / "reuse" / "repeated_degree.g2pl").read_text()
    _prog, comp = _compile(src, 1)
    copy = next(i for i in _plan_instrs(comp) if i.defs() == ("B",))
    assert isinstance(copy, ir.Compute) and comp.proc.statements[copy.origin].line == 5  # reuse's local copy
    deep = "p() {\n  s = 1;\n  x = s" + " + s" * 300 + ";\n  return x;\n}\n"  # flatten hoists temporaries
    _prog, comp = _compile(deep, 0)
    temps = [i for i in _plan_instrs(comp) if i.defs()[0].startswith("$")]
    assert len(temps) > 5 and {comp.proc.statements[i.origin].line for i in temps} == {3}
    _prog, comp = _compile((ROOT / "programs" / "matching.g2pl").read_text())
    within = next(x.instr for s in comp.plan.states for x in s.exchange if getattr(x, "within", None))
    assert comp.proc.statements[within.origin].line == 9  # edgeset's exchange: from `Edges(..)` in line 9


# ---------------------------------------------------------------- pass notes and explain

REORDERED = """p() {
  a = { id % 2 == 0 | v <- V };
  b = count [ v | v <- a ];
  c = { id % 3 == 0 | v <- V };
  d = count [ v | v <- c ];
  return b, d;
}
"""


def test_pass_notes_print_as_log_lines() -> None:
    assert str(PassNote("merge", "moved", line=7, origins=(2,))) == "merge: line 7: moved"
    assert str(PassNote("pack", "record x:bit = 1 bits", state=3)) == "pack: state 3: record x:bit = 1 bits"
    assert str(PassNote("reuse", "no exchange is repeated")) == "reuse: no exchange is repeated"


def test_notes_name_the_statements_of_reordered_and_merged_code() -> None:
    prog, comp = _compile(REORDERED)
    notes = {n.pass_name: n for n in comp.plan.log if n.line is not None}
    assert notes["reorder"].origins == (2,) and notes["reorder"].vars == ("c",)  # `c = ...`, statement 2
    assert notes["merge"].origins == (3,) and notes["merge"].vars == ("d",)
    packs = [n for n in comp.plan.log if n.pass_name == "pack"]
    assert [n.origins for n in packs] == [(1, 3)]  # the state both aggregations now share
    assert f"pass: {notes['merge']}" in comp.plan_text()
    rows = _rows(explain(prog.module, comp))
    assert "opt      reorder: line 4: `c = [V] ((id % 3) == 0)` moved ahead of the exchange at line 3" in rows[
        "c = { id % 3 == 0 | v <- V };"]
    b, d = rows["b = count [ v | v <- a ];"], rows["d = count [ v | v <- c ];"]
    assert "opt      merge: line 5" in d and "merge:" not in b
    assert all("opt      pack: state 0" in r for r in (b, d))
    assert _states(b) == _states(d) == "0"


def test_notes_about_no_statement_are_listed_for_the_procedure() -> None:
    prog, comp = _compile(REORDERED)
    general = [n for n in comp.plan.log if not n.origins]
    assert [n.pass_name for n in general] == ["reuse", "direction", "edgeset", "delta", "receivers", "sparse"]
    report = explain(prog.module, comp)
    for n in general:
        assert f"\npass: {n}\n" in report


def test_explain_gives_each_branch_to_its_own_statement() -> None:
    prog, comp = _compile("p(t: int) {\n  x = 1;\n  if (t > 0) { x = 2; } if (t > 1) { x = 3; }\n  return x;\n}\n")
    branches = [s for s in comp.plan.states if isinstance(s.term, Branch)]
    assert [comp.proc.statements[s.term.origin].col for s in branches] == [3, 25]  # both on line 3
    rows = _rows(explain(prog.module, comp))
    first, second = rows["if (t > 0)"], rows["if (t > 1)"]  # matched by line, both went to the first
    assert _states(first) == str(branches[0].id) and _states(second) == str(branches[1].id)
    assert "local: branch" in first and "local: branch" in second
