"""Quantities the notebooks and figures look at: scores, score maps, agreement of the forms.

Nothing here is new math: each function composes the oracle (:mod:`rope_ref.core`) so that
notebooks can call it instead of re-deriving a formula in a cell.
"""

from __future__ import annotations

import numpy as np

from .. import _validate as val
from ..core import rotate, rotate_complex, rotate_dense, rotate_elementwise, sinusoidal, to_half, to_interleaved


#: Relative distances of Figure 2: continuous over [0, 256] in steps of 0.01 (25,601 points).
FIG2_DISTANCES = np.linspace(0.0, 256.0, 25601)
#: The y-range of the paper's Figure 2 axis.
FIG2_PAPER_YLIM = (6.0, 22.0)


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
    """The same grid for the additive sinusoidal embedding E: ``(q + E(m)) . (k + E(n))``."""
    E = sinusoidal(np.asarray(positions, float), q.shape[-1], base)
    return (q + E) @ (k + E).T


def diagonal_spread(S) -> float:
    """Largest (max - min) along any diagonal of a square map: 0 when S depends only on n - m."""
    S = np.asarray(S)
    return max(np.ptp(np.diagonal(S, off)) for off in range(-S.shape[0] + 1, S.shape[1]))


def score_vs_distance(q, k, distance, *, base: float = 10000.0, inv_freq=None) -> np.ndarray:
    """q . R_{r} k for each relative distance r = n - m (the function g of eq 11)."""
    return score(q, k, 0.0, distance, base=base, inv_freq=inv_freq)


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


def form_errors(positions, d: int = 128, *, seed: int = 0, base: float = 10000.0) -> dict:
    """Max |difference| per position between the plain elementwise form (eq 34) and the other forms.

    Returns ``{name: errors}``, each of ``positions``' shape, for plotting agreement.
    """
    pos = np.asarray(positions, float)
    x = np.random.default_rng(seed).standard_normal(pos.shape + (d,))
    ref = rotate_elementwise(x, pos, base=base)
    return {
        "dense R x (eq 14)": np.abs(rotate_dense(x, pos, base=base) - ref).max(axis=-1),
        "complex (eq 12)": np.abs(rotate_complex(x, pos, base=base) - ref).max(axis=-1),
        "fast rotate": np.abs(rotate(x, pos, base=base) - ref).max(axis=-1),
        "half pairing, permuted": np.abs(
            to_interleaved(rotate(to_half(x), pos, base=base, pairing="half")) - ref).max(axis=-1),
    }
