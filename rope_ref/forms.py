"""Rotary Position Embedding (RoFormer, Su et al., section 3) in NumPy: the forms, math only.

Four ways to compute the same rotation, written independently so each checks the others:

* :func:`rotate_dense`       -- multiply by the block-diagonal matrix R (eqs 14-15);
* :func:`rotate_complex`     -- view pairs as complex numbers, multiply by e^{i m theta} (eq 12);
* :func:`rotate_elementwise` -- eq 34 written plainly: x*cos + rotate_half(x)*sin;
* :func:`rotate`             -- the fast path: the same math, streamed by ``rope_ref/_fast.py``.

Conventions (README "Conventions"): frequencies are indexed from 0, theta_i = base^(-2i/d) for
i = 0..d/2-1 (the set of eq 15's 1-indexed theta_i = 10000^(-2(i-1)/d)); pair i turns
counter-clockwise by m*theta_i.  Angles are computed in float64; outputs keep the input dtype.

The general (multi-axis) form: ``inv_freq`` F of shape ``(rotary_dim/2, A)`` and ``positions`` p of
shape ``(A, ..., seq)`` (transformers' layout for M-RoPE position ids): pair j turns by
sum_a F[j, a] * p_a.  A 1-D ``inv_freq`` (A = 1, positions without the axis) is eq 34 itself;
M-RoPE puts each theta_j in the column of its axis (t, h, w); 2-D axial RoPE gives each axis its own
spectrum; RoPE-Mixed is a dense F.  Every ``positions[a]`` broadcasts to ``x.shape[:-1]``.
"""

from __future__ import annotations

import numpy as np

from . import _fast
from . import _validate as val


@val.suggest_keywords
def frequencies(d: int, base: float = 10000.0) -> np.ndarray:
    """Per-pair angular frequencies theta_i = base^(-2i/d), i = 0..d/2-1 (eq 15, 0-indexed).

    Hugging Face calls this array ``inv_freq``; so do the ``inv_freq=`` keywords here, which
    take an explicit (e.g. scaled) array in its place.  Returns float64 of shape ``(d/2,)``;
    ``theta_0 = 1`` and the frequencies decrease geometrically towards ``base^(-(d-2)/d)``.
    """
    d, base = val.check_d(d), val.check_base(base)
    with np.errstate(over="ignore"):
        theta = base ** (-np.arange(0, d, 2, dtype=np.float64) / d)
    if not np.all(np.isfinite(theta)):
        raise ValueError(f"base={base!r} with d={d} gives frequencies base^(-2i/d) that overflow float64; "
                         f"expected a base that is not vanishingly small (base >= 1e-300 is safe)")
    return theta


@val.suggest_keywords
def rotation_angles(positions, freqs) -> np.ndarray:
    """Angles sum_a freqs[j, a] * positions[a] in float64, shape ``P + (n,)``.

    ``freqs`` ``(n,)`` with ``positions`` of any shape ``P`` (angles m * theta_j), or ``freqs`` ``(n, A)``
    with ``positions`` ``(A,) + P``.  Raises if an angle overflows float64; warns
    (:class:`RopeRefPrecisionWarning`) when |angle| >= 2^34, where float64 rounds it by more than 1e-6 rad.
    """
    freqs = val.check_freqs(freqs, axes=True)
    return _angles(val.check_positions(positions, None, axes=_axes(freqs), freqs_name="freqs"), freqs)


def _axes(freqs: np.ndarray) -> int | None:
    """A for a frequency matrix ``(n, A)``; None for a vector (positions without an axis of axes)."""
    return None if freqs.ndim == 1 else freqs.shape[1]


def _angles(pos: np.ndarray, freqs: np.ndarray, name: str = "positions") -> np.ndarray:
    """sum_a F[j, a] p_a for checked float64 ``pos`` and ``freqs`` (the general form); overflow raises."""
    val.check_angle_range(pos, freqs, name)
    if freqs.ndim == 1:
        return np.multiply.outer(pos, freqs)
    angles = np.multiply.outer(pos[0], freqs[:, 0])
    for a in range(1, freqs.shape[1]):
        angles += np.multiply.outer(pos[a], freqs[:, a])
    return angles


def _arguments(x, positions, base, pairing, rotary_dim, inv_freq):
    """The checked arguments every rotation shares: x, positions, pairing, rotary dim r, frequencies."""
    x = val.check_x(x)
    pairing, r = val.check_pairing(pairing), val.check_rotary_dim(rotary_dim, x.shape[-1])
    freqs = _chosen_frequencies(r, base, inv_freq)
    return x, val.check_positions(positions, x.shape[:-1], axes=_axes(freqs)), pairing, r, freqs


def _chosen_frequencies(r: int, base, inv_freq) -> np.ndarray:
    """theta for rotary dimension ``r``, or the caller's ``inv_freq`` ((r/2,) or (r/2, A)) checked against it.

    ``base`` is checked either way: a bad base next to ``inv_freq`` is a mistake, not a value to ignore."""
    base = val.check_base(base)
    return frequencies(r, base) if inv_freq is None else val.check_inv_freq(inv_freq, r // 2)


def _pairs(r: int, pairing: str):
    """Feature indices (a_j, b_j) of pair j: (2j, 2j+1) interleaved, (j, j + r/2) half-split."""
    j = np.arange(r // 2)
    return (2 * j, 2 * j + 1) if pairing == "interleaved" else (j, j + r // 2)


@val.suggest_keywords
def rotation_matrix(positions, d: int, base: float = 10000.0, *, pairing: str = "interleaved",
                    rotary_dim: int | None = None, inv_freq=None) -> np.ndarray:
    """The block-diagonal rotary matrix R^d_{Theta,m} of eq 15 (general form: angles sum_a F[j, a] p_a).

    ``positions``: any shape ``P`` (a scalar gives one matrix), or ``(A,) + P`` with ``inv_freq`` ``(r/2, A)``.
    Returns float64 ``P + (d, d)``: for pair j on features (a, b) (see ``pairing``),
    [[R_aa, R_ab], [R_ba, R_bb]] = [[cos, -sin], [sin, cos]] of its angle; the identity beyond ``rotary_dim``.
    """
    d = val.check_d(d)
    r, pairing = val.check_rotary_dim(rotary_dim, d), val.check_pairing(pairing)
    freqs = _chosen_frequencies(r, base, inv_freq)
    pos = val.check_positions(positions, None, axes=_axes(freqs))
    n = pos[0].size if freqs.ndim == 2 else pos.size
    val.check_nbytes(n * d * d * 8, "positions", what=f"{n} float64 matrices of {d} x {d}")
    angles = _angles(pos, freqs)                                                          # P + (r/2,)
    cos, sin = np.cos(angles), np.sin(angles)
    R = np.zeros(angles.shape[:-1] + (d, d))
    R[..., np.arange(r, d), np.arange(r, d)] = 1.0
    a, b = _pairs(r, pairing)
    R[..., a, a], R[..., a, b], R[..., b, a], R[..., b, b] = cos, -sin, sin, cos
    return R


@val.suggest_keywords
def rotate_dense(x, positions=None, *, base: float = 10000.0, pairing: str = "interleaved",
                 rotary_dim: int | None = None, inv_freq=None, out=None) -> np.ndarray:
    """R x through the dense matrix (eq 14): slow and obviously correct.

    Same arguments as :func:`rotate`.  Builds one d x d matrix per entry of ``positions``: use it to
    check, not to run.  Returns an array (or ``out``) of x's shape and dtype.
    """
    x, pos, pairing, r, freqs = _arguments(x, positions, base, pairing, rotary_dim, inv_freq)
    out = None if out is None else val.check_out(out, x)
    R = rotation_matrix(pos, x.shape[-1], pairing=pairing, rotary_dim=r, inv_freq=freqs)   # P + (d, d)
    with np.errstate(over="ignore", invalid="ignore"):                          # overflow: cast_back raises
        result = np.matmul(R, x.astype(np.float64)[..., None])[..., 0]
    return _deliver(val.cast_back(result, x), out)


def _deliver(result: np.ndarray, out) -> np.ndarray:
    """``result``, or ``out`` (checked by the caller before any work) holding it."""
    if out is None:
        return result
    out[...] = result
    return out


@val.suggest_keywords
def rotate_complex(x, positions=None, *, base: float = 10000.0) -> np.ndarray:
    """Pairs (x_{2i}, x_{2i+1}) as complex numbers times e^{i m theta_i} (eq 12; Llama's form).

    ``x``: ``(..., seq, d)``; ``positions``: broadcastable to ``x.shape[:-1]``.
    Returns x's shape and dtype.  Angles are float64; the product is complex64 for float16/32 and
    bfloat16 input, complex128 for float64.
    """
    x = val.check_x(x)
    pos = val.check_positions(positions, x.shape[:-1])
    real = np.float64 if x.dtype == np.float64 else np.float32
    angles = rotation_angles(pos, frequencies(x.shape[-1], base))              # m theta_i, float64
    cis = (np.cos(angles) + 1j * np.sin(angles)).astype(np.result_type(real, np.complex64))  # e^{i m theta_i}
    z = np.ascontiguousarray(x, dtype=real).view(cis.dtype)                     # x_2i + i x_2i+1: (..., d/2)
    with np.errstate(over="ignore", invalid="ignore"):                          # overflow: a ValueError below
        out = (z * cis).view(real).astype(x.dtype, copy=False)
    return val.check_no_overflow(out, x)


@val.suggest_keywords
def rotate(x, positions=None, *, base: float = 10000.0, pairing: str = "interleaved",
           rotary_dim: int | None = None, inv_freq=None, out=None) -> np.ndarray:
    """RoPE, the fast path: eq 34, x*cos + rotate_half(x)*sin, computed as :func:`rotate_elementwise` does.

    x : ``(..., seq, d)``, float16/32/64 or bfloat16 (integers become float64; other dtypes raise a TypeError).
    positions : broadcastable to ``x.shape[:-1]``, default ``arange(seq)``; may be fractional.  With an
        ``inv_freq`` of shape ``(rotary_dim/2, A)``: shape ``(A, ..., seq)``, each ``positions[a]``
        broadcastable to ``x.shape[:-1]`` (required when A > 1).
    base : theta_i = base^(-2i/rotary_dim).  Ignored when ``inv_freq`` is given.
    pairing : ``"interleaved"`` rotates (x_{2i}, x_{2i+1}) as the paper and Llama do;
        ``"half"`` rotates (x_i, x_{i+r/2}) as GPT-NeoX and HF ``rotate_half`` do.
    rotary_dim : rotate only the first ``rotary_dim`` features (even); the rest pass through.
    inv_freq : explicit frequencies ``(rotary_dim/2,)`` (e.g. scaled), or a matrix ``(rotary_dim/2, A)``:
        pair j turns by sum_a inv_freq[j, a] * positions[a] (M-RoPE, 2-D axial RoPE, RoPE-Mixed).
    out : optional writeable array of x's shape and dtype, any strides; must not overlap x or itself.

    Returns a new array (or ``out``) of x's shape and dtype; x is not modified; a finite x whose rotated
    pairs overflow its dtype raises a ValueError (README "Precision").  How it streams (cached cos/sin
    tables, blocks, threads: :func:`set_num_threads`) is described in ``rope_ref/_fast.py``.
    """
    return _fast.rotate(x, positions, base=base, pairing=pairing, rotary_dim=rotary_dim, inv_freq=inv_freq, out=out)


@val.suggest_keywords
def rotate_elementwise(x, positions=None, *, base: float = 10000.0, pairing: str = "interleaved",
                       rotary_dim: int | None = None, inv_freq=None, out=None) -> np.ndarray:
    """Eq 34 written plainly: R x = x * cos(angle) + rotate_half(x) * sin(angle), angle_j = sum_a F[j, a] p_a.

    The form to read.  Same arguments as :func:`rotate`.  Angles, cos and sin are float64; no cache,
    no blocking, no complex numbers.  Returns an array (or ``out``) of x's shape and dtype.
    """
    x, pos, pairing, r, freqs = _arguments(x, positions, base, pairing, rotary_dim, inv_freq)
    out = None if out is None else val.check_out(out, x)
    angles = _angles(pos, freqs)                                    # (..., seq, r/2)
    # angle j belongs to features (2j, 2j+1) when interleaved, to (j, j + r/2) when half-split.
    spread = (lambda a: np.repeat(a, 2, axis=-1)) if pairing == "interleaved" else (lambda a: np.concatenate([a, a], -1))
    cos, sin = spread(np.cos(angles)), spread(np.sin(angles))      # (..., seq, r)
    result = x.astype(np.float64)                                   # a copy: x is never modified
    with np.errstate(over="ignore", invalid="ignore"):              # overflow: cast_back raises
        result[..., :r] = result[..., :r] * cos + rotate_half(result[..., :r], pairing) * sin
    return _deliver(val.cast_back(result, x), out)


@val.suggest_keywords
def rotate_half(x, pairing: str = "interleaved") -> np.ndarray:
    """Turn every pair by 90 degrees: (x_a, x_b) -> (-x_b, x_a), the sin term of eq 34.

    ``pairing="interleaved"``: pairs (2i, 2i+1); ``"half"``: pairs (i, i + d/2), which is
    Hugging Face's ``rotate_half``.  ``x``: ``(..., d)``; returns a new array of x's shape and dtype.
    """
    x, pairing = val.check_x(x), val.check_pairing(pairing)
    a, b = _pairs(x.shape[-1], pairing)
    out = np.empty_like(x)
    out[..., a], out[..., b] = -x[..., b], x[..., a]
    return out


@val.suggest_keywords
def to_half(x) -> np.ndarray:
    """Permute the last axis from interleaved pairs (2i, 2i+1) to half-split pairs (i, i+d/2).

    ``x``: ``(..., d)``.  ``rotate(to_half(x), pairing="half") == to_half(rotate(x))``.
    """
    x = val.check_x(x)
    d = x.shape[-1]
    return np.concatenate([x[..., 0:d:2], x[..., 1:d:2]], axis=-1)


@val.suggest_keywords
def to_interleaved(x) -> np.ndarray:
    """Inverse of :func:`to_half`: half-split layout ``(..., d)`` back to interleaved."""
    x = val.check_x(x)
    h = x.shape[-1] // 2
    out = np.empty_like(x)
    out[..., 0::2], out[..., 1::2] = x[..., :h], x[..., h:]
    return out


@val.suggest_keywords
def permute_qk_weights(w, n_heads: int) -> np.ndarray:
    """Reorder the rows of W_q or W_k ``(n_heads*head_dim, in)`` from interleaved to half-split.

    Within each head the output rows (2i, 2i+1) become (i, i+head_dim/2), so ``(permute_qk_weights(W) @ x)``
    per head equals ``to_half(W @ x)`` per head: the permutation Llama-to-HF checkpoint converters apply.
    """
    w = val.check_real_array(w, "w")
    if w.ndim != 2:
        raise ValueError(f"w must be a 2-D weight matrix (n_heads*head_dim, in_features), got shape {w.shape}")
    n_heads = val.check_positive_int(n_heads, "n_heads")
    if w.shape[0] % n_heads:
        raise ValueError(f"w.shape[0]={w.shape[0]} is not divisible by n_heads={n_heads}")
    head_dim = val.check_d(w.shape[0] // n_heads, "head_dim (w.shape[0] // n_heads)")
    rows = np.arange(w.shape[0]).reshape(n_heads, head_dim // 2, 2).transpose(0, 2, 1).ravel()
    return w[rows]  # fancy indexing: always a copy, never a view of w


@val.suggest_keywords
def sinusoidal(positions, d: int, base: float = 10000.0) -> np.ndarray:
    """The additive absolute embedding of Vaswani et al. 2017 ("Attention Is All You Need", section 3.5).

    E(t)_{2i} = sin(t theta_i), E(t)_{2i+1} = cos(t theta_i) with RoPE's theta_i.
    ``positions``: any shape ``P``; returns float64 ``P + (d,)``.
    """
    pos = val.check_positions(positions, None)
    angles = _angles(pos, frequencies(d, base))
    out = np.empty(pos.shape + (d,))
    out[..., 0::2], out[..., 1::2] = np.sin(angles), np.cos(angles)
    return out


@val.suggest_keywords
def sinusoidal_shift_matrix(k: float, d: int, base: float = 10000.0) -> np.ndarray:
    """B_k with sinusoidal(t + k) = B_k @ sinusoidal(t) for every t: float64 ``(d, d)``.

    Block i is [[cos, sin], [-sin, cos]](k theta_i): the shift acts on the additive embedding
    as a rotation that does not depend on t (the property RoPE builds on).
    """
    a = _angles(np.float64(val.check_scalar(k, "k")), frequencies(d, base), "k")
    B = np.zeros((d, d))
    e, o = np.arange(0, d, 2), np.arange(1, d, 2)
    B[e, e], B[e, o], B[o, e], B[o, o] = np.cos(a), np.sin(a), -np.sin(a), np.cos(a)
    return B


@val.suggest_keywords
def partial_sums(distance, d: int, base: float = 10000.0, *, inv_freq=None) -> np.ndarray:
    """S_j = sum_{i<j} e^{i (m-n) theta_i} for j = 1..d/2 (section 3.4.3, eq 36).

    ``distance`` = m - n, any shape ``P`` of reals; returns complex128 ``P + (d/2,)``
    whose last index j-1 holds S_j.  ``inv_freq`` ``(d/2,)`` overrides the frequencies (scaled RoPE).
    """
    r = val.check_positions(distance, None, "distance")
    freqs = _chosen_frequencies(val.check_d(d), base, inv_freq)
    if freqs.ndim != 1:
        raise ValueError(f"inv_freq must have shape ({freqs.shape[0]},) here (one distance axis), got shape {freqs.shape}")
    return np.cumsum(np.exp(1j * _angles(r, freqs, "distance")), axis=-1)


@val.suggest_keywords
def decay_bound(distance, d: int = 128, base: float = 10000.0, *, inv_freq=None) -> np.ndarray:
    """The long-term-decay bound (1/(d/2)) sum_{j=1}^{d/2} |S_j| plotted in Figure 2 (eq 37).

    ``distance``: any shape ``P`` of real relative distances; returns float64 of shape ``P``.
    At distance 0 every |S_j| = j, so the bound is (d/2 + 1)/2.
    """
    return np.abs(partial_sums(distance, d, base, inv_freq=inv_freq)).mean(axis=-1)


@val.suggest_keywords
def wrap_angle(a) -> np.ndarray:
    """Angles wrapped to (-pi, pi]: compare an angle with m*theta modulo 2 pi.  float64, a's shape."""
    return np.angle(np.exp(1j * val.check_real_values(a, "a")))
