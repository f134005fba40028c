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

FORMAT = 2
_HEX64 = re.compile(r"[0-9a-f]{64}")
_DTYPE_KIND = {"bool": "b", "int": "i", "vid": "i", "float": "f"}
_REQUEST_FIELDS = ("ids", "order", "send_counts", "received", "recv_counts")


class Bad(Exception):
    """A checkpoint value that does not fit the schema (turned into a G2PLError naming the file)."""


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
    ty, numpy, v = d.get("type"), d.get("numpy"), d.get("value")
    if not isinstance(numpy, bool):
        raise Bad("`numpy` must be true or false")
    if ty == "bool" and isinstance(v, bool):
        return np.bool_(v) if numpy else v
    if ty == "int" and not isinstance(v, bool) and isinstance(v, int) and -(2**63) <= v < 2**63:
        return np.int64(v) if numpy else v
    if ty == "float" and isinstance(v, str) and len(v) < 64:
        try:
            f = float.fromhex(v)
        except ValueError:
            raise Bad(f"{v!r} is not a hexadecimal float") from None
        return np.float64(f) if numpy else f
    raise Bad(f"expected a scalar {elem} (type bool/int/float with a matching value)")


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


class Shapes:
    """What this rank's arrays must look like: vertex arrays n (or n + ghosts) long, edge arrays m."""

    def __init__(self, n: int, n_ext: int, m: int, ranks: int) -> None:
        self.n, self.n_ext, self.m, self.ranks = n, n_ext, m, ranks

    def check(self, arr: np.ndarray, kind: str, elem: str) -> None:
        if arr.ndim != 1:
            raise Bad(f"expected a 1-D array, got shape {arr.shape}")
        if arr.dtype.kind != _DTYPE_KIND[elem]:
            raise Bad(f"expected {elem} values, got dtype {arr.dtype}")
        lengths = (self.n, self.n_ext) if kind == "vertex" else (self.m,)
        if len(arr) not in lengths:
            want = " or ".join(map(str, sorted(set(lengths))))
            raise Bad(f"expected {want} {kind} values on this rank, got {len(arr)}")

    def check_request(self, parts: dict[str, np.ndarray]) -> None:
        for f, a in parts.items():
            if a.ndim != 1 or a.dtype != np.int64:
                raise Bad(f"request field `{f}` must be a 1-D int64 array")
        ids, order, sc, rec, rc = (parts[f] for f in _REQUEST_FIELDS)
        if len(sc) != self.ranks or len(rc) != self.ranks or (sc < 0).any() or (rc < 0).any():
            raise Bad(f"request counts must be {self.ranks} non-negative numbers")
        if int(sc.sum()) != len(order) or int(rc.sum()) != len(rec) or len(order) > len(ids):
            raise Bad("request counts do not add up to its arrays")
        if len(order) and (order.min() < 0 or order.max() >= len(ids)):
            raise Bad("request order points outside its IDs")


def decode_env(env: Any, arrays: dict[str, np.ndarray], names: tuple[str, ...],
               types: tuple[tuple[str, str], ...], shapes: Shapes) -> dict[str, Any]:
    """The variables of a checkpoint, each checked against its compiled (kind, element type)."""
    env = check_dict(env, "`env`")
    if sorted(env) != sorted(names):
        raise Bad("its variables are not the program's (" + ", ".join(sorted(set(env) ^ set(names))) + ")")
    used: set[str] = set()

    def take(key: Any) -> np.ndarray:
        if not isinstance(key, str) or key not in arrays or key in used:
            raise Bad(f"array {key!r} is missing from the .npz file (or used twice)")
        used.add(key)
        return arrays[key]

    out: dict[str, Any] = {}
    for name, (kind, elem) in zip(names, types):
        d = check_dict(env[name], f"variable `{name}`")
        try:
            if d.get("kind") == "none":
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
                raise Bad(f"expected a {kind} value, found {d.get('kind')!r}")
        except Bad as e:
            raise Bad(f"variable `{name}`: {e}") from None
    return out


# ---------------------------------------------------------------- runtime counters


def decode_runtime(r: Any, rand_sites: int, states: set[int]) -> dict:
    """The runtime's counters (statistics so far, rand() call counts, push/pull choices), checked."""
    r = check_dict(r, "`runtime`")
    rows = []
    for i, row in enumerate(check_list(r.get("per_superstep"), "`per_superstep`")):
        row = check_list(row, "a `per_superstep` row")
        if len(row) != 8:
            raise Bad("a `per_superstep` row has 8 numbers")
        ss, state, msgs, nbytes, rbytes, active = (check_int(x, "a superstep counter", -1) for x in row[:6])
        if ss != i or (state not in states and state != -1):
            raise Bad(f"`per_superstep` row {i} is out of order or names an unknown state")
        t, c = row[6:]
        if not all(isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) for x in (t, c)):
            raise Bad("superstep times must be finite numbers")
        rows.append((ss, state, msgs, nbytes, rbytes, active, float(t), float(c)))
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
    return {"per_superstep": rows, "rand_counts": rand, "push_state": push, **counters}


def encode_runtime(per_superstep: list, rand_counts: list, push_state: dict, directions: dict,
                   edge_sets: dict) -> dict:
    return {
        "per_superstep": [[s.superstep, s.state, s.messages, s.bytes, s.record_bytes, s.active, s.time_s,
                           s.comm_s] for s in per_superstep],
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
