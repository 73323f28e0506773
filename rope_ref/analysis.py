"""Quantities the notebooks and figures look at, built on :mod:`rope_ref.core`.

Nothing here is new math: each function composes the core forms so that
notebooks can call it instead of re-deriving a formula in a cell.
"""

from __future__ import annotations

import numpy as np

from . import _validate as val
from .attention import elu_plus_one
from .core import rotate, rotation_matrix, sinusoidal


def random_qk(d: int, seed: int = 0, n: int | None = None):
    """Seeded standard-normal query and key vectors: shape ``(d,)`` each, or ``(n, d)``."""
    rng = np.random.default_rng(seed)
    shape = (d,) if n is None else (n, d)
    return rng.standard_normal(shape), rng.standard_normal(shape)


def score(q, k, m, n, *, base: float = 10000.0, pairing: str = "interleaved") -> np.ndarray:
    """q_m . k_n = <rotate(q, m), rotate(k, n)> (eq 16); m, n broadcast against each other."""
    m, n = np.broadcast_arrays(np.asarray(m, float), np.asarray(n, float))
    qm = rotate(np.broadcast_to(q, m.shape + q.shape[-1:]), m, base=base, pairing=pairing)
    kn = rotate(np.broadcast_to(k, n.shape + k.shape[-1:]), n, base=base, pairing=pairing)
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


def score_vs_distance(q, k, distance, *, base: float = 10000.0) -> np.ndarray:
    """q . R_{r} k for each relative distance r = n - m (the function g of eq 11)."""
    return score(q, k, 0.0, distance, base=base)


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
    from .core import rotate_complex, rotate_dense, to_half, to_interleaved

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
