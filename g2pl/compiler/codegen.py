"""Plan -> readable, vectorized Python module (rendered with Jinja2).

Dispatch is one method per IR node (`_ex_<Node>`, `_instr_<Node>`); the
template holds only the module skeleton.  User identifiers never reach the
output unmangled: IR variable `X` becomes `v_X`, temporaries `$3` become `t3`,
and anything quoted (file names, source text in comments) goes through
`repr()` or `_comment()`.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import re
from importlib import resources
from pathlib import Path
from typing import cast

import jinja2

from g2pl.compiler import ir
from g2pl.compiler.exchange import (
    AggregateExchange,
    CommonExchange,
    EndpointRecord,
    Exchange,
    KeyedExchange,
    NbrExchange,
)
from g2pl.compiler.passes.pack import field_elem
from g2pl.compiler.passes.reuse import ex_key
from g2pl.compiler.passes.sparse import sparse_rest
from g2pl.compiler.plan import Branch, Goto, Halt, Plan
from g2pl.contract import Broadcast, Spec

_BINARY = {"+": "+", "-": "-", "*": "*", "<": "<", "<=": "<=", ">": ">", ">=": ">=", "==": "==", "!=": "!="}
_LOGIC = {"&&": "logical_and", "||": "logical_or"}
_FUNCS = {"min": "minimum", "max": "maximum", "abs": "abs", "sqrt": "sqrt", "log": "log", "exp": "exp",
          "floor": "floor", "ceil": "ceil"}
_INT_OPS = ("idiv", "bitand", "bitor", "bitxor", "bitnot", "shl", "shr")  # total int64 ops (runtime/intops.py)


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
    if var == "@directed":
        return "rt.directed"
    if var == ir.ALL_EDGES_VAR:
        return "rt.all_edges"
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

    def __init__(self, dom: str, fields: dict[str, str] | None = None) -> None:
        self.dom = dom
        self.lib = "np" if dom == "S" else "xp"
        self.adj_reads: dict[tuple[str, str], str] = {}  # (var, pos) -> local name, for domain A
        self.fields = fields or {}  # domain X: the local name of each arrived field (ext array)

    def __call__(self, e: ir.Ex) -> str:
        return getattr(self, "_ex_" + type(e).__name__)(e)

    def _ex_Const(self, e: ir.Const) -> str:
        if e.elem in ("int", "vid"):  # int64, so constant-only arithmetic wraps too (not a Python int)
            return f"np.int64({_const(e.value, e.elem)})"
        return _const(e.value, e.elem)

    def _ex_Load(self, e: ir.Load) -> str:
        if e.kind == "scalar" or e.pos == "here" and self.dom != "W":
            return pyname(e.var)
        if e.pos == "rev":  # an edge set at each edge's reverse (false where there is none)
            return f"rt.reverse_edges({pyname(e.var)})"
        if self.dom == "X":  # sender side, over owned + ghost vertices: the exchanged (ext) array
            return self.fields[e.var]
        key = (e.var, e.pos)
        if key not in self.adj_reads:
            prefix = {"nbr": "nb", "self": "sf", "edge": "ed", "here": "hr", "src": "su", "dst": "dv",
                      "src_nbr": "uw", "dst_nbr": "vw", "nbr_self": "ns", "self_nbr": "sn"}[e.pos]
            base = pyname(e.var).replace("rt.", "")
            self.adj_reads[key] = f"_{prefix}_{base}"
        return self.adj_reads[key]

    def _ex_Ids(self, e: ir.Ids) -> str:
        if self.dom == "X":
            return "rt.ext_ids"
        if self.dom == "W":
            return f"C.{e.pos}_ids"
        return {"here": "rt.ids", "src": "rt.src_ids", "dst": "rt.dst_ids",
                "nbr": "E.nbr_ids", "self": "E.own_ids"}[e.pos]

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
            return f"ops.mod({a[0]}, {a[1]})"
        if op in _INT_OPS:
            return f"ops.{op}({', '.join(a)})"
        if op in _FUNCS:
            return f"{self.lib}.{_FUNCS[op]}({', '.join(a)})"
        if op == "int":
            return f"ops.to_int({a[0]})"
        if op == "float":
            return f"ops.to_float({a[0]})"
        if op == "float32":
            return f"ops.to_float32({a[0]})"
        raise NotImplementedError(op)

    def _ex_Where(self, e: ir.Where) -> str:
        c, a, b = self(e.cond), self(e.then), self(e.other)
        if self.dom == "S":
            return f"({a} if {c} else {b})"
        return f"ops.select({c}, {a}, {b})"

    def _ex_Rand(self, e: ir.Rand) -> str:
        if self.dom == "A":
            return f"rt.rand({e.site}, 'A', E)"
        return f"rt.rand({e.site}, {self.dom!r})"


class _AtExGen(_ExGen):
    """Renders a V/E expression at the elements `_i` only (every array read indexed by `_i`)."""

    def _ex_Load(self, e: ir.Load) -> str:
        if e.pos == "rev":
            return f"rt.reverse_edges({pyname(e.var)})[_i]"
        return pyname(e.var) if e.kind == "scalar" else f"{pyname(e.var)}[_i]"

    def _ex_Ids(self, e: ir.Ids) -> str:
        return f"{super()._ex_Ids(e)}[_i]"

    def _ex_Rand(self, e: ir.Rand) -> str:  # pragma: no cover - excluded by passes.sparse.sparse_rest
        raise AssertionError("rand() is drawn over the whole domain")


class _SentGen(_ExGen):
    """Renders a send condition over arrays at the edges being counted: each read's values by its
    name, the endpoints' IDs as `_e.src_ids` and `_e.dst_ids` (runtime.edges.Counted);
    receivers.sent_conditions reads nothing else."""

    def _ex_Load(self, e: ir.Load) -> str:
        assert e.pos == "here", e  # (receivers._sender_known: the read's own value at the edge)
        return pyname(e.var)

    def _ex_Ids(self, e: ir.Ids) -> str:
        return {"src": "_e.src_ids", "dst": "_e.dst_ids"}[e.pos]

    def _ex_Rand(self, e: ir.Rand) -> str:  # pragma: no cover - excluded by receivers._sender_known
        raise AssertionError("a send condition draws no random numbers")


def at_sender(e: ir.Ex) -> ir.Ex:
    """A sender-only domain-A expression rewritten over the sender's own vertex (nbr -> here)."""
    def leaf(x: ir.Ex) -> ir.Ex:
        if isinstance(x, ir.Load) and x.pos == "nbr":
            return ir.Load(x.elem, x.span, x.var, x.kind, "here")
        if isinstance(x, ir.Ids) and x.pos == "nbr":
            return ir.Ids(x.elem, x.span, "here")
        return x

    return ir.map_leaves(e, leaf)


def _lambda(params: str) -> str:
    return f"lambda {params}: " if params else "lambda: "


class CodeGen:
    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.proc = plan.proc
        self.src = plan.proc.source_lines
        self.broadcasts: dict[Broadcast, str] = {}  # module constant of each naive broadcast record

    def line_comment(self, line: int) -> str:
        text = self.src[line - 1].strip() if 1 <= line <= len(self.src) else ""
        return f"# L{line}: {_comment(text)}"

    def ex(self, e: ir.Ex | None, dom: str) -> str:
        """A scalar, vertex or edge expression (domain A is rendered by the NbrReduce code)."""
        assert dom in ("S", "V", "E"), dom
        return "None" if e is None else _ExGen(dom)(e)

    def elem_of(self, var: str) -> str:
        return self.plan.vars[var].elem

    # ---- instructions

    def instr(self, i: ir.Instr) -> list[str]:
        return getattr(self, "_instr_" + type(i).__name__)(i)

    def _instr_Compute(self, i: ir.Compute) -> list[str]:
        rest = sparse_rest(i) if i.sparse else None
        if rest is not None:  # the sparse pass: where the members are few, the rest only at them
            m = i.ex.args[0].var  # type: ignore[attr-defined]
            return [f"{pyname(i.target)} = rt.vmap(lambda _i: {_AtExGen(i.dom)(rest)}, {i.dom!r}, 'bool', "
                    f"within={pyname(m)})  # evaluated only at the members of {_comment(m)} when they are few"]
        into = self._update_in_place(i)
        if into is not None:
            return [f"{pyname(i.target)} = rt.vmap({into}, {i.dom!r}, {self.elem_of(i.target)!r})"
                    "  # written into the old value where nothing else holds it"]
        return [f"{pyname(i.target)} = rt.vmap({self.ex(i.ex, i.dom)}, {i.dom!r}, {self.elem_of(i.target)!r})"]

    def _update_in_place(self, i: ir.Compute) -> str | None:
        """`ops.select_into(c, e, v_X)` for `X = c ? e : X` (or `c ? X : e`) over V or E at -O1 and up: X's
        old value dies here, so the backend may write the few changed elements into it (a BFS level
        update) instead of making a whole new array; None for any other statement."""
        e = i.ex
        if self.plan.opt_level < 1 or i.dom not in ("V", "E") or not isinstance(e, ir.Where) \
                or e.elem != self.elem_of(i.target):
            return None
        here = ex_key(ir.Load(e.elem, e.span, i.target, "vertex" if i.dom == "V" else "edge"))  # X at each element
        gen = _ExGen(i.dom)
        if ex_key(e.other) == here:
            return f"ops.select_into({gen(e.cond)}, {gen(e.then)}, {pyname(i.target)})"
        if ex_key(e.then) == here:
            return f"ops.select_into(xp.logical_not({gen(e.cond)}), {gen(e.other)}, {pyname(i.target)})"
        return None

    def _instr_MarkEndpoints(self, i: ir.MarkEndpoints) -> list[str]:
        return [f"{pyname(i.target)} = rt.mark({self.ex(i.mask, 'E')}, sides={i.sides!r})"]

    def _nbr_combine(self, x: NbrExchange) -> list[str]:
        """Sender-side parts (send condition, message values), then one `rt.nbr_combine` call with the
        exchange's spec, the vertex arrays that travel and the head over what arrived."""
        i = x.instr
        lines, kw = [], ""
        if x.send is not None:  # prune: the sender-side condition, evaluated by each sender
            lines.append(f"_send = {self.ex(at_sender(x.send), 'V')}  # only these vertices send")
            kw += ", send=_send"
        if x.recv is not None:
            lines.append(f"_recv = {self.ex(x.recv, 'V')}  # only these receivers use the result")
            kw += ", recv=_recv"
        if x.known is not None:  # receivers: the senders' copy of the set where the result is read
            kw += f", known={pyname(x.known)}"
        if x.along is not None:  # prune: the edge condition, known at both endpoints
            lines.append(f"_along = {self.ex(ir.on_edges(x.along), 'E')}  # sent only along these edges")
            kw += ", along=_along"
        if x.per_entry:
            head, arrays, what = self._entry_head(x), [pyname(n) for n, _e in x.fields], "fields"
            if (plus := x.plus_edge) is not None:  # field + edge value: the head's edge array, for a one-pass reduction
                kw += f", edge={pyname(plus[1])}"
        elif x.transport == "packed":
            arrays, exts = [], {}
            for role, ex in (("value", i.value), ("mask", i.mask)):
                if ex is None:
                    continue
                elem = field_elem(role, ex)
                if (f"{i.target}.{role}", elem) not in x.fields:
                    exts[role] = self.ex(at_sender(ex), "V")  # the same at every sender
                    continue
                if elem == "float32":  # held in 4 bytes (exact), widened where it is read
                    src = f"ops.narrow32({self.ex(at_sender(cast(ir.Op, ex).args[0]), 'V')})"
                else:
                    src = self.ex(at_sender(ex), "V")
                lines.append(f"_{role} = {src}  # computed by each sender")
                exts[role] = f"_x{len(arrays)}"
                arrays.append(f"_{role}")
            params = ", ".join(f"_x{k}" for k in range(len(arrays)))
            head, what = [f"{_lambda(params)}({exts.get('value', 'None')}, {exts.get('mask', 'None')})"], "message"
        else:
            g = _ExGen("X", {n: f"_x{k}" for k, (n, _e) in enumerate(x.fields)})
            val, mask = g(i.value), g(i.mask) if i.mask is not None else "None"
            params = ", ".join(f"_x{k}" for k in range(len(x.fields)))
            head, arrays, what = [f"{_lambda(params)}({val}, {mask})"], [pyname(n) for n, _e in x.fields], "fields"
        desc = ", ".join(_comment(n) for n, _e in x.fields) or "none"
        call = (f"{pyname(i.target)} = rt.nbr_combine(X{x.id}, ({''.join(a + ', ' for a in arrays)}), "
                f"{head[-1].strip()}{kw})  # {what}: {desc}")
        return lines + head[:-1] + [call]

    def _entry_head(self, x: NbrExchange) -> list[str]:
        """`def _head(E, _x0, ...)`: the value and filter per adjacency entry E (sender E.nbr, receiver
        E.own, edge E.eid), over the arrived fields; its name is the last line."""
        i = x.instr
        g = _ExGen("A")
        val = g(i.value)
        mask = g(i.mask) if i.mask is not None else "None"
        field_of = {n: k for k, (n, _e) in enumerate(x.fields)}
        params = "".join(f", _x{k}" for k in range(len(x.fields)))
        body = []
        for (var, pos), local in g.adj_reads.items():
            if pos == "nbr":
                body.append(f"{local} = _x{field_of[var]}[E.nbr]")
            elif pos == "self":
                body.append(f"{local} = {pyname(var)}[E.own]")
            elif pos in ("nbr_self", "self_nbr"):  # an edge test: the edge set at that edge, if any
                body.append(f"{local} = E.edge_test({pyname(var)}, {pos!r})")
            else:
                body.append(f"{local} = E.edge({pyname(var)})")
        name = f"_head{x.id}"
        return [f"def {name}(E{params}):  # per adjacency entry E"] + ["    " + b for b in body] + [
            f"    return {val}, {mask}", name]

    def _common(self, x: CommonExchange) -> list[str]:
        """`def _commonN(C, ...)`: the value and filter per common neighbour C (edge C.edge, endpoints
        C.src and C.dst, neighbour C.nbr, connecting edges C.src_nbr and C.dst_nbr) over the vertex
        fields (owned + ghost values) and edge fields (local + shipped values); then one `rt.common`
        call.  A plain count passes no head: the runtime counts triangles without listing them."""
        i = x.instr
        within = f", within={pyname(i.within)}" if i.within is not None else ""
        vf = "".join(pyname(n) + ", " for n, _e in x.fields)
        ef = "".join(pyname(n) + ", " for n, _e in x.edge_fields)
        call = f"{pyname(i.target)} = rt.common(X{x.id}, ({vf}), ({ef}), {{head}}{within})"
        if i.op == "count" and i.mask is None:
            return [call.format(head="None") + "  # triangles through each edge"]
        g = _ExGen("W")
        val = g(i.value)
        mask = g(i.mask) if i.mask is not None else "None"
        vk = {n: k for k, (n, _e) in enumerate(x.fields)}
        ek = {n: k for k, (n, _e) in enumerate(x.edge_fields)}
        body = []
        for (var, pos), local in g.adj_reads.items():
            if pos in ("src", "dst", "nbr"):
                body.append(f"{local} = _v{vk[var]}[C.{pos}]")
            else:
                body.append(f"{local} = _e{ek[var]}[C.{'edge' if pos == 'here' else pos}]")
        params = "".join(f", _v{k}" for k in range(len(x.fields)))
        params += "".join(f", _e{k}" for k in range(len(x.edge_fields)))
        name = f"_common{x.id}"
        return ([f"def {name}(C{params}):  # per common neighbour C of an edge's endpoints"]
                + ["    " + b for b in body] + [f"    return {val}, {mask}", call.format(head=name)])

    def _aggregate(self, x: AggregateExchange) -> list[str]:
        i = x.instr
        return [f"rt.aggregate(X{x.id}, {self.ex(i.value, i.dom)}, {self.ex(i.mask, i.dom)})"]

    def _endpoints(self, x: EndpointRecord) -> list[str]:
        i = x.instr
        arrays = "".join(pyname(v) + ", " for v, _e in x.fields)
        lines, kw = [], ""
        if x.need:
            lines.append(f"_need = {self.ex(i.need, 'E')}  # the values are only used along these edges")
            kw = ", need=_need"
        if x.sent:  # receivers: where each read's value can matter, as its sender decides
            conds = ", ".join("None" if c is None else _SentGen("E")(c) for c in x.sent)
            kw += f", sent=lambda _e, {', '.join(pyname(t) for t in i.targets)}: ({conds}, )"
        kept = ""
        if x.keep:  # delta: the copies of the last run's values; only changed ones are sent
            kept = "".join(pyname(t) + ", " for t in x.keep)
            kw += f", keep=({kept})"
        if x.within is not None:  # edgeset: the conjunction of the fields, as a shrinking set
            return lines + [f"{pyname(x.within)}, {kept}= rt.endpoints(X{x.id}, ({arrays}){kw})  "
                            f"# edges with {_comment(i.conjunction())}"]
        reads = ", ".join(f"{_comment(v)}@{side}" for v, side, _e in i.fields)
        return lines + [f"{''.join(pyname(t) + ', ' for t in i.targets)}{kept}= rt.endpoints(X{x.id}, "
                        f"({arrays}){kw})  # {reads}"]

    def _remote(self, x: Exchange) -> list[str]:
        i = x.instr
        if isinstance(i, ir.RemoteMark):
            return [f"{pyname(i.target)} = rt.mark({self.ex(i.mask, i.dom)}, ids={self.ex(i.index, i.dom)}, "
                    f"spec=X{x.id})"]
        assert isinstance(i, ir.RemoteRead)  # (the other exchanges have their own method)
        req = "rq" + pyname(i.target)
        if x.phase == "request":
            return [f"{req} = rt.remote_request(X{x.id}, {self.ex(i.index, i.dom)})"]
        return [f"{pyname(i.target)} = rt.remote_reply(X{x.id}, {pyname(i.var)}, {req})"]

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
            aggs = "".join(pyname(x.instr.target) + ", " for x in s.exchange if isinstance(x.instr, ir.GlobalReduce))
            naive = "" if s.broadcast is None else f", {self.broadcast_name(s.broadcast)}"
            body.append(f"{aggs + '= ' if aggs else ''}rt.barrier({s.id}{naive})  # end of superstep"
                        f"{'; aggregators combined' if aggs else ''}")
        body += self.terminator(s)
        out += ["    " + b for b in body]
        return out

    def exchange(self, x: Exchange) -> list[str]:
        if isinstance(x, NbrExchange):
            return self._nbr_combine(x)
        if isinstance(x, EndpointRecord):
            return self._endpoints(x)
        if isinstance(x, AggregateExchange):
            return self._aggregate(x)
        if isinstance(x, CommonExchange):
            return self._common(x)
        if isinstance(x, KeyedExchange):
            return self._keyed(x)
        return self._remote(x)

    def _keyed(self, x: KeyedExchange) -> list[str]:
        """One `rt.keyed` call: the keys, value, payload and filter per element of the domain."""
        i = x.instr
        keys = "".join(self.ex(k, i.dom) + ", " for k in i.keys)
        payload = "" if i.payload is None else f", payload={self.ex(i.payload, i.dom)}"
        return [f"{pyname(i.target)} = rt.keyed(X{x.id}, ({keys}), {self.ex(i.value, i.dom)}, "
                f"{self.ex(i.mask, i.dom)}{payload})  # {_comment(i.describe())}"]

    def broadcast_name(self, b: Broadcast) -> str:
        """Module constant of a naive broadcast record (one per distinct record)."""
        return self.broadcasts.setdefault(b, f"B{len(self.broadcasts)}")

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
        out: dict[str, tuple[str, str]] = {pyname(v): (t.kind, t.elem) for v, t in self.plan.vars.items()
                                           if not v.startswith("@") and v not in params}
        for st in self.plan.states:
            for x in st.exchange:
                if isinstance(x.instr, ir.RemoteRead):
                    out.setdefault("rq" + pyname(x.instr.target), ("request", self.plan.vars[x.instr.target].elem))
        return out

    def module(self) -> str:
        plan = self.plan
        prologue = [f"{pyname(name)} = rt.vmap(args[{name!r}], 'S', {ty.elem!r})  # parameter {name}: {ty.elem}"
                    for name, ty in self.proc.params]
        names = self.variables()
        prologue.append("state, _saved = rt.resume(VARIABLES)  # --resume: the last checkpoint's state and values")
        if names:
            prologue += [f"{' = '.join(names)} = None  # every variable: what a checkpoint saves",
                         "if _saved is not None:", f"    {', '.join(names)}, = _saved"]
        states = [self.state(s) for s in plan.states]  # (names the broadcast constants)
        specs = [x.spec() for s in plan.states for x in s.exchange]
        lines = {x.id: x.instr.span.line for s in plan.states for x in s.exchange}
        consts = [f"X{sp.id} = {render_spec(sp)}  # L{lines[sp.id]}" for sp in sorted(specs, key=lambda sp: sp.id)]
        consts += [f"{name} = Broadcast({b.record!r}{f', packed={b.packed!r}' if b.packed else ''})  "
                   "# the naive code's record, every superstep" for b, name in self.broadcasts.items()]
        return _template().render(
            file_doc=_doc(self.proc.file),
            proc_doc=_doc(self.proc.name),
            proc_lit=repr(self.proc.name),
            opt=plan.opt_level,
            params=repr([(n, t.elem) for n, t in self.proc.params]),
            directions=repr(plan.directions()),
            rand_sites=self.proc.rand_sites,
            state_lines=repr({s.id: s.lines() for s in plan.states}),
            back_edges=repr(back_edges(plan)),
            variables=repr(tuple(self.variables())),
            variable_types=repr(tuple(self.variable_types().values())),
            transitions=repr({s.id: tuple(s.successors()) for s in plan.states}),
            state_sets=repr(state_sets(plan, self.variables())),
            save_args=", ".join(self.variables()),
            consts=consts,
            prologue=prologue,
            states=states,
        )


def render_spec(sp: Spec) -> str:
    """`Spec(...)` with the fields that differ from the defaults (names are checked identifiers)."""
    parts = [repr(sp.id), repr(sp.kind)]
    for f in dataclasses.fields(sp)[2:]:
        v = getattr(sp, f.name)
        if v != f.default:
            parts.append(f"{f.name}={v!r}")
    return f"Spec({', '.join(parts)})"


def back_edges(plan: Plan) -> tuple[tuple[int, int], ...]:
    """The (from, to) transitions back to a loop's header (to a state on the path from the entry):
    each iteration of a loop takes one, so the runtime counts loop iterations by them."""
    succ = {s.id: s.successors() for s in plan.states}
    out: set[tuple[int, int]] = set()
    on_path: set[int] = set()
    seen: set[int] = set()
    stack = [(0, iter(succ.get(0, ())))] if plan.states else []
    on_path.add(0)
    seen.add(0)
    while stack:  # depth-first, without recursion (plans can be long)
        s, rest = stack[-1]
        t = next(rest, None)
        if t is None:
            stack.pop()
            on_path.discard(s)
        elif t in on_path:
            out.add((s, t))
        elif t not in seen:
            seen.add(t)
            on_path.add(t)
            stack.append((t, iter(succ[t])))
    return tuple(sorted(out))


def state_sets(plan: Plan, names: list[str]) -> dict[int, tuple[str, ...]]:
    """The variables (of `names`) each state sets: its instructions' and its exchanges' targets, and the
    pending request of each remote read it sends.  With the transitions, a resumed checkpoint's reader
    works out which variables every path to its state has set (checkpoint_schema.assigned_on_entry)."""
    index = {n: i for i, n in enumerate(names)}
    out: dict[int, tuple[str, ...]] = {}
    for s in plan.states:
        found = {pyname(d) for i in s.instrs for d in i.defs()}
        for x in s.exchange:
            if x.phase == "request":
                assert isinstance(x.instr, ir.RemoteRead)  # (only a remote read has a request)
                found.add("rq" + pyname(x.instr.target))
            else:
                found.update(pyname(d) for d in x.defs())
        out[s.id] = tuple(sorted((n for n in found if n in index), key=index.__getitem__))
    return out


def generate(plan: Plan) -> str:
    """Python source of the compiled module for `plan`."""
    return CodeGen(plan).module()


__all__ = ["generate", "pyname", "render_spec"]
