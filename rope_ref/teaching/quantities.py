"""Quantities the notebooks, views and figures share: seeded q and k, the RoPE score, notebook 00's toy task."""

import numpy as np

from .._validate import check_finite, check_positions_any, check_x
from ..rope_attention import softmax
from ..forms import frequencies, rotate


def random_qk(d: int, seed: int = 0, n: int | None = None):
    """Seeded standard-normal query and key vectors: shape ``(d,)`` each, or ``(n, d)``."""
    return np.random.default_rng(seed).standard_normal((2, d) if n is None else (2, n, d))


def _qk(q, k):
    """Checked finite q, k ``(..., d)`` with the same even d."""
    q, k = check_finite(check_x(q, "q"), "q"), check_finite(check_x(k, "k"), "k")
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(f"q and k must have the same feature size d, got q {q.shape}, k {k.shape}")
    return q, k


def score(q, k, m, n, *, base: float = 10000.0, pairing: str = "interleaved", inv_freq=None) -> np.ndarray:
    """q_m . k_n = <rotate(q, m), rotate(k, n)> (eq 16); ``q``, ``k`` ``(..., d)``, m, n broadcast with their
    leading axes and against each other; returns float64 of that broadcast shape."""
    q, k = _qk(q, k)
    m, n = check_positions_any(m, "m"), check_positions_any(n, "n")
    shape = np.broadcast_shapes(q.shape[:-1], k.shape[:-1], m.shape, n.shape)
    kw = dict(base=base, pairing=pairing, inv_freq=inv_freq)
    qm = rotate(np.broadcast_to(q, shape + q.shape[-1:]), np.broadcast_to(m, shape), **kw)
    kn = rotate(np.broadcast_to(k, shape + k.shape[-1:]), np.broadcast_to(n, shape), **kw)
    with np.errstate(over="ignore", invalid="ignore"):
        result = np.einsum("...d,...d->...", qm, kn)
    if not np.all(np.isfinite(result)):
        raise ValueError("q and k: the score q_m . k_n overflows float64; expected smaller q and k")
    return result


def score_vs_distance(q, k, distance, *, base: float = 10000.0, inv_freq=None) -> np.ndarray:
    """q . R_{r} k for each relative distance r = n - m (the function g of eq 11)."""
    return score(q, k, 0.0, check_positions_any(distance, "distance"), base=base, inv_freq=inv_freq)


# --- notebook 00: four ways to give attention positions, on one task ------------------------------------------------

def t5_bucket(distance, num_buckets: int = 32, max_distance: int = 128) -> np.ndarray:
    """T5's relative-position bucket for a causal distance m - n >= 0 (Raffel et al. 2020, arXiv:1910.10683;
    transformers' ``T5Attention._relative_position_bucket`` with ``bidirectional=False``): distances below
    num_buckets/2 get a bucket each, larger ones share log-spaced buckets, all beyond ``max_distance`` the last."""
    exact = num_buckets // 2
    r = np.minimum(distance, max_distance).astype(np.int64)      # all beyond max_distance share the last bucket
    log_bucket = exact + (np.log(np.maximum(r, 1) / exact) / np.log(max_distance / exact)
                          * (num_buckets - exact)).astype(np.int64)
    return np.where(r < exact, r, np.minimum(log_bucket, num_buckets - 1))


def offset_head_weights(offsets=(3, 7), train_len: int = 64, d: int = 128, height: float = 8.0,
                        window_ends=(63, 1000), alibi_slope: float = 0.5) -> dict:
    """A head whose query content ``c`` should weight the key ``offsets[c]`` back (target logit ``height``, keys
    carry no content), fitted on positions 0..train_len-1 with learned absolute positions (rank-``d`` SVD, nan beyond
    training), T5 bias (:func:`t5_bucket`, blind to the query), ALiBi (-slope * (m - n), arXiv:2108.12409) and RoPE
    (least squares on cos/sin of (m - n) theta_i).  Returns ``{scheme: (len(offsets), len(window_ends))}``: the
    softmax weight on the target key in the ``train_len`` keys ending at each of ``window_ends``."""
    r = np.arange(train_len)                                          # distances m - n in a window
    targets = [height * (r == o) for o in offsets]
    theta = frequencies(d)

    def rope_features(distances):                 # cos and sin of (m - n) theta_i: q_c^T R k is linear in them, (L, d)
        return np.concatenate([np.cos(np.outer(distances, theta)), np.sin(np.outer(distances, theta))], axis=1)

    rope = [np.linalg.lstsq(rope_features(r), t, rcond=None)[0] for t in targets]    # q_c^T R k, per content
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
            logits = {"T5 bias": t5[t5_bucket(rel)], "ALiBi": -alibi_slope * rel, "RoPE": rope_features(rel) @ rope[c]}
            if end < train_len:
                a, b = absolute[c]
                logits["learned absolute"] = a[end] @ b[keys].T
            for name, z in logits.items():
                out[name][c, j] = softmax(z)[target_key]
    return out
