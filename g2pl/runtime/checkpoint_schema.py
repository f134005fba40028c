"""The schema of a checkpoint's files: what `Checkpointer` writes, and the checks on what it reads.

A checkpoint directory may come from someone else, so nothing in it is
trusted: every JSON value is checked against the shape written here, every
array against the compiled program's variable types and the rank's part of
the graph, and any mismatch is a `Bad` (turned into an exit-2 error naming
the file).  No pickle anywhere: scalars are JSON (floats as hex, exact),
arrays plain numbers in an .npz.
"""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np

from g2pl.runtime.stats import KEEP

FORMAT = 2
_HEX64 = re.compile(r"[0-9a-f]{64}")
# what the runtime makes of each element type (g2pl.runtime.values.DTYPES, native byte order): a saved
# array must have exactly this dtype, as a program's arithmetic depends on it (int8 wraps, float16 rounds)
DTYPES = {"bool": np.dtype(np.bool_), "int": np.dtype(np.int64), "vid": np.dtype(np.int64),
          "float": np.dtype(np.float64)}
# a scalar of each element type as the runtime holds it: (JSON `type`, `numpy`): an int is an np.int64
# (64-bit wrap-around), a float or bool a Python one (g2pl.runtime.engine.Runtime.vmap)
SCALARS = {"bool": ("bool", False), "int": ("int", True), "vid": ("int", True), "float": ("float", False)}
_REQUEST_FIELDS = ("ids", "order", "send_counts", "received", "recv_counts")


class Bad(Exception):
    """A checkpoint value that does not fit the schema (turned into a G2PLError naming the file)."""


def show(x: Any) -> str:
    """A JSON value for a message: short, and never the repr of a large or deeply nested value."""
    if x is None or isinstance(x, (bool, int, float)):
        return "null" if x is None else str(x).lower() if isinstance(x, bool) else repr(x)[:30]
    if isinstance(x, str):
        return repr(x[:30] + ("..." if len(x) > 30 else ""))
    return "a JSON " + ("object" if isinstance(x, dict) else "list")


def check_int(x: Any, what: str, lo: int = 0) -> int:
    """`x` if it is a JSON integer in [lo, 2^63), else Bad."""
    if isinstance(x, bool) or not isinstance(x, int) or not lo <= x < 2**63:
        raise Bad(f"{what} must be an integer >= {lo}")
    return x


def check_dict(x: Any, what: str) -> dict:
    """`x` if it is a JSON object, else Bad."""
    if not isinstance(x, dict):
        raise Bad(f"{what} must be a JSON object")
    return x


def check_list(x: Any, what: str) -> list:
    """`x` if it is a JSON list, else Bad."""
    if not isinstance(x, list):
        raise Bad(f"{what} must be a JSON list")
    return x


# ---------------------------------------------------------------- values <-> JSON + arrays


def _encode_scalar(v: Any) -> dict:
    numpy = isinstance(v, np.generic)
    py = v.item() if numpy else v
    if isinstance(py, bool):
        return {"kind": "scalar", "type": "bool", "numpy": numpy, "value": py}
    if isinstance(py, int):
        return {"kind": "scalar", "type": "int", "numpy": numpy, "value": py}
    if isinstance(py, float):
        return {"kind": "scalar", "type": "float", "numpy": numpy, "value": py.hex()}
    raise TypeError(f"cannot checkpoint a value of type {type(v).__name__}")


def _decode_scalar(d: dict, elem: str) -> Any:
    """A scalar of element type `elem`, exactly as the runtime holds one (SCALARS), else Bad."""
    ty, numpy, v = d.get("type"), d.get("numpy"), d.get("value")
    want_ty, want_numpy = SCALARS[elem]
    if ty != want_ty or numpy is not want_numpy:
        raise Bad(f"expected a scalar {elem} saved as type {want_ty!r} with numpy {show(want_numpy)}, "
                  f"found type {show(ty)} with numpy {show(numpy)}")
    if ty == "bool" and isinstance(v, bool):
        return v
    if ty == "int" and not isinstance(v, bool) and isinstance(v, int) and -(2**63) <= v < 2**63:
        return np.int64(v)
    if ty == "float" and isinstance(v, str) and len(v) < 64:
        try:
            return float.fromhex(v)
        except (ValueError, OverflowError):
            raise Bad(f"{v!r} is not a hexadecimal float") from None
    raise Bad(f"expected a scalar {elem}: the value does not fit type {ty!r}")


def encode_env(names: tuple[str, ...], values: tuple) -> tuple[dict, dict[str, np.ndarray]]:
    """(JSON descriptors, arrays by npz key) for the program's variables."""
    env: dict[str, dict] = {}
    arrays: dict[str, np.ndarray] = {}

    def put(arr: np.ndarray) -> str:
        key = f"a{len(arrays)}"
        arrays[key] = np.ascontiguousarray(arr)
        return key

    for name, v in zip(names, values):
        if v is None:
            env[name] = {"kind": "none"}
        elif isinstance(v, np.ndarray):
            env[name] = {"kind": "array", "key": put(v)}
        elif hasattr(v, "send_counts"):  # a pending remote request (engine.RemoteRequest)
            env[name] = {"kind": "request", "keys": {f: put(getattr(v, f)) for f in _REQUEST_FIELDS}}
        else:
            env[name] = _encode_scalar(v)
    return env, arrays


def _dtype_name(dt: np.dtype) -> str:
    """A dtype as a reader can tell it apart: byte order included where it is not the native one."""
    return str(dt) if dt.isnative else f"{dt} ({'big' if dt.byteorder == '>' else 'little'}-endian)"


class Shapes:
    """What this rank's arrays must look like: vertex arrays n (or n + ghosts) long, edge arrays m;
    a pending remote request as long as the domains (`request_kinds`: vertex, edge) its program reads."""

    def __init__(self, n: int, n_ext: int, m: int, ranks: int,
                 request_kinds: tuple[str, ...] = ("vertex", "edge")) -> None:
        self.n, self.n_ext, self.m, self.ranks = n, n_ext, m, ranks
        self.request_kinds = request_kinds

    def lengths(self, kind: str) -> tuple[int, ...]:
        return (self.n, self.n_ext) if kind == "vertex" else (self.m,)

    def check(self, arr: np.ndarray, kind: str, elem: str) -> None:
        if arr.ndim != 1:
            raise Bad(f"expected a 1-D array, got shape {arr.shape}")
        if arr.dtype != DTYPES[elem] or not arr.dtype.isnative:
            raise Bad(f"expected {elem} values, got dtype {_dtype_name(arr.dtype)} (the runtime holds "
                      f"{elem} values as native {DTYPES[elem]})")
        lengths = self.lengths(kind)
        if len(arr) not in lengths:
            want = " or ".join(map(str, sorted(set(lengths))))
            raise Bad(f"expected {want} {kind} values on this rank, got {len(arr)}")

    def check_request(self, parts: dict[str, np.ndarray]) -> None:
        for f, a in parts.items():
            if a.ndim != 1 or a.dtype != np.int64 or not a.dtype.isnative:
                raise Bad(f"request field `{f}` must be a 1-D int64 array, got {a.ndim}-D "
                          f"{_dtype_name(a.dtype)}")
        ids, order, sc, rec, rc = (parts[f] for f in _REQUEST_FIELDS)
        lengths = sorted({x for k in self.request_kinds for x in self.lengths(k)})
        if len(ids) not in lengths:
            raise Bad(f"request IDs must be {' or '.join(map(str, lengths))} long on this rank "
                      f"(one per requesting element), got {len(ids)}")
        if len(sc) != self.ranks or len(rc) != self.ranks or (sc < 0).any() or (rc < 0).any():
            raise Bad(f"request counts must be {self.ranks} non-negative numbers")
        if int(sc.sum()) != len(order) or int(rc.sum()) != len(rec) or len(order) > len(ids):
            raise Bad("request counts do not add up to its arrays")
        if len(order) and (order.min() < 0 or order.max() >= len(ids)):
            raise Bad("request order points outside its IDs")


def assigned_on_entry(names: tuple[str, ...], transitions: dict[int, tuple[int, ...]],
                      sets: dict[int, tuple[str, ...]], state: int) -> frozenset[str]:
    """The variables every path from state 0 has set on entering `state` (a forward must-analysis over
    the compiled module's TRANSITIONS and STATE_SETS).  A checkpoint is taken on entering a state, so
    it holds a value for each of them; the others may legitimately be saved unset.

    Bitsets over `names`, passes in depth-first order from state 0 until nothing changes: a few passes
    for the structured control flow of G2PL (while and if nest), as each set only ever shrinks."""
    bit = {n: 1 << i for i, n in enumerate(names)}
    defs = {s: sum(bit[n] for n in set(vs) if n in bit) for s, vs in sets.items()}
    order, seen, stack = [], {0}, [0]
    while stack:  # reachable states, each before the states it leads to where it can be
        s = stack.pop()
        order.append(s)
        for t in reversed(transitions.get(s, ())):
            if t not in seen:
                seen.add(t)
                stack.append(t)
    everything = (1 << len(names)) - 1
    entry = {s: (0 if s == 0 else everything) for s in order}
    changed = True
    while changed:
        changed = False
        for s in order:
            out = entry[s] | defs.get(s, 0)
            for t in transitions.get(s, ()):
                if t != 0 and entry[t] & out != entry[t]:
                    entry[t] &= out
                    changed = True
    got = entry.get(state, everything)  # a state no path reaches: nothing may be unset there
    return frozenset(n for n in names if got & bit[n])


def decode_env(env: Any, arrays: dict[str, np.ndarray], names: tuple[str, ...],
               types: tuple[tuple[str, str], ...], shapes: Shapes, assigned: frozenset[str] | None = None,
               state: int = 0) -> dict[str, Any]:
    """The variables of a checkpoint, each checked against its compiled (kind, element type).

    `assigned`: the variables every path to `state` has set (`assigned_on_entry`): one of them
    saved unset would meet the program's next read of it as None, so it is refused here (None:
    unknown, every variable may be unset).  Every array of the .npz must belong to a variable."""
    env = check_dict(env, "`env`")
    if sorted(env) != sorted(names):
        odd = sorted(set(env) ^ set(names))
        raise Bad("its variables are not the program's (" + ", ".join(show(k) for k in odd[:5])
                  + (", ..." if len(odd) > 5 else "") + ")")
    used: set[str] = set()

    def take(key: Any) -> np.ndarray:
        if not isinstance(key, str) or key not in arrays or key in used:
            raise Bad(f"array {show(key)} is missing from the .npz file (or used twice)")
        used.add(key)
        return arrays[key]

    out: dict[str, Any] = {}
    for name, (kind, elem) in zip(names, types):
        d = check_dict(env[name], f"variable `{name}`")
        try:
            if d.get("kind") == "none":
                if assigned is not None and name in assigned:
                    raise Bad(f"saved unset, but every path to state {state} sets it (expected a {kind} value)")
                out[name] = None
            elif kind == "scalar" and d.get("kind") == "scalar":
                out[name] = _decode_scalar(d, elem)
            elif kind in ("vertex", "edge") and d.get("kind") == "array":
                arr = take(d.get("key"))
                shapes.check(arr, kind, elem)
                out[name] = arr
            elif kind == "request" and d.get("kind") == "request":
                keys = check_dict(d.get("keys"), "`keys`")
                if sorted(keys) != sorted(_REQUEST_FIELDS):
                    raise Bad(f"a request has the fields {', '.join(_REQUEST_FIELDS)}")
                parts = {f: take(keys[f]) for f in _REQUEST_FIELDS}
                shapes.check_request(parts)
                out[name] = parts
            else:
                raise Bad(f"expected a {kind} value, found {show(d.get('kind'))}")
        except Bad as e:
            raise Bad(f"variable `{name}`: {e}") from None
    extra = sorted(set(arrays) - used)
    if extra:
        raise Bad(f"the .npz file holds arrays that belong to no variable ({', '.join(extra[:5])})")
    return out


# ---------------------------------------------------------------- runtime counters


def decode_runtime(r: Any, rand_sites: int, states: set[int]) -> dict:
    """The runtime's counters (statistics so far, rand() call counts, push/pull choices), checked.
    The kept statistics rows are supersteps 0, 1, ... with one gap of `left_out` rows (stats.KEEP)."""
    r = check_dict(r, "`runtime`")
    left_out = _row(r.get("left_out", [0, -1, 0, 0, 0, 0, 0.0, 0.0]), "`left_out`")
    gap = left_out[0]
    if gap < 0 or left_out[1] != -1:
        raise Bad("`left_out` counts rows (at least 0) and has the state -1")
    rows = []
    for i, row in enumerate(check_list(r.get("per_superstep"), "`per_superstep`")):
        row = _row(row, "a `per_superstep` row")
        ss, state = row[:2]
        if ss != (i + gap if gap and i >= KEEP else i) or (state not in states and state != -1):
            raise Bad(f"`per_superstep` row {i} is out of order or names an unknown state")
        rows.append(row)
    if gap and len(rows) != 2 * KEEP:
        raise Bad(f"with rows left out, `per_superstep` keeps {2 * KEEP} rows")
    rand = [check_int(x, "a rand() counter") for x in check_list(r.get("rand_counts"), "`rand_counts`")]
    if len(rand) != rand_sites:
        raise Bad(f"`rand_counts` must have {rand_sites} entries")
    push = {}
    for pair in check_list(r.get("push_state"), "`push_state`"):
        pair = check_list(pair, "a `push_state` entry")
        if len(pair) != 2 or not isinstance(pair[1], bool):
            raise Bad("a `push_state` entry is [site, true|false]")
        push[check_int(pair[0], "a site number")] = pair[1]
    counters = {}
    for key, fields in (("directions", ("push", "pull")), ("edge_sets", ("full", "shrunk"))):
        d = check_dict(r.get(key), f"`{key}`")
        if sorted(d) != sorted(fields):
            raise Bad(f"`{key}` has the counters {', '.join(fields)}")
        counters[key] = {f: check_int(d[f], f"`{key}.{f}`") for f in fields}
    loops = check_int(r.get("loop_iterations", 0), "`loop_iterations`")
    return {"per_superstep": rows, "left_out": left_out, "loop_iterations": loops, "rand_counts": rand,
            "push_state": push, **counters}


def _row(row: Any, what: str) -> tuple:
    """A statistics row: superstep, state, messages, bytes, record bytes, active, time, comm time."""
    row = check_list(row, what)
    if len(row) != 8:
        raise Bad(f"{what} has 8 numbers")
    ss, state, msgs, nbytes, rbytes, active = (check_int(x, "a superstep counter", -1) for x in row[:6])
    t, c = row[6:]
    if not all(isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) for x in (t, c)):
        raise Bad("superstep times must be finite numbers")
    return (ss, state, msgs, nbytes, rbytes, active, float(t), float(c))


def _encode_row(s) -> list:
    return [s.superstep, s.state, s.messages, s.bytes, s.record_bytes, s.active, s.time_s, s.comm_s]


def encode_runtime(per_superstep: list, rand_counts: list, push_state: dict, directions: dict,
                   edge_sets: dict, left_out=None, loop_iterations: int = 0) -> dict:
    """`left_out`: the sum of the statistics rows not kept (stats.Stats.left_out)."""
    return {
        "per_superstep": [_encode_row(s) for s in per_superstep],
        **({"left_out": _encode_row(left_out)} if left_out is not None else {}),
        "loop_iterations": int(loop_iterations),
        "rand_counts": [int(x) for x in rand_counts],
        "push_state": [[int(k), bool(v)] for k, v in sorted(push_state.items())],
        "directions": {k: int(v) for k, v in directions.items()},
        "edge_sets": {k: int(v) for k, v in edge_sets.items()},
    }



def manifest_schema(m: Any) -> dict:
    m = check_dict(m, "the manifest")
    if m.get("format") != FORMAT:
        raise Bad("written by another version of g2pl (or not a g2pl checkpoint)")
    check_dict(m.get("run"), "`run`")
    check_int(m.get("superstep"), "`superstep`", 1)
    files = check_dict(m.get("files"), "`files`")
    for k, v in files.items():
        if not re.fullmatch(r"rank[0-9]+\.(json|npz)", k) or not isinstance(v, str) or not _HEX64.fullmatch(v):
            raise Bad("`files` maps rank<R>.json / rank<R>.npz to sha256 hex digests")
    return m
