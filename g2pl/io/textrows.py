"""The data rows of edge-list text in one compiled pass: the common forms only, the rest left to NumPy.

A graph file's lines (`u v`, `u v weight`, `u,v[,weight]`, or one ID a line) go to NumPy's C tokenizer
block by block (g2pl.graph.loaders); on a 16M-line file that takes about 4 s, most of a run.
`parse_rows` reads the same lines in one pass over the bytes, writing each row straight into the
caller's arrays, but it accepts only what it can read exactly as NumPy does and gives up (-1) on
anything else, which the loaders then hand to NumPy as before (and, for a bad line, to the line
validator that names it): so the rows are the same, and so is every error.

It reads, in a block of whole lines: lines ending in "\\n" or "\\r\\n" (the last may end the block
instead); blank lines; `#` and `%` comments to the end of a line, alone or after the row; IDs of 1 to
18 decimal digits (no sign); tokens separated by blanks (spaces and tabs, also before and after
them) or, in comma mode, by one comma and nothing else; and weights written `D`, `D.D`, `.D`, `D.`
with an optional exponent `e[+-]D`, of at most 15 significant digits and a power of ten within
10^±22 after moving the point, which one correctly rounded multiplication or division of two exact
float64 values turns into the nearest float64, as NumPy's own parser does (Clinger's fast path).
Signs, longer numbers, `inf`/`nan`, other characters, a lone "\\r", a wrong count of columns: -1.

The function is plain Python that numba compiles: the loaders ask `g2pl.io.compiled.kernel` for it
and use NumPy alone when that answers None.
"""

from __future__ import annotations

import numpy as np

#: 10**k for k = 0..22: each exactly a float64 (10**22 < 2**53 * 2**22)
POWERS = np.array([10.0**k for k in range(23)], dtype=np.float64)


_NL, _CR, _SP, _TAB, _HASH, _PCT, _COMMA, _DOT, _ZERO = 10, 13, 32, 9, 35, 37, 44, 46, 48


def parse_rows(buf, lo, hi, ncols, comma, u, v, w, at, powers):  # noqa: C901 - one pass, one loop
    """Rows of the whole lines buf[lo:hi] (uint8) written to u, v (IDs) and w (weights) from index `at`
    (`ncols` 1: u only; 2: u, v; 3: u, v, w); the number of rows, or -1 where anything is not in the
    forms above (the arrays then hold partial rows, to be overwritten).  `powers` is POWERS."""
    i = lo
    n = at
    while i < hi:
        if not comma:
            while i < hi and (buf[np.uint64(i)] == _SP or buf[np.uint64(i)] == _TAB):
                i += 1
            if i == hi:
                break
        c = buf[np.uint64(i)]
        if c == _NL:
            i += 1
            continue
        if c == _CR:
            if i + 1 < hi and buf[np.uint64(i + 1)] == _NL:
                i += 2
                continue
            return -1
        if c == _HASH or c == _PCT:
            while i < hi and buf[np.uint64(i)] != _NL:
                i += 1
            i += 1
            continue
        if n == len(u):  # (more rows than the arrays hold: the caller sized them by lines and bytes)
            return -1
        for col in range(ncols):
            if col > 0:
                if i == hi:
                    return -1
                if comma:
                    if buf[np.uint64(i)] != _COMMA:
                        return -1
                    i += 1
                else:
                    if not (buf[np.uint64(i)] == _SP or buf[np.uint64(i)] == _TAB):
                        return -1
                    while i < hi and (buf[np.uint64(i)] == _SP or buf[np.uint64(i)] == _TAB):
                        i += 1
            if col < 2:  # (a digit run is written out here and for the exponent: as an inlined numba helper
                # returning its value and end, the pass took 0.82 s for kron:20's `u v` text against 0.24 s)
                x = 0
                start = i
                while i < hi and _ZERO <= buf[np.uint64(i)] <= _ZERO + 9:
                    x = x * 10 + int(buf[np.uint64(i)] - _ZERO)
                    i += 1
                if i == start or i - start > 18:
                    return -1
                if col == 0:
                    u[n] = x
                else:
                    v[n] = x
                continue
            mant = 0
            digits = 0  # significant digits in mant
            exp10 = 0
            seen = False
            point = False  # (the digits after it move the point: exp10 -1 each)
            while i < hi:
                c = buf[np.uint64(i)]
                if _ZERO <= c <= _ZERO + 9:
                    seen = True
                    d = int(c - _ZERO)
                    if mant > 0 or d > 0:
                        mant = mant * 10 + d
                        digits += 1
                    if point:
                        exp10 -= 1
                elif c == _DOT and not point:
                    point = True
                else:
                    break
                i += 1
            if not seen or digits > 15:
                return -1
            if i < hi and (buf[np.uint64(i)] == 101 or buf[np.uint64(i)] == 69):  # e, E
                i += 1
                sign = 1
                if i < hi and (buf[np.uint64(i)] == 43 or buf[np.uint64(i)] == 45):  # +, -
                    sign = -1 if buf[np.uint64(i)] == 45 else 1
                    i += 1
                e = 0
                start = i
                while i < hi and _ZERO <= buf[np.uint64(i)] <= _ZERO + 9:
                    e = e * 10 + int(buf[np.uint64(i)] - _ZERO)
                    i += 1
                if i == start or i - start > 4:
                    return -1
                exp10 += sign * e
            if mant == 0:
                w[n] = 0.0
            elif exp10 > 22 or exp10 < -22:
                return -1
            elif exp10 >= 0:
                w[n] = np.float64(mant) * powers[exp10]
            else:
                w[n] = np.float64(mant) / powers[-exp10]
        if not comma:
            while i < hi and (buf[np.uint64(i)] == _SP or buf[np.uint64(i)] == _TAB):
                i += 1
        if i < hi:
            c = buf[np.uint64(i)]
            if c == _HASH or c == _PCT:
                while i < hi and buf[np.uint64(i)] != _NL:
                    i += 1
            elif c == _CR:
                if not (i + 1 < hi and buf[np.uint64(i + 1)] == _NL):
                    return -1
                i += 1
            if i < hi:
                if buf[np.uint64(i)] != _NL:
                    return -1
                i += 1
        n += 1
    return n - at
