"""Rotary Position Embedding (RoFormer, arXiv:2104.09864, section 3) in NumPy: the forms, written independently so
each checks the others: :func:`rotate_dense` (eqs 14-15), :func:`rotate_complex` (eq 12), :func:`rotate_elementwise`
(eq 34 plainly) and :func:`rotate` (the same, fast, in ``_fast.py``).  Each form's first line checks and normalises
its arguments, the rest is its equation.  theta_i = base^(-2i/d), i = 0..d/2-1 (eq 15, 0-indexed).  The general
form: ``inv_freq`` F ``(rotary_dim/2, A)``, positions p ``(A, ..., seq)``: pair j turns by sum_a F[j, a] p_a.
"""

from __future__ import annotations

import numpy as np

from . import _fast
from ._validate import (as_given, check_angles, check_base, check_d, check_freqs, check_no_overflow, check_pairing,
                        check_positions, check_rotary_dim, check_scalar, check_weights, check_x)
from .layouts import positions_of


def _arguments(positions, d, base, pairing, rotary_dim, inv_freq, lead_shape=None, name="positions"):
    """(float64 ``positions`` broadcasting to ``lead_shape``, frequencies: ``inv_freq``, else theta of eq 15 over
    ``rotary_dim``, and ``rotary_dim``), checked; only ``positions`` may have several axes (a 2-D ``inv_freq``)."""
    check_pairing(pairing)
    rotary_dim = check_rotary_dim(rotary_dim, check_d(d))
    if inv_freq is None:
        inv_freq = frequencies(rotary_dim, base)
    else:
        check_base(base)
        inv_freq = check_freqs(inv_freq, "inv_freq", axes=name == "positions", n_pairs=rotary_dim // 2)
    return check_angles(positions, inv_freq, lead_shape, name) + (rotary_dim,)


def _prepared(x, positions, base, pairing, rotary_dim, inv_freq, angles=None, layout=None, **packing):
    """``x`` checked (integers as float64), then :func:`_arguments`; positions from ``angles`` or ``layout`` when
    given (:func:`rope_ref.layouts.positions_of`)."""
    x = check_x(x)
    positions, inv_freq, rotary_dim = positions_of(x.shape, positions, layout, inv_freq, rotary_dim, angles, **packing)
    return (x,) + _arguments(positions, x.shape[-1], base, pairing, rotary_dim, inv_freq, x.shape[:-1])


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
    [[cos, -sin], [sin, cos]], the identity beyond r = 2 * angles.shape[-1]."""
    r = 2 * angles.shape[-1]
    R = np.broadcast_to(np.eye(d), angles.shape[:-1] + (d, d)).copy()
    a, b = _pairs(r, pairing)
    R[..., a, a] = R[..., b, b] = np.cos(angles)
    R[..., b, a] = np.sin(angles)
    R[..., a, b] = -np.sin(angles)
    return R


def frequencies(d: int, base: float = 10000.0) -> np.ndarray:
    """theta_i = base^(-2i/d), i = 0..d/2-1 (eq 15, 0-indexed): float64 ``(d/2,)``, from 1 down to base^(-(d-2)/d)
    (Hugging Face's ``inv_freq``; the ``inv_freq=`` keywords take an array in its place)."""
    d, base = check_d(d), check_base(base, d=d)
    return base ** (-np.arange(0, d, 2, dtype=np.float64) / d)


def rotation_angles(positions, freqs) -> np.ndarray:
    """Angles m * theta_j (``freqs`` ``(n,)``, ``positions`` any shape P), or sum_a freqs[j, a] positions[a]
    (``freqs`` ``(n, A)``, ``positions`` ``(A,) + P``): float64 ``P + (n,)``.  An angle that overflows float64
    raises; |angle| >= 2^34, where float64 rounds it by more than 1e-6 rad, warns (RopeRefPrecisionWarning)."""
    positions, freqs = check_angles(positions, check_freqs(freqs, "freqs", axes=True))
    return _angles(positions, freqs)


def rotation_matrix(positions, d: int, base: float = 10000.0, *, pairing: str = "interleaved",
                    rotary_dim: int | None = None, inv_freq=None) -> np.ndarray:
    """The block-diagonal rotary matrix R^d_{Theta,m} of eq 15 (angles sum_a F[j, a] p_a): float64 ``P + (d, d)``
    for ``positions`` of any shape ``P``, or ``(A,) + P`` with ``inv_freq`` ``(r/2, A)``; the identity beyond r."""
    positions, inv_freq, rotary_dim = _arguments(positions, d, base, pairing, rotary_dim, inv_freq)
    return _matrix(_angles(positions, inv_freq), d, pairing)


def rotate_dense(x, positions=None, *, base: float = 10000.0, pairing: str = "interleaved",
                 rotary_dim: int | None = None, inv_freq=None) -> np.ndarray:
    """R x through the dense matrix (eq 14): slow and obviously correct (one d x d matrix per position: to
    check, not to run).  Same arguments as :func:`rotate`; returns a new array of x's shape and dtype."""
    a, positions, inv_freq, rotary_dim = _prepared(x, positions, base, pairing, rotary_dim, inv_freq)
    R = _matrix(_angles(positions, inv_freq), a.shape[-1], pairing)              # (..., seq, d, d)
    with np.errstate(over="ignore", invalid="ignore"):                            # overflow: raised by the check
        return as_given(check_no_overflow(np.matmul(R, a.astype(np.float64)[..., None])[..., 0].astype(a.dtype), a), x)


def rotate_complex(x, positions=None, *, base: float = 10000.0) -> np.ndarray:
    """Pairs (x_{2i}, x_{2i+1}) as complex numbers times e^{i m theta_i} (eq 12; Llama's form): ``x``
    ``(..., seq, d)``, ``positions`` broadcastable to ``x.shape[:-1]``; x's shape and dtype (complex128 products)."""
    a, positions, theta, _ = _prepared(x, positions, base, "interleaved", None, None)
    pairs = np.ascontiguousarray(a, dtype=np.float64).view(np.complex128)        # x_2i + i x_2i+1: (..., seq, d/2)
    with np.errstate(over="ignore", invalid="ignore"):
        y = (pairs * np.exp(1j * _angles(positions, theta))).view(np.float64).astype(a.dtype)
    return as_given(check_no_overflow(y, a), x)


def rotate(x, positions=None, *, base: float = 10000.0, pairing: str = "interleaved", rotary_dim: int | None = None,
           inv_freq=None, angles=None, layout: str | None = None, cu_seqlens=None, seqlen_offsets=None) -> np.ndarray:
    """RoPE, the fast path: eq 34, x*cos + rotate_half(x)*sin, as :func:`rotate_elementwise` (``_fast.py``).

    x : ``(..., seq, d)``, float16/32/64 or bfloat16 (integers become float64); a 4-D x needs positions or layout.
    positions : broadcastable to ``x.shape[:-1]``, default ``arange(seq)``; may be fractional.  With ``inv_freq``
        ``(rotary_dim/2, A)``: ``(A, ..., seq)``, each ``positions[a]`` as above (required when A > 1).
    base : theta_i = base^(-2i/rotary_dim), unless ``inv_freq`` is given.
    pairing : ``"interleaved"``: pairs (x_{2i}, x_{2i+1}) (paper, Llama); ``"half"``: (x_i, x_{i+r/2}) (NeoX, HF).
    rotary_dim : rotate only the first ``rotary_dim`` features (even); the rest pass through.
    inv_freq : frequencies ``(rotary_dim/2,)`` (e.g. scaled), or ``(rotary_dim/2, A)``: pair j turns by
        sum_a inv_freq[j, a] * positions[a] (M-RoPE, 2-D axial RoPE, RoPE-Mixed).
    angles : ``(..., seq, r/2)``, each position's and pair's angle, in place of positions and frequencies (a
        kernel fed an angle table, as flash-attention's tests feed theirs); rotary_dim defaults to r.
    layout : ``"bshd"``, ``"bhsd"``, ``"sbhd"`` or ``"thd"`` (with ``cu_seqlens``) in place of positions: each
        sequence from 0 or from ``seqlen_offsets`` (one, or one per sequence); see ``layouts.layout_positions``.

    Returns a new array of x's shape and dtype (finite x whose pairs overflow it: ValueError); a torch tensor x (any
    float dtype and device, ``requires_grad`` allowed) gives a tensor of its dtype and device.
    """
    array, positions, inv_freq, rotary_dim = _prepared(x, positions, base, pairing, rotary_dim, inv_freq, angles,
                                                       layout, cu_seqlens=cu_seqlens, seqlen_offsets=seqlen_offsets)
    return as_given(_fast.rotate(array, positions, inv_freq, pairing, rotary_dim), x)


def rotate_elementwise(x, positions=None, *, base: float = 10000.0, pairing: str = "interleaved",
                       rotary_dim: int | None = None, inv_freq=None, angles=None, layout: str | None = None,
                       cu_seqlens=None, seqlen_offsets=None) -> np.ndarray:
    """Eq 34 written plainly: R x = x * cos(angle) + rotate_half(x) * sin(angle), angle_j = sum_a F[j, a] p_a.
    The form to read: same arguments as :func:`rotate`; float64 angles, cos, sin and products, then x's dtype."""
    array, positions, inv_freq, rotary_dim = _prepared(x, positions, base, pairing, rotary_dim, inv_freq, angles,
                                                       layout, cu_seqlens=cu_seqlens, seqlen_offsets=seqlen_offsets)
    angles = _angles(positions, inv_freq)                                        # (..., seq, r/2): pair j's
    angles = np.repeat(angles, 2, -1) if pairing == "interleaved" else np.concatenate([angles, angles], -1)
    part = array[..., :rotary_dim].astype(np.float64)
    with np.errstate(over="ignore", invalid="ignore"):                            # overflow: raised by the check
        rotated = part * np.cos(angles) + rotate_half(part, pairing) * np.sin(angles)
        y = np.concatenate([rotated, array[..., rotary_dim:]], axis=-1).astype(array.dtype)
    return as_given(check_no_overflow(y, array), x)


def rotate_half(x, pairing: str = "interleaved") -> np.ndarray:
    """Turn every pair of ``x`` ``(..., d)`` by 90 degrees: (x_a, x_b) -> (-x_b, x_a), the sin term of eq 34; pairs
    (2i, 2i+1) or, ``pairing="half"``, (i, i + d/2) (HF's ``rotate_half``)."""
    array, pairing = check_x(x), check_pairing(pairing)
    a, b = _pairs(array.shape[-1], pairing)
    turned = np.empty_like(array)
    turned[..., a] = -array[..., b]
    turned[..., b] = array[..., a]
    return as_given(turned, x)


def to_half(x) -> np.ndarray:
    """Last axis from interleaved pairs (2i, 2i+1) to half-split (i, i+d/2): ``rotate(to_half(x), pairing="half")
    == to_half(rotate(x))``.  ``x`` ``(..., d)``."""
    a = check_x(x)
    return as_given(np.concatenate([a[..., 0::2], a[..., 1::2]], axis=-1), x)


def to_interleaved(x) -> np.ndarray:
    """Inverse of :func:`to_half`: half-split layout ``(..., d)`` back to interleaved."""
    a = check_x(x)
    return as_given(np.stack(np.split(a, 2, axis=-1), axis=-1).reshape(a.shape), x)  # (x_i, x_{i+d/2}) side by side


def permute_qk_weights(w, n_heads: int) -> np.ndarray:
    """Reorder the rows of W_q or W_k ``(n_heads*head_dim, in)`` from interleaved to half-split: per head,
    ``permute_qk_weights(W) @ x`` equals ``to_half(W @ x)``, what Llama-to-HF converters apply."""
    w, n_heads = check_weights(w, n_heads)
    rows = np.arange(w.shape[0]).reshape(n_heads, -1, 2).transpose(0, 2, 1).ravel()
    return w[rows]  # fancy indexing: always a copy, never a view of w


def sinusoidal(positions, d: int, base: float = 10000.0) -> np.ndarray:
    """Vaswani et al. 2017's additive embedding (section 3.5): E(t)_{2i} = sin(t theta_i), E(t)_{2i+1} = cos(t theta_i),
    float64 ``P + (d,)`` for ``positions`` of any shape ``P``."""
    positions, theta, _ = _arguments(positions, d, base, "interleaved", None, None)
    angles = _angles(positions, theta)
    return np.stack([np.sin(angles), np.cos(angles)], axis=-1).reshape(positions.shape + (d,))    # (sin, cos) per pair


def sinusoidal_shift_matrix(k: float, d: int, base: float = 10000.0) -> np.ndarray:
    """B_k with sinusoidal(t + k) = B_k @ sinusoidal(t) for every t: float64 ``(d, d)``, block i
    [[cos, sin], [-sin, cos]](k theta_i): a rotation that does not depend on t (the property RoPE builds on)."""
    k, theta, _ = _arguments(check_scalar(k, "k"), d, base, "interleaved", None, None, name="k")
    return _matrix(-k * theta, d, "interleaved")                                # R of eq 15 at -k: block i as above


def partial_sums(distance, d: int, base: float = 10000.0, *, inv_freq=None) -> np.ndarray:
    """S_j = sum_{i<j} e^{i (m-n) theta_i} for j = 1..d/2 (section 3.4.3, eq 36): complex128 ``P + (d/2,)``, S_j at
    index j-1, for ``distance`` = m - n of any shape ``P``.  ``inv_freq`` ``(d/2,)`` replaces theta (scaled RoPE)."""
    distance, inv_freq, _ = _arguments(distance, d, base, "interleaved", None, inv_freq, name="distance")
    return np.cumsum(np.exp(1j * _angles(distance, inv_freq)), axis=-1)


def decay_bound(distance, d: int = 128, base: float = 10000.0, *, inv_freq=None) -> np.ndarray:
    """The long-term-decay bound (1/(d/2)) sum_{j=1}^{d/2} |S_j| of Figure 2 (eq 37), float64 of ``distance``'s
    shape; at distance 0, (d/2 + 1)/2."""
    return np.abs(partial_sums(distance, d, base, inv_freq=inv_freq)).mean(axis=-1)


def wrap_angle(a) -> np.ndarray:
    """Angles wrapped to (-pi, pi]: compare an angle with m*theta modulo 2 pi.  float64, a's shape."""
    a = check_positions(a, None, "a")                       # finite; integers beyond 2^53 warn
    return np.angle(np.exp(1j * a))
