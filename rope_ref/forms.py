"""Rotary Position Embedding (RoFormer, Su et al., section 3) in NumPy: the forms, math only.

Written independently so each checks the others: :func:`rotate_dense` (the matrix R, eqs 14-15),
:func:`rotate_complex` (eq 12), :func:`rotate_elementwise` (eq 34 plainly) and :func:`rotate` (the same
math streamed by ``_fast.py``).  theta_i = base^(-2i/d), i = 0..d/2-1 (eq 15, 0-indexed).  Angles are
float64; outputs keep the input dtype.  The general (multi-axis) form: ``inv_freq`` F ``(rotary_dim/2, A)``,
``positions`` p ``(A, ..., seq)`` (transformers' M-RoPE layout): pair j turns by sum_a F[j, a] p_a; a 1-D
``inv_freq`` is A = 1 without that axis.  Arrays sized by your arguments (d, positions x d x d, ...) over
2 GiB raise a ValueError naming the argument before they are allocated; ``max_bytes=`` allows more.
"""

from __future__ import annotations

import numpy as np

from . import _fast
from . import _validate as val


@val.suggest_keywords
def frequencies(d: int, base: float = 10000.0, *, max_bytes: int | None = None) -> np.ndarray:
    """theta_i = base^(-2i/d), i = 0..d/2-1 (eq 15, 0-indexed): float64 ``(d/2,)``, from 1 down to base^(-(d-2)/d).

    Hugging Face calls this array ``inv_freq``; so do the ``inv_freq=`` keywords, which take an array in its place.
    """
    d, base = val.check_d(d), val.check_base(base)
    val.check_nbytes(d // 2 * 8, "d", what=f"d/2 = {d // 2} float64 frequencies", limit=max_bytes)
    with np.errstate(over="ignore"):
        theta = base ** (-np.arange(0, d, 2, dtype=np.float64) / d)
    if not np.all(np.isfinite(theta)):
        raise ValueError(f"base={base!r} with d={d} gives frequencies base^(-2i/d) that overflow float64; "
                         f"expected a base that is not vanishingly small (base >= 1e-300 is safe)")
    return theta


@val.suggest_keywords
def rotation_angles(positions, freqs, *, max_bytes: int | None = None) -> np.ndarray:
    """Angles m * theta_j (``freqs`` ``(n,)``, ``positions`` any shape P), or sum_a freqs[j, a] positions[a]
    (``freqs`` ``(n, A)``, ``positions`` ``(A,) + P``): float64 ``P + (n,)``.  Overflow raises; |angle| >= 2^34,
    where float64 rounds by more than 1e-6 rad, warns (:class:`RopeRefPrecisionWarning`)."""
    freqs = val.check_freqs(freqs, axes=True)
    return _angles(val.check_positions(positions, None, axes=val.axes_of(freqs), freqs_name="freqs"), freqs, max_bytes)


def _angles(pos: np.ndarray, freqs: np.ndarray, max_bytes=None, name: str = "positions") -> np.ndarray:
    """sum_a F[j, a] p_a for checked float64 ``pos`` and ``freqs`` (the general form); overflow raises."""
    val.check_angle_range(pos, freqs, name)
    n = pos.size if freqs.ndim == 1 else pos[0].size
    val.check_nbytes(n * len(freqs) * 8, name, what=f"{n} x {len(freqs)} float64 angles", limit=max_bytes)
    if freqs.ndim == 1:
        return np.multiply.outer(pos, freqs)
    angles = np.multiply.outer(pos[0], freqs[:, 0])
    for a in range(1, freqs.shape[1]):
        angles += np.multiply.outer(pos[a], freqs[:, a])
    return angles


def _pairs(r: int, pairing: str):
    """Feature indices (a_j, b_j) of pair j: (2j, 2j+1) interleaved, (j, j + r/2) half-split."""
    j = np.arange(r // 2)
    return (2 * j, 2 * j + 1) if pairing == "interleaved" else (j, j + r // 2)


@val.suggest_keywords
def rotation_matrix(positions, d: int, base: float = 10000.0, *, pairing: str = "interleaved",
                    rotary_dim: int | None = None, inv_freq=None, max_bytes: int | None = None) -> np.ndarray:
    """The block-diagonal rotary matrix R^d_{Theta,m} of eq 15 (general form: angles sum_a F[j, a] p_a).

    ``positions``: any shape ``P`` (a scalar gives one matrix), or ``(A,) + P`` with ``inv_freq`` ``(r/2, A)``.
    Returns float64 ``P + (d, d)``: pair j on features (a, b) gets [[cos, -sin], [sin, cos]]; beyond
    ``rotary_dim``, the identity."""
    d = val.check_d(d)
    r, pairing = val.check_rotary_dim(rotary_dim, d), val.check_pairing(pairing)
    freqs = val.check_frequencies(r, base, inv_freq, frequencies)
    pos = val.check_positions(positions, None, axes=val.axes_of(freqs))
    n = pos.size if freqs.ndim == 1 else pos[0].size
    val.check_nbytes(n * d * d * 8, "positions", what=f"{n} float64 matrices of {d} x {d}", limit=max_bytes)
    angles = _angles(pos, freqs, max_bytes)                                            # P + (r/2,)
    R = np.zeros(angles.shape[:-1] + (d, d))
    R[..., np.arange(r, d), np.arange(r, d)] = 1.0
    a, b = _pairs(r, pairing)
    R[..., a, a], R[..., b, b], R[..., b, a] = np.cos(angles), np.cos(angles), np.sin(angles)
    R[..., a, b] = -R[..., b, a]
    return R


@val.suggest_keywords
def rotate_dense(x, positions=None, *, base: float = 10000.0, pairing: str = "interleaved",
                 rotary_dim: int | None = None, inv_freq=None, out=None, max_bytes: int | None = None) -> np.ndarray:
    """R x through the dense matrix (eq 14): slow and obviously correct (one d x d matrix per position: to
    check, not to run).  Same arguments as :func:`rotate`; returns an array (or ``out``) of x's shape and dtype."""
    x, pos, pairing, r, freqs = val.check_rotation(x, positions, base=base, pairing=pairing, rotary_dim=rotary_dim,
                                                   inv_freq=inv_freq, theta=frequencies)
    out = None if out is None else val.check_out(out, x)
    R = rotation_matrix(pos, x.shape[-1], pairing=pairing, rotary_dim=r, inv_freq=freqs, max_bytes=max_bytes)
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
    """Pairs (x_{2i}, x_{2i+1}) as complex numbers times e^{i m theta_i} (eq 12; Llama's form): ``x``
    ``(..., seq, d)``, ``positions`` broadcastable to ``x.shape[:-1]``; x's shape and dtype; complex64 products
    (complex128 for float64)."""
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
    How it streams (cached tables, blocks, threads): ``_fast.py``.
    """
    return _fast.rotate(x, positions, base=base, pairing=pairing, rotary_dim=rotary_dim, inv_freq=inv_freq, out=out)


@val.suggest_keywords
def rotate_elementwise(x, positions=None, *, base: float = 10000.0, pairing: str = "interleaved",
                       rotary_dim: int | None = None, inv_freq=None, out=None) -> np.ndarray:
    """Eq 34 written plainly: R x = x * cos(angle) + rotate_half(x) * sin(angle), angle_j = sum_a F[j, a] p_a.

    The form to read: same arguments as :func:`rotate`; float64 angles, cos and sin; no cache, no blocking.
    """
    x, pos, pairing, r, freqs = val.check_rotation(x, positions, base=base, pairing=pairing, rotary_dim=rotary_dim,
                                                   inv_freq=inv_freq, theta=frequencies)
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

    Pairs (2i, 2i+1) or, ``pairing="half"``, (i, i + d/2) (HF's ``rotate_half``).  ``x`` ``(..., d)``; a new array.
    """
    x, pairing = val.check_x(x), val.check_pairing(pairing)
    a, b = _pairs(x.shape[-1], pairing)
    out = np.empty_like(x)
    out[..., a], out[..., b] = -x[..., b], x[..., a]
    return out


@val.suggest_keywords
def to_half(x) -> np.ndarray:
    """Last axis from interleaved pairs (2i, 2i+1) to half-split (i, i+d/2): ``rotate(to_half(x), pairing="half")
    == to_half(rotate(x))``.  ``x`` ``(..., d)``."""
    x = val.check_x(x)
    return np.concatenate([x[..., 0::2], x[..., 1::2]], axis=-1)


@val.suggest_keywords
def to_interleaved(x) -> np.ndarray:
    """Inverse of :func:`to_half`: half-split layout ``(..., d)`` back to interleaved."""
    x = val.check_x(x)
    return np.stack(np.split(x, 2, axis=-1), axis=-1).reshape(x.shape)      # (x_i, x_{i+d/2}) side by side


@val.suggest_keywords
def permute_qk_weights(w, n_heads: int) -> np.ndarray:
    """Reorder the rows of W_q or W_k ``(n_heads*head_dim, in)`` from interleaved to half-split.

    Per head, ``permute_qk_weights(W) @ x`` equals ``to_half(W @ x)``: what Llama-to-HF converters apply.
    """
    w, n_heads, head_dim = val.check_qk_weights(w, n_heads)
    rows = np.arange(w.shape[0]).reshape(n_heads, head_dim // 2, 2).transpose(0, 2, 1).ravel()
    return w[rows]  # fancy indexing: always a copy, never a view of w


@val.suggest_keywords
def sinusoidal(positions, d: int, base: float = 10000.0, *, max_bytes: int | None = None) -> np.ndarray:
    """Vaswani et al. 2017's additive embedding (section 3.5): E(t)_{2i} = sin(t theta_i), E(t)_{2i+1} = cos(t theta_i).

    ``positions``: any shape ``P``; returns float64 ``P + (d,)``.
    """
    pos = val.check_positions(positions, None)
    val.check_nbytes(pos.size * val.check_d(d) * 8, "positions", what=f"{pos.size} x {d} float64", limit=max_bytes)
    angles = _angles(pos, frequencies(d, base), max_bytes)
    return np.stack([np.sin(angles), np.cos(angles)], axis=-1).reshape(pos.shape + (d,))    # (sin, cos) per pair


@val.suggest_keywords
def sinusoidal_shift_matrix(k: float, d: int, base: float = 10000.0, *, max_bytes: int | None = None) -> np.ndarray:
    """B_k with sinusoidal(t + k) = B_k @ sinusoidal(t) for every t: float64 ``(d, d)``, block i
    [[cos, sin], [-sin, cos]](k theta_i): a rotation that does not depend on t (the property RoPE builds on)."""
    a = _angles(np.float64(val.check_scalar(k, "k")), frequencies(d, base), name="k")
    val.check_nbytes(d * d * 8, "d", what=f"a float64 matrix of {d} x {d}", limit=max_bytes)
    B, (e, o) = np.zeros((d, d)), _pairs(d, "interleaved")
    B[e, e], B[e, o], B[o, e], B[o, o] = np.cos(a), np.sin(a), -np.sin(a), np.cos(a)
    return B


@val.suggest_keywords
def partial_sums(distance, d: int, base: float = 10000.0, *, inv_freq=None, max_bytes=None) -> np.ndarray:
    """S_j = sum_{i<j} e^{i (m-n) theta_i} for j = 1..d/2 (section 3.4.3, eq 36): complex128 ``P + (d/2,)``, S_j at
    index j-1, for ``distance`` = m - n of any shape ``P``.  ``inv_freq`` ``(d/2,)`` replaces theta (scaled RoPE)."""
    r, d = val.check_positions(distance, None, "distance"), val.check_d(d)
    freqs = val.check_frequencies(d, base, inv_freq, frequencies, axes=False)
    val.check_nbytes(r.size * (d // 2) * 16, "distance", what=f"{r.size} x {d // 2} complex128", limit=max_bytes)
    return np.cumsum(np.exp(1j * _angles(r, freqs, max_bytes, "distance")), axis=-1)


@val.suggest_keywords
def decay_bound(distance, d: int = 128, base: float = 10000.0, *, inv_freq=None, max_bytes=None) -> np.ndarray:
    """The long-term-decay bound (1/(d/2)) sum_{j=1}^{d/2} |S_j| of Figure 2 (eq 37); at distance 0, (d/2 + 1)/2.

    ``distance``: any shape ``P`` of real relative distances; returns float64 of shape ``P``.
    """
    return np.abs(partial_sums(distance, d, base, inv_freq=inv_freq, max_bytes=max_bytes)).mean(axis=-1)


@val.suggest_keywords
def wrap_angle(a) -> np.ndarray:
    """Angles wrapped to (-pi, pi]: compare an angle with m*theta modulo 2 pi.  float64, a's shape."""
    return np.angle(np.exp(1j * val.check_real_values(a, "a")))
