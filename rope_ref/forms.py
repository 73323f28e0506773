"""Rotary Position Embedding (RoFormer, arXiv:2104.09864, section 3) in NumPy: the forms.

Written independently so each checks the others: :func:`rotate_dense` (the matrix R, eqs 14-15),
:func:`rotate_complex` (eq 12), :func:`rotate_elementwise` (eq 34 plainly) and :func:`rotate` (the same
math, fast, in ``_fast.py``).  theta_i = base^(-2i/d), i = 0..d/2-1 (eq 15, 0-indexed).

Each form's first line checks and normalises its arguments (a TypeError or ValueError naming the argument);
the rest is its equation.  ``x`` is ``(..., seq, d)``; ``positions`` broadcast to ``x.shape[:-1]`` (default
``arange(seq)``).  The general (multi-axis) form: ``inv_freq`` F ``(rotary_dim/2, A)``, ``positions`` p
``(A, ..., seq)`` (transformers' M-RoPE layout): pair j turns by sum_a F[j, a] p_a; a 1-D ``inv_freq`` is A = 1
without that axis.  Angles, cos and sin are float64; results are new arrays of x's dtype.
"""

from __future__ import annotations

import numpy as np

from . import _fast
from ._validate import (as_given, cast_back, check_angle_range, check_base, check_d, check_finite, check_finite_array,
                        check_freqs, check_pairing, check_positions, check_real_array, check_rotary_dim, check_scalar,
                        check_weights, check_x)


def _arguments(positions, d, base, pairing, rotary_dim, inv_freq, lead_shape=None, name="positions"):
    """A form's ``positions`` (float64), frequencies (``inv_freq``, else theta of eq 15 over ``rotary_dim``) and
    ``rotary_dim`` (d if None), checked.  ``positions`` broadcast to ``lead_shape`` (any shape if None); a 2-D
    ``inv_freq`` ``(rotary_dim/2, A)`` takes positions ``(A, ...)`` (only when ``name`` is "positions")."""
    check_pairing(pairing)
    rotary_dim = check_rotary_dim(rotary_dim, check_d(d))
    if inv_freq is None:
        inv_freq = frequencies(rotary_dim, base)
    else:
        check_base(base)
        inv_freq = check_freqs(inv_freq, "inv_freq", axes=name == "positions", n_pairs=rotary_dim // 2)
    axes = None if inv_freq.ndim == 1 else inv_freq.shape[1]
    positions = check_positions(positions, lead_shape, name, axes=axes)
    check_angle_range(positions, inv_freq, name)
    return positions, inv_freq, rotary_dim


def _prepared(x, positions, base, pairing, rotary_dim, inv_freq, angles=None):
    """``x`` checked (integers as float64), then :func:`_arguments` for positions broadcasting to x.shape[:-1].

    ``angles`` ``(..., seq, r/2)`` (a kernel fed angles) in place of positions and frequencies: they become r/2
    axes of positions with the identity as ``inv_freq`` (pair j turns by angles[..., j] exactly)."""
    x = check_x(x)
    if angles is not None:
        positions, inv_freq, rotary_dim = _angle_table(angles, x.shape, positions, inv_freq, rotary_dim)
    return (x,) + _arguments(positions, x.shape[-1], base, pairing, rotary_dim, inv_freq, x.shape[:-1])


def _angle_table(angles, x_shape, positions, inv_freq, rotary_dim):
    """``angles`` ``(..., seq, r/2)``, broadcasting to x's positions, as (positions ``(r/2, ..., seq)``, the identity
    ``(r/2, r/2)``, r); given with positions or inv_freq, or with another rotary_dim: refused, naming angles."""
    angles = check_finite(check_real_array(angles, "angles").astype(np.float64), "angles")
    try:
        pairs_fit = 1 <= 2 * angles.shape[-1] <= x_shape[-1]
        fits = pairs_fit and np.broadcast_shapes(angles.shape[:-1], x_shape[:-1]) == x_shape[:-1]
    except (IndexError, ValueError):        # a 0-d angles, or lead axes that do not broadcast
        fits = False
    if not fits:
        raise ValueError(f"angles must have shape (..., seq, r/2) broadcasting to x.shape[:-1]={x_shape[:-1]}, with "
                         f"r <= d={x_shape[-1]}, got shape {angles.shape}")
    if positions is not None or inv_freq is not None or rotary_dim not in (None, 2 * angles.shape[-1]):
        raise TypeError(f"angles replaces positions and inv_freq and sets rotary_dim={2 * angles.shape[-1]}: got "
                        f"angles with positions, inv_freq or rotary_dim={rotary_dim}")
    return np.moveaxis(angles, -1, 0), np.eye(angles.shape[-1]), 2 * angles.shape[-1]


def _angle_arguments(positions, freqs):
    """``freqs`` ``(n,)`` or ``(n, A)`` and ``positions`` (any shape, or ``(A, ...)``) checked, as float64."""
    freqs = check_freqs(freqs, "freqs", axes=True)
    positions = check_positions(positions, None, axes=None if freqs.ndim == 1 else freqs.shape[1], freqs_name="freqs")
    check_angle_range(positions, freqs)
    return positions, freqs


def _angles(positions, freqs):
    """m * theta_j (``freqs`` ``(n,)``), or sum_a freqs[j, a] positions[a] in axis order (``freqs`` ``(n, A)``)."""
    if freqs.ndim == 1:
        return np.multiply.outer(positions, freqs)
    return sum(np.multiply.outer(p_a, freqs[:, a]) for a, p_a in enumerate(positions))


def _pairs(r: int, pairing: str):
    """Feature indices (a_j, b_j) of pair j: (2j, 2j+1) interleaved, (j, j + r/2) half-split."""
    j = np.arange(r // 2)
    return (2 * j, 2 * j + 1) if pairing == "interleaved" else (j, j + r // 2)


def _matrix(angles, d: int, pairing: str) -> np.ndarray:
    """R of eq 15 for ``angles`` ``P + (r/2,)``: float64 ``P + (d, d)``, pair j on features (a, b) turned by
    [[cos, -sin], [sin, cos]], the features beyond r = 2 * angles.shape[-1] left as they are."""
    r = 2 * angles.shape[-1]
    R = np.zeros(angles.shape[:-1] + (d, d))
    R[..., np.arange(r, d), np.arange(r, d)] = 1.0
    a, b = _pairs(r, pairing)
    R[..., a, a] = R[..., b, b] = np.cos(angles)
    R[..., b, a] = np.sin(angles)
    R[..., a, b] = -np.sin(angles)
    return R


def frequencies(d: int, base: float = 10000.0) -> np.ndarray:
    """theta_i = base^(-2i/d), i = 0..d/2-1 (eq 15, 0-indexed): float64 ``(d/2,)``, from 1 down to base^(-(d-2)/d).

    Hugging Face calls this array ``inv_freq``; so do the ``inv_freq=`` keywords, which take an array in its place.
    """
    d, base = check_d(d), check_base(base, d=d)
    return base ** (-np.arange(0, d, 2, dtype=np.float64) / d)


def rotation_angles(positions, freqs) -> np.ndarray:
    """Angles m * theta_j (``freqs`` ``(n,)``, ``positions`` any shape P), or sum_a freqs[j, a] positions[a]
    (``freqs`` ``(n, A)``, ``positions`` ``(A,) + P``): float64 ``P + (n,)``.  An angle that overflows float64
    raises; |angle| >= 2^34, where float64 rounds it by more than 1e-6 rad, warns (RopeRefPrecisionWarning)."""
    positions, freqs = _angle_arguments(positions, freqs)
    return _angles(positions, freqs)


def rotation_matrix(positions, d: int, base: float = 10000.0, *, pairing: str = "interleaved",
                    rotary_dim: int | None = None, inv_freq=None) -> np.ndarray:
    """The block-diagonal rotary matrix R^d_{Theta,m} of eq 15 (general form: angles sum_a F[j, a] p_a).

    ``positions``: any shape ``P`` (a scalar gives one matrix), or ``(A,) + P`` with ``inv_freq`` ``(r/2, A)``.
    Returns float64 ``P + (d, d)``: pair j on features (a, b) gets [[cos, -sin], [sin, cos]]; beyond
    ``rotary_dim``, the identity."""
    positions, inv_freq, rotary_dim = _arguments(positions, d, base, pairing, rotary_dim, inv_freq)
    return _matrix(_angles(positions, inv_freq), d, pairing)


def rotate_dense(x, positions=None, *, base: float = 10000.0, pairing: str = "interleaved",
                 rotary_dim: int | None = None, inv_freq=None) -> np.ndarray:
    """R x through the dense matrix (eq 14): slow and obviously correct (one d x d matrix per position: to
    check, not to run).  Same arguments as :func:`rotate`; returns a new array of x's shape and dtype."""
    x, positions, inv_freq, rotary_dim = _prepared(x, positions, base, pairing, rotary_dim, inv_freq)
    R = _matrix(_angles(positions, inv_freq), x.shape[-1], pairing)              # (..., seq, d, d)
    with np.errstate(over="ignore", invalid="ignore"):                            # overflow: cast_back raises
        return cast_back(np.matmul(R, x.astype(np.float64)[..., None])[..., 0], x)


def rotate_complex(x, positions=None, *, base: float = 10000.0) -> np.ndarray:
    """Pairs (x_{2i}, x_{2i+1}) as complex numbers times e^{i m theta_i} (eq 12; Llama's form): ``x``
    ``(..., seq, d)``, ``positions`` broadcastable to ``x.shape[:-1]``; x's shape and dtype (complex128 products)."""
    x, positions, theta, _ = _prepared(x, positions, base, "interleaved", None, None)
    pairs = np.ascontiguousarray(x, dtype=np.float64).view(np.complex128)        # x_2i + i x_2i+1: (..., seq, d/2)
    with np.errstate(over="ignore", invalid="ignore"):
        return cast_back((pairs * np.exp(1j * _angles(positions, theta))).view(np.float64), x)


def rotate(x, positions=None, *, base: float = 10000.0, pairing: str = "interleaved",
           rotary_dim: int | None = None, inv_freq=None, angles=None) -> np.ndarray:
    """RoPE, the fast path: eq 34, x*cos + rotate_half(x)*sin, computed as :func:`rotate_elementwise` does.

    x : ``(..., seq, d)``, float16/32/64 or bfloat16 (integers become float64; other dtypes: TypeError).
    positions : broadcastable to ``x.shape[:-1]``, default ``arange(seq)``; may be fractional.  With ``inv_freq``
        ``(rotary_dim/2, A)``: ``(A, ..., seq)``, each ``positions[a]`` as above (required when A > 1).
    base : theta_i = base^(-2i/rotary_dim), unless ``inv_freq`` is given.
    pairing : ``"interleaved"``: pairs (x_{2i}, x_{2i+1}) (paper, Llama); ``"half"``: (x_i, x_{i+r/2}) (NeoX, HF).
    rotary_dim : rotate only the first ``rotary_dim`` features (even); the rest pass through.
    inv_freq : frequencies ``(rotary_dim/2,)`` (e.g. scaled), or ``(rotary_dim/2, A)``: pair j turns by
        sum_a inv_freq[j, a] * positions[a] (M-RoPE, 2-D axial RoPE, RoPE-Mixed).
    angles : ``(..., seq, r/2)``, each position's and pair's angle, in place of positions and frequencies (a
        kernel fed an angle table, as flash-attention's tests feed theirs); rotary_dim defaults to r.

    Returns a new array of x's shape and dtype (finite x whose pairs overflow it: ValueError); a torch tensor x (any
    float dtype and device, ``requires_grad`` allowed) gives a tensor of its dtype and device.  How it computes
    (a table of the last positions, blocks, float32 for 16-bit x): ``_fast.py``, tested against rotate_elementwise.
    """
    array, positions, inv_freq, rotary_dim = _prepared(x, positions, base, pairing, rotary_dim, inv_freq, angles)
    return as_given(_fast.rotate(array, positions, inv_freq, pairing, rotary_dim), x)


def rotate_elementwise(x, positions=None, *, base: float = 10000.0, pairing: str = "interleaved",
                       rotary_dim: int | None = None, inv_freq=None, angles=None) -> np.ndarray:
    """Eq 34 written plainly: R x = x * cos(angle) + rotate_half(x) * sin(angle), angle_j = sum_a F[j, a] p_a.

    The form to read: same arguments as :func:`rotate`; float64 angles, cos, sin and products, then x's dtype.
    """
    x, positions, inv_freq, rotary_dim = _prepared(x, positions, base, pairing, rotary_dim, inv_freq, angles)
    angles = _angles(positions, inv_freq)                                        # (..., seq, r/2): pair j's
    angles = np.repeat(angles, 2, -1) if pairing == "interleaved" else np.concatenate([angles, angles], -1)
    part = x[..., :rotary_dim].astype(np.float64)
    with np.errstate(over="ignore", invalid="ignore"):                            # overflow: cast_back raises
        rotated = part * np.cos(angles) + rotate_half(part, pairing) * np.sin(angles)
    return cast_back(np.concatenate([rotated, x[..., rotary_dim:]], axis=-1), x)


def rotate_half(x, pairing: str = "interleaved") -> np.ndarray:
    """Turn every pair by 90 degrees: (x_a, x_b) -> (-x_b, x_a), the sin term of eq 34.

    Pairs (2i, 2i+1) or, ``pairing="half"``, (i, i + d/2) (HF's ``rotate_half``).  ``x`` ``(..., d)``; a new array.
    """
    x, pairing = check_x(x), check_pairing(pairing)
    a, b = _pairs(x.shape[-1], pairing)
    turned = np.empty_like(x)
    turned[..., a] = -x[..., b]
    turned[..., b] = x[..., a]
    return turned


def to_half(x) -> np.ndarray:
    """Last axis from interleaved pairs (2i, 2i+1) to half-split (i, i+d/2): ``rotate(to_half(x), pairing="half")
    == to_half(rotate(x))``.  ``x`` ``(..., d)``."""
    x = check_x(x)
    return np.concatenate([x[..., 0::2], x[..., 1::2]], axis=-1)


def to_interleaved(x) -> np.ndarray:
    """Inverse of :func:`to_half`: half-split layout ``(..., d)`` back to interleaved."""
    x = check_x(x)
    return np.stack(np.split(x, 2, axis=-1), axis=-1).reshape(x.shape)      # (x_i, x_{i+d/2}) side by side


def permute_qk_weights(w, n_heads: int) -> np.ndarray:
    """Reorder the rows of W_q or W_k ``(n_heads*head_dim, in)`` from interleaved to half-split.

    Per head, ``permute_qk_weights(W) @ x`` equals ``to_half(W @ x)``: what Llama-to-HF converters apply.
    """
    w, n_heads = check_weights(w, n_heads)
    rows = np.arange(w.shape[0]).reshape(n_heads, -1, 2).transpose(0, 2, 1).ravel()
    return w[rows]  # fancy indexing: always a copy, never a view of w


def sinusoidal(positions, d: int, base: float = 10000.0) -> np.ndarray:
    """Vaswani et al. 2017's additive embedding (section 3.5): E(t)_{2i} = sin(t theta_i), E(t)_{2i+1} = cos(t theta_i).

    ``positions``: any shape ``P``; returns float64 ``P + (d,)``.
    """
    positions, theta, _ = _arguments(positions, d, base, "interleaved", None, None)
    angles = _angles(positions, theta)
    return np.stack([np.sin(angles), np.cos(angles)], axis=-1).reshape(positions.shape + (d,))    # (sin, cos) per pair


def sinusoidal_shift_matrix(k: float, d: int, base: float = 10000.0) -> np.ndarray:
    """B_k with sinusoidal(t + k) = B_k @ sinusoidal(t) for every t: float64 ``(d, d)``, block i
    [[cos, sin], [-sin, cos]](k theta_i): a rotation that does not depend on t (the property RoPE builds on)."""
    k, theta, _ = _arguments(check_scalar(k, "k"), d, base, "interleaved", None, None, name="k")
    B, (e, o) = np.zeros((d, d)), _pairs(d, "interleaved")
    B[e, e] = B[o, o] = np.cos(k * theta)
    B[e, o] = np.sin(k * theta)
    B[o, e] = -np.sin(k * theta)
    return B


def partial_sums(distance, d: int, base: float = 10000.0, *, inv_freq=None) -> np.ndarray:
    """S_j = sum_{i<j} e^{i (m-n) theta_i} for j = 1..d/2 (section 3.4.3, eq 36): complex128 ``P + (d/2,)``, S_j at
    index j-1, for ``distance`` = m - n of any shape ``P``.  ``inv_freq`` ``(d/2,)`` replaces theta (scaled RoPE)."""
    distance, inv_freq, _ = _arguments(distance, d, base, "interleaved", None, inv_freq, name="distance")
    return np.cumsum(np.exp(1j * _angles(distance, inv_freq)), axis=-1)


def decay_bound(distance, d: int = 128, base: float = 10000.0, *, inv_freq=None) -> np.ndarray:
    """The long-term-decay bound (1/(d/2)) sum_{j=1}^{d/2} |S_j| of Figure 2 (eq 37); at distance 0, (d/2 + 1)/2.

    ``distance``: any shape ``P`` of real relative distances; returns float64 of shape ``P``.
    """
    return np.abs(partial_sums(distance, d, base, inv_freq=inv_freq)).mean(axis=-1)


def wrap_angle(a) -> np.ndarray:
    """Angles wrapped to (-pi, pi]: compare an angle with m*theta modulo 2 pi.  float64, a's shape."""
    a = check_finite_array(a, "a")
    return np.angle(np.exp(1j * a))
