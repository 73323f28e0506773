"""Attention with RoPE on queries and keys (values untouched): softmax (eqs 2, 16) and linear (eq 19).

:func:`attention` and :func:`linear_attention` are the fast forms; :func:`attention_dense` and
:func:`linear_attention_dense` write the same equations out with the dense rotation matrices
(eq 14) and O(N^2) sums, to check them.
"""

from __future__ import annotations

import numpy as np

from . import _validate as val
from .core import rotate, rotation_matrix


def _check_qkv(q, k, v):
    q, k, v = val.check_x(q, "q"), val.check_x(k, "k"), val.check_real_array(v, "v")
    if q.ndim < 2 or k.ndim < 2 or v.ndim < 2:
        raise ValueError(
            f"q, k, v must have shape (..., seq, d); got q {q.shape}, k {k.shape}, v {v.shape}"
        )
    if q.shape[:-2] != k.shape[:-2] or k.shape[:-2] != v.shape[:-2]:
        raise ValueError(
            f"q, k, v must share leading (batch/head) axes; got q {q.shape}, k {k.shape}, v {v.shape}"
        )
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(f"q and k must have the same feature size d; got q {q.shape}, k {k.shape}")
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(f"k and v must have the same number of positions; got k {k.shape}, v {v.shape}")
    return q, k, v


def attention(q, k, v, *, q_positions=None, k_positions=None, causal: bool = False,
              base: float = 10000.0, pairing: str = "interleaved") -> np.ndarray:
    """Scaled dot-product softmax attention with RoPE applied to q and k only.

    ``q``: ``(..., n_q, d)``; ``k``: ``(..., n_k, d)``; ``v``: ``(..., n_k, d_v)``; the
    leading axes (batch, heads) must agree.  ``q_positions`` / ``k_positions``
    broadcast to ``q.shape[:-1]`` / ``k.shape[:-1]`` (defaults ``arange``).  With
    ``causal=True`` a query attends the keys whose *position* is <= its own, so
    queries at positions ``offset..`` can attend a longer cache of keys.
    Returns ``(..., n_q, d_v)`` in float64 (float32 if all inputs are float32 or narrower).
    """
    q, k, v = _check_qkv(q, k, v)
    qp = val.check_positions(q_positions, q.shape[:-1], "q_positions")
    kp = val.check_positions(k_positions, k.shape[:-1], "k_positions")
    qr = rotate(q, qp, base=base, pairing=pairing).astype(np.float64)
    kr = rotate(k, kp, base=base, pairing=pairing).astype(np.float64)
    scores = qr @ np.swapaxes(kr, -1, -2) / np.sqrt(q.shape[-1])  # (..., n_q, n_k)
    if causal:
        qpb = np.broadcast_to(qp, q.shape[:-1])[..., :, None]
        kpb = np.broadcast_to(kp, k.shape[:-1])[..., None, :]
        visible = kpb <= qpb
        if not np.all(visible.any(axis=-1)):
            raise ValueError("causal attention: some query has no key at or before its position "
                             "(check q_positions against k_positions)")
        scores = np.where(visible, scores, -np.inf)
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights /= weights.sum(axis=-1, keepdims=True)
    return (weights @ v.astype(np.float64)).astype(_out_dtype(q, k, v), copy=False)


def _out_dtype(*arrays):
    narrow = all(a.dtype.itemsize <= 4 for a in arrays)
    return np.float32 if narrow else np.float64


def elu_plus_one(x) -> np.ndarray:
    """phi(x) = elu(x) + 1 (Katharopoulos et al. 2020), the feature map used with eq 19: positive."""
    return np.where(x > 0, x + 1.0, np.exp(np.minimum(x, 0.0)))


def linear_attention(q, k, v, *, positions=None, causal: bool = False,
                     base: float = 10000.0) -> np.ndarray:
    """Linear attention with RoPE, eq 19, phi = elu + 1.

    Numerator: sum_n (R_m phi(q_m))^T (R_n phi(k_n)) v_n; denominator: the
    *unrotated* sum_n phi(q_m)^T phi(k_n), as the paper keeps it to avoid
    dividing by zero.  Computed in O(N d d_v) by associativity; ``causal``
    restricts the sums to n <= m (sequence order) by prefix sums.

    ``q``, ``k``: ``(..., N, d)``; ``v``: ``(..., N, d_v)``; ``positions``
    broadcast to ``q.shape[:-1]`` (default ``arange(N)``).  Returns float64
    ``(..., N, d_v)``.
    """
    q, k, v = _check_qkv(q, k, v)
    if q.shape[-2] != k.shape[-2]:
        raise ValueError(f"linear_attention is self-attention: q and k need the same length; got q {q.shape}, k {k.shape}")
    pos = val.check_positions(positions, q.shape[:-1])
    fq, fk = elu_plus_one(q.astype(np.float64)), elu_plus_one(k.astype(np.float64))
    rq, rk = rotate(fq, pos, base=base), rotate(fk, pos, base=base)
    v = v.astype(np.float64)
    kv = rk[..., :, None] * v[..., None, :]  # (..., N, d, d_v): one outer product per key
    if causal:
        num = np.einsum("...nd,...nde->...ne", rq, np.cumsum(kv, axis=-3))
        den = np.einsum("...nd,...nd->...n", fq, np.cumsum(fk, axis=-2))
    else:
        num = np.einsum("...nd,...de->...ne", rq, kv.sum(axis=-3))
        den = fq @ fk.sum(axis=-2)[..., None]
        den = den[..., 0]
    return num / den[..., None]


def attention_dense(q, k, v, q_positions, k_positions, *, causal: bool = False,
                    base: float = 10000.0) -> np.ndarray:
    """Softmax attention written out with the dense matrices (eqs 2, 14, 16): a check for :func:`attention`.

    ``q``: ``(..., n_q, d)``, ``k``: ``(..., n_k, d)``, ``v``: ``(..., n_k, d_v)``; positions 1-D of
    length n_q and n_k.  Interleaved pairs.  Returns float64 ``(..., n_q, d_v)``.
    """
    q, k, v = _check_qkv(q, k, v)
    qp = val.check_positions(q_positions, q.shape[-2:-1], "q_positions")
    kp = val.check_positions(k_positions, k.shape[-2:-1], "k_positions")
    d = q.shape[-1]
    qr = np.einsum("mij,...mj->...mi", rotation_matrix(qp, d, base), q)
    kr = np.einsum("nij,...nj->...ni", rotation_matrix(kp, d, base), k)
    s = qr @ np.swapaxes(kr, -1, -2) / np.sqrt(d)
    if causal:
        s = np.where(kp[None, :] <= qp[:, None], s, -np.inf)
    w = np.exp(s - s.max(axis=-1, keepdims=True))
    return (w / w.sum(axis=-1, keepdims=True)) @ v


def linear_attention_dense(q, k, v, positions=None, *, causal: bool = False,
                           base: float = 10000.0) -> np.ndarray:
    """Eq 19 evaluated literally in O(N^2) with dense rotation matrices: a check for :func:`linear_attention`.

    ``q``, ``k``: ``(..., N, d)``; ``v``: ``(..., N, d_v)``; ``positions`` 1-D of length N
    (default ``arange(N)``).  Returns float64 ``(..., N, d_v)``.
    """
    q, k, v = _check_qkv(q, k, v)
    n_pos = q.shape[-2]
    pos = val.check_positions(positions, (n_pos,))
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
