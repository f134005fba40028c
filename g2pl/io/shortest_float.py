"""A float64 as `repr` writes it, in integer arithmetic that numba compiles: the compiled row writer's
floats (arraytext.write_rows), with no Python object per number.

`repr(x)` is the shortest decimal text that reads back as x (of several, the nearest to x).  The digits
come from Ulf Adams' Ryu algorithm (PLDI 2018): the interval of decimals that round to x is scaled
by a power of ten through a 128-bit product with a precomputed power of five, and digits are
removed from its ends while they still differ.  The tables of powers of five are computed here with
Python's integers on import.  The text then follows CPython's `float_repr_style = 'short'`: positional
for decimal exponents from -4 to 16, else `d.ddde+XX`; ".0" after an integral positional value.
Every function here runs as plain Python too (tests compare it with `repr` on millions of values
compiled, and on the edge cases both ways).
"""

from __future__ import annotations

import numpy as np

_MANTISSA_BITS = 52
_BIAS = 1023
_POW5_INV_BITCOUNT = 125
_POW5_BITCOUNT = 125
_MASK32 = (1 << 32) - 1


def _tables() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(inverse low, inverse high, power low, power high): 2**k / 5**q rounded up for q < 342, and
    5**i's leading 125 bits for i < 326, each as two 64-bit halves."""
    inv_lo, inv_hi, pow_lo, pow_hi = [], [], [], []
    for q in range(342):
        p = 5**q
        inv = (1 << (p.bit_length() - 1 + _POW5_INV_BITCOUNT)) // p + 1
        inv_lo.append(inv & ((1 << 64) - 1))
        inv_hi.append(inv >> 64)
    for i in range(326):
        p = 5**i
        shift = p.bit_length() - _POW5_BITCOUNT
        v = p >> shift if shift >= 0 else p << -shift
        pow_lo.append(v & ((1 << 64) - 1))
        pow_hi.append(v >> 64)
    return tuple(np.array(t, dtype=np.uint64) for t in (inv_lo, inv_hi, pow_lo, pow_hi))  # type: ignore[return-value]


INV_LO, INV_HI, POW_LO, POW_HI = _tables()

#: the functions a compiled caller of `float_text` needs compiled, callees first (numba compiles a call
#: only to a compiled function; cpu_kernels.row_writer puts them in place of these plain ones)
COMPILED = ("_mul_hi", "_mul_shift", "_pow5_factor", "_pow5bits", "_drop_digit", "shortest", "_length",
            "_two_digits", "_digits", "float_text")


def _mul_hi(a, b):
    """(high, low) 64-bit halves of the 128-bit product of two uint64."""
    m32 = np.uint64(_MASK32)
    s32 = np.uint64(32)
    a_lo, a_hi = a & m32, a >> s32
    b_lo, b_hi = b & m32, b >> s32
    lo_lo = a_lo * b_lo
    hi_lo = a_hi * b_lo
    lo_hi = a_lo * b_hi
    hi_hi = a_hi * b_hi
    cross = (lo_lo >> s32) + (hi_lo & m32) + lo_hi
    high = hi_hi + (hi_lo >> s32) + (cross >> s32)
    low = (cross << s32) | (lo_lo & m32)
    return high, low


def _mul_shift(m, lo, hi, j):
    """(m * (hi * 2**64 + lo)) >> j, for 64 < j < 128 and m of at most 55 bits."""
    high1, low1 = _mul_hi(m, hi)
    high0, _low0 = _mul_hi(m, lo)
    total = high0 + low1
    if total < high0:
        high1 += np.uint64(1)
    dist = np.uint64(j - 64)
    return (high1 << (np.uint64(64) - dist)) | (total >> dist)


def _pow5_factor(v) -> int:
    count = 0
    five = np.uint64(5)
    while v > np.uint64(0):
        q = v // five
        if v - q * five != np.uint64(0):
            break
        v = q
        count += 1
    return count


def _drop_digit(vr, vp, vm, vr_trailing, last):
    """The general case's step: the last digit off the three, remembering whether all digits removed
    from vr so far were zeros and the last one removed."""
    ten = np.uint64(10)
    return vr // ten, vp // ten, vm // ten, vr_trailing and last == 0, int(vr % ten)


def _pow5bits(e: int) -> int:
    return ((e * 1217359) >> 19) + 1


def shortest(bits, inv_lo, inv_hi, pow_lo, pow_hi):
    """(digits, exponent) of the shortest decimal digits * 10**exponent that reads back as the finite,
    nonzero float64 whose bits are `bits` (sign ignored)."""
    ten = np.uint64(10)
    ieee_mantissa = bits & np.uint64((1 << _MANTISSA_BITS) - 1)
    ieee_exponent = int((bits >> np.uint64(_MANTISSA_BITS)) & np.uint64(0x7FF))
    if ieee_exponent == 0:
        e2 = 1 - _BIAS - _MANTISSA_BITS - 2
        m2 = ieee_mantissa
    else:
        e2 = ieee_exponent - _BIAS - _MANTISSA_BITS - 2
        m2 = np.uint64(1 << _MANTISSA_BITS) | ieee_mantissa
    accept_bounds = (m2 & np.uint64(1)) == np.uint64(0)
    mv = np.uint64(4) * m2
    mm_shift = 1 if (ieee_mantissa != np.uint64(0) or ieee_exponent <= 1) else 0
    mp_ = mv + np.uint64(2)
    mm_ = mv - np.uint64(1 + mm_shift)
    vm_trailing = False
    vr_trailing = False
    if e2 >= 0:
        q = ((e2 * 78913) >> 18) - (1 if e2 > 3 else 0)
        e10 = q
        k = _POW5_INV_BITCOUNT + _pow5bits(q) - 1
        i = -e2 + q + k
        lo, hi = inv_lo[q], inv_hi[q]
        vr = _mul_shift(mv, lo, hi, i)
        vp = _mul_shift(mp_, lo, hi, i)
        vm = _mul_shift(mm_, lo, hi, i)
        if q <= 21:
            if mv % np.uint64(5) == np.uint64(0):
                vr_trailing = _pow5_factor(mv) >= q
            elif accept_bounds:
                vm_trailing = _pow5_factor(mm_) >= q
            elif _pow5_factor(mp_) >= q:
                vp -= np.uint64(1)
    else:
        q = ((-e2 * 732923) >> 20) - (1 if -e2 > 1 else 0)
        e10 = q + e2
        i = -e2 - q
        k = _pow5bits(i) - _POW5_BITCOUNT
        j = q - k
        lo, hi = pow_lo[i], pow_hi[i]
        vr = _mul_shift(mv, lo, hi, j)
        vp = _mul_shift(mp_, lo, hi, j)
        vm = _mul_shift(mm_, lo, hi, j)
        if q <= 1:
            vr_trailing = True
            if accept_bounds:
                vm_trailing = mm_shift == 1
            else:
                vp -= np.uint64(1)
        elif q < 63:
            vr_trailing = (mv & ((np.uint64(1) << np.uint64(q)) - np.uint64(1))) == np.uint64(0)
    removed = 0
    last = 0
    if vm_trailing or vr_trailing:  # the rare general case
        while vp // ten > vm // ten:
            vm_trailing = vm_trailing and vm % ten == np.uint64(0)
            vr, vp, vm, vr_trailing, last = _drop_digit(vr, vp, vm, vr_trailing, last)
            removed += 1
        if vm_trailing:
            while vm % ten == np.uint64(0):
                vr, vp, vm, vr_trailing, last = _drop_digit(vr, vp, vm, vr_trailing, last)
                removed += 1
        if vr_trailing and last == 5 and vr % np.uint64(2) == np.uint64(0):
            last = 4  # exactly halfway: round to even
        up = (vr == vm and (not accept_bounds or not vm_trailing)) or last >= 5
    else:
        up = False
        hundred = np.uint64(100)
        if vp // hundred > vm // hundred:
            up = vr % hundred >= np.uint64(50)
            vr //= hundred
            vp //= hundred
            vm //= hundred
            removed += 2
        while vp // ten > vm // ten:
            up = vr % ten >= np.uint64(5)
            vr //= ten
            vp //= ten
            vm //= ten
            removed += 1
        up = up or vr == vm
    out = vr + np.uint64(1) if up else vr
    return out, e10 + removed


#: 10**k for k < 20, and the text of 0..99 as digit pairs (read as constants where compiled)
_POW10 = np.array([10**k for k in range(20)], np.uint64)
_PAIRS = np.frombuffer("".join(f"{i:02d}" for i in range(100)).encode(), np.uint8).copy()


def _length(v) -> int:
    """How many decimal digits v (< 10**17) has; repr's digits mostly have 16 or 17, so from the top."""
    n = 17
    while n > 1 and v < _POW10[n - 1]:
        n -= 1
    return n


def _two_digits(v, out, end):
    """v's last two decimal digits written just before `end`; returns v // 100."""
    q = v // np.uint64(100)
    d = np.uint64(2) * (v - q * np.uint64(100))
    out[end - 1] = _PAIRS[d + np.uint64(1)]
    out[end - 2] = _PAIRS[d]
    return q


def _digits(v, out, end):
    """v's decimal digits written to end just before `end`: two at a time, below and above 10**8 apart
    (two chains of divisions the processor runs side by side, not one twice as long)."""
    if v >= _POW10[8]:
        high = v // _POW10[8]
        low = v - high * _POW10[8]
        for _ in range(4):
            low = _two_digits(low, out, end)
            end -= 2
        v = high
    while v >= np.uint64(100):
        v = _two_digits(v, out, end)
        end -= 2
    if v >= np.uint64(10):
        _two_digits(v, out, end)
    else:
        out[end - 1] = np.uint8(np.uint64(48) + v)


def float_text(bits, out, pos, inv_lo, inv_hi, pow_lo, pow_hi):
    """`repr` of the finite float64 whose bits are `bits`, written into the uint8 array `out` from
    `pos`; returns the position after it (at most 24 bytes further)."""
    if bits >> np.uint64(63):
        out[pos] = 45  # '-'
        pos += 1
    if bits & np.uint64(0x7FFFFFFFFFFFFFFF) == np.uint64(0):
        out[pos] = 48
        out[pos + 1] = 46
        out[pos + 2] = 48
        return pos + 3
    digits, exp10 = shortest(bits, inv_lo, inv_hi, pow_lo, pow_hi)
    nd = _length(digits)
    decpt = nd + exp10
    if -4 < decpt <= 0:  # 0.000ddd
        out[pos] = 48
        out[pos + 1] = 46
        for k in range(-decpt):
            out[pos + 2 + k] = 48
        end = pos + 2 - decpt + nd
        _digits(digits, out, end)
        return end
    if nd <= decpt <= 16:  # ddd000.0
        _digits(digits, out, pos + nd)
        for k in range(nd, decpt):
            out[pos + k] = 48
        out[pos + decpt] = 46
        out[pos + decpt + 1] = 48
        return pos + decpt + 2
    # d.ddd (scientific: the point after the first digit) or ddd.ddd: the digits one place on, then the
    # ones before the point moved back over it
    sci = decpt > 16 or decpt <= -4
    point = 1 if sci else decpt
    _digits(digits, out, pos + 1 + nd)
    for k in range(point):
        out[pos + k] = out[pos + k + 1]
    if nd == 1 and sci:  # a single digit: no point
        pos += 1
    else:
        out[pos + point] = 46
        pos += nd + 1
    if not sci:
        return pos
    e = decpt - 1
    out[pos] = 101  # 'e'
    out[pos + 1] = 45 if e < 0 else 43
    pos += 2
    e = -e if e < 0 else e
    if e >= 100:
        out[pos] = np.uint8(48 + e // 100)
        pos += 1
        e %= 100
    out[pos] = np.uint8(48 + e // 10)
    out[pos + 1] = np.uint8(48 + e % 10)
    return pos + 2
