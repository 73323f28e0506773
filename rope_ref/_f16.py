"""float16 <-> float32 conversions of a block, bit-identical to NumPy's casts, from vectorised ufuncs.

NumPy's own float16 casts run one element at a time (benchmarks/bench_f16.py times them against
a float16 copy); these do the same conversions with a handful of integer/float ufunc passes over ``uint16`` /
``int32`` / ``uint32`` views, writing into caller-given buffers.  ``rope_ref.rotate`` uses them to
convert float16 input to float32 block by block and back.

Bit layouts: float16 = sign(1) | exponent(5, bias 15) | mantissa(10);
float32 = sign(1) | exponent(8, bias 127) | mantissa(23).

* :func:`to_float32` puts the float16 exponent and mantissa where the float32 ones live (``<< 13``),
  reads that as a float32 and multiplies by ``2**112`` (= 2**(127-15)): normals get the right exponent,
  float16 subnormals (a float32 subnormal after the shift) become the right float32 normal, exactly.
  Only exponent 31 (inf/NaN) needs a fix-up, applied when a cheap min/max finds one.
* :func:`from_float32` is F. Giesen's ``float_to_half_fast3_rtne`` done on whole arrays, without
  selecting: the normal path (rebias the exponent, add ``0xfff`` plus the kept mantissa's lowest bit so
  the carry rounds to nearest even, shift right 13) runs on ``max(|f|, 2**-14)``, the subnormal path
  (``2**-1 + |f|``: the float add rounds to a multiple of 2**-24) on ``min(|f|, 2**-14)``, and the two
  are added, each minus what it gives at 2**-14.  The sign rides along: an arithmetic shift by 13
  copies it to bit 28 (next to the kept mantissa bit, at 0), added before the final shift it lands on
  bit 15.  Only ``|f| >= 2**16``, inf and NaN need a fix-up, applied when a max finds one.  Eleven
  passes over 32-bit data and one max.
"""

from __future__ import annotations

import functools

import numpy as np

_SCALE = np.float32(2.0 ** 112)           # 2**(127 - 15): float16 exponent bias -> float32 bias
_KEEP = np.int32(-0x70000001)             # 0x8FFFFFFF: clears bits 28..30 (copies of the sign)
_MIN_NORMAL = np.float32(2.0 ** -14)      # the smallest float16 normal
_HALF_BITS = 0x3F000400                   # bits of 2**-1 + 2**-14
_REBIAS_ROUND = np.uint32((0xC8000FFF - (_HALF_BITS << 13)) % 2 ** 32)   # (-112 << 23) + 0xFFF - (_HALF_BITS << 13)
_OVERFLOW = 143 << 23                     # |f| bits of 2**16: from there on the normal path breaks


@functools.lru_cache(maxsize=4)
def _min_normals(n: int) -> np.ndarray:
    """n copies of 2**-14, read-only: np.maximum/fmin against an array run vectorised, against a
    scalar they take twice as long (NumPy 2.4)."""
    a = np.full(n, _MIN_NORMAL)
    a.flags.writeable = False
    return a


F16_BITS = (np.dtype(np.float16), np.dtype(np.uint16))
F32 = (np.dtype(np.float32),)
U32 = (np.dtype(np.uint32),)


def _check(a, name: str, dtypes: tuple, like=None) -> np.ndarray:
    """A C-contiguous ndarray of one of ``dtypes`` (and ``like``'s shape), else TypeError/ValueError."""
    if not isinstance(a, np.ndarray) or a.dtype not in dtypes:
        names = " or ".join(t.name for t in dtypes)
        given = f"dtype {a.dtype}" if isinstance(a, np.ndarray) else type(a).__name__
        raise TypeError(f"{name} must be a numpy array of {names}, got {given}")
    if not a.flags.c_contiguous:
        raise ValueError(f"{name} must be C-contiguous, got strides {a.strides} for shape {a.shape}")
    if like is not None:
        if a.shape != like.shape:
            raise ValueError(f"{name} must have shape {like.shape} (the input's), got {a.shape}")
        if np.may_share_memory(a, like):
            raise ValueError(f"{name} must not overlap the input array")
    return a


def to_float32(h: np.ndarray, out: np.ndarray) -> np.ndarray:
    """Write float16 values ``h`` (float16 or their uint16 bit patterns, any shape, C-contiguous) into
    ``out`` (float32, same shape) exactly: ``out`` equals ``h.view(np.float16).astype(np.float32)`` bit
    for bit (NaN payloads included).  Needs no scratch memory; returns ``out``."""
    h = _check(h, "h", F16_BITS)
    out = _check(out, "out", F32, like=h)
    x = out.reshape(-1)                        # a view (C-contiguous), 0-d included
    w = x.view(np.int32)
    np.copyto(w, h.reshape(-1).view(np.int16))  # sign-extends: the sign lands on bits 15..31
    np.left_shift(w, 13, out=w)                # exponent -> bits 23..27, mantissa -> 13..22, sign -> 28..31
    np.bitwise_and(w, _KEEP, out=w)            # one sign bit left, at 31
    np.multiply(x, _SCALE, out=x)              # bias 15 -> 127, exact; subnormals come out normal
    if x.size and not (x.max() < 65536 and x.min() > -65536):   # exponent 31 gave 2**16 <= |x| < 2**17
        w[np.flatnonzero(np.abs(x) >= 65536)] |= 0x7F800000     # exponent 143 -> 255: inf, or NaN with its payload
    return out


def from_float32(f: np.ndarray, out: np.ndarray, work: np.ndarray | None = None) -> np.ndarray:
    """Write ``f`` (float32, any shape, C-contiguous) rounded to float16 into ``out`` (float16 or
    uint16, same shape), bit-identical to ``f.astype(np.float16)``: round to nearest, ties to even;
    subnormals; overflow to inf; NaN stays NaN with its sign and the top of its payload.  ``work`` is
    scratch, uint32 of shape ``(3, *f.shape)`` (allocated when not given); returns ``out``."""
    f = _check(f, "f", F32)
    out = _check(out, "out", F16_BITS, like=f)
    shape = (3,) + f.shape
    if work is None:
        work = np.empty(shape, np.uint32)
    elif not (isinstance(work, np.ndarray) and work.dtype == np.uint32 and work.shape == shape
              and work.flags.c_contiguous):
        given = f"{work.dtype} of shape {work.shape}" if isinstance(work, np.ndarray) else type(work).__name__
        raise TypeError(f"work must be a C-contiguous uint32 array of shape {shape}, got {given}")
    if np.may_share_memory(work, f) or np.may_share_memory(work, out):
        raise ValueError("work must not overlap f or out")
    f, bits = f.reshape(-1), out.reshape(-1).view(np.uint16)    # views (C-contiguous), 0-d included
    u, (t, k, a) = f.view(np.uint32), work.reshape(3, -1)
    np.right_shift(u.view(np.int32), 13, out=k.view(np.int32))  # arithmetic: bit 0 = mantissa bit 13, bit 28 = sign
    np.bitwise_and(k, 0x10000001, out=k)       # the kept mantissa's lowest bit (ties to even) | sign << 28
    af = a.view(np.float32)
    np.abs(f, out=af)
    m = _min_normals(f.size)
    np.maximum(af, m, out=t.view(np.float32))  # |f| clamped up to 2**-14, the normal path's range
    large = f.size and t.max() >= _OVERFLOW    # |f| >= 2**16, inf, NaN: the normal path breaks there
    np.add(t, k, out=t)                        # normal path (clamped values give 0x400, the top subnormal):
    np.add(t, _REBIAS_ROUND, out=t)            # exponent -112, + 0xFFF (+ odd bit): the carry rounds, ties to even
    np.right_shift(t, 13, out=t)               # -> sign at 15, exponent 10..14, mantissa 0..9, minus _HALF_BITS
    np.fmin(af, m, out=af)                     # subnormal path: 2**-1 + min(|f|, 2**-14) rounds |f| to a multiple
    np.add(af, np.float32(0.5), out=af)        # of 2**-24; its bits are _HALF_BITS - 0x400 + the float16 bits
    np.add(t, a, out=t)                        # (adds just _HALF_BITS when |f| >= 2**-14)
    np.copyto(bits, t, casting="unsafe")       # keeps the low 16 bits
    if large:                                  # inf; NaN keeps the top 10 payload bits (at least 1: still NaN)
        i = np.flatnonzero(u & 0x7FFFFFFF >= _OVERFLOW)
        ui = u[i]
        nan = (ui & 0x7FFFFFFF) > 0x7F800000
        bits[i] = 0x7C00 | (ui >> 16) & 0x8000 | np.where(nan, np.maximum((ui >> 13) & 0x3FF, 1), 0)
    return out


def all_finite(a: np.ndarray) -> bool:
    """``np.all(np.isfinite(a))``; for float16 from the exponent bits, 64k values at a time (about 6x faster
    than NumPy's float16 ``isfinite``, which runs as a scalar loop)."""
    a = np.asarray(a)
    if a.dtype != np.float16:
        return bool(np.all(np.isfinite(a)))
    bits = np.ascontiguousarray(a).view(np.uint16).reshape(-1)
    exponent = np.empty(max(1, min(bits.size, 1 << 16)), np.uint16)
    for i in range(0, bits.size, exponent.size):
        e = exponent[:bits[i:i + exponent.size].size]
        np.bitwise_and(bits[i:i + e.size], 0x7C00, out=e)   # all exponent bits set: inf or NaN
        if e.max() == 0x7C00:
            return False
    return True
