"""Quantities the notebooks and figures look at: scores, score maps, agreement of the forms.

Nothing here is new math: each function composes the oracle (:mod:`rope_ref.core`) so that
notebooks can call it instead of re-deriving a formula in a cell.
"""

from __future__ import annotations

import numpy as np

from .. import _validate as val
from ..attention import elu_plus_one
from ..core import (frequencies, partial_sums, rotate, rotate_complex, rotate_dense, rotate_elementwise, sinusoidal,
                    to_half, to_interleaved, wrap_angle)


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


# --- notebook 00: why positions, clock hands, aliasing -------------------------------------------------------------

def sinusoidal_score(q, k, m, n, *, base: float = 10000.0) -> np.ndarray:
    """(q + E(m)) . (k + E(n)) with the additive sinusoidal embedding E (Vaswani et al. 2017, section 3.5)."""
    m, n = np.broadcast_arrays(np.asarray(m, float), np.asarray(n, float))
    d = q.shape[-1]
    return np.einsum("...d,...d->...", q + sinusoidal(m, d, base), k + sinusoidal(n, d, base))


def clock_angles(position, d: int = 16, base: float = 10000.0) -> np.ndarray:
    """The angle of every pair's "clock hand" at ``position``: m theta_i wrapped to (-pi, pi], shape ``(d/2,)``."""
    return wrap_angle(float(position) * frequencies(d, base))


def code_distance(m, d: int = 8, base: float = 10000.0, pairs=None) -> np.ndarray:
    """|R_m u - u| for u = (1, 0, 1, 0, ...) restricted to ``pairs`` (default: all d/2 pairs).

    How far the position code at m is from the code at 0: zero means m and 0 look the same
    (aliasing).  ``m`` any shape; returns float64 of that shape.
    """
    m = np.asarray(m, float)
    idx = np.arange(d // 2) if pairs is None else np.asarray(pairs)
    u = np.zeros(d)
    u[2 * idx] = 1.0
    diff = rotate(np.broadcast_to(u, m.shape + (d,)), m, base=base) - u
    return np.linalg.norm(diff, axis=-1)


# --- notebook 01: the radius is a choice (eqs 24-27) ------------------------------------------------------------------

def radial_scaled(x, positions, a: float, *, base: float = 10000.0) -> np.ndarray:
    """a^m R_m x: RoPE with a radius that changes with position m (``x``: ``(..., seq, d)``).

    With f_q = a^m R_m q and f_k = a^(-n) R_n k the score is a^(m-n) q . R_{n-m} k, a function
    of m - n only: eqs 11 and 22 hold, and eq 26a fixes only the product of the radii.  RoPE
    takes the constant radius (eq 27); xPos (Sun et al. 2022) takes a decaying one.
    """
    m = np.asarray(positions, float)
    return (float(a) ** m)[..., None] * rotate(x, m, base=base)


# --- notebook 02: Abel summation (eqs 35-37) --------------------------------------------------------------------------

def abel_terms(q, k, distance: float, *, base: float = 10000.0) -> dict:
    """Each side of eqs 35-37 for one relative distance r = m - n, as complex/real numbers.

    h_i = q_[2i:2i+1] k*_[2i:2i+1] (pairs as complex numbers), S_j = sum_{i<j} e^{i r theta_i},
    h_{d/2} = 0.  Returns ``direct`` = sum_i h_i e^{i r theta_i} (eq 35), ``abel`` =
    -sum_i S_{i+1} (h_{i+1} - h_i) (eq 36), ``triangle`` = sum_i |S_{i+1}| |h_{i+1} - h_i| and
    ``bound`` = max_i |h_{i+1} - h_i| sum_i |S_{i+1}| (eq 37).
    """
    q, k = np.asarray(q, float), np.asarray(k, float)
    h = (q[0::2] + 1j * q[1::2]) * np.conj(k[0::2] + 1j * k[1::2])
    dh = np.append(h[1:], 0.0) - h                         # h_{i+1} - h_i with h_{d/2} = 0
    S = partial_sums(float(distance), q.shape[-1], base)   # S_1 .. S_{d/2}
    return {
        "direct": complex(np.sum(h * np.exp(1j * float(distance) * frequencies(q.shape[-1], base)))),
        "abel": complex(-np.sum(S * dh)),
        "triangle": float(np.sum(np.abs(S) * np.abs(dh))),
        "bound": float(np.abs(dh).max() * np.abs(S).sum()),
    }


# --- notebook 04: attention weights and a KV cache --------------------------------------------------------------------

def attention_weights(q, k, positions=None, *, rope: bool = True, causal: bool = True,
                      base: float = 10000.0) -> np.ndarray:
    """Softmax attention weights (eq 2, with eq 16's rotated q and k): ``(..., N, N)`` for q, k ``(..., N, d)``.

    ``rope=False`` puts every token at position 0, i.e. no position information at all.
    Row m holds the weights query m gives to keys n (causal: n <= m).  ``weights @ v`` equals
    :func:`rope_ref.attention`.
    """
    q, k = np.asarray(q, float), np.asarray(k, float)
    n = q.shape[-2]
    pos = np.arange(n, dtype=float) if positions is None else np.asarray(positions, float)
    p = pos if rope else np.zeros_like(pos)
    s = rotate(q, p, base=base) @ np.swapaxes(rotate(k, p, base=base), -1, -2) / np.sqrt(q.shape[-1])
    if causal:
        s = np.where(pos[None, :] <= pos[:, None], s, -np.inf)
    w = np.exp(s - s.max(axis=-1, keepdims=True))
    return w / w.sum(axis=-1, keepdims=True)


def linear_attention_weights(q, k, positions=None, *, base: float = 10000.0) -> np.ndarray:
    """The weights eq 19 gives each value: (R_m phi(q_m)) . (R_n phi(k_n)) / sum_n phi(q_m) . phi(k_n).

    phi = elu + 1.  Shape ``(..., N, N)``; ``weights @ v`` equals
    :func:`rope_ref.linear_attention` (non-causal).  Entries can be negative and rows need not
    sum to 1: the numerator is rotated, the denominator is not.
    """
    fq, fk = elu_plus_one(np.asarray(q, float)), elu_plus_one(np.asarray(k, float))
    n = fq.shape[-2]
    pos = np.arange(n, dtype=float) if positions is None else np.asarray(positions, float)
    num = rotate(fq, pos, base=base) @ np.swapaxes(rotate(fk, pos, base=base), -1, -2)
    den = fq @ np.swapaxes(fk, -1, -2)
    return num / den.sum(axis=-1, keepdims=True)


class KVCache:
    """A decoder's key/value cache with RoPE: each key is rotated **once**, at its own position, and stored.

    ``append(k, v, position)`` rotates ``k`` (shape ``(..., d)``) at ``position`` and stores it;
    ``attend(q, position)`` rotates the new query at its position and runs softmax attention
    over every stored key (all are at or before it).  ``rotations`` counts the vectors rotated,
    so a notebook can show that no stored key is rotated again.
    """

    def __init__(self, *, base: float = 10000.0):
        self.base = base
        self.keys, self.values, self.positions = [], [], []
        self.rotations = 0

    def append(self, k, v, position: float) -> None:
        self.keys.append(rotate(np.asarray(k, float)[..., None, :], [float(position)], base=self.base)[..., 0, :])
        self.values.append(np.asarray(v, float))
        self.positions.append(float(position))
        self.rotations += 1

    def attend(self, q, position: float) -> np.ndarray:
        qr = rotate(np.asarray(q, float)[..., None, :], [float(position)], base=self.base)[..., 0, :]
        self.rotations += 1
        K, V = np.stack(self.keys, axis=-2), np.stack(self.values, axis=-2)      # (..., t, d)
        s = np.einsum("...d,...td->...t", qr, K) / np.sqrt(qr.shape[-1])
        w = np.exp(s - s.max(axis=-1, keepdims=True))
        return np.einsum("...t,...td->...d", w / w.sum(axis=-1, keepdims=True), V)
