"""Structural fuzzing of checkpoint directories: real checkpoints, mutated, then resumed.

Bases are the checkpoint directories of short real runs (programs/pagerank.g2pl, programs/bfs.g2pl and
programs/pjcc.g2pl, whose remote reads leave a request pending in some saved states, on a small
generated graph, at several supersteps, one rank in-process and two ranks under mpiexec).
Each case copies a base, applies one to three mutations and resumes it through the entry point the CLI
uses (`Program.run(..., resume=DIR)`; a sample also as `g2pl run --resume` processes):

* the manifest and rank JSON: values replaced by other JSON types, keys added and dropped, numbers
  moved, deep nesting, long strings, raw bytes flipped, truncated, emptied;
* the .npz arrays: other dtypes (int8, float16, big-endian, unsigned, complex, strings, pickled
  objects), shapes, lengths, values, extra, missing and renamed members, compressed members,
  declared-huge headers, raw bytes flipped and truncated;
* file kinds: a FIFO, socket, directory, symbolic link (inside, outside, /dev/null, dangling) or
  nothing in place of the manifest, a rank file, a checkpoint's directory or the lock file;
* the manifest's digests recomputed (as anyone who can write the directory can) for most cases.

Outcomes: *refused* (a G2PLError, exit status 2), *accepted, same answer*, or *accepted, altered
data*: the checkpoint decodes to a state that differs from the saved one only in values a
legitimate checkpoint of another run could hold (digests recomputed), so the answer may differ.
Failures: any other exception (an internal error), a G2PLRuntimeError, a hang (no answer within the
case's alarm), an accepted state equal to the saved one with a different answer, a CLI process ending
with a status other than 0 or 2 or printing a traceback, and ranks that disagree about a case.

    python bench/fuzz_checkpoint.py --cases 10000 --cli-cases 100 --mpi-cases 300 \\
        --out bench/results/fuzz_checkpoint.md
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import zipfile
from collections import Counter
from pathlib import Path

import harness
import numpy as np

import g2pl
from g2pl.errors import G2PLError, G2PLRuntimeError
from g2pl.runtime.checkpoint import Checkpointer
from g2pl.runtime.comm import SingleComm
from g2pl.runtime.driver import renumbering, scatter_graph

ROOT = harness.ROOT

GRAPH = "er:200:800"
SEED = 1
# pjcc: remote reads, so a pending request (its IDs and per-rank counts) is part of some saved states
PROGRAMS = {"pagerank": {"iters": 12, "damping": 0.85}, "bfs": {"root": 0}, "pjcc": {}}
# (every, max supersteps) of the runs that write the bases: checkpoints at early, middle and last supersteps
POINTS = {"pagerank": [(1, 2), (2, 7), (3, None), (2, None)], "bfs": [(1, 2), (1, 4), (2, None)],
          "pjcc": [(1, 4), (1, 5), (2, None)]}
CASE_ALARM_S = 30


class Hang(Exception):
    """A case that did not finish within its alarm."""


def _alarm(_sig, _frame):
    raise Hang()


# ---------------------------------------------------------------- bases


class Base:
    """One real checkpoint directory, its program and what resuming it must give."""

    def __init__(self, prog: str, path: Path, every: int, ranks: int) -> None:
        self.prog, self.path, self.every, self.ranks = prog, path, every, ranks
        self.digest: str | None = None  # the decoded state's digest (per rank under MPI)


def _run_base(program, graph, prog: str, d: Path, every: int, stop: int | None, comm=None) -> None:
    try:
        program.run(graph, args=PROGRAMS[prog], seed=SEED, checkpoint=str(d), checkpoint_every=every,
                    max_supersteps=stop, comm=comm)
    except G2PLRuntimeError:
        assert stop is not None  # stopped by --max-supersteps: its checkpoints stay
    assert (d / "manifest.json").is_file(), d


def make_bases(work: Path, programs: dict, graph, comm=None) -> list[Base]:
    bases = []
    ranks = 1 if comm is None else comm.size
    for prog, points in POINTS.items():
        for i, (every, stop) in enumerate(points):
            d = work / f"base-{prog}-{ranks}r-{i}"
            if comm is None or comm.rank == 0:
                shutil.rmtree(d, ignore_errors=True)
            if comm is not None:
                comm.barrier()
            _run_base(programs[prog], graph, prog, d, every, stop, comm)
            bases.append(Base(prog, d, every, ranks))
    return bases


# ---------------------------------------------------------------- decoding (to classify accepted cases)


def _digest_value(h, v) -> None:
    if v is None:
        h.update(b"none;")
    elif isinstance(v, np.ndarray):
        h.update(f"arr:{v.dtype.str}:{v.shape};".encode())
        h.update(np.ascontiguousarray(v).tobytes())
    elif isinstance(v, dict):
        for k in sorted(v):
            h.update(f"{k}=".encode())
            _digest_value(h, v[k])
    else:
        h.update(f"{type(v).__name__}:{float(v).hex() if isinstance(v, float) else int(v)};".encode())


def decoded_digest(program, graph, prog: str, d: Path, comm=None) -> str | None:
    """A digest of the state resuming `d` would start from, or None if the reader refuses it."""
    comm = comm or SingleComm()
    module = program.load()
    renumber = renumbering(graph, "auto") if comm.rank == 0 else None  # this rank's part, as the driver makes it
    if comm.size > 1:
        renumber = comm.bcast(renumber)
    lg = scatter_graph(comm, graph, renumber)
    try:
        manifest = json.loads(_read(d / "manifest.json"))
        identity = manifest["run"]
    except Exception:  # noqa: BLE001 - the reader below says what is wrong, or refuses
        identity = {}
    try:
        ck = Checkpointer(d, 1, identity if isinstance(identity, dict) else {}, comm, True, module)
        data = ck.load(lg)
    except G2PLError:
        return None
    h = hashlib.sha256(f"{data['superstep']}:{data['state']};".encode())
    for name in module.VARIABLES:
        h.update(name.encode())
        _digest_value(h, data["env"][name])
    h.update(json.dumps(data["runtime"], sort_keys=True, default=str).encode())
    return h.hexdigest()


# ---------------------------------------------------------------- mutations


def _rand_json(rng: random.Random, depth: int = 0):
    r = rng.random()
    if r < 0.12:
        return None
    if r < 0.22:
        return rng.random() < 0.5
    if r < 0.42:
        return rng.choice([0, 1, -1, 2, 7, 2**31, 2**63 - 1, 2**63, -(2**63) - 1, 10**30, rng.randrange(-50, 50)])
    if r < 0.52:
        return rng.choice([0.0, -0.0, 1.5, 1e308, -1e-300, float("nan"), float("inf")])
    if r < 0.72:
        return rng.choice(["", "0x1p+0", "none", "array", "scalar", "request", "a0", "a1", "ss1", "../x",
                           "\x00", "x" * rng.choice([10, 1000, 100000]), "0x1.0p+9999", "nan"])
    if r < 0.86 and depth < 3:
        return [_rand_json(rng, depth + 1) for _ in range(rng.randrange(0, 4))]
    if depth < 3:
        return {rng.choice(["kind", "key", "type", "value", "numpy", "keys", "x"]): _rand_json(rng, depth + 1)
                for _ in range(rng.randrange(0, 4))}
    return 0


def _paths(obj, prefix=()) -> list[tuple]:
    out = [prefix]
    if isinstance(obj, dict):
        for k, v in obj.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj[:50]):
            out += _paths(v, (*prefix, i))
    return out


def _get(obj, path):
    for p in path:
        obj = obj[p]
    return obj


def mutate_json(obj, rng: random.Random):
    """One structural change somewhere in a JSON document; returns the new document."""
    paths = _paths(obj)
    path = rng.choice(paths[1:] if len(paths) > 1 else paths)
    op = rng.choice(["replace", "replace", "drop", "add", "nest", "wrap", "number", "swap", "deep"])
    if not path:
        return _rand_json(rng)
    parent, last = _get(obj, path[:-1]), path[-1]
    cur = parent[last]
    if op == "replace":
        parent[last] = _rand_json(rng)
    elif op == "drop":
        del parent[last]
    elif op == "add":
        if isinstance(cur, dict):
            cur[rng.choice(["kind", "extra", "key", "type", "v_x", "a0"])] = _rand_json(rng)
        elif isinstance(cur, list):
            cur.insert(rng.randrange(len(cur) + 1), _rand_json(rng))
        else:
            parent[last] = [cur, _rand_json(rng)]
    elif op == "nest":
        parent[last] = {"kind": cur} if rng.random() < 0.5 else [cur]
    elif op == "wrap":
        parent[last] = str(cur) if not isinstance(cur, str) else [cur]
    elif op == "number":
        if isinstance(cur, bool):
            parent[last] = not cur
        elif isinstance(cur, int):
            parent[last] = cur + rng.choice([-1, 1, -cur - 1, 2**62, -(2**63)])
        elif isinstance(cur, float):
            parent[last] = cur * rng.choice([-1.0, 2.0, 0.5])
        elif isinstance(cur, str) and cur.startswith(("0x", "-0x")):
            parent[last] = rng.choice(["0x1.8p+1", "-0x0p+0", "inf", "0x1p+1024", "0x.8"])
        else:
            parent[last] = rng.randrange(-3, 30)
    elif op == "swap" and isinstance(parent, dict) and len(parent) > 1:
        other = rng.choice(list(parent))
        parent[last], parent[other] = parent[other], parent[last]
    elif op == "deep":
        v = cur
        for _ in range(rng.choice([30, 200, 5000])):
            v = [v]
        parent[last] = v
    return obj


def mutate_bytes(data: bytes, rng: random.Random) -> bytes:
    op = rng.choice(["flip", "flip", "truncate", "append", "empty", "insert", "zero-run"])
    if not data or op == "empty":
        return b""
    if op == "flip":
        b = bytearray(data)
        for _ in range(rng.choice([1, 1, 2, 8])):
            i = rng.randrange(len(b))
            b[i] ^= 1 << rng.randrange(8)
        return bytes(b)
    if op == "truncate":
        return data[:rng.randrange(len(data))]
    if op == "append":
        return data + rng.randbytes(rng.choice([1, 30, 5000]))
    if op == "insert":
        i = rng.randrange(len(data))
        return data[:i] + rng.randbytes(rng.choice([1, 7, 100])) + data[i:]
    i = rng.randrange(len(data))
    return data[:i] + bytes(min(64, len(data) - i)) + data[i + 64:]


_DTYPES = [np.int8, np.int16, np.int32, np.uint8, np.uint64, np.float16, np.float32, np.bool_, np.int64,
           np.float64, ">i8", ">f8", "<i8", np.complex128, "U3", "S4"]


class _Pickled:
    def __reduce__(self):
        return (print, ("a pickled object was loaded",))


def mutate_arrays(arrs: dict, rng: random.Random) -> str:
    keys = sorted(arrs)
    k = rng.choice(keys) if keys else "a0"
    a = arrs.get(k, np.zeros(3))
    op = rng.choice(["dtype", "dtype", "dtype", "shape", "length", "values", "extra", "drop", "rename",
                     "object", "scalar", "values", "empty"])
    if op == "dtype":
        dt = rng.choice(_DTYPES)
        op = f"dtype {np.dtype(dt).str}"
        try:
            with _quiet():
                arrs[k] = a.astype(dt)
        except (TypeError, ValueError):
            arrs[k] = a.astype(np.float32)
    elif op == "shape" and a.size:
        arrs[k] = a.reshape(1, -1) if rng.random() < 0.5 else np.stack([a, a])
    elif op == "length":
        arrs[k] = a[:max(0, len(a) - rng.choice([1, 2, len(a)]))] if rng.random() < 0.5 else \
            np.concatenate([a, a[:rng.choice([1, 5])]])
    elif op == "values" and a.size:
        b = a.copy()
        i = rng.randrange(len(b))
        if b.dtype.kind == "f":
            b[i] = rng.choice([np.nan, np.inf, -1.0, 1e300, 0.0])
        elif b.dtype.kind == "i":
            b[i] = rng.choice([-1, -(2**63), 2**63 - 1, 10**6, len(b), 0])
        elif b.dtype.kind == "b":
            b[i] = not b[i]
        arrs[k] = b
    elif op == "extra":
        arrs[rng.choice(["a9", "a99", f"a{len(keys)}", "zz", "a0x"])] = np.zeros(rng.choice([0, 3, 200]))
    elif op == "drop" and keys:
        del arrs[k]
    elif op == "rename" and keys:
        arrs[rng.choice(["b0", "a-1", f"a{len(keys) + 3}", "a00"])] = arrs.pop(k)
    elif op == "object":
        arrs[k] = np.array([_Pickled()] * 3, dtype=object)
    elif op == "scalar":
        arrs[k] = np.array(a[0] if a.size else 0)
    else:
        op = "empty"
        arrs[k] = np.zeros(0, dtype=a.dtype)
    return op


def _npz_bytes(arrs: dict) -> bytes:
    buf = io.BytesIO()
    if any(a.dtype == object for a in arrs.values()):
        with zipfile.ZipFile(buf, "w") as zf:
            for k, a in arrs.items():
                member = io.BytesIO()
                np.save(member, a, allow_pickle=True)
                zf.writestr(f"{k}.npy", member.getvalue())
        return buf.getvalue()
    np.savez(buf, **arrs)
    return buf.getvalue()


def _zip_variant(blob: bytes, rng: random.Random) -> bytes:
    """The same members rewritten: deflated, duplicated, a huge declared header, or a text member."""
    with zipfile.ZipFile(io.BytesIO(blob)) as zf:
        members = [(i.filename, zf.read(i)) for i in zf.infolist()]
    op = rng.choice(["deflate", "duplicate", "header-bomb", "text", "fortran"])
    buf = io.BytesIO()
    with contextlib.ExitStack() as stack:
        stack.enter_context(_quiet())
        zf = stack.enter_context(zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED if op == "deflate"
                                                 else zipfile.ZIP_STORED))
        for i, (name, data) in enumerate(members):
            if op == "header-bomb" and i == 0:
                head = io.BytesIO()
                np.lib.format.write_array_header_2_0(head, {"descr": "<f8", "fortran_order": False,
                                                            "shape": (rng.choice([10**9, 10**15, 2**62]),)})
                data = head.getvalue()
            if op == "fortran" and i == 0:
                data = data.replace(b"'fortran_order': False", b"'fortran_order': True ")
            zf.writestr(name, data)
            if op == "duplicate" and i == 0:
                zf.writestr(name, data[:len(data) // 2])
        if op == "text":
            zf.writestr("notes.txt", b"hello")
    return buf.getvalue()


@contextlib.contextmanager
def _quiet():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def _read(p: Path) -> bytes:
    """The bytes of `p` if it is a regular file (the fuzzer's own reads follow no link, open no FIFO)."""
    if p.is_symlink() or not p.is_file():
        raise OSError(f"{p} is not a regular file")
    return p.read_bytes()


def _rehash(d: Path) -> None:
    """Recompute the manifest's digests of the newest checkpoint's files (as an attacker can)."""
    try:
        m = json.loads(_read(d / "manifest.json"))
        sub = d / f"ss{int(m['superstep'])}"
        m["files"] = {name: hashlib.sha256(_read(sub / name)).hexdigest()
                      for name in m["files"] if (sub / name).is_file() and not (sub / name).is_symlink()}
        (d / "manifest.json").write_text(json.dumps(m))
    except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError, OverflowError):
        pass  # a manifest the mutation broke stays broken


def _latest_sub(d: Path) -> Path | None:
    try:
        return d / f"ss{int(json.loads(_read(d / 'manifest.json'))['superstep'])}"
    except Exception:  # noqa: BLE001 - a broken manifest: no newest checkpoint to mutate
        subs = sorted(p for p in d.iterdir() if p.name.startswith("ss"))
        return subs[-1] if subs else None


def _replace_kind(target: Path, rng: random.Random, case_dir: Path, outside: Path) -> str:
    """Put something else than a regular file (or directory) at `target`."""
    kind = rng.choice(["fifo", "fifo", "missing", "dir", "link-null", "link-zero", "link-inside", "link-outside",
                       "link-dangling", "link-loop", "socket", "empty"])
    if target.is_dir() and not target.is_symlink():
        shutil.rmtree(target)
    elif target.exists() or target.is_symlink():
        target.unlink()
    if kind == "fifo":
        os.mkfifo(target)
    elif kind == "dir":
        target.mkdir()
    elif kind == "link-null":
        target.symlink_to("/dev/null")
    elif kind == "link-zero":
        target.symlink_to("/dev/zero")
    elif kind == "link-inside":
        others = [p for p in case_dir.rglob("*") if p.is_file() and not p.is_symlink() and p != target]
        target.symlink_to(rng.choice(others) if others else case_dir)
    elif kind == "link-outside":
        target.symlink_to(outside)
    elif kind == "link-dangling":
        target.symlink_to(case_dir / "nowhere")
    elif kind == "link-loop":
        target.symlink_to(target.name)
    elif kind == "socket":
        s = socket.socket(socket.AF_UNIX)
        try:
            s.bind(str(target))
        except OSError:  # a path too long for a socket: leave it missing
            pass
        finally:
            s.close()
    elif kind == "empty":
        target.write_bytes(b"")
    return kind


def mutate_case(d: Path, rng: random.Random, outside: Path) -> list[str]:
    """Apply one to three mutations to the checkpoint directory `d`; returns their names."""
    done = []
    rehash = rng.random() < 0.85
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        sub = _latest_sub(d)
        target = rng.choice(["manifest", "rank-json", "rank-npz", "rank-npz", "kind", "rank-json", "ranks"])
        rank, ranks = 0, []
        if sub is not None:
            ranks = sorted(int(p.stem[4:]) for p in sub.glob("rank*.json") if p.stem[4:].isdigit())
            rank = rng.choice(ranks) if ranks else 0
        try:
            if target == "manifest":
                p = d / "manifest.json"
                raw = _read(p)
                if rng.random() < 0.7:
                    doc = mutate_json(json.loads(raw), rng)
                    p.write_text(json.dumps(doc))
                    done.append("manifest-json")
                else:
                    p.write_bytes(mutate_bytes(raw, rng))
                    done.append("manifest-bytes")
                continue  # the digests are in the manifest: rehashing would undo a change to them
            if sub is None:
                continue
            if target == "ranks":  # another rank's files in place of this one's (or both exchanged)
                others = [r for r in ranks if r != rank]
                if not others:
                    continue
                other = rng.choice(others)
                for ext in (".json", ".npz") if rng.random() < 0.5 else (rng.choice([".json", ".npz"]),):
                    a, b = sub / f"rank{rank}{ext}", sub / f"rank{other}{ext}"
                    if rng.random() < 0.5:
                        a.write_bytes(_read(b))
                    else:
                        tmp = sub / "swap"
                        a.rename(tmp)
                        b.rename(a)
                        tmp.rename(b)
                done.append("ranks")
            elif target == "rank-json":
                p = sub / f"rank{rank}.json"
                raw = _read(p)
                if rng.random() < 0.8:
                    doc = json.loads(raw)
                    if rng.random() < 0.6 and isinstance(doc.get("env"), dict) and doc["env"]:
                        name = rng.choice(list(doc["env"]))
                        doc["env"][name] = mutate_json({"v": doc["env"][name]}, rng).get("v", {"kind": "none"}) \
                            if rng.random() < 0.7 else rng.choice([{"kind": "none"}, {"kind": "array", "key": "a0"},
                                                                    {"kind": "scalar", "type": "int", "numpy": True,
                                                                     "value": 3}])
                        done.append(f"env:{name}")
                    else:
                        doc = mutate_json(doc, rng)
                        done.append("rank-json")
                    p.write_text(json.dumps(doc))
                else:
                    p.write_bytes(mutate_bytes(raw, rng))
                    done.append("rank-json-bytes")
            elif target == "rank-npz":
                p = sub / f"rank{rank}.npz"
                raw = _read(p)
                r = rng.random()
                if r < 0.6:
                    with np.load(io.BytesIO(raw), allow_pickle=False) as z:
                        arrs = {k: z[k] for k in z.files}
                    op = mutate_arrays(arrs, rng)
                    p.write_bytes(_npz_bytes(arrs))
                    done.append(f"arrays:{op}")
                elif r < 0.8:
                    p.write_bytes(_zip_variant(raw, rng))
                    done.append("zip")
                else:
                    p.write_bytes(mutate_bytes(raw, rng))
                    done.append("npz-bytes")
            else:
                what = rng.choice(["manifest.json", "rank.json", "rank.npz", "sub", "lock.json"])
                t = {"manifest.json": d / "manifest.json", "rank.json": sub / f"rank{rank}.json",
                     "rank.npz": sub / f"rank{rank}.npz", "sub": sub, "lock.json": d / "lock.json"}[what]
                done.append(f"{what}:{_replace_kind(t, rng, d, outside)}")
        except Exception as e:  # noqa: BLE001 - a part an earlier mutation already broke or removed
            done.append(f"skipped({type(e).__name__})")
    if rehash:
        _rehash(d)
    return done


# ---------------------------------------------------------------- running cases


def run_case(program, graph, base: Base, d: Path, ref, comm=None) -> tuple[str, str]:
    """(outcome, detail): refused / accepted_same / accepted_altered, or a failure kind."""
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(CASE_ALARM_S)
    try:
        try:
            digest = decoded_digest(program, graph, base.prog, d, comm)
            res = program.run(graph, args=PROGRAMS[base.prog], seed=SEED, resume=str(d),
                              checkpoint_every=base.every, comm=comm)
        except Hang:
            return "hang", ""
        except G2PLRuntimeError as e:
            return "runtime_error", e.render()[:300]
        except G2PLError as e:
            msg = e.render()
            if "internal error" in msg or not e.message:
                return "bad_message", msg[:300]
            return "refused", msg.split("error: ", 1)[-1][:90]
        except BaseException as e:  # noqa: BLE001 - what the fuzzer is looking for
            return "crash", f"{type(e).__name__}: {str(e)[:300]}"
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    if comm is not None and comm.rank != 0:  # rank 0 judges: has this rank's decoded state changed?
        return "accepted", "altered" if digest != base.digest else ""
    if res.values == ref:  # (JSON-like: NaN never equal, so a NaN answer counts as another one)
        return "accepted_same", ""
    if digest is not None and digest != base.digest:
        return "accepted_altered", ""
    return "same_state_other_answer", f"digest {digest}"


FAILURES = ("hang", "runtime_error", "bad_message", "crash", "same_state_other_answer", "cli_status",
            "cli_traceback", "ranks_disagree", "cli_hang")


def _ref_values(program, graph, prog: str, comm=None):
    return program.run(graph, args=PROGRAMS[prog], seed=SEED, comm=comm).values


def fuzz(cases: int, seed: int, work: Path, cli_cases: int = 0, progress: bool = True) -> dict:
    """Run `cases` in-process cases and `cli_cases` CLI processes; returns the totals (see `report`)."""
    work.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    graph = g2pl.load_graph(GRAPH, seed=SEED)
    programs = {p: g2pl.compile(ROOT / "programs" / f"{p}.g2pl") for p in PROGRAMS}
    bases = make_bases(work, programs, graph)
    refs = {p: _ref_values(programs[p], graph, p) for p in PROGRAMS}
    for b in bases:
        b.digest = decoded_digest(programs[b.prog], graph, b.prog, b.path)
        assert b.digest is not None, b.path
    outside = work / "outside.json"
    outside.write_text("{}")
    totals: Counter = Counter()
    mutations: Counter = Counter()
    refusals: Counter = Counter()
    failures: list = []
    altered: list = []
    t0 = time.perf_counter()
    for i in range(cases):
        base, d, done = mutated_copy(rng, bases, work / "case", outside)
        mutations.update(m.split(":")[0].split("(")[0] for m in done)
        outcome, detail = run_case(programs[base.prog], graph, base, d, refs[base.prog])
        totals[outcome] += 1
        if outcome == "refused":
            refusals[detail[:60]] += 1
        if outcome == "accepted_altered" and len(altered) < 12:
            altered.append(f"{base.path.name}: {', '.join(done)}")
        if outcome in FAILURES:
            failures.append({"case": i, "base": base.path.name, "mutations": done, "outcome": outcome,
                             "detail": detail})
        if progress and (i + 1) % 500 == 0:
            print(f"  {i + 1} cases, {time.perf_counter() - t0:.0f} s: {dict(totals)}", file=sys.stderr, flush=True)
    in_process_s = time.perf_counter() - t0
    cli = run_cli_cases(cli_cases, rng, work, bases, programs, graph, outside, failures) if cli_cases else Counter()
    return {"cases": cases, "seed": seed, "totals": dict(totals), "cli": dict(cli), "mutations": dict(mutations),
            "refusals": refusals.most_common(25), "failures": failures, "seconds": in_process_s,
            "altered": altered,
            "bases": [b.path.name for b in bases]}


def mutated_copy(rng: random.Random, bases: list[Base], d: Path, outside: Path) -> tuple[Base, Path, list[str]]:
    """A fresh copy at `d` of a checkpoint directory picked from `bases` (its lock note dropped), mutated:
    (the base, `d`, the mutations made)."""
    base = rng.choice(bases)
    shutil.rmtree(d, ignore_errors=True)
    shutil.copytree(base.path, d, symlinks=True)
    (d / "lock.json").unlink(missing_ok=True)
    return base, d, mutate_case(d, rng, outside)


def run_cli_cases(n: int, rng: random.Random, work: Path, bases: list[Base], programs: dict, graph, outside: Path,
                  failures: list) -> Counter:
    """`g2pl run --resume` as a process: exit status 0 or 2, never a traceback or an internal error."""
    totals: Counter = Counter()
    refs = {}
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    for i in range(n):
        base, d, done = mutated_copy(rng, bases, work / "cli-case", outside)
        digest = None
        try:
            with contextlib.redirect_stderr(io.StringIO()):
                digest = decoded_digest(programs[base.prog], graph, base.prog, d)
        except Exception:  # noqa: BLE001 - the process below is what is judged
            pass
        out = work / "cli-out.json"
        out.unlink(missing_ok=True)
        args = [a for k, v in PROGRAMS[base.prog].items() for a in ("--arg", f"{k}={v}")]
        cmd = [sys.executable, "-m", "g2pl.cli", "run", str(ROOT / "programs" / f"{base.prog}.g2pl"), "--graph",
               GRAPH, "--seed", str(SEED), "--quiet", *args, "--resume", str(d), "--checkpoint-every",
               str(base.every), "--time-limit", "20", "--output", str(out)]
        try:
            r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
        except subprocess.TimeoutExpired:
            totals["cli_hang"] += 1
            failures.append({"cli_case": i, "mutations": done, "outcome": "cli_hang"})
            continue
        if r.returncode not in (0, 2):
            outcome = "cli_status"
        elif "Traceback" in r.stderr or "internal error" in r.stderr:
            outcome = "cli_traceback"
        elif r.returncode == 2:
            outcome = "refused"
        else:
            if base.prog not in refs:
                refs[base.prog] = _cli_ref(base.prog, work, env)
            same = json.loads(out.read_text()) == refs[base.prog]
            outcome = "accepted_same" if same else "accepted_altered" if digest != base.digest \
                else "same_state_other_answer"
        totals[outcome] += 1
        if outcome in FAILURES:
            failures.append({"cli_case": i, "mutations": done, "outcome": outcome, "status": r.returncode,
                             "stderr": r.stderr[-500:]})
    return totals


def _cli_ref(prog: str, work: Path, env: dict):
    out = work / f"cli-ref-{prog}.json"
    args = [a for k, v in PROGRAMS[prog].items() for a in ("--arg", f"{k}={v}")]
    subprocess.run([sys.executable, "-m", "g2pl.cli", "run", str(ROOT / "programs" / f"{prog}.g2pl"), "--graph",
                    GRAPH, "--seed", str(SEED), "--quiet", *args, "--output", str(out)], env=env, check=True,
                   timeout=120)
    return json.loads(out.read_text())


# ---------------------------------------------------------------- two ranks (run under mpiexec -n 2)


def mpi_worker(cases: int, seed: int, work: Path, result: Path) -> None:
    """Every rank resumes every case; rank 0 mutates (the ranks share the file system) and judges."""
    from g2pl.runtime.mpi import MPIComm

    comm = MPIComm()
    rng = random.Random(seed)
    graph = g2pl.load_graph(GRAPH, seed=SEED) if comm.rank == 0 else None
    programs = {p: g2pl.compile(ROOT / "programs" / f"{p}.g2pl") for p in PROGRAMS}
    if comm.rank == 0:
        work.mkdir(parents=True, exist_ok=True)
    comm.barrier()
    bases = make_bases(work, programs, graph, comm)
    refs = {p: _ref_values(programs[p], graph, p, comm) for p in PROGRAMS}
    for b in bases:
        b.digest = decoded_digest(programs[b.prog], graph, b.prog, b.path, comm)
    outside = work / "outside.json"
    totals: Counter = Counter()
    failures: list = []
    t0 = time.perf_counter()
    for i in range(cases):
        base = bases[rng.randrange(len(bases))]  # the same draw on every rank
        d = work / "mpi-case"
        done = None
        if comm.rank == 0:
            outside.write_text("{}")
            shutil.rmtree(d, ignore_errors=True)
            shutil.copytree(base.path, d, symlinks=True)
            (d / "lock.json").unlink(missing_ok=True)
            done = mutate_case(d, random.Random(rng.random()), outside)
        else:
            rng.random()
        comm.barrier()
        outcome, detail = run_case(programs[base.prog], graph, base, d, refs[base.prog], comm)
        got = comm.gather((outcome, detail))
        if comm.rank == 0:
            if outcome == "same_state_other_answer" and any(det == "altered" for _o, det in got[1:]):
                outcome = "accepted_altered"  # rank 0's state is the saved one, another rank's is not
            if len({"accepted" if o.startswith("accepted") or o == "same_state_other_answer" else o
                    for o, _ in got}) > 1:  # one rank refused or failed where another went on
                outcome = "ranks_disagree"
            totals[outcome] += 1
            if outcome in FAILURES:
                failures.append({"mpi_case": i, "base": base.path.name, "mutations": done, "outcomes": got})
            if outcome == "hang":
                break  # the ranks' collectives are out of step: nothing after this is meaningful
    if comm.rank == 0:
        result.write_text(json.dumps({"cases": cases, "totals": dict(totals), "failures": failures,
                                      "seconds": time.perf_counter() - t0}))


def run_mpi(cases: int, seed: int, work: Path) -> dict:
    from g2pl.runtime.launch import find_mpiexec

    exe = find_mpiexec()
    if exe is None:
        return {"skipped": "no mpiexec"}
    result = work / "mpi-result.json"
    result.unlink(missing_ok=True)
    cmd = [exe, "-n", "2", sys.executable, str(Path(__file__).resolve()), "--mpi-worker", "--cases", str(cases),
           "--seed", str(seed), "--work", str(work / "mpi"), "--result", str(result)]
    r = subprocess.run(cmd, env=dict(os.environ, PYTHONPATH=str(ROOT)), capture_output=True, text=True,
                       timeout=600 + 3 * cases)
    if not result.exists():
        return {"failed": f"status {r.returncode}", "stderr": r.stderr[-2000:]}
    return json.loads(result.read_text())


# ---------------------------------------------------------------- report


def report(res: dict, mpi: dict | None, command: str) -> str:
    t = res["totals"]
    n_fail = len(res["failures"]) + (len(mpi.get("failures", [])) if mpi else 0)
    lines = [
        "# Checkpoint reader: structural fuzzing",
        "",
        f"Command: `{command}`",
        "",
        f"Bases: real checkpoints of programs/pagerank.g2pl, bfs.g2pl and pjcc.g2pl on `{GRAPH}` (seed {SEED}) at "
        "several supersteps (see POINTS in bench/fuzz_checkpoint.py): " + ", ".join(res["bases"]) + ".",
        "",
        "| where | cases | refused (exit 2) | accepted, same answer | accepted, altered data | failures |",
        "|---|---:|---:|---:|---:|---:|",
        f"| in-process, 1 rank (`Program.run(resume=...)`) | {res['cases']} | {t.get('refused', 0)} | "
        f"{t.get('accepted_same', 0)} | {t.get('accepted_altered', 0)} | "
        f"{sum(v for k, v in t.items() if k in FAILURES)} |",
    ]
    if res["cli"]:
        c = res["cli"]
        lines.append(f"| `g2pl run --resume` processes, 1 rank | {sum(c.values())} | {c.get('refused', 0)} | "
                     f"{c.get('accepted_same', 0)} | {c.get('accepted_altered', 0)} | "
                     f"{sum(v for k, v in c.items() if k in FAILURES)} |")
    if mpi and "totals" in mpi:
        m = mpi["totals"]
        lines.append(f"| in-process under `mpiexec -n 2`, 2 ranks | {sum(m.values())} | {m.get('refused', 0)} | "
                     f"{m.get('accepted_same', 0)} | {m.get('accepted_altered', 0)} | "
                     f"{sum(v for k, v in m.items() if k in FAILURES)} |")
    elif mpi:
        lines.append(f"| 2 ranks | not run: {mpi} | | | | |")
    lines += [
        "",
        f"Failures (crashes, internal errors, hangs, signals, exit statuses other than 0 and 2, an accepted "
        f"state equal to the saved one with another answer): **{n_fail}**. In-process time: "
        f"{res['seconds']:.0f} s.",
        "",
        "*Accepted, altered data*: the manifest's digests were recomputed (anyone who can write the "
        "directory can) and the change left a state of the right kinds, dtypes, shapes and counts, so it "
        "is indistinguishable from a checkpoint of another run (a different PageRank value, a level "
        "changed); the run finishes cleanly with the answer that state gives. Every accepted case whose "
        "decoded state equals the saved one gave exactly the uninterrupted run's answer.",
        "",
        "Examples of accepted, altered cases (base: mutations):",
        "",
        *[f"* {a}" for a in res["altered"]],
        "",
        "Mutations applied (one to three per case):",
        "",
        "| mutation | count |",
        "|---|---:|",
        *[f"| {k} | {v} |" for k, v in sorted(res["mutations"].items(), key=lambda kv: -kv[1])],
        "",
        "Most frequent refusals (in-process):",
        "",
        "| message (start) | count |",
        "|---|---:|",
        *[f"| {m.replace('|', '/')} | {c} |" for m, c in res["refusals"]],
    ]
    if n_fail:
        lines += ["", "Failures:", "", "```", *[json.dumps(f)[:600] for f in res["failures"][:30]],
                  *[json.dumps(f)[:600] for f in (mpi or {}).get("failures", [])[:30]], "```"]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = harness.parser(__doc__, out=False)
    ap.add_argument("--cases", type=int, default=10000)
    ap.add_argument("--cli-cases", type=int, default=100)
    ap.add_argument("--mpi-cases", type=int, default=0, help="cases resumed by two ranks under mpiexec")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--work", type=Path, default=None, help="scratch directory (default: a temporary one)")
    ap.add_argument("--out", type=Path, default=None, help="write the Markdown report here")
    ap.add_argument("--mpi-worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--result", type=Path, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.mpi_worker:
        mpi_worker(a.cases, a.seed, a.work, a.result)
        return 0
    with tempfile.TemporaryDirectory(prefix="g2pl-fuzz-ck-") as tmp:
        work = a.work or Path(tmp)
        res = fuzz(a.cases, a.seed, work / "one", a.cli_cases)
        mpi = run_mpi(a.mpi_cases, a.seed, work) if a.mpi_cases else None
    command = harness.command(__file__, argv)
    text = report(res, mpi, command)
    print(text)
    if a.out:
        a.out.write_text(text)
    failed = len(res["failures"]) + (len(mpi.get("failures", [])) if mpi else 0)
    return 1 if failed or (mpi and "totals" not in mpi) else 0


if __name__ == "__main__":
    sys.exit(main())
