"""Calling the kernel: what fn may return, and the probes identify reads its rotations from."""

from __future__ import annotations

import numpy as np

from .. import _validate as val

def to_array(out):
    """numpy float64 from whatever fn returned: numpy, ml_dtypes, lists, torch (any dtype or
    device, with grad), anything with ``__array__``.  Duck-typed: torch is never imported."""
    if hasattr(out, "detach"):
        out = out.detach()
    if hasattr(out, "cpu") and not isinstance(out, np.ndarray):
        out = out.cpu()
    if hasattr(out, "numpy") and not isinstance(out, np.ndarray):
        try:
            out = out.numpy()
        except (TypeError, RuntimeError, ValueError):   # e.g. torch bfloat16 has no numpy dtype
            if not hasattr(out, "float"):
                raise
            out = out.float().numpy()
    try:
        arr = np.asarray(out)
    except (TypeError, ValueError) as err:
        raise TypeError(f"fn must return an array (numpy, torch, jax, a list), got {type(out).__name__}: "
                        f"{err}") from err
    if not (arr.dtype in val.FLOAT_DTYPES or arr.dtype.kind in "fiu"):
        raise TypeError(f"fn must return a real numeric array (numpy, torch, jax, a list), got "
                        f"{type(out).__name__} of dtype {arr.dtype}")
    return arr.astype(np.float64)


def call(fn, x, what: str, hint: str = "") -> np.ndarray:
    """fn(x) as float64 of x's shape; fn's own errors are re-raised with a note saying which call
    (and ``hint``: what the caller may have got wrong)."""
    try:
        out = fn(x.copy())
    except Exception as err:
        err.add_note(f"(raised by fn when rope_ref.identify called it with {what}, shape {x.shape}{hint})")
        raise
    out = to_array(out)
    if out.shape != x.shape:
        extra = _shape_hint(out.shape, x.shape)
        raise ValueError(f"fn must map an array of shape {x.shape} to the same shape, got {out.shape} "
                         f"(called with {what}){extra}")
    if not np.all(np.isfinite(out)):
        raise ValueError(f"fn returned non-finite values (NaN or inf) for finite input ({what}, shape "
                         f"{x.shape}); a rotary embedding maps finite input to finite output")
    return out


def check_seed(seed):
    """None (fresh random inputs each run) or a non-negative integer: a TypeError for other kinds, a
    ValueError for a negative one (both probes; _validate.check_seed takes no None)."""
    return None if seed is None else val.check_nonnegative_int(seed, "seed", "None or a non-negative integer")


def check_rotary_start(rotary_start):
    """The first rotated feature: a non-negative integer."""
    return val.check_nonnegative_int(rotary_start, "rotary_start",
                                     "a non-negative integer (the first rotated feature)")


def check_sizes(seq, d, max_bytes, max_rows=None):
    """The arrays identify would hold, against max_bytes, before anything is allocated or fn is called:
    seq x d x d float64 (the matrix of every row) and, when fn is asked for up to ``max_rows`` rows,
    max_rows x d for one call."""
    max_bytes = val.check_positive_int(max_bytes, "max_bytes")
    sizes = [(8 * seq * d * d, f"seq={seq} and d={d} need seq x d x d float64 (the matrix of every row)",
              "a smaller seq (the default 64 is enough)")]
    if max_rows is not None:
        sizes.append((8 * max_rows * d, f"max_rows={max_rows} and d={d} need max_rows x d float64 for one call",
                      "a smaller max_rows"))
    for size, what, fix in sizes:
        if size > max_bytes:
            raise ValueError(f"{what}: {_show_bytes(size)}, above max_bytes={max_bytes} ({_show_bytes(max_bytes)}); "
                             f"pass {fix}, or a larger max_bytes")


def _show_bytes(n):
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.4g} {unit}"
        n /= 1024


def probe_phase(fn, d, ia, out, rows, why):
    """Unwrapped angle of every pair at rows 0..rows-1, from one call: column ia of every block at once,
    read from the output features ``out`` = (oa, ob) the pairs are written to."""
    x = np.zeros((rows, d))
    x[:, ia] = 1.0
    y = call(fn, x, f"e_i on the first feature of every pair, {rows} rows, {why}",
             "; if fn accepts fewer rows (a cos/sin cache read at an offset), pass max_rows= the most it accepts")
    return np.unwrap(np.arctan2(y[:, out[1]], y[:, out[0]]), axis=0)


def _shape_hint(got, want):
    """What a kernel returning shape ``got`` for input shape ``want`` may have done; "" when nothing fits."""
    if got == (2, *want):
        return "; did fn return (q, k)? return one of them"
    if got == want[::-1]:
        return "; did fn return the transpose? return (seq, d)"
    if int(np.prod(got)) == int(np.prod(want)):
        return "; it holds the same values: drop its batch and head axes (e.g. [0, 0])"
    return ""
