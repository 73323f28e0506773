"""Precision (notebook 06): what a kernel's angles cost when computed in a narrow dtype (rope_ref uses float64)."""

import ml_dtypes
import numpy as np

from .._validate import check_freqs, check_positions, check_positions_any, check_scalar, check_x
from ..forms import frequencies, rotate_half
from .quantities import _qk, score

#: The narrow dtypes notebook 06 compares with float64.
PRECISION_DTYPES = {"float16": np.float16, "bfloat16": ml_dtypes.bfloat16, "float32": np.float32}
_ANGLE_DTYPES = (*PRECISION_DTYPES, "float64")


def angles_in_dtype(positions, freqs, dtype) -> np.ndarray:
    """m * theta_i as a kernel computes it in ``dtype`` (both cast, product rounded), as float64; float16 gives inf."""
    try:
        dt = np.dtype(dtype)
    except (TypeError, ValueError):
        dt = np.dtype(object)
    if dt.name not in _ANGLE_DTYPES:
        raise TypeError(f"dtype must be one of {_ANGLE_DTYPES} (a dtype or its name), got {dtype!r:.80}")
    with np.errstate(over="ignore", invalid="ignore"):
        pos, freqs = check_positions_any(positions), check_freqs(freqs)
        return np.multiply.outer(pos.astype(dt), freqs.astype(dt)).astype(dt).astype(np.float64)


def angle_errors(positions, d: int = 128, base: float = 10000.0, dtype=np.float32) -> np.ndarray:
    """Max over pairs of |angle error| at each position: m theta_i in ``dtype`` against float64 (inf past float16)."""
    pos = check_positions_any(positions)
    freqs = frequencies(d, base)
    return np.abs(angles_in_dtype(pos, freqs, dtype) - np.multiply.outer(pos, freqs)).max(axis=-1)


def rotate_with_angle_dtype(x, positions, *, base: float = 10000.0, dtype=np.float32) -> np.ndarray:
    """Interleaved RoPE (eq 34) of x ``(..., seq, d)`` in float64, with angles and cos/sin computed in ``dtype``."""
    x = check_x(x).astype(np.float64)
    pos = check_positions(positions, x.shape[:-1])
    angles = np.repeat(angles_in_dtype(pos, frequencies(x.shape[-1], base), dtype), 2, axis=-1)
    with np.errstate(invalid="ignore"):
        cos, sin = (np.asarray(f(angles)).astype(np.dtype(dtype)).astype(np.float64) for f in (np.cos, np.sin))
    return x * cos + rotate_half(x) * sin


def score_error_by_dtype(q, k, m, distance: float = 16.0, *, base: float = 10000.0, dtype=np.float32):
    """|q_m . k_{m+r}| error when angles are computed in ``dtype`` vs float64, for each m; q, k ``(d,)``."""
    q, k = _qk(q, k, one_d=True)
    m, distance = check_positions_any(m, "m"), check_scalar(distance, "distance")
    qm = rotate_with_angle_dtype(np.broadcast_to(q, m.shape + q.shape), m, base=base, dtype=dtype)
    kn = rotate_with_angle_dtype(np.broadcast_to(k, m.shape + k.shape), m + distance, base=base, dtype=dtype)
    return np.abs(np.einsum("...d,...d->...", qm, kn) - score(q, k, m, m + distance, base=base))

