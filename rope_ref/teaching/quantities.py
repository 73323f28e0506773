"""Quantities the notebooks and figures look at: scores, score maps, agreement of the forms.

Nothing here is new math: each function composes the oracle (:mod:`rope_ref.forms` and friends) so that
notebooks can call it instead of re-deriving a formula in a cell.
"""

from __future__ import annotations

import numpy as np

from .. import _validate as val
from ..rope_attention import elu_plus_one
from ..forms import (frequencies, partial_sums, rotate, rotate_complex, rotate_dense, rotate_elementwise, sinusoidal,
                    to_half, to_interleaved, wrap_angle)


#: Relative distances of Figure 2: continuous over [0, 256] in steps of 0.01 (25,601 points).
FIG2_DISTANCES = np.linspace(0.0, 256.0, 25601)
#: The y-range of the paper's Figure 2 axis.
FIG2_PAPER_YLIM = (6.0, 22.0)


def random_qk(d: int, seed: int = 0, n: int | None = None):
    """Seeded standard-normal query and key vectors: shape ``(d,)`` each, or ``(n, d)``."""
    d, seed = val.check_d(d), val.check_seed(seed)
    n = None if n is None else val.check_positive_int(n, "n")
    val.check_nbytes(2 * 8 * d * (n or 1), "d" if n is None else "n * d", what=f"two float64 {(n or 1) * d}-element draws")
    rng = np.random.default_rng(seed)
    shape = (d,) if n is None else (n, d)
    return rng.standard_normal(shape), rng.standard_normal(shape)


def _qk(q, k, one_d: bool = False):
    """Checked finite q, k ``(..., d)`` with the same even d (``one_d``: single vectors ``(d,)``)."""
    q, k = val.check_finite(val.check_x(q, "q"), "q"), val.check_finite(val.check_x(k, "k"), "k")
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(f"q and k must have the same feature size d; got q {q.shape}, k {k.shape}")
    if one_d and (q.ndim != 1 or k.ndim != 1):
        raise ValueError(f"q and k must be single vectors of shape (d,); got q {q.shape}, k {k.shape}")
    return q, k


def _shape(**shapes) -> tuple:
    """The broadcast of the named shapes, or a ValueError naming each of them."""
    try:
        return np.broadcast_shapes(*shapes.values())
    except ValueError:
        given = ", ".join(f"{name} {shape}" for name, shape in shapes.items())
        raise ValueError(f"shapes do not broadcast against each other: {given} (q, k without their last axis d)") from None


def _score_inputs(q, k, m, n):
    """Checked q, k ``(..., d)`` and positions m, n broadcast to one shape with the leading axes of q and k."""
    q, k = _qk(q, k)
    m, n = val.check_positions_any(m, "m"), val.check_positions_any(n, "n")
    shape = _shape(q=q.shape[:-1], k=k.shape[:-1], m=m.shape, n=n.shape)
    return q, k, np.broadcast_to(m, shape), np.broadcast_to(n, shape)


def _finite(result, what: str, expected: str):
    """``result``, or a ValueError when finite inputs gave inf/NaN."""
    if not np.all(np.isfinite(result)):
        raise ValueError(f"{what}: not finite in float64 (overflow); expected {expected}")
    return result


def score(q, k, m, n, *, base: float = 10000.0, pairing: str = "interleaved", inv_freq=None) -> np.ndarray:
    """q_m . k_n = <rotate(q, m), rotate(k, n)> (eq 16); ``q``, ``k`` ``(..., d)``, m, n broadcast with their
    leading axes and against each other; returns float64 of that broadcast shape."""
    q, k, m, n = _score_inputs(q, k, m, n)
    kw = dict(base=base, pairing=pairing, inv_freq=inv_freq)
    qm = rotate(np.broadcast_to(q, m.shape + q.shape[-1:]), m, **kw)
    kn = rotate(np.broadcast_to(k, n.shape + k.shape[-1:]), n, **kw)
    with np.errstate(over="ignore", invalid="ignore"):
        return _finite(np.einsum("...d,...d->...", qm, kn), "the score q_m . k_n", "smaller q and k")


def score_map(q, k, positions, *, base: float = 10000.0) -> np.ndarray:
    """RoPE scores on a grid: ``S[a, b] = q_{positions[a]} . k_{positions[b]}``, shape ``(P, P)``; q, k ``(d,)``."""
    q, k = _qk(q, k, one_d=True)
    p = _positions_1d(positions)
    return score(q, k, p[:, None], p[None, :], base=base)


def _positions_1d(positions, name: str = "positions") -> np.ndarray:
    p = val.check_positions_any(positions, name)
    if p.ndim != 1:
        raise ValueError(f"{name} must be 1-D (one position per row of the map), got shape {p.shape}")
    return p


def sinusoidal_score_map(q, k, positions, *, base: float = 10000.0) -> np.ndarray:
    """The same grid for the additive sinusoidal embedding E: ``(q + E(m)) . (k + E(n))``; q, k ``(d,)``."""
    q, k = _qk(q, k, one_d=True)
    E = sinusoidal(_positions_1d(positions), q.shape[-1], base)
    with np.errstate(over="ignore", invalid="ignore"):
        return _finite((q + E) @ (k + E).T, "the score (q + E(m)) . (k + E(n))", "smaller q and k")


def diagonal_spread(S) -> float:
    """Largest (max - min) along any diagonal of a square map: 0 when S depends only on n - m."""
    S = val.check_finite(val.check_real_array(S, "S"), "S")
    if S.ndim != 2 or S.size == 0:
        raise ValueError(f"S must be a non-empty 2-D map (P, P), got shape {S.shape}")
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
    same_vector = val.check_bool(same_vector, "same_vector")
    q, k = random_qk(d, seed, val.check_positive_int(n_samples, "n_samples"))
    if same_vector:
        k = q
    out = np.empty(r.size)
    for j, dist in enumerate(r.ravel()):
        out[j] = np.abs(np.einsum("nd,nd->n", q, rotate(k, np.full(n_samples, dist), base=base))).mean()
    return out.reshape(r.shape)


def pair_polar(x2) -> tuple[float, float]:
    """Radius and angle of a 2-vector on the complex plane (eq 23's R and Theta)."""
    x2 = val.check_finite(val.check_real_array(x2, "x2"), "x2")
    if x2.shape != (2,):
        raise ValueError(f"x2 must be one pair, shape (2,), got shape {x2.shape}")
    z = complex(float(x2[0]), float(x2[1]))
    return abs(z), float(np.angle(z))


def form_errors(positions, d: int = 128, *, seed: int = 0, base: float = 10000.0) -> dict:
    """Max |difference| per position between the plain elementwise form (eq 34) and the other forms.

    Returns ``{name: errors}``, each of ``positions``' shape, for plotting agreement.
    """
    pos, d = val.check_positions_any(positions), val.check_d(d)
    x = np.random.default_rng(val.check_seed(seed)).standard_normal(pos.shape + (d,))
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
    """(q + E(m)) . (k + E(n)) with the additive sinusoidal embedding E (Vaswani et al. 2017, section 3.5).

    Shapes as in :func:`score`."""
    q, k, m, n = _score_inputs(q, k, m, n)
    d = q.shape[-1]
    with np.errstate(over="ignore", invalid="ignore"):
        return _finite(np.einsum("...d,...d->...", q + sinusoidal(m, d, base), k + sinusoidal(n, d, base)),
                       "the score (q + E(m)) . (k + E(n))", "smaller q and k")


def clock_angles(position, d: int = 16, base: float = 10000.0) -> np.ndarray:
    """The angle of every pair's "clock hand" at ``position``: m theta_i wrapped to (-pi, pi], shape ``(d/2,)``."""
    return wrap_angle(val.check_scalar(position, "position") * frequencies(d, base))


def code_distance(m, d: int = 8, base: float = 10000.0, pairs=None) -> np.ndarray:
    """|R_m u - u| for u = (1, 0, 1, 0, ...) restricted to ``pairs`` (default: all d/2 pairs).

    How far the position code at m is from the code at 0: zero means m and 0 look the same
    (aliasing).  ``m`` any shape; returns float64 of that shape.
    """
    m, d = val.check_positions_any(m, "m"), val.check_d(d)
    idx = np.arange(d // 2) if pairs is None else _pair_indices(pairs, d)
    u = np.zeros(d)
    u[2 * idx] = 1.0
    diff = rotate(np.broadcast_to(u, m.shape + (d,)), m, base=base) - u
    return np.linalg.norm(diff, axis=-1)


def _pair_indices(pairs, d: int) -> np.ndarray:
    """Pair indices: integers in [0, d/2) (an empty list means no pair)."""
    idx = val.check_real_array(pairs, "pairs")
    if idx.size == 0:
        return np.zeros(0, dtype=int)
    if idx.dtype.kind not in "iu" or idx.ndim != 1 or idx.min() < 0 or idx.max() >= d // 2:
        raise ValueError(f"pairs must be a 1-D list of pair indices, integers in [0, d/2 = {d // 2}), "
                         f"got {idx.tolist() if idx.size < 20 else idx.shape} of dtype {idx.dtype}")
    return idx


# --- notebook 01: the radius is a choice (eqs 24-27) ------------------------------------------------------------------

def radial_scaled(x, positions, a: float, *, base: float = 10000.0) -> np.ndarray:
    """a^m R_m x: RoPE with a radius that changes with position m (``x``: ``(..., seq, d)``).

    With f_q = a^m R_m q and f_k = a^(-n) R_n k the score is a^(m-n) q . R_{n-m} k, a function
    of m - n only: eqs 11 and 22 hold, and eq 26a fixes only the product of the radii.  RoPE
    takes the constant radius (eq 27); xPos (Sun et al. 2022) takes a decaying one.
    """
    x = val.check_x(x)
    m = val.check_positions(positions, x.shape[:-1])
    a = val.check_positive_real(a, "a")
    with np.errstate(over="ignore", invalid="ignore"):
        return _finite((a ** m)[..., None] * rotate(x, m, base=base), f"a^m R_m x with a={a:g} and |m| up to "
                       f"{np.max(np.abs(m), initial=0):g}", "|m log a| well below 709 and |x| not near 1.8e308")


# --- notebook 03: Abel summation (eqs 35-37) --------------------------------------------------------------------------

def abel_terms(q, k, distance: float, *, base: float = 10000.0) -> dict:
    """Each side of eqs 35-37 for one relative distance r = m - n, as complex/real numbers.

    h_i = q_[2i:2i+1] k*_[2i:2i+1] (pairs as complex numbers), S_j = sum_{i<j} e^{i r theta_i},
    h_{d/2} = 0.  Returns ``direct`` = sum_i h_i e^{i r theta_i} (eq 35), ``abel`` =
    -sum_i S_{i+1} (h_{i+1} - h_i) (eq 36), ``triangle`` = sum_i |S_{i+1}| |h_{i+1} - h_i| and
    ``bound`` = max_i |h_{i+1} - h_i| sum_i |S_{i+1}| (eq 37).
    """
    q, k = _qk(q, k, one_d=True)
    q, k, distance = q.astype(np.float64), k.astype(np.float64), val.check_scalar(distance, "distance")
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
    q, k, pos = _self_attention_inputs(q, k, positions)
    rope, causal = val.check_bool(rope, "rope"), val.check_bool(causal, "causal")
    p = pos if rope else np.zeros_like(pos)
    with np.errstate(over="ignore", invalid="ignore"):
        s = rotate(q, p, base=base) @ np.swapaxes(rotate(k, p, base=base), -1, -2) / np.sqrt(q.shape[-1])
    _finite(s, "the scores q_m . k_n / sqrt(d)", "smaller q and k (rope_ref.attention scales them)")
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
    q, k, pos = _self_attention_inputs(q, k, positions)
    fq, fk = elu_plus_one(q), elu_plus_one(k)
    with np.errstate(over="ignore", invalid="ignore"):
        num = rotate(fq, pos, base=base) @ np.swapaxes(rotate(fk, pos, base=base), -1, -2)
        den = fq @ np.swapaxes(fk, -1, -2)
        den = den.sum(axis=-1, keepdims=True)
        if not np.all((den > 0) & np.isfinite(den)) or not np.all(np.isfinite(num)):
            raise ValueError("linear_attention_weights: the sums phi(q_m).phi(k_n) under- or overflow float64 (q, k "
                             "too large or too negative); rope_ref.linear_attention computes them normalised")
        return num / den


def _self_attention_inputs(q, k, positions):
    """q, k as float64 of one shape ``(..., N, d)`` with N >= 1, and positions ``(N,)`` (default arange(N))."""
    q, k = _qk(q, k)
    if q.ndim < 2 or q.shape != k.shape or q.shape[-2] == 0:
        raise ValueError(f"q and k must have the same shape (..., N, d) with N >= 1; got q {q.shape}, k {k.shape}")
    n = q.shape[-2]
    pos = np.arange(n, dtype=float) if positions is None else val.check_positions(positions, (n,), "positions",
                                                                                  "(q.shape[-2],)")
    return q.astype(np.float64), k.astype(np.float64), np.broadcast_to(pos, (n,))


class KVCache:
    """A decoder's key/value cache with RoPE: each key is rotated **once**, at its own position, and stored.

    ``append(k, v, position)`` rotates ``k`` (shape ``(..., d)``) at ``position`` and stores it;
    ``attend(q, position)`` rotates the new query at its position and runs softmax attention
    over every stored key (all are at or before it).  ``rotations`` counts the vectors rotated,
    so a notebook can show that no stored key is rotated again.
    """

    def __init__(self, *, base: float = 10000.0):
        self.base = val.check_base(base)
        self.keys, self.values, self.positions = [], [], []
        self.rotations = 0

    def append(self, k, v, position: float) -> None:
        k = val.check_finite(val.check_x(k, "k"), "k").astype(np.float64)
        v = val.check_finite(val.check_real_array(v, "v"), "v")
        position = val.check_scalar(position, "position")
        if v.shape[:-1] != k.shape[:-1] or v.ndim == 0:
            raise ValueError(f"v must have k's leading axes and its own last axis (..., d_v); got k {k.shape}, v {v.shape}")
        if self.keys and (k.shape != self.keys[0].shape or v.shape != self.values[0].shape):
            raise ValueError(f"k and v must have the shapes of the stored ones, k {self.keys[0].shape} and v "
                             f"{self.values[0].shape}; got k {k.shape}, v {v.shape}")
        self.keys.append(rotate(k[..., None, :], [position], base=self.base)[..., 0, :])
        self.values.append(np.array(v, dtype=np.float64))      # a copy: the caller's v may change later
        self.positions.append(position)
        self.rotations += 1

    def attend(self, q, position: float) -> np.ndarray:
        if not self.keys:
            raise ValueError("KVCache.attend: the cache is empty; append(k, v, position) a key and value first")
        q = val.check_finite(val.check_x(q, "q"), "q").astype(np.float64)
        position = val.check_scalar(position, "position")
        if q.shape != self.keys[0].shape:
            raise ValueError(f"q must have the stored keys' shape {self.keys[0].shape}, got {q.shape}")
        if position < max(self.positions):
            raise ValueError(f"position must be at or after every stored key's position (a causal decoder), "
                             f"got {position:g} < {max(self.positions):g}")
        qr = rotate(q[..., None, :], [position], base=self.base)[..., 0, :]
        self.rotations += 1
        K, V = np.stack(self.keys, axis=-2), np.stack(self.values, axis=-2)      # (..., t, d)
        with np.errstate(over="ignore", invalid="ignore"):
            s = np.einsum("...d,...td->...t", qr, K) / np.sqrt(qr.shape[-1])
        _finite(s, "the scores q . k / sqrt(d)", "smaller q and k")
        w = np.exp(s - s.max(axis=-1, keepdims=True))
        with np.errstate(over="ignore", invalid="ignore"):
            return _finite(np.einsum("...t,...td->...d", w / w.sum(axis=-1, keepdims=True), V), "the weighted sum of v",
                           "|v| well below 1.8e308")


# --- notebook 00: four ways to give attention positions, on one task ---------------------------------------------------

def t5_bucket(distance, num_buckets: int = 32, max_distance: int = 128) -> np.ndarray:
    """T5's relative-position bucket for a causal distance m - n >= 0 (Raffel et al. 2020, arXiv:1910.10683;
    transformers' ``T5Attention._relative_position_bucket`` with ``bidirectional=False``): distances below
    num_buckets/2 get a bucket each, larger ones share log-spaced buckets, all beyond ``max_distance`` the last."""
    r = np.asarray(val.check_positions_any(distance, "distance"), dtype=np.int64)
    if np.any(r < 0):
        raise ValueError(f"distance must be causal, m - n >= 0, got a minimum of {r.min()}")
    exact = num_buckets // 2
    with np.errstate(divide="ignore"):
        log_bucket = exact + (np.log(np.maximum(r, 1) / exact) / np.log(max_distance / exact)
                              * (num_buckets - exact)).astype(np.int64)
    return np.where(r < exact, r, np.minimum(log_bucket, num_buckets - 1))


def offset_head_weights(offsets=(3, 7), train_len: int = 64, d: int = 128, height: float = 8.0,
                        window_ends=(63, 1000), alibi_slope: float = 0.5) -> dict:
    """A head that should look a *content-dependent* number of tokens back, fitted with four position schemes.

    Query content ``c`` (one per entry of ``offsets``) should put its weight on the key ``offsets[c]`` back: the
    target logits are ``height`` at that distance and 0 elsewhere, for distances 0..train_len-1 (keys carry no
    content, so only positions can do it).  Each scheme is fitted by least squares on the training positions
    0..train_len-1 and then evaluated on a window of ``train_len`` keys ending at each of ``window_ends``:

    * ``learned absolute``: a table of position vectors (rank-``d`` logits A_c[m] . B[n], fitted by SVD); it has
      no row for a position >= train_len (nan there);
    * ``T5 bias``: one learned bias per distance bucket (:func:`t5_bucket`), added to the logits, the same for
      every content (the bias does not see the query);
    * ``ALiBi``: a fixed bias -slope * (m - n) (Press et al. 2021, arXiv:2108.12409): no parameters to fit;
    * ``RoPE``: a query vector per content, keys rotated: logits q_c^T R_(n-m) k, a sum of cos/sin of
      (m - n) theta_i with d coefficients per content, fitted by least squares.

    Returns ``{scheme: weights}``, weights of shape ``(len(offsets), len(window_ends))``: the softmax weight each
    query content gives its target key (1 is perfect, 1/train_len is no preference).
    """
    train_len, d = val.check_positive_int(train_len, "train_len"), val.check_d(d)
    offsets = [val.check_positive_int(o, "offsets") for o in offsets]
    if max(offsets) >= train_len:
        raise ValueError(f"offsets must be below train_len = {train_len}, got {offsets}")
    r = np.arange(train_len)                                          # distances m - n in a window
    targets = [height * (r == o) for o in offsets]
    theta = frequencies(d)
    features = np.concatenate([np.cos(np.outer(r, theta)), np.sin(np.outer(r, theta))], axis=1)   # (L, d)
    rope = [np.linalg.lstsq(features, t, rcond=None)[0] for t in targets]        # q_c^T R k, per content
    buckets = t5_bucket(r)
    mean_target = np.mean(targets, axis=0)                                       # one bias for every content
    t5 = np.array([mean_target[buckets == b].mean() if np.any(buckets == b) else 0.0 for b in range(32)])
    dist = np.subtract.outer(np.arange(train_len), np.arange(train_len))         # m - n on the training grid
    absolute = []
    for o in offsets:                                                            # rank-d fit of the target map
        u, s, vt = np.linalg.svd(np.where(dist == o, height, 0.0))
        absolute.append((u[:, :d] * s[:d], vt[:d].T))
    out = {name: np.full((len(offsets), len(window_ends)), np.nan)
           for name in ["learned absolute", "T5 bias", "ALiBi", "RoPE"]}
    for j, end in enumerate(window_ends):
        keys = np.arange(end - train_len + 1, end + 1)                           # a window of train_len keys
        rel = end - keys
        for c, o in enumerate(offsets):
            target_key = int(np.flatnonzero(rel == o)[0])
            logits = {"T5 bias": t5[t5_bucket(rel)], "ALiBi": -alibi_slope * rel,
                      "RoPE": np.concatenate([np.cos(np.outer(rel, theta)), np.sin(np.outer(rel, theta))], 1) @ rope[c]}
            if end < train_len:
                a, b = absolute[c]
                logits["learned absolute"] = a[end] @ b[keys].T
            for name, z in logits.items():
                w = np.exp(z - z.max())
                out[name][c, j] = w[target_key] / w.sum()
    return out
