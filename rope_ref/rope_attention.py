"""Attention with RoPE on queries and keys (values untouched): softmax (eqs 2, 16) and linear (eq 19), fast and
stable, and the same equations written out with the dense matrices of eq 14 (``*_dense``) to check them."""

from __future__ import annotations

import numpy as np

from . import _fast
from ._boundary import cast_back
from ._validate import (check_bool, check_finite, check_nbytes, check_no_overflow, check_number, check_pairing,
                        check_positions, check_real_array, check_x, suggest_keywords)
from .forms import frequencies, rotate, rotation_matrix


def _check_qkv(q, k, v, causal, self_attention: str = "", scores: bool = True):
    """q, k, v and ``causal`` checked; ``self_attention`` names a function that needs q and k of the same length;
    ``scores``: the float64 scores ``(..., n_q, n_k)`` must fit the size limit (:func:`rope_ref.size_limit`)."""
    q, k, v = check_x(q, "q"), check_x(k, "k"), check_real_array(v, "v")
    if q.ndim < 2 or k.ndim < 2 or v.ndim < 2:
        raise ValueError(f"q, k, v must have shape (..., seq, d); got q {q.shape}, k {k.shape}, v {v.shape}")
    expected = {"q, k, v must share leading (batch/head) axes": q.shape[:-2] == k.shape[:-2] == v.shape[:-2],
                "q and k must have the same feature size d": q.shape[-1] == k.shape[-1],
                "k and v must have the same number of positions": k.shape[-2] == v.shape[-2],
                "k must have at least one position (softmax over zero keys is undefined)": k.shape[-2] > 0,
                f"{self_attention} is self-attention: q and k need the same length":
                    not self_attention or q.shape[-2] == k.shape[-2]}
    unmet = [words for words, met in expected.items() if not met]
    if unmet:
        raise ValueError(f"{unmet[0]}; got q {q.shape}, k {k.shape}, v {v.shape}")
    for a, name in ((q, "q"), (k, "k"), (v, "v")):
        check_finite(a, name)
    if scores:
        n = int(np.prod(q.shape[:-1], dtype=object)) * k.shape[-2]
        check_nbytes(n * 8, "q, k", what=f"the float64 scores {q.shape[:-1] + k.shape[-2:-1]}")
    return q, k, v, check_bool(causal, "causal")


def _causal_mask(qp: np.ndarray, kp: np.ndarray) -> np.ndarray:
    """``(..., n_q, n_k)``: key n is visible from query m iff its position is <= the query's; each query needs one."""
    visible = kp[..., None, :] <= qp[..., :, None]
    if not np.all(visible.any(axis=-1)):
        raise ValueError("causal attention: some query has no key at or before its position "
                         "(check q_positions against k_positions)")
    return visible


def _pow2_scale(a: np.ndarray) -> float:
    """The power of two bringing max|a| into [1, 2) (0.5 for a = 0): dividing by it is exact, and it is finite
    for every float64 (2^1023 at most)."""
    return float(np.ldexp(1.0, np.frexp(np.max(np.abs(a), initial=0.0))[1] - 1))


@suggest_keywords
def attention(q, k, v, *, q_positions=None, k_positions=None, causal: bool = False,
              base: float = 10000.0, pairing: str = "interleaved") -> np.ndarray:
    """Scaled dot-product softmax attention (eqs 2, 16) with RoPE applied to q and k only.

    ``q``: ``(..., n_q, d)``; ``k``: ``(..., n_k, d)``, n_k >= 1; ``v``: ``(..., n_k, d_v)``, leading axes agreeing.
    ``q_positions`` / ``k_positions`` broadcast to ``q.shape[:-1]`` / ``k.shape[:-1]`` (default ``arange``);
    ``causal``: a query attends the keys whose *position* is <= its own.  Returns float64 ``(..., n_q, d_v)``
    (float32 if all inputs are float32 or narrower).  Stable: weights softmax(u s_q s_k / sqrt(d)) of scores
    u = (q/s_q)(k/s_k)^T, s_q and s_k powers of two, so huge q, k tend to the argmax instead of inf - inf.
    """
    q, k, v, causal = _check_qkv(q, k, v, causal)
    qp = check_positions(q_positions, q.shape[:-1], "q_positions", "q.shape[:-1]")
    kp = check_positions(k_positions, k.shape[:-1], "k_positions", "k.shape[:-1]")
    freqs, pairing = frequencies(q.shape[-1], base), check_pairing(pairing)
    qr = _fast.rotate(q, qp, freqs, pairing, q.shape[-1], name="q").astype(np.float64)
    kr = _fast.rotate(k, kp, freqs, pairing, k.shape[-1], name="k").astype(np.float64)
    sq, sk = _pow2_scale(qr), _pow2_scale(kr)
    u = (qr / sq) @ np.swapaxes(kr / sk, -1, -2)       # (..., n_q, n_k), |u| <= 4d: cannot overflow
    if causal:
        u = np.where(_causal_mask(np.broadcast_to(qp, q.shape[:-1]), np.broadcast_to(kp, k.shape[:-1])), u, -np.inf)
    with np.errstate(over="ignore"):                   # s_q s_k / sqrt(d) may overflow to inf: softmax takes it
        weights = softmax(u, scale=sq / np.sqrt(q.shape[-1]) * sk)
    out = weights @ v.astype(np.float64)
    narrow = max(a.dtype.itemsize for a in (q, k, v)) <= 4
    return cast_back(out, v.astype(np.float32 if narrow else np.float64, copy=False), "v",
                     "|v| below the output dtype's largest value")


@suggest_keywords
def softmax(scores, axis: int = -1, *, scale: float = 1.0) -> np.ndarray:
    """exp(c (s_i - max s)) / sum_j exp(c (s_j - max s)) along ``axis``: softmax(c s) (eq 2's normalisation), float64.

    ``scores``: any shape, finite or -inf (weight 0), one finite score per row.  ``scale`` c >= 0 multiplies the gaps
    to the row's maximum, so c s is never formed (c = inf: the argmax; c = 0: the mean over the unmasked).
    """
    s = check_real_array(scores, "scores").astype(np.float64)
    if np.any(np.isnan(s) | (s == np.inf)):
        raise ValueError("scores must be finite or -inf (a masked score), got NaN or +inf")
    scale = check_number(scale, "scale", "a non-negative number (inf allowed)", lambda v: v >= 0, real=True)
    top = s.max(axis=axis, keepdims=True)
    if not np.all(np.isfinite(top)):
        raise ValueError(f"scores: every row along axis {axis} needs at least one finite score, got a row of -inf")
    gaps = s - top                                       # <= 0; -inf where masked
    with np.errstate(over="ignore", invalid="ignore"):   # 0 * inf and -inf * 0 are replaced below
        scaled = gaps * scale                            # a gap times a huge scale: -inf, weight 0 (the limit)
    w = np.exp(np.where(gaps == 0, 0.0, np.where(np.isneginf(gaps), -np.inf, scaled)))
    return w / w.sum(axis=axis, keepdims=True)


@suggest_keywords
def elu_plus_one(x) -> np.ndarray:
    """phi(x) = elu(x) + 1 (Katharopoulos et al. 2020), the positive feature map used with eq 19: a new array of
    x's shape (integers become float64); below x = -745 it underflows to 0 (:func:`linear_attention` uses log phi)."""
    x = check_real_array(x, "x")
    x = x.astype(np.float64) if x.dtype.kind in "iu" else x
    return np.where(x > 0, x + 1, np.exp(np.minimum(x, 0)))


def _causal_sums_per_prefix(rq, fq, lk, pos, v, base):
    """Eq 19's causal sums with prefix m's keys divided by their own largest phi (a running maximum), so no
    prefix underflows because a later key is far larger: sum_{n<=m} e^{c_n - C_m} phi~(k_n), C_m = max_{n<=m} c_n,
    accumulated in sequence order (the factor e^{-C_m} cancels in num/den)."""
    c = lk.max(axis=-1)                                          # (..., N): log of each key's largest phi
    C = np.maximum.accumulate(c, axis=-1)
    fk = np.exp(lk - c[..., None])                               # each row's largest entry is 1
    rk = rotate(fk, pos, base=base)
    lead, n_pos = rq.shape[:-2], rq.shape[-2]
    S, z = np.zeros(lead + (rq.shape[-1], v.shape[-1])), np.zeros(lead + (rq.shape[-1],))
    num, den = np.empty(lead + (n_pos, v.shape[-1])), np.empty(lead + (n_pos,))
    for m in range(n_pos):
        decay = np.exp(C[..., m - 1] - C[..., m]) if m else np.ones(lead)      # rescale the prefix to C_m
        w = np.exp(c[..., m] - C[..., m])
        S = S * decay[..., None, None] + (w[..., None] * rk[..., m, :])[..., :, None] * v[..., m, None, :]
        z = z * decay[..., None] + w[..., None] * fk[..., m, :]
        num[..., m, :] = np.einsum("...d,...de->...e", rq[..., m, :], S)
        den[..., m] = np.einsum("...d,...d->...", fq[..., m, :], z)
    return num, den


def _log_phi(x: np.ndarray) -> np.ndarray:
    """log(elu(x) + 1): x for x <= 0, log(1 + x) for x > 0 -- finite where phi itself under- or overflows."""
    return np.where(x > 0, np.log1p(np.maximum(x, 0.0)), x)


@suggest_keywords
def linear_attention(q, k, v, *, positions=None, causal: bool = False, base: float = 10000.0) -> np.ndarray:
    """Linear attention with RoPE, eq 19, phi = elu + 1: numerator sum_n (R_m phi(q_m))^T (R_n phi(k_n)) v_n over
    the *unrotated* denominator sum_n phi(q_m)^T phi(k_n), in O(N d d_v) by associativity; ``causal``: n <= m.

    ``q``, ``k``: ``(..., N, d)``; ``v``: ``(..., N, d_v)``; ``positions`` broadcast to ``q.shape[:-1]`` (default
    ``arange(N)``).  Returns float64 ``(..., N, d_v)``.  Stable: phi(q) and phi(k) are divided by their largest
    entries (from log phi), which cancel in the ratio; a causal prefix far below a later key by its own largest.
    """
    q, k, v, causal = _check_qkv(q, k, v, causal, self_attention="linear_attention", scores=False)
    pos = check_positions(positions, q.shape[:-1], "positions", "q.shape[:-1]")
    n = int(np.prod(k.shape, dtype=object)) * v.shape[-1]
    check_nbytes(n * 8, "k, v", what=f"the float64 outer products {k.shape + v.shape[-1:]}")
    lq, lk = _log_phi(q.astype(np.float64)), _log_phi(k.astype(np.float64))
    fq = np.exp(lq - lq.max(axis=-1, keepdims=True))             # phi(q_m) / max_j phi(q_m)_j
    fk = np.exp(lk - lk.max(axis=(-2, -1), keepdims=True))       # phi(k_n) / max_{n,j} phi(k_n)_j
    rq, rk = rotate(fq, pos, base=base), rotate(fk, pos, base=base)
    v = v.astype(np.float64)
    with np.errstate(over="ignore", invalid="ignore"):   # |v| near 1.8e308 overflows: a ValueError below
        kv = rk[..., :, None] * v[..., None, :]  # (..., N, d, d_v): one outer product per key
        kv_sums = np.cumsum(kv, axis=-3) if causal else kv.sum(axis=-3, keepdims=True)     # over n <= m, or all n
        k_sums = np.cumsum(fk, axis=-2) if causal else fk.sum(axis=-2, keepdims=True)
        num = np.einsum("...nd,...nde->...ne", rq, kv_sums)
        den = np.einsum("...nd,...nd->...n", fq, k_sums)
        # Denominators below 1e-290 have lost digits (a prefix's keys all far below the largest key): per prefix.
        if causal and not np.all(den > 1e-290):
            num, den = _causal_sums_per_prefix(rq, fq, lk, pos, v, base)
        if not np.all(den > 0):
            raise ValueError("linear_attention: a denominator sum_n phi(q_m).phi(k_n) underflows float64 even "
                             "normalised per prefix: the large features of phi(q_m) meet only features of phi(k_n) "
                             "~745 or more smaller in log(elu + 1); rescale q or k")
        out = num / den[..., None]
    return check_no_overflow(out, v, "v", "|v| well below 1.8e308")


@suggest_keywords
def attention_dense(q, k, v, q_positions, k_positions, *, causal: bool = False, base: float = 10000.0) -> np.ndarray:
    """Softmax attention written out with the dense matrices (eqs 2, 14, 16), interleaved pairs: a check for
    :func:`attention`.  Positions 1-D of length n_q and n_k; returns float64 ``(..., n_q, d_v)``."""
    q, k, v, causal = _check_qkv(q, k, v, causal)
    qp = np.broadcast_to(check_positions(q_positions, q.shape[-2:-1], "q_positions", "(q.shape[-2],)"), q.shape[-2:-1])
    kp = np.broadcast_to(check_positions(k_positions, k.shape[-2:-1], "k_positions", "(k.shape[-2],)"), k.shape[-2:-1])
    d = q.shape[-1]
    with np.errstate(over="ignore", invalid="ignore"):   # inf or inf - inf: the ValueError below
        qr = np.einsum("mij,...mj->...mi", rotation_matrix(qp, d, base), q)
        kr = np.einsum("nij,...nj->...ni", rotation_matrix(kp, d, base), k)
        s = qr @ np.swapaxes(kr, -1, -2) / np.sqrt(d)
        if not np.all(np.isfinite(s)):
            raise ValueError("attention_dense: scores q.k/sqrt(d) overflow float64 (q and k too large); "
                             "attention() computes them scaled")
        if causal:
            s = np.where(_causal_mask(qp, kp), s, -np.inf)
        out = softmax(s) @ v
    return check_no_overflow(out, v, "v", "|v| well below 1.8e308")


@suggest_keywords
def linear_attention_dense(q, k, v, positions=None, *, causal: bool = False, base: float = 10000.0) -> np.ndarray:
    """Eq 19 evaluated literally in O(N^2) with dense rotation matrices: a check for :func:`linear_attention`.
    ``positions`` 1-D of length N (default ``arange(N)``); returns float64 ``(..., N, d_v)``."""
    q, k, v, causal = _check_qkv(q, k, v, causal, self_attention="linear_attention_dense")
    n_pos = q.shape[-2]
    pos = np.broadcast_to(check_positions(positions, (n_pos,), "positions", "(q.shape[-2],)"), (n_pos,))
    R = rotation_matrix(pos, q.shape[-1], base)  # (N, d, d)
    fq, fk = elu_plus_one(q), elu_plus_one(k)
    with np.errstate(over="ignore", invalid="ignore"):   # checked below: a ValueError, not a warning
        rq = np.einsum("nij,...nj->...ni", R, fq)
        rk = np.einsum("nij,...nj->...ni", R, fk)
        num_w = rq @ np.swapaxes(rk, -1, -2)  # (..., N, N)
        den_w = fq @ np.swapaxes(fk, -1, -2)
        if causal:
            num_w, den_w = np.tril(num_w), np.tril(den_w)         # n <= m
        den = den_w.sum(axis=-1, keepdims=True)
        if not (np.all((den > 0) & np.isfinite(den)) and np.all(np.isfinite(num_w))):
            raise ValueError("linear_attention_dense: the denominator sum_n phi(q_m).phi(k_n) or the numerator "
                             "(R_m phi(q_m)).(R_n phi(k_n)) under- or overflows float64 (q or k too large or far "
                             "apart); linear_attention() computes them normalised")
        out = (num_w @ v) / den
    return check_no_overflow(out, v, "v", "|v| well below 1.8e308")
