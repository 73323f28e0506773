"""Argument checks shared by the public functions.

Every check raises ``TypeError`` (wrong kind of thing) or ``ValueError``
(right kind, wrong value) with a message that names the argument and says
what was expected.  Kept out of ``core.py`` so the math there reads cleanly.
"""

from __future__ import annotations

import difflib
import numbers

import ml_dtypes
import numpy as np

PAIRINGS = ("interleaved", "half")

#: dtypes ``rotate`` and friends accept and return unchanged.
FLOAT_DTYPES = (
    np.dtype(np.float16),
    np.dtype(np.float32),
    np.dtype(np.float64),
    np.dtype(ml_dtypes.bfloat16),
)


def check_bool(flag, name: str) -> bool:
    """A real bool (or numpy bool): strings such as "False" and arrays are refused, not truth-tested."""
    if isinstance(flag, (bool, np.bool_)):
        return bool(flag)
    raise TypeError(f"{name} must be True or False, got {flag!r} of type {type(flag).__name__}")


def closest_name(name: str, valid) -> str:
    """' (did you mean 'x'?)' for the valid name closest to a misspelt one, else ''."""
    match = difflib.get_close_matches(str(name), [str(v) for v in valid], n=1, cutoff=0.6)
    return f" (did you mean {match[0]!r}?)" if match else ""


def check_keywords(given, valid, what: str) -> None:
    """TypeError naming every unknown keyword in ``given``, with the closest valid name for each."""
    unknown = [k for k in given if k not in valid]
    if unknown:
        hints = "; ".join(f"{k!r}{closest_name(k, valid)}" for k in unknown)
        raise TypeError(f"{what} got unexpected keyword(s) {hints}; valid keywords: {sorted(valid)}")


def check_positive_int(n, name: str, *, even: bool = False) -> int:
    """A positive integer (even if asked)."""
    what = "a positive even integer" if even else "a positive integer"
    if isinstance(n, bool) or not isinstance(n, numbers.Integral):
        raise TypeError(f"{name} must be {what}, got {n!r} of type {type(n).__name__}")
    n = int(n)
    if n <= 0 or (even and n % 2):
        raise ValueError(f"{name} must be {what}, got {n}")
    return n


def check_d(d, name: str = "d") -> int:
    """A positive even integer feature dimension."""
    return check_positive_int(d, name, even=True)


def check_base(base, name: str = "base") -> float:
    """A finite, positive real base."""
    if isinstance(base, bool) or not isinstance(base, numbers.Real):
        raise TypeError(f"{name} must be a positive finite real number, got {base!r} of type {type(base).__name__}")
    base = float(base)
    if not np.isfinite(base) or base <= 0:
        raise ValueError(f"{name} must be a positive finite real number, got {base}")
    return base


def check_pairing(pairing) -> str:
    if pairing not in PAIRINGS:
        raise ValueError(f"pairing must be one of {PAIRINGS}, got {pairing!r}")
    return pairing


def check_rotary_dim(rotary_dim, d: int) -> int:
    """``rotary_dim`` defaults to ``d``; otherwise an even integer in [2, d]."""
    if rotary_dim is None:
        return d
    if isinstance(rotary_dim, bool) or not isinstance(rotary_dim, numbers.Integral):
        raise TypeError(f"rotary_dim must be None or an even integer in [2, d={d}], got {rotary_dim!r}")
    rotary_dim = int(rotary_dim)
    if rotary_dim <= 0 or rotary_dim % 2 or rotary_dim > d:
        raise ValueError(f"rotary_dim must be an even integer in [2, d={d}], got {rotary_dim}")
    return rotary_dim


def check_real_array(a, name: str, *, allow_int: bool = True) -> np.ndarray:
    """A real numeric array (not complex, object, string or bool)."""
    if isinstance(a, (str, bytes)):
        raise TypeError(f"{name} must be a real numeric array, got a string")
    arr = np.asarray(a)
    dt = arr.dtype
    if dt in FLOAT_DTYPES or (allow_int and dt.kind in "iu"):
        return arr
    if dt.kind == "c":
        raise TypeError(f"{name} must be real, got complex dtype {dt}")
    raise TypeError(f"{name} must be a real floating-point array, got dtype {dt}")


def check_x(x, name: str = "x") -> np.ndarray:
    """Input vectors of shape (..., d) with d even; integers are promoted to float64."""
    arr = check_real_array(x, name)
    if arr.ndim == 0:
        raise ValueError(f"{name} must have at least one axis (shape (..., seq, d)), got a 0-d array")
    if arr.dtype.kind in "iu":
        arr = arr.astype(np.float64)
    check_d(arr.shape[-1], f"{name}.shape[-1] (d)")
    return arr


def check_positions(positions, lead_shape: tuple, name: str = "positions") -> np.ndarray:
    """Finite real positions as float64, broadcastable to ``lead_shape`` = x.shape[:-1].

    ``None`` means ``arange(seq)`` along the second-to-last axis of x (or 0 for a
    single vector).  The result keeps its own (smaller) shape; callers broadcast.
    """
    if positions is None:
        if len(lead_shape) == 0:
            return np.zeros(())
        return np.arange(lead_shape[-1], dtype=np.float64)
    pos = check_real_array(positions, name)
    pos = pos.astype(np.float64)
    if not np.all(np.isfinite(pos)):
        raise ValueError(f"{name} must be finite, got NaN or infinity")
    try:
        shape = np.broadcast_shapes(pos.shape, tuple(lead_shape))
    except ValueError:
        shape = None
    if shape != tuple(lead_shape):
        raise ValueError(
            f"{name} of shape {pos.shape} does not broadcast to x.shape[:-1] = {tuple(lead_shape)}"
        )
    return pos


def check_positions_any(positions, name: str = "positions") -> np.ndarray:
    """Finite real positions of any shape, as float64."""
    pos = check_real_array(positions, name).astype(np.float64)
    if not np.all(np.isfinite(pos)):
        raise ValueError(f"{name} must be finite, got NaN or infinity")
    return pos


def check_inv_freq(inv_freq, n_pairs: int, name: str = "inv_freq") -> np.ndarray:
    """Explicit per-pair values: finite reals of shape (n_pairs,)."""
    f = check_real_array(inv_freq, name).astype(np.float64)
    if f.shape != (n_pairs,):
        raise ValueError(f"{name} must have shape ({n_pairs},) = (rotary_dim/2,), got shape {f.shape}")
    if not np.all(np.isfinite(f)):
        raise ValueError(f"{name} must be finite, got NaN or infinity")
    return f


def check_out(out, x: np.ndarray) -> np.ndarray:
    """An output buffer: an ndarray of x's shape and dtype that does not overlap x."""
    if not isinstance(out, np.ndarray):
        raise TypeError(f"out must be a numpy array, got {type(out).__name__}")
    if out.shape != x.shape or out.dtype != x.dtype:
        raise ValueError(f"out must have x's shape {x.shape} and dtype {x.dtype}, got {out.shape} {out.dtype}")
    if not out.flags.writeable:
        raise ValueError("out must be writeable")
    if np.shares_memory(out, x):
        raise ValueError("out must not overlap x: rope_ref never modifies its input in place")
    return out
