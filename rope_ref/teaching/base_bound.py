"""Men et al., "Base of RoPE Bounds Context Length" (arXiv:2405.14591), recomputed: the base a context length needs
(notebooks 08 and 10).

A query should score a key like itself higher than a random key: for i.i.d. q, k that margin is
2 sigma^2 B_{m,theta}, B_{m,theta} = sum_i cos(m theta_i) (Theorem 1, eq 9), and a base supports L when
B_{m,theta} >= 0 for every distance m <= L (eq 10).  ``d`` is the head dimension."""

import numpy as np

from .._validate import check_freqs, check_positive_int
from ..forms import frequencies


def supported_context(base: float, d: int = 128, limit: int = 1 << 22, inv_freq=None) -> int:
    """Men et al.'s L_theta = sup{L | B_{m,theta} >= 0 for all integer m in 0..L} (eq 10), capped at ``limit``;
    B_m = sum_i cos(m theta_i) with theta_i of ``base`` and ``d``, or ``inv_freq`` when given."""
    inv_freq = frequencies(d, base) if inv_freq is None else check_freqs(inv_freq, "inv_freq")
    limit = check_positive_int(limit, "limit")
    for start in range(0, limit + 1, 4096):
        m = np.arange(start, min(start + 4096, limit + 1), dtype=float)
        negative = np.cos(np.multiply.outer(m, inv_freq)).sum(axis=1) < 0
        if negative.any():
            return int(m[np.argmax(negative)]) - 1
    return limit

