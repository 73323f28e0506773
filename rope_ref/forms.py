"""Rotary Position Embedding (RoFormer, Su et al., section 3) in NumPy: the forms, math only.

Written independently so each checks the others: :func:`rotate_dense` (the matrix R, eqs 14-15),
:func:`rotate_complex` (eq 12), :func:`rotate_elementwise` (eq 34 plainly) and :func:`rotate` (the same
math streamed by ``_fast.py``).  theta_i = base^(-2i/d), i = 0..d/2-1 (eq 15, 0-indexed).

Each body is its equation and nothing else.  :func:`rope_ref._boundary.checked` runs around it: it checks
every argument by its name, checks the size of what the form allocates (over 2 GiB: a ValueError naming the
argument, before any allocation; ``with rope_ref.size_limit(max_bytes):`` allows more), hands the body
float64 ``x`` (the first ``rotary_dim`` features), positions broadcastable to ``x.shape[:-1]`` and the
frequencies (``inv_freq``, else theta), and casts the result back to x's dtype into a new array (or ``out``).
The general (multi-axis) form: ``inv_freq`` F ``(rotary_dim/2, A)``, ``positions`` p ``(A, ..., seq)``
(transformers' M-RoPE layout): pair j turns by sum_a F[j, a] p_a; a 1-D ``inv_freq`` is A = 1 without that axis.
"""

from __future__ import annotations

import numpy as np

from . import _fast
from ._boundary import checked


@checked
def frequencies(d: int, base: float = 10000.0) -> np.ndarray:
    """theta_i = base^(-2i/d), i = 0..d/2-1 (eq 15, 0-indexed): float64 ``(d/2,)``, from 1 down to base^(-(d-2)/d).

    Hugging Face calls this array ``inv_freq``; so do the ``inv_freq=`` keywords, which take an array in its place.
    """
    return base ** (-np.arange(0, d, 2, dtype=np.float64) / d)


@checked
def rotation_angles(positions, freqs) -> np.ndarray:
    """Angles m * theta_j (``freqs`` ``(n,)``, ``positions`` any shape P), or sum_a freqs[j, a] positions[a]
    (``freqs`` ``(n, A)``, ``positions`` ``(A,) + P``): float64 ``P + (n,)``.  Overflow raises; |angle| >= 2^34,
    where float64 rounds by more than 1e-6 rad, warns (:class:`RopeRefPrecisionWarning`)."""
    if freqs.ndim == 1:
        return np.multiply.outer(positions, freqs)
    return sum(np.multiply.outer(p_a, freqs[:, a]) for a, p_a in enumerate(positions))     # in axis order


def _pairs(r: int, pairing: str):
    """Feature indices (a_j, b_j) of pair j: (2j, 2j+1) interleaved, (j, j + r/2) half-split."""
    j = np.arange(r // 2)
    return (2 * j, 2 * j + 1) if pairing == "interleaved" else (j, j + r // 2)


@checked(freqs_from=frequencies)
def rotation_matrix(positions, d: int, base: float = 10000.0, *, pairing: str = "interleaved",
                    rotary_dim: int | None = None, inv_freq=None) -> np.ndarray:
    """The block-diagonal rotary matrix R^d_{Theta,m} of eq 15 (general form: angles sum_a F[j, a] p_a).

    ``positions``: any shape ``P`` (a scalar gives one matrix), or ``(A,) + P`` with ``inv_freq`` ``(r/2, A)``.
    Returns float64 ``P + (d, d)``: pair j on features (a, b) gets [[cos, -sin], [sin, cos]]; beyond
    ``rotary_dim``, the identity."""
    angles = rotation_angles(positions, inv_freq)                               # P + (r/2,)
    R = np.zeros(angles.shape[:-1] + (d, d))
    R[..., np.arange(rotary_dim, d), np.arange(rotary_dim, d)] = 1.0
    (a, b), cos, sin = _pairs(rotary_dim, pairing), np.cos(angles), np.sin(angles)
    R[..., a, a], R[..., b, b], R[..., b, a], R[..., a, b] = cos, cos, sin, -sin
    return R


@checked(freqs_from=frequencies)
def rotate_dense(x, positions=None, *, base: float = 10000.0, pairing: str = "interleaved",
                 rotary_dim: int | None = None, inv_freq=None, out=None) -> np.ndarray:
    """R x through the dense matrix (eq 14): slow and obviously correct (one d x d matrix per position: to
    check, not to run).  Same arguments as :func:`rotate`; returns an array (or ``out``) of x's shape and dtype."""
    R = rotation_matrix(positions, x.shape[-1], pairing=pairing, inv_freq=inv_freq)    # (..., seq, r, r)
    return np.matmul(R, x[..., None])[..., 0]


@checked
def rotate_complex(x, positions=None, *, base: float = 10000.0) -> np.ndarray:
    """Pairs (x_{2i}, x_{2i+1}) as complex numbers times e^{i m theta_i} (eq 12; Llama's form): ``x``
    ``(..., seq, d)``, ``positions`` broadcastable to ``x.shape[:-1]``; x's shape and dtype (complex128 products)."""
    angles = rotation_angles(positions, frequencies(x.shape[-1], base))            # m theta_i: (..., seq, d/2)
    return (x.view(np.complex128) * np.exp(1j * angles)).view(np.float64)        # (x_2i + i x_2i+1) e^{i m theta_i}


@checked(freqs_from=frequencies, fast=True)
def rotate(x, positions=None, *, base: float = 10000.0, pairing: str = "interleaved",
           rotary_dim: int | None = None, inv_freq=None, out=None) -> np.ndarray:
    """RoPE, the fast path: eq 34, x*cos + rotate_half(x)*sin, computed as :func:`rotate_elementwise` does.

    x : ``(..., seq, d)``, float16/32/64 or bfloat16 (integers become float64; other dtypes: TypeError).
    positions : broadcastable to ``x.shape[:-1]``, default ``arange(seq)``; may be fractional.  With ``inv_freq``
        ``(rotary_dim/2, A)``: ``(A, ..., seq)``, each ``positions[a]`` as above (required when A > 1).
    base : theta_i = base^(-2i/rotary_dim), unless ``inv_freq`` is given.
    pairing : ``"interleaved"``: pairs (x_{2i}, x_{2i+1}) (paper, Llama); ``"half"``: (x_i, x_{i+r/2}) (NeoX, HF).
    rotary_dim : rotate only the first ``rotary_dim`` features (even); the rest pass through.
    inv_freq : frequencies ``(rotary_dim/2,)`` (e.g. scaled), or ``(rotary_dim/2, A)``: pair j turns by
        sum_a inv_freq[j, a] * positions[a] (M-RoPE, 2-D axial RoPE, RoPE-Mixed).
    out : optional writeable array of x's shape and dtype, any strides; must not overlap x or itself.

    Returns a new array (or ``out``) of x's shape and dtype (finite x whose pairs overflow it: ValueError).
    How it streams (cached tables, blocks, threads): ``_fast.py``, checked against :func:`rotate_elementwise`.
    """
    return _fast.rotate(x, positions, inv_freq, pairing, rotary_dim, out)


@checked(freqs_from=frequencies)
def rotate_elementwise(x, positions=None, *, base: float = 10000.0, pairing: str = "interleaved",
                       rotary_dim: int | None = None, inv_freq=None, out=None) -> np.ndarray:
    """Eq 34 written plainly: R x = x * cos(angle) + rotate_half(x) * sin(angle), angle_j = sum_a F[j, a] p_a.

    The form to read: same arguments as :func:`rotate`; float64 angles, cos and sin; no cache, no blocking.
    The boundary hands this body float64 ``x[..., :rotary_dim]`` and the frequencies ``inv_freq`` (theta of
    eq 15 unless given); ``base``, ``rotary_dim`` and ``out`` are its business.
    """
    angles = rotation_angles(positions, inv_freq)                                  # (..., seq, r/2): pair j's
    angles = np.repeat(angles, 2, -1) if pairing == "interleaved" else np.concatenate([angles, angles], -1)
    return x * np.cos(angles) + rotate_half(x, pairing) * np.sin(angles)          # per feature: (..., seq, r)


@checked
def rotate_half(x, pairing: str = "interleaved") -> np.ndarray:
    """Turn every pair by 90 degrees: (x_a, x_b) -> (-x_b, x_a), the sin term of eq 34.

    Pairs (2i, 2i+1) or, ``pairing="half"``, (i, i + d/2) (HF's ``rotate_half``).  ``x`` ``(..., d)``; a new array.
    """
    a, b = _pairs(x.shape[-1], pairing)
    turned = np.empty_like(x)
    turned[..., a], turned[..., b] = -x[..., b], x[..., a]
    return turned


@checked
def to_half(x) -> np.ndarray:
    """Last axis from interleaved pairs (2i, 2i+1) to half-split (i, i+d/2): ``rotate(to_half(x), pairing="half")
    == to_half(rotate(x))``.  ``x`` ``(..., d)``."""
    return np.concatenate([x[..., 0::2], x[..., 1::2]], axis=-1)


@checked
def to_interleaved(x) -> np.ndarray:
    """Inverse of :func:`to_half`: half-split layout ``(..., d)`` back to interleaved."""
    return np.stack(np.split(x, 2, axis=-1), axis=-1).reshape(x.shape)      # (x_i, x_{i+d/2}) side by side


@checked
def permute_qk_weights(w, n_heads: int) -> np.ndarray:
    """Reorder the rows of W_q or W_k ``(n_heads*head_dim, in)`` from interleaved to half-split.

    Per head, ``permute_qk_weights(W) @ x`` equals ``to_half(W @ x)``: what Llama-to-HF converters apply.
    """
    rows = np.arange(w.shape[0]).reshape(n_heads, -1, 2).transpose(0, 2, 1).ravel()
    return w[rows]  # fancy indexing: always a copy, never a view of w


@checked
def sinusoidal(positions, d: int, base: float = 10000.0) -> np.ndarray:
    """Vaswani et al. 2017's additive embedding (section 3.5): E(t)_{2i} = sin(t theta_i), E(t)_{2i+1} = cos(t theta_i).

    ``positions``: any shape ``P``; returns float64 ``P + (d,)``.
    """
    angles = rotation_angles(positions, frequencies(d, base))
    return np.stack([np.sin(angles), np.cos(angles)], axis=-1).reshape(positions.shape + (d,))    # (sin, cos) per pair


@checked(freqs_from=frequencies)
def sinusoidal_shift_matrix(k: float, d: int, base: float = 10000.0) -> np.ndarray:
    """B_k with sinusoidal(t + k) = B_k @ sinusoidal(t) for every t: float64 ``(d, d)``, block i
    [[cos, sin], [-sin, cos]](k theta_i): a rotation that does not depend on t (the property RoPE builds on)."""
    angles = k * frequencies(d, base)
    B, (e, o) = np.zeros((d, d)), _pairs(d, "interleaved")
    B[e, e], B[e, o], B[o, e], B[o, o] = np.cos(angles), np.sin(angles), -np.sin(angles), np.cos(angles)
    return B


@checked(freqs_from=frequencies)
def partial_sums(distance, d: int, base: float = 10000.0, *, inv_freq=None) -> np.ndarray:
    """S_j = sum_{i<j} e^{i (m-n) theta_i} for j = 1..d/2 (section 3.4.3, eq 36): complex128 ``P + (d/2,)``, S_j at
    index j-1, for ``distance`` = m - n of any shape ``P``.  ``inv_freq`` ``(d/2,)`` replaces theta (scaled RoPE)."""
    return np.cumsum(np.exp(1j * rotation_angles(distance, inv_freq)), axis=-1)


@checked(freqs_from=frequencies)
def decay_bound(distance, d: int = 128, base: float = 10000.0, *, inv_freq=None) -> np.ndarray:
    """The long-term-decay bound (1/(d/2)) sum_{j=1}^{d/2} |S_j| of Figure 2 (eq 37); at distance 0, (d/2 + 1)/2.

    ``distance``: any shape ``P`` of real relative distances; returns float64 of shape ``P``.
    """
    return np.abs(partial_sums(distance, d, inv_freq=inv_freq)).mean(axis=-1)


@checked
def wrap_angle(a) -> np.ndarray:
    """Angles wrapped to (-pi, pi]: compare an angle with m*theta modulo 2 pi.  float64, a's shape."""
    return np.angle(np.exp(1j * a))
