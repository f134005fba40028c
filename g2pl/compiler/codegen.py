"""Plan -> readable, vectorized Python module (rendered with Jinja2).

Dispatch is one method per IR node (`_ex_<Node>`, `_instr_<Node>`); the
template holds only the module skeleton.  User identifiers never reach the
output unmangled: IR variable `X` becomes `v_X`, temporaries `$3` become `t3`,
and anything quoted (file names, source text in comments) goes through
`repr()` or `_comment()`.
"""

from __future__ import annotations

import functools
import math
import re
from importlib import resources
from pathlib import Path

import jinja2

from g2pl.compiler import ir
from g2pl.compiler.plan import Branch, Exch, Goto, Halt, Plan, exchange_fields

_BINARY = {"+": "+", "-": "-", "*": "*", "<": "<", "<=": "<=", ">": ">", ">=": ">=", "==": "==", "!=": "!="}
_LOGIC = {"&&": "logical_and", "||": "logical_or"}
_FUNCS = {"min": "minimum", "max": "maximum", "abs": "abs", "sqrt": "sqrt", "log": "log", "exp": "exp",
          "floor": "floor", "ceil": "ceil"}


@functools.lru_cache(maxsize=1)
def _template() -> jinja2.Template:
    try:
        text = resources.files("g2pl.templates").joinpath("module.py.j2").read_text()
    except (ModuleNotFoundError, FileNotFoundError):
        text = (Path(__file__).resolve().parents[2] / "templates" / "module.py.j2").read_text()
    env = jinja2.Environment(keep_trailing_newline=True, undefined=jinja2.StrictUndefined, autoescape=False)
    return env.from_string(text)


def pyname(var: str) -> str:
    """Mangle an IR variable into a safe Python identifier."""
    if var.startswith("$"):
        return "t" + var[1:]
    if var == "@Weight":
        return "rt.weight"
    if var == "@id":
        return "rt.ids"
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", var):
        raise ValueError(f"unexpected variable name {var!r}")
    return "v_" + var


def _comment(text: str) -> str:
    """Source text made safe for a one-line comment (cut first: a line may be megabytes long)."""
    return "".join(ch if ch.isprintable() and ord(ch) < 128 else "?" for ch in text[:100])


def _doc(text: str) -> str:
    """Text made safe inside a triple-quoted docstring."""
    return _comment(text).replace("\\", "/").replace('"', "'")


def _const(value: object, elem: str) -> str:
    if elem == "bool":
        return "True" if value else "False"
    if elem == "float":
        f = float(value)  # type: ignore[arg-type]
        if math.isnan(f):
            return "NAN"
        if math.isinf(f):
            return "INF" if f > 0 else "(-INF)"
        return repr(f)
    return repr(int(value))  # type: ignore[call-overload]


class _ExGen:
    """Renders a local expression for one domain (S, V, E or A)."""

    def __init__(self, dom: str) -> None:
        self.dom = dom
        self.lib = "np" if dom == "S" else "xp"
        self.adj_reads: dict[tuple[str, str], str] = {}  # (var, pos) -> local name, for domain A

    def __call__(self, e: ir.Ex) -> str:
        return getattr(self, "_ex_" + type(e).__name__)(e)

    def _ex_Const(self, e: ir.Const) -> str:
        if e.elem in ("int", "vid"):  # int64, so constant-only arithmetic wraps too (not a Python int)
            return f"np.int64({_const(e.value, e.elem)})"
        return _const(e.value, e.elem)

    def _ex_Load(self, e: ir.Load) -> str:
        if e.kind == "scalar" or e.pos == "here":
            return pyname(e.var)
        if self.dom == "X":  # sender side, over owned + ghost vertices: the exchanged (ext) array
            key = (e.var, "nbr")
            if key not in self.adj_reads:
                self.adj_reads[key] = f"_x{len(self.adj_reads)}"
            return self.adj_reads[key]
        key = (e.var, e.pos)
        if key not in self.adj_reads:
            prefix = {"nbr": "nb", "self": "sf", "edge": "ed"}[e.pos]
            base = pyname(e.var).replace("rt.", "")
            self.adj_reads[key] = f"_{prefix}_{base}"
        return self.adj_reads[key]

    def _ex_Ids(self, e: ir.Ids) -> str:
        if self.dom == "X":
            return "rt.ext_ids"
        return {"here": "rt.ids", "src": "rt.src_ids", "dst": "rt.dst_ids",
                "nbr": "rt.ext_ids[_nbr]", "self": "rt.ids[_own]"}[e.pos]

    def _ex_Op(self, e: ir.Op) -> str:
        a = [self(x) for x in e.args]
        op = e.op
        if op == "-" and len(a) == 1:
            return f"(-{a[0]})"
        if op in _BINARY:
            return f"({a[0]} {_BINARY[op]} {a[1]})"
        if op in _LOGIC:
            return f"{self.lib}.{_LOGIC[op]}({a[0]}, {a[1]})"
        if op == "!":
            return f"{self.lib}.logical_not({a[0]})"
        if op == "/":
            return f"{self.lib}.true_divide({a[0]}, {a[1]})"
        if op == "%":
            return f"rt.mod({a[0]}, {a[1]})"
        if op in _FUNCS:
            return f"{self.lib}.{_FUNCS[op]}({', '.join(a)})"
        if op == "int":
            return f"rt.to_int({a[0]})"
        if op == "float":
            return f"rt.to_float({a[0]})"
        raise NotImplementedError(op)

    def _ex_Where(self, e: ir.Where) -> str:
        c, a, b = self(e.cond), self(e.then), self(e.other)
        if self.dom == "S":
            return f"({a} if {c} else {b})"
        return f"rt.where({c}, {a}, {b})"

    def _ex_Rand(self, e: ir.Rand) -> str:
        if self.dom == "A":
            return f"rt.rand({e.site}, 'A', adj, _E)"
        return f"rt.rand({e.site}, {self.dom!r})"


class _AtExGen(_ExGen):
    """Renders a V/E expression at the elements `_i` only (every array read indexed by `_i`)."""

    def _ex_Load(self, e: ir.Load) -> str:
        return pyname(e.var) if e.kind == "scalar" else f"{pyname(e.var)}[_i]"

    def _ex_Ids(self, e: ir.Ids) -> str:
        return f"{super()._ex_Ids(e)}[_i]"

    def _ex_Rand(self, e: ir.Rand) -> str:  # pragma: no cover - excluded by _sparse_conjunction
        raise AssertionError("rand() is drawn over the whole domain")


def _sparse_conjunction(i: ir.Compute) -> ir.Ex | None:
    """`rest` when `i` computes `M && rest` over V or E, M a set variable and `rest` worth skipping
    (two operations or more, no rand()): where M is sparse, `rest` is evaluated at M's members only."""
    e = i.ex
    if i.dom not in ("V", "E") or not (isinstance(e, ir.Op) and e.op == "&&"):
        return None
    m, rest = e.args
    if not (isinstance(m, ir.Load) and m.pos == "here" and m.kind != "scalar" and m.elem == "bool"):
        return None
    if ir.has_rand(rest) or sum(isinstance(n, (ir.Op, ir.Where)) for n in ir.walk(rest)) < 2:
        return None
    return rest


def at_sender(e: ir.Ex) -> ir.Ex:
    """A sender-only domain-A expression rewritten over the sender's own vertex (nbr -> here)."""
    def leaf(x: ir.Ex) -> ir.Ex:
        if isinstance(x, ir.Load) and x.pos == "nbr":
            return ir.Load(x.elem, x.span, x.var, x.kind, "here")
        if isinstance(x, ir.Ids) and x.pos == "nbr":
            return ir.Ids(x.elem, x.span, "here")
        return x

    return ir.map_leaves(e, leaf)


def _varies(e: ir.Ex) -> bool:
    """True if the expression differs between vertices (reads a vertex value or an ID)."""
    return any(isinstance(n, ir.Load) and n.kind != "scalar" or isinstance(n, ir.Ids) for n in ir.walk(e))


class CodeGen:
    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.proc = plan.proc
        self.src = plan.proc.source_lines

    def line_comment(self, line: int) -> str:
        text = self.src[line - 1].strip() if 1 <= line <= len(self.src) else ""
        return f"# L{line}: {_comment(text)}"

    def ex(self, e: ir.Ex | None, dom: str) -> str:
        """A scalar, vertex or edge expression (domain A is rendered by the NbrReduce code)."""
        assert dom in ("S", "V", "E"), dom
        return "None" if e is None else _ExGen(dom)(e)

    def elem_of(self, var: str) -> str:
        return self.proc.vars[var].elem

    # ---- instructions

    def instr(self, i: ir.Instr) -> list[str]:
        return getattr(self, "_instr_" + type(i).__name__)(i)

    def _instr_Compute(self, i: ir.Compute) -> list[str]:
        s = self.ex(i.ex, i.dom)
        elem = self.elem_of(i.target)
        conv = {"S": "rt.scalar", "V": "rt.as_v", "E": "rt.as_e"}[i.dom]
        line = f"{pyname(i.target)} = {conv}({s}, {elem!r})"
        rest = _sparse_conjunction(i)
        if rest is not None:  # few members: the rest only at them
            m = pyname(i.ex.args[0].var)
            line = (f"{pyname(i.target)} = {conv}({s}, {elem!r}) if (_i := rt.members_if_few({m})) is None "
                    f"else rt.bools_at(_i, {_AtExGen(i.dom)(rest)}, {i.dom!r})  # sparse {_comment(i.ex.args[0].var)}")
        return [line]

    def _instr_MarkEndpoints(self, i: ir.MarkEndpoints) -> list[str]:
        s = self.ex(i.mask, "E")
        return [f"{pyname(i.target)} = rt.mark_endpoints({s}, {i.sides!r})"]

    def _instr_NbrReduce(self, i: ir.NbrReduce) -> list[str]:
        lines = [f"adj = rt.adj(out={i.out})"]
        send = None
        if i.send is not None:  # prune: the sender-side condition, evaluated by each sender
            src = self.ex(at_sender(i.send), "V")
            lines += [f"_send = {src}  # only these vertices send (prune)"]
            send = "_send"
        if ir.sender_only(i.value) and ir.sender_only(i.mask):
            lines += self._nbr_sender_side(i, send)
        else:
            lines += self._nbr_per_entry(i, send)
        return lines

    def _exchange_call(self, arrays: list[str], names: list[str], send: str | None, what: str) -> tuple[str, str]:
        """`lhs = rt.exchange_fields(...)` for these vertex arrays; returns (line, presence name or '')."""
        outs = [f"_x{k}" for k in range(len(arrays))]
        pres = "_present" if send is not None else ""
        lhs = ", ".join(outs + ([pres] if pres else []))
        args = f"({''.join(a + ', ' for a in arrays)}), ({''.join(repr(n) + ', ' for n in names)})"
        if send is not None:
            args += f", send={send}"
        if not lhs:
            return f"rt.exchange_fields({args})  # {what}", pres
        return f"{lhs}, = rt.exchange_fields({args})  # {what}", pres

    def _nbr_sender_side(self, i: ir.NbrReduce, send: str | None) -> list[str]:
        """The message value depends on the sender alone: each sender computes it once, then the
        receivers combine (sums, counts and or/and as CSR mat-vec products)."""
        lines: list[str] = []
        if self.plan.pack:
            arrays, names, exts = [], [], {}
            for role, ex in (("value", i.value), ("mask", i.mask)):
                if ex is None:
                    continue
                src = self.ex(at_sender(ex), "V")
                if not _varies(ex):
                    exts[role] = src
                    continue
                lines += [f"_{role} = {src}  # computed by each sender"]
                arrays.append(f"_{role}")
                names.append(f"{i.target}.{role}")
                exts[role] = f"_x{len(arrays) - 1}"
            call, pres = self._exchange_call(arrays, names, send, "the message: only what this superstep needs")
            lines.append(call)
            val, mask = exts.get("value", "None"), exts.get("mask")
        else:
            g = _ExGen("X")
            val = g(i.value)
            mask = g(i.mask) if i.mask is not None else None
            reads = list(g.adj_reads)
            arrays = [pyname(v) for v, _ in reads]
            names = [v for v, _ in reads]
            call, pres = self._exchange_call(arrays, names, send,
                                             f"message fields {', '.join(_comment(v) for v in names) or '(none)'}")
            lines.append(call)
        if pres:
            mask = pres if mask is None else f"xp.logical_and({pres}, {mask})"
        if self.plan.prune:
            lines.append(f"rt.count_messages(adj, {pres or 'None'})")
        push = ""
        if i.push and pres:
            lines.append(f"_E = rt.active_entries(adj, {pres}, {self.site()})  # push from few senders, else pull")
            push = ", entries=_E"
        if i.recv is not None:
            src = self.ex(i.recv, "V")
            lines += [f"_recv = {src}  # only these receivers use the result: the pull skips the rest"]
            push += ", recv=_recv"
        lines.append(f"{pyname(i.target)} = rt.nbr_combine({i.op!r}, {val}, {mask or 'None'}, adj, {i.elem!r}{push})")
        return lines

    def site(self) -> int:
        self._sites = getattr(self, "_sites", 0) + 1
        return self._sites

    def _nbr_per_entry(self, i: ir.NbrReduce, send: str | None) -> list[str]:
        """General case: fields travel to the receivers, which evaluate the head per adjacency entry."""
        g = _ExGen("A")
        val = g(i.value)
        mask = g(i.mask) if i.mask is not None else None
        nbr = [(var, local) for (var, pos), local in g.adj_reads.items() if pos == "nbr"]
        call, pres = self._exchange_call([pyname(v) for v, _ in nbr], [v for v, _ in nbr], send,
                                         f"message fields {', '.join(_comment(v) for v, _ in nbr) or '(none)'}")
        lines = [call]
        if self.plan.prune:
            lines.append(f"rt.count_messages(adj, {pres or 'None'})")
        if i.push and pres:
            lines.append(f"_E = rt.active_entries(adj, {pres}, {self.site()}, per_entry=True)  "
                         "# push from few senders, else pull")
        else:
            lines.append("_E = None  # every adjacency entry (pull)")
        lines += ["_nbr = rt.entry_index(adj, 'nbr', _E)", "_own = rt.entry_index(adj, 'owner', _E)",
                  "_eid = rt.entry_index(adj, 'eid', _E)"]
        for k, (_v, local) in enumerate(nbr):
            lines.append(f"{local} = _x{k}[_nbr]")
        for (var, pos), local in g.adj_reads.items():
            if pos == "self":
                lines.append(f"{local} = {pyname(var)}[_own]")
            elif pos == "edge":
                lines.append(f"{local} = rt.take({pyname(var)}, _eid)")
        if pres:
            lines.append(f"_sent = {pres}[_nbr]")
            mask = "_sent" if mask is None else f"xp.logical_and(_sent, {mask})"
        lines.append(f"{pyname(i.target)} = rt.nbr_reduce({i.op!r}, {val}, {mask or 'None'}, adj, {i.elem!r}, _E)")
        return lines

    def _instr_GlobalReduce(self, i: ir.GlobalReduce) -> list[str]:
        val, mask = self.ex(i.value, i.dom), self.ex(i.mask, i.dom)
        return [
            f"h_{pyname(i.target)} = rt.aggregate({i.op!r}, {val}, {mask}, {i.dom!r}, {i.elem!r})"
        ]

    def _instr_EndpointExchange(self, i: ir.EndpointExchange) -> list[str]:
        vars_ = list(dict.fromkeys(var for var, _side, _elem in i.fields))
        exts = {v: f"_x{k}" for k, v in enumerate(vars_)}
        lines = [f"{', '.join(exts.values())}, = rt.endpoints(({', '.join(pyname(v) for v in vars_)},), "
                 f"({', '.join(repr(v) for v in vars_)},))  # vertex values for edge endpoints"]
        need = "None"
        if self.plan.prune and i.need is not None:
            need = self.ex(i.need, "E")
            lines += [f"_need = {need}  # the values are only used along these edges"]
            need = "_need"
        if self.plan.prune:
            lines.append(f"rt.count_messages(None, edges={need})")
        if i.within is not None:  # edgeset: the conjunction of the fields, as a shrinking set
            parts = "".join(f"({exts[var]}, {side!r}), " for var, side, _elem in i.fields)
            return lines + [f"{pyname(i.within)} = rt.edges_within(({parts}), {self.site()})  "
                            f"# edges with {_comment(i.conjunction())}"]
        for (var, side, _elem), t in zip(i.fields, i.targets):
            lines.append(f"{pyname(t)} = rt.at_endpoint({exts[var]}, {side!r}, {need})  # {_comment(var)} at {side}")
        return lines

    def _instr_RemoteMark(self, i: ir.RemoteMark) -> list[str]:
        idx, mask = self.ex(i.index, i.dom), self.ex(i.mask, i.dom)
        return [f"{pyname(i.target)} = rt.remote_mark({idx}, {mask}, {i.dom!r})"]

    def remote_read(self, i: ir.RemoteRead, phase: str) -> list[str]:
        req = "rq" + pyname(i.target)
        if phase == "request":
            idx = self.ex(i.index, i.dom)
            conv = "rt.as_v" if i.dom == "V" else "rt.as_e"
            return [f"{req} = rt.remote_request({conv}({idx}, 'vid'))"]
        return [f"{pyname(i.target)} = rt.remote_reply({pyname(i.var)}, {req}, {i.elem!r})"]

    # ---- states

    def state(self, s) -> list[str]:
        out = [f"if state == {s.id}:"]
        body: list[str] = []
        ls = s.lines()
        where = f" (line{'s' if len(ls) > 1 else ''} {', '.join(map(str, ls))})" if ls else ""
        body.append(f"# ---- state {s.id}{where}")
        last_line = None
        for i in s.instrs:
            if i.span.line != last_line:
                body.append(self.line_comment(i.span.line))
                last_line = i.span.line
            body += self.instr(i)
        if s.exchange:
            body.append("# exchange (ends the superstep)")
            for x in s.exchange:
                body.append(self.line_comment(x.instr.span.line))
                body += self.exchange(x)
            body.append(f"rt.end_superstep({s.id})  # barrier; aggregators combined")
            for x in s.exchange:
                if isinstance(x.instr, ir.GlobalReduce):
                    t = pyname(x.instr.target)
                    body.append(f"{t} = rt.result(h_{t})")
        body += self.terminator(s)
        out += ["    " + b for b in body]
        return out

    def exchange(self, x: Exch) -> list[str]:
        if isinstance(x.instr, ir.RemoteRead):
            return self.remote_read(x.instr, x.phase)
        return self.instr(x.instr)

    def terminator(self, s) -> list[str]:
        t = s.term
        if isinstance(t, Goto):
            return [f"state = {t.target}", "continue"]
        if isinstance(t, Branch):
            c = self.ex(t.cond, "S")
            return [self.line_comment(t.line), f"state = {t.then} if {c} else {t.other}", "continue"]
        assert isinstance(t, Halt)
        if t.ret is None:
            return ["return []"]
        items = ", ".join(
            f"({v.name!r}, {v.ty.kind!r}, {v.ty.elem!r}, rt.collect({v.ty.kind!r}, {v.ty.elem!r}, {pyname(v.var)}))"
            for v in t.ret.values
        )
        return [self.line_comment(t.ret.span.line), f"return [{items}]"]

    def variables(self) -> list[str]:
        """Python names of every program variable, temporary and pending remote request."""
        return list(self.variable_types())

    def variable_types(self) -> dict[str, tuple[str, str]]:
        """(kind, element type) of each variable of `variables()`; a pending remote request is
        ("request", elem). A checkpoint is checked against these before it is resumed."""
        params = dict(self.proc.params)
        out = {pyname(v): (t.kind, t.elem) for v, t in self.proc.vars.items()
               if not v.startswith("@") and v not in params}
        for st in self.plan.states:
            for x in st.exchange:
                if isinstance(x.instr, ir.RemoteRead):
                    out.setdefault("rq" + pyname(x.instr.target), ("request", self.proc.vars[x.instr.target].elem))
        return out

    def module(self) -> str:
        plan = self.plan
        fields = plan.program_fields()
        prologue = []
        for name, ty in self.proc.params:
            prologue.append(f"{pyname(name)} = rt.scalar(args[{name!r}], {ty.elem!r})  # parameter {name}: {ty.elem}")
        names = self.variables()
        if names:
            prologue.append(f"{' = '.join(names)} = None  # every variable: what a checkpoint saves")
        prologue += ["state = 0", "_saved = rt.resume()  # --resume: continue from the last checkpoint",
                     "if _saved is not None:"]
        if names:
            prologue.append(f"    state, ({', '.join(names)},) = rt.restored(_saved, VARIABLES)")
        else:
            prologue.append("    state, _ = rt.restored(_saved, VARIABLES)")
        states = [self.state(s) for s in plan.states]
        return _template().render(
            file_doc=_doc(self.proc.file),
            proc_doc=_doc(self.proc.name),
            proc_lit=repr(self.proc.name),
            opt=plan.opt_level,
            params=repr([(n, t.elem) for n, t in self.proc.params]),
            record_fields=repr([(f.name, f.elem) for f in fields]),
            record_bytes=sum(f.size for f in fields),
            directions=repr(plan.directions()),
            prune=plan.prune,
            pack=plan.pack,
            rand_sites=self.proc.rand_sites,
            state_lines=repr({s.id: s.lines() for s in plan.states}),
            variables=repr(tuple(self.variables())),
            variable_types=repr(tuple(self.variable_types().values())),
            save_args=", ".join(self.variables()),
            prologue=prologue,
            states=states,
        )


def generate(plan: Plan) -> str:
    """Python source of the compiled module for `plan`."""
    return CodeGen(plan).module()


__all__ = ["generate", "pyname", "exchange_fields"]
