"""Quantities the notebooks and figures look at, built on :mod:`rope_ref.core`.

Nothing here is new math: each function composes the core forms so that
notebooks can call it instead of re-deriving a formula in a cell.
"""

from __future__ import annotations

import numpy as np

from . import _validate as val
from .attention import elu_plus_one
from .core import inv_freq as default_inv_freq
from .core import rotate, rotate_complex, rotate_dense, rotation_matrix, sinusoidal, to_half, to_interleaved


def random_qk(d: int, seed: int = 0, n: int | None = None):
    """Seeded standard-normal query and key vectors: shape ``(d,)`` each, or ``(n, d)``."""
    rng = np.random.default_rng(seed)
    shape = (d,) if n is None else (n, d)
    return rng.standard_normal(shape), rng.standard_normal(shape)


def score(q, k, m, n, *, base: float = 10000.0, pairing: str = "interleaved", inv_freq=None) -> np.ndarray:
    """q_m . k_n = <rotate(q, m), rotate(k, n)> (eq 16); m, n broadcast against each other."""
    m, n = np.broadcast_arrays(np.asarray(m, float), np.asarray(n, float))
    kw = dict(base=base, pairing=pairing, inv_freq=inv_freq)
    qm = rotate(np.broadcast_to(q, m.shape + q.shape[-1:]), m, **kw)
    kn = rotate(np.broadcast_to(k, n.shape + k.shape[-1:]), n, **kw)
    return np.einsum("...d,...d->...", qm, kn)


def score_map(q, k, positions, *, base: float = 10000.0) -> np.ndarray:
    """RoPE scores on a grid: ``S[a, b] = q_{positions[a]} . k_{positions[b]}``, shape ``(P, P)``."""
    p = np.asarray(positions, float)
    return score(q, k, p[:, None], p[None, :], base=base)


def sinusoidal_score_map(q, k, positions, *, base: float = 10000.0) -> np.ndarray:
    """The same grid for the additive embedding: ``(q + E(m)) . (k + E(n))`` (001, 002 eq 2)."""
    E = sinusoidal(np.asarray(positions, float), q.shape[-1], base)
    return (q + E) @ (k + E).T


def diagonal_spread(S) -> float:
    """Largest (max - min) along any diagonal of a square map: 0 when S depends only on n - m."""
    S = np.asarray(S)
    return max(np.ptp(np.diagonal(S, off)) for off in range(-S.shape[0] + 1, S.shape[1]))


def score_vs_distance(q, k, distance, *, base: float = 10000.0, inv_freq=None) -> np.ndarray:
    """q . R_{r} k for each relative distance r = n - m (the function g of eq 11)."""
    return score(q, k, 0.0, distance, base=base, inv_freq=inv_freq)


# ---- precision (notebook 06) ------------------------------------------------------------------

def angles_in_dtype(positions, freqs, dtype) -> np.ndarray:
    """m * theta_i computed the way a kernel would in ``dtype`` (positions and frequencies cast
    first, product rounded to ``dtype``), returned as float64 for comparison.  float16 overflows
    to inf beyond 65504."""
    import warnings
    dt = np.dtype(dtype)
    with np.errstate(over="ignore", invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        p = np.asarray(positions, dtype=np.float64).astype(dt)
        f = np.asarray(freqs, dtype=np.float64).astype(dt)
        return np.multiply.outer(p, f).astype(dt).astype(np.float64)


def angle_errors(positions, d: int = 128, base: float = 10000.0, dtype=np.float32) -> dict:
    """Max over pairs of |angle error| and |cos error| at each position when angles are computed
    in ``dtype`` (cos/sin then evaluated and rounded to ``dtype`` too), against float64."""
    pos = np.asarray(positions, dtype=np.float64)
    freqs = default_inv_freq(d, base)
    exact = np.multiply.outer(pos, freqs)
    low = angles_in_dtype(pos, freqs, dtype)
    with np.errstate(invalid="ignore"):
        cos_low = np.cos(low).astype(np.dtype(dtype)).astype(np.float64)
        return {"angle": np.abs(low - exact).max(axis=-1),
                "cos": np.abs(cos_low - np.cos(exact)).max(axis=-1)}


def rotate_with_angle_dtype(x, positions, *, base: float = 10000.0, dtype=np.float32) -> np.ndarray:
    """Interleaved RoPE whose angles and cos/sin are computed in ``dtype`` (the data stay float64):
    the numerical practice notebook 06 warns about.  ``x``: ``(..., seq, d)``."""
    x = np.asarray(x, dtype=np.float64)
    ang = angles_in_dtype(positions, default_inv_freq(x.shape[-1], base), dtype)
    dt = np.dtype(dtype)
    with np.errstate(invalid="ignore"):
        cos = np.cos(ang).astype(dt).astype(np.float64)
        sin = np.sin(ang).astype(dt).astype(np.float64)
    out = np.empty_like(x)
    out[..., 0::2] = x[..., 0::2] * cos - x[..., 1::2] * sin
    out[..., 1::2] = x[..., 1::2] * cos + x[..., 0::2] * sin
    return out


def score_error_by_dtype(q, k, m, distance: float = 16.0, *, base: float = 10000.0, dtype=np.float32):
    """|q_m . k_{m+r}| error when angles are computed in ``dtype`` vs float64, for each m."""
    m = np.asarray(m, dtype=np.float64)
    n = m + distance
    qm = rotate_with_angle_dtype(np.broadcast_to(q, m.shape + q.shape), m, base=base, dtype=dtype)
    kn = rotate_with_angle_dtype(np.broadcast_to(k, n.shape + k.shape), n, base=base, dtype=dtype)
    exact = score(q, k, m, n, base=base)
    return np.abs(np.einsum("...d,...d->...", qm, kn) - exact)


def mean_abs_score(distance, d: int = 128, *, base: float = 10000.0, n_samples: int = 256,
                   seed: int = 0, same_vector: bool = False) -> np.ndarray:
    """Mean over seeded random vectors of |q . R_r k| at each distance r.

    ``same_vector=False``: q, k independent standard normal -- their expected score
    does not decay (the bound of eq 37 is an upper bound, not a prediction).
    ``same_vector=True``: k = q, the case where the score does decay with r.
    Returns float64 of ``distance``'s shape.
    """
    r = val.check_positions_any(distance, "distance")
    q, k = random_qk(d, seed, n_samples)
    if same_vector:
        k = q
    out = np.empty(r.size)
    for j, dist in enumerate(r.ravel()):
        out[j] = np.abs(np.einsum("nd,nd->n", q, rotate(k, np.full(n_samples, dist), base=base))).mean()
    return out.reshape(r.shape)


def pair_polar(x2) -> tuple[float, float]:
    """Radius and angle of a 2-vector on the complex plane (eq 23's R and Theta)."""
    z = complex(x2[0], x2[1])
    return abs(z), float(np.angle(z))


def wrap_angle(a):
    """Angles wrapped to (-pi, pi]: compare an angle with m*theta modulo 2 pi."""
    return np.angle(np.exp(1j * np.asarray(a, dtype=float)))


def form_errors(positions, d: int = 128, *, seed: int = 0, base: float = 10000.0) -> dict:
    """Max |difference| per position between the elementwise form and the other forms.

    Returns ``{name: errors}``, each of ``positions``' shape, for plotting agreement.
    """
    pos = np.asarray(positions, float)
    x = np.random.default_rng(seed).standard_normal(pos.shape + (d,))
    ref = rotate(x, pos, base=base)
    return {
        "dense R x (eq 14)": np.abs(rotate_dense(x, pos, base=base) - ref).max(axis=-1),
        "complex (eq 12)": np.abs(rotate_complex(x, pos, base=base) - ref).max(axis=-1),
        "half pairing, permuted": np.abs(
            to_interleaved(rotate(to_half(x), pos, base=base, pairing="half")) - ref).max(axis=-1),
    }


def attention_direct(q, k, v, q_positions, k_positions, *, causal: bool = False,
                     base: float = 10000.0) -> np.ndarray:
    """Softmax attention written out with the dense matrices (eqs 2, 14, 16): a check for :func:`attention`.

    ``q``: ``(..., n_q, d)``, ``k``: ``(..., n_k, d)``, ``v``: ``(..., n_k, d_v)``; positions 1-D.
    """
    d = q.shape[-1]
    qr = np.einsum("mij,...mj->...mi", rotation_matrix(q_positions, d, base), q)
    kr = np.einsum("nij,...nj->...ni", rotation_matrix(k_positions, d, base), k)
    s = qr @ np.swapaxes(kr, -1, -2) / np.sqrt(d)
    if causal:
        s = np.where(np.asarray(k_positions)[None, :] <= np.asarray(q_positions)[:, None], s, -np.inf)
    w = np.exp(s - s.max(axis=-1, keepdims=True))
    return (w / w.sum(axis=-1, keepdims=True)) @ v


def linear_attention_direct(q, k, v, positions=None, *, causal: bool = False,
                            base: float = 10000.0) -> np.ndarray:
    """Eq 19 evaluated literally in O(N^2) with dense rotation matrices: a check for :func:`linear_attention`."""
    n_pos = q.shape[-2]
    pos = np.arange(n_pos, dtype=float) if positions is None else np.asarray(positions, float)
    R = rotation_matrix(pos, q.shape[-1], base)  # (N, d, d)
    fq, fk = elu_plus_one(q), elu_plus_one(k)
    rq = np.einsum("nij,...nj->...ni", R, fq)
    rk = np.einsum("nij,...nj->...ni", R, fk)
    num_w = rq @ np.swapaxes(rk, -1, -2)  # (..., N, N)
    den_w = fq @ np.swapaxes(fk, -1, -2)
    if causal:
        mask = np.tril(np.ones((n_pos, n_pos), bool))
        num_w, den_w = num_w * mask, den_w * mask
    return (num_w @ v) / den_w.sum(axis=-1, keepdims=True)
