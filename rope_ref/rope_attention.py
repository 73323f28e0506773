"""Attention with RoPE on queries and keys (values untouched): softmax (eqs 2, 16) and linear (eq 19), stable for
any finite q, k, and the same equations written out with the dense matrices of eq 14 (``*_dense``) to check them."""

from __future__ import annotations

import numpy as np

from ._validate import (check_bool, check_finite, check_no_overflow, check_number, check_positions, check_real_array,
                        check_x)
from .forms import rotate, rotation_matrix


def _check_qkv(q, k, v, causal, same_length: bool = False):
    """q ``(..., n_q, d)``, k ``(..., n_k, d)``, v ``(..., n_k, d_v)``, finite, agreeing (n_q = n_k if same_length)."""
    q, k, v = check_x(q, "q"), check_x(k, "k"), check_finite(check_real_array(v, "v"), "v")
    agree = min(q.ndim, k.ndim, v.ndim) >= 2 and q.shape[:-2] == k.shape[:-2] == v.shape[:-2] \
        and q.shape[-1] == k.shape[-1] and k.shape[-2] == v.shape[-2] > 0 \
        and (not same_length or q.shape[-2] == k.shape[-2])
    if not agree:
        raise ValueError(f"q, k, v must have shapes (..., n_q, d), (..., n_k, d), (..., n_k, d_v) with n_k >= 1"
                         f"{', n_q = n_k' if same_length else ''}; got q {q.shape}, k {k.shape}, v {v.shape}")
    return check_finite(q, "q"), check_finite(k, "k"), v, check_bool(causal, "causal")


def _attend(scores, v, qp, kp, causal, scale=1.0) -> np.ndarray:
    """softmax(scale * scores) v (eqs 2, 16), float64, over every key or (``causal``) the keys whose position is <=
    the query's (``qp`` ``(..., n_q)``, ``kp`` ``(..., n_k)``), of which each query needs one."""
    if causal:
        visible = kp[..., None, :] <= qp[..., :, None]
        if not np.all(visible.any(axis=-1)):
            raise ValueError("q_positions, k_positions: with causal=True a query has no key at or before its position")
        scores = np.where(visible, scores, -np.inf)
    return softmax(scores, scale=scale) @ v.astype(np.float64)


def attention(q, k, v, *, q_positions=None, k_positions=None, causal: bool = False,
              base: float = 10000.0, pairing: str = "interleaved") -> np.ndarray:
    """Scaled dot-product softmax attention (eqs 2, 16) with RoPE applied to q and k only.

    ``q_positions`` / ``k_positions`` broadcast to ``q.shape[:-1]`` / ``k.shape[:-1]`` (default ``arange``), so new
    queries attend a KV cache at their own positions; ``causal``: keys whose *position* is <= the query's.  Returns
    float32 if every input is float32 or narrower, else float64.  Scores come from q / s_q and k / s_k (s powers of
    two), s_q s_k / sqrt(d) applied inside the softmax: huge q, k give the argmax's value, never inf - inf.
    """
    q, k, v, causal = _check_qkv(q, k, v, causal)
    qp = check_positions(q_positions, q.shape[:-1], "q_positions", "q.shape[:-1]")
    kp = check_positions(k_positions, k.shape[:-1], "k_positions", "k.shape[:-1]")
    # s_q, s_k: the powers of two bringing max|q|, max|k| into [1, 2): dividing by them is exact, never overflows
    sq, sk = (float(np.ldexp(1.0, np.frexp(np.max(np.abs(a), initial=0.0))[1] - 1)) for a in (q, k))
    qr = rotate(q.astype(np.float64) / sq, qp, base=base, pairing=pairing)     # entries below 2 sqrt(2)
    kr = rotate(k.astype(np.float64) / sk, kp, base=base, pairing=pairing)
    u = qr @ np.swapaxes(kr, -1, -2)                   # (..., n_q, n_k), |u| <= 8d; convex weights: |out| <= max |v|
    out = _attend(u, v, np.broadcast_to(qp, q.shape[:-1]), np.broadcast_to(kp, k.shape[:-1]), causal,
                  scale=sq / float(np.sqrt(q.shape[-1])) * sk)   # Python floats: inf if it overflows, softmax takes it
    narrow = max(a.dtype.itemsize for a in (q, k, v)) <= 4
    return out.astype(np.float32) if narrow else out


def softmax(scores, axis: int = -1, *, scale: float = 1.0) -> np.ndarray:
    """softmax(c s) = exp(c (s_i - max s)) / sum_j exp(c (s_j - max s)) along ``axis`` (eq 2's normalisation), float64;
    -inf scores get weight 0.  c s is never formed (c = inf: the argmax; c = 0: the mean over the unmasked)."""
    s = check_real_array(scores, "scores")
    s = check_positions(s, None, "scores") if s.dtype.kind in "iu" else s.astype(np.float64)   # ints: 2^53 warns
    scale = check_number(scale, "scale", "a non-negative number (inf allowed)", lambda c: c >= 0, real=True)
    axis = check_number(axis, "axis", f"an axis of scores ({-s.ndim}..{s.ndim - 1})", lambda a: -s.ndim <= a < s.ndim)
    if s.size == 0:
        return s
    top = s.max(axis=axis, keepdims=True)
    if not np.all(np.isfinite(top)):                    # a NaN or +inf score, or a row all -inf
        raise ValueError(f"scores must be finite or -inf (masked), with a finite score in every row along axis {axis}")
    with np.errstate(over="ignore", invalid="ignore"):   # gap 0 times inf, or -inf times 0: replaced below
        gaps = s - top                                   # <= 0; -inf where masked, or beyond float64: then halved
        beyond = np.isinf(gaps) & np.isfinite(s)
        scaled = np.where(beyond, (s / 2 - top / 2) * scale * 2, gaps * scale) if beyond.any() else gaps * scale
        scaled = np.where(gaps == 0, 0.0, np.where(np.isneginf(s), -np.inf, scaled))
    w = np.exp(scaled)
    return w / w.sum(axis=axis, keepdims=True)


def elu_plus_one(x) -> np.ndarray:
    """phi(x) = elu(x) + 1 (Katharopoulos et al. 2020, arXiv:2006.16236), the positive feature map used with eq 19:
    a new array of x's shape (integers become float64); it underflows to 0 below x = -745."""
    x = check_real_array(x, "x")
    return np.where(x > 0, x + 1.0, np.exp(np.minimum(x, 0.0)))          # + 1.0: integers as float64


def linear_attention(q, k, v, *, positions=None, causal: bool = False, base: float = 10000.0) -> np.ndarray:
    """Linear attention with RoPE, eq 19, phi = elu + 1: sum_n (R_m phi(q_m))^T (R_n phi(k_n)) v_n over the
    *unrotated* sum_n phi(q_m)^T phi(k_n), n over all keys or (``causal``) n <= m, in O(N d d_v).

    ``positions`` broadcast to ``q.shape[:-1]`` (default ``arange(N)``); returns float64.  The sums run key by key
    (the recurrent form): phi(q_m), phi(k_n) divided by their largest entries (from log phi), key n weighted by
    exp(c_n - C_m), C_m the largest log phi of the keys so far, a factor that cancels in the ratio: features that
    underflow exp (phi(-800) = 0) still give the exact ratio.
    """
    q, k, v, causal = _check_qkv(q, k, v, causal, same_length=True)
    pos = check_positions(positions, q.shape[:-1], "positions", "q.shape[:-1]")
    lq, lk = (np.log1p(np.maximum(a, 0.0)) + np.minimum(a, 0.0) for a in (q.astype(float), k.astype(float)))  # log phi
    fq = np.exp(lq - lq.max(axis=-1, keepdims=True))             # phi(q_m) / max_j phi(q_m)_j
    c = lk.max(axis=-1)                                          # (..., N): log of each key's largest phi
    fk = np.exp(lk - c[..., None])
    rq, rk = rotate(fq, pos, base=base), rotate(fk, pos, base=base)
    S = np.zeros(q.shape[:-2] + (q.shape[-1], v.shape[-1]))      # sum_n w_n (R_n phi(k_n)) v_n^T, (..., d, d_v)
    z, top = np.zeros(S.shape[:-1]), np.full(q.shape[:-2], -np.inf)  # sum_n w_n phi(k_n), C_m
    num, den = np.empty(v.shape), np.empty(q.shape[:-1])
    with np.errstate(over="ignore", invalid="ignore"):           # |v| near 1.8e308: refused below
        for m in range(q.shape[-2]):
            top, old_top = np.maximum(top, c[..., m]), top
            decay, w = np.exp(old_top - top)[..., None], np.exp(c[..., m] - top)[..., None]
            S = S * decay[..., None] + (w * rk[..., m, :])[..., :, None] * v[..., m, None, :]
            z = z * decay + w * fk[..., m, :]
            if causal:
                num[..., m, :] = np.einsum("...d,...de->...e", rq[..., m, :], S)
                den[..., m] = np.einsum("...d,...d->...", fq[..., m, :], z)
        if not causal:
            num, den = np.einsum("...nd,...de->...ne", rq, S), np.einsum("...nd,...d->...n", fq, z)
        if not np.all(den > 0):
            raise ValueError("q, k: a denominator sum_n phi(q_m).phi(k_n) underflows float64 however scaled")
        out = num / den[..., None]
    return check_no_overflow(out, v, "v", "|v| well below 1.8e308 and q, k whose largest features coincide")


def attention_dense(q, k, v, q_positions, k_positions, *, causal: bool = False, base: float = 10000.0) -> np.ndarray:
    """Softmax attention written out with the dense matrices (eqs 2, 14, 16), interleaved pairs: a check for
    :func:`attention`.  Positions 1-D of length n_q and n_k; returns float64 ``(..., n_q, d_v)``; scores that
    overflow float64 are refused (:func:`attention` scales them)."""
    q, k, v, causal = _check_qkv(q, k, v, causal)
    qp = np.broadcast_to(check_positions(q_positions, q.shape[-2:-1], "q_positions", "(q.shape[-2],)"), q.shape[-2:-1])
    kp = np.broadcast_to(check_positions(k_positions, k.shape[-2:-1], "k_positions", "(k.shape[-2],)"), k.shape[-2:-1])
    d = q.shape[-1]
    with np.errstate(over="ignore", invalid="ignore"):   # inf or inf - inf: the ValueError below
        s = np.einsum("mij,...mj->...mi", rotation_matrix(qp, d, base), q) @ \
            np.swapaxes(np.einsum("nij,...nj->...ni", rotation_matrix(kp, d, base), k), -1, -2) / np.sqrt(d)
    if not np.all(np.isfinite(s)):
        raise ValueError("q, k: the scores q.k/sqrt(d) of attention_dense overflow float64; attention() scales them")
    return check_no_overflow(_attend(s, v, qp, kp, causal), v, "v", "|v| well below 1.8e308")


def linear_attention_dense(q, k, v, positions=None, *, causal: bool = False, base: float = 10000.0) -> np.ndarray:
    """Eq 19 evaluated literally in O(N^2) with dense rotation matrices: a check for :func:`linear_attention`.
    ``positions`` 1-D of length N (default ``arange(N)``); returns float64 ``(..., N, d_v)``; sums that under- or
    overflow float64 are refused (:func:`linear_attention` normalises them)."""
    q, k, v, causal = _check_qkv(q, k, v, causal, same_length=True)
    pos = np.broadcast_to(check_positions(positions, q.shape[-2:-1], "positions", "(q.shape[-2],)"), q.shape[-2:-1])
    R = rotation_matrix(pos, q.shape[-1], base)  # (N, d, d)
    fq, fk = elu_plus_one(q), elu_plus_one(k)
    mask = np.tril(np.ones(pos.shape * 2)) if causal else 1.0           # n <= m
    with np.errstate(over="ignore", invalid="ignore"):   # checked below: a ValueError, not a warning
        num_w = np.einsum("nij,...nj->...ni", R, fq) @ np.swapaxes(np.einsum("nij,...nj->...ni", R, fk), -1, -2)
        num_w, den = num_w * mask, ((fq @ np.swapaxes(fk, -1, -2)) * mask).sum(axis=-1, keepdims=True)
        if not (np.all((den > 0) & np.isfinite(den)) and np.all(np.isfinite(num_w))):
            raise ValueError("q, k: the sums of linear_attention_dense under- or overflow; linear_attention normalises")
        return check_no_overflow((num_w @ v) / den, v, "v", "|v| well below 1.8e308")
