"""Precision (notebook 06): what a kernel's angles cost when computed in a narrow dtype (rope_ref uses float64)."""

from __future__ import annotations

import warnings

import ml_dtypes
import numpy as np

from .._validate import (check_freqs, check_number, check_positions, check_positions_any, check_real_array,
    check_scalar, check_x)
from ..forms import frequencies, rotate_half
from .quantities import _qk, score

#: The narrow dtypes notebook 06 compares with float64.
PRECISION_DTYPES = {"float16": np.float16, "bfloat16": ml_dtypes.bfloat16, "float32": np.float32}
_ANGLE_DTYPES = tuple(PRECISION_DTYPES) + ("float64",)


def angles_in_dtype(positions, freqs, dtype) -> np.ndarray:
    """m * theta_i as a kernel computes it in ``dtype`` (both cast, product rounded), as float64 ``(positions,
    pairs)``; float16 overflows to inf beyond 65504."""
    try:
        dt = np.dtype(dtype)
    except TypeError:
        dt = np.dtype(object)
    if dt.name not in _ANGLE_DTYPES:
        raise TypeError(f"dtype must be one of {_ANGLE_DTYPES} (a dtype or its name), got {dtype!r}")
    pos, freqs = check_positions_any(positions), check_freqs(freqs)
    with np.errstate(over="ignore", invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.multiply.outer(pos.astype(dt), freqs.astype(dt)).astype(dt).astype(np.float64)


def angle_errors(positions, d: int = 128, base: float = 10000.0, dtype=np.float32) -> dict:
    """Max over pairs of |angle error| and |cos error| at each position, angles and cos in ``dtype`` vs float64."""
    pos = check_positions_any(positions)
    freqs = frequencies(d, base)
    exact = np.multiply.outer(pos, freqs)
    low = angles_in_dtype(pos, freqs, dtype)
    with np.errstate(invalid="ignore"):
        cos_low = np.cos(low).astype(np.dtype(dtype)).astype(np.float64)
        return {"angle": np.abs(low - exact).max(axis=-1), "cos": np.abs(cos_low - np.cos(exact)).max(axis=-1)}


def rotate_with_angle_dtype(x, positions, *, base: float = 10000.0, dtype=np.float32) -> np.ndarray:
    """Interleaved RoPE, x cos + rotate_half(x) sin (eq 34), with angles and cos/sin computed in ``dtype`` (the data
    stay float64).  ``x``: ``(..., seq, d)``."""
    x = check_x(x).astype(np.float64)
    pos = check_positions(positions, x.shape[:-1])
    angles = np.repeat(angles_in_dtype(pos, frequencies(x.shape[-1], base), dtype), 2, axis=-1)
    with np.errstate(invalid="ignore"):
        cos, sin = (np.asarray(f(angles)).astype(np.dtype(dtype)).astype(np.float64) for f in (np.cos, np.sin))
    return x * cos + rotate_half(x) * sin


def score_error_by_dtype(q, k, m, distance: float = 16.0, *, base: float = 10000.0, dtype=np.float32):
    """|q_m . k_{m+r}| error when angles are computed in ``dtype`` vs float64, for each m."""
    q, k = _qk(q, k, one_d=True)
    m = check_positions_any(m, "m")
    n = m + check_scalar(distance, "distance")
    qm = rotate_with_angle_dtype(np.broadcast_to(q, m.shape + q.shape), m, base=base, dtype=dtype)
    kn = rotate_with_angle_dtype(np.broadcast_to(k, n.shape + k.shape), n, base=base, dtype=dtype)
    exact = score(q, k, m, n, base=base)
    return np.abs(np.einsum("...d,...d->...", qm, kn) - exact)


def format_errors(values, digits: int = 1) -> str:
    """Errors as a row of fixed-width scientific numbers (``3.4e-02``), ``inf`` and ``nan`` spelled out."""
    values = check_real_array(values, "values")
    digits = check_number(digits, "digits", "an integer from 1 to 17", lambda v: 0 < v <= 17)
    return "  ".join(f"{float(v):>{7 + digits}.{digits}e}" if np.isfinite(v) else f"{str(float(v)):>{7 + digits}}"
                     for v in np.ravel(values))
