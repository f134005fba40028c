"""g2pl.io.shortest_float against Python's own `repr`: the edge cases as plain Python, and millions of
floats of every kind compiled (as the compiled row writer runs it)."""

from __future__ import annotations

import math
import sys

import numpy as np
import pytest

from g2pl.io import arraytext as AT
from g2pl.io import shortest_float as S
from g2pl.runtime import cpu_kernels

TABLES = (S.INV_LO, S.INV_HI, S.POW_LO, S.POW_HI)


def text(x: float) -> str:
    out = np.zeros(32, np.uint8)
    with np.errstate(over="ignore"):  # (the 128-bit products wrap on purpose)
        end = S.float_text(np.array([x], np.float64).view(np.uint64)[0], out, 0, *TABLES)
    return out[:end].tobytes().decode()


def edge_cases() -> list[float]:
    xs = [0.0, -0.0, 0.1, 0.2, 0.3, 1 / 3, 2 / 3, 1.5, 123.0, 1e-4, 1e-5, 9.999e-5, 1e15, 1e16, 9999999999999998.0,
          1e17, 1e22, 1e23, 5e-324, 1e-323, 2.2250738585072014e-308, 2.225073858507201e-308, sys.float_info.max,
          sys.float_info.min, 2**53, 2**53 + 2, 2**63, 2**64, 9007199254740993.0, 0.30000000000000004, 1e300, 1e-300,
          123456.789, 5e-310, 4.35, 0.5, 2.5, 1.25e-7, 7.0e22, 8.41e21, 5.764607523034235e39, 1.8014398509481984e16]
    for e in range(-1074, 1024, 7):
        xs += [2.0**e, math.nextafter(2.0**e, 0.0), math.nextafter(2.0**e, math.inf)]
    for e in range(-323, 309, 3):
        v = float(f"1e{e}")
        xs += [v, math.nextafter(v, 0.0), math.nextafter(v, math.inf), 5 * v]
    xs = [float(x) for x in xs]
    return xs + [-x for x in xs]


def test_edge_cases_as_plain_python():
    bad = [(x, text(x)) for x in edge_cases() if text(x) != repr(x)]
    assert not bad


def _values(rng: np.random.Generator, kind: str, n: int) -> np.ndarray:
    if kind == "bits":  # every exponent and mantissa, subnormals included
        return rng.integers(0, 2**64, n, dtype=np.uint64).view(np.float64)
    if kind == "wide":
        return rng.standard_normal(n) * 10.0 ** rng.integers(-300, 300, n)
    if kind == "short":  # few digits: the ends of the interval decide
        return rng.integers(-10**6, 10**6, n) / 10.0 ** rng.integers(0, 12, n)
    return rng.standard_normal(n)


@pytest.mark.parametrize("kind", ["bits", "wide", "short", "normal"])
def test_compiled_rows_write_what_repr_writes(monkeypatch, kind):
    """Through the compiled row writer (one float per row, NaN and infinities as JSON's words): the
    bytes of `repr`, on 400k values of each kind."""
    monkeypatch.setenv("G2PL_NUMBA", "1")
    writer = cpu_kernels.row_writer()
    if writer is None:
        pytest.skip("numba is not installed")
    rng = np.random.default_rng(len(kind))
    x = _values(rng, kind, 400_000)
    x[:len(edge_cases())] = edge_cases()
    x[-4:] = [np.nan, np.inf, -np.inf, -np.nan]
    got = AT.Rows(x.size, writer).value("float", x, AT.JSON_NONFINITE).const(b"\n").text()
    want = "".join(('"nan"' if v != v else '"inf"' if v == math.inf else '"-inf"' if v == -math.inf else repr(v)) + "\n"
                   for v in x.tolist()).encode()
    assert got == want
    assert got == AT.Rows(x.size, None).value("float", x, AT.JSON_NONFINITE).const(b"\n").text()


@pytest.mark.parametrize("compiled", [False, True])
def test_rows_text_drops_its_last_bytes_without_changing_the_rest(monkeypatch, compiled):
    """`text(drop=k)` is `text()` less its last k bytes, by the compiled writer and by the array path."""
    monkeypatch.setenv("G2PL_NUMBA", "1" if compiled else "0")
    writer = cpu_kernels.row_writer() if compiled else None
    if compiled and writer is None:
        pytest.skip("numba is not installed")
    ids = np.array([7, -12, 300000], np.int64)

    def rows() -> AT.Rows:
        return AT.Rows(3, writer).const(b"[").ints(ids).const(b", ").value("int", ids * 3, AT.JSON_NONFINITE).const(b"],\n")

    whole = rows().text()
    assert whole == b"[7, 21],\n[-12, -36],\n[300000, 900000],\n"
    for k in (0, 1, 2, len(whole)):
        assert rows().text(drop=k) == whole[:len(whole) - k]


def test_every_layout_as_plain_python():
    """Each count of digits (1 to 17) at each place of the point around the two layouts' borders
    (positional from 1e-4 to below 1e16, else scientific)."""
    digits = "12345678901234567"
    xs = [float(f"{digits[:nd]}e{e}") for nd in range(1, 18) for e in range(-24, 20)]
    bad = [(x, text(x)) for x in xs + [-x for x in xs] if text(x) != repr(x)]
    assert not bad


def test_the_writer_loads_the_kernels_for_many_floats_only(monkeypatch):
    """In `auto` mode a process that has loaded no kernel writes integers by the array path, and a
    result of FLOATS_TO_LOAD floats or more by the compiled writer (formatting them costs a tenth)."""
    if not cpu_kernels.available():
        pytest.skip("numba is not installed")
    monkeypatch.setenv("G2PL_NUMBA", "auto")
    monkeypatch.setattr(cpu_kernels, "_state", {"numba": cpu_kernels._state["numba"]})
    assert cpu_kernels.row_writer(0) is None
    assert cpu_kernels.row_writer(cpu_kernels.FLOATS_TO_LOAD - 1) is None
    assert cpu_kernels.row_writer(cpu_kernels.FLOATS_TO_LOAD) is not None
    assert cpu_kernels.row_writer(0) is not None  # (loaded now: every text output uses it)


def test_the_compiled_writer_is_named_after_its_float_functions_source(monkeypatch, tmp_path):
    """numba's disk cache checks only the caller's file: write_rows, which has the float functions
    compiled into it, is compiled under a name carrying their source's digest, so a changed
    shortest_float.py never meets a cached write_rows made with the old one."""
    compiled: list[str] = []
    monkeypatch.setattr(cpu_kernels, "_jit", lambda fn, parallel=False, inline=False: compiled.append(fn.__name__) or fn)
    monkeypatch.setattr(cpu_kernels, "_state", dict(cpu_kernels._state))  # (this process's writer kept)
    for name in S.COMPILED:  # (the module's functions back as they are after the test)
        monkeypatch.setattr(S, name, getattr(S, name))
    names = []
    for text in (b"one", b"two", b"one"):
        src = tmp_path / f"{len(names)}.py"
        src.write_bytes(text)
        monkeypatch.setattr(S, "__file__", str(src))
        cpu_kernels._load_row_writer()
        names.append(compiled[-1])
    assert names[0] != names[1] and names[0] == names[2] and all(n.startswith("write_rows__") for n in names)
    assert compiled[:len(S.COMPILED)] == list(S.COMPILED)
