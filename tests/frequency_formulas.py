"""RoFormer's frequencies and Men et al.'s B_m written out in plain NumPy, for the tests of notebooks 06, 08 and 10
(one copy; independent of rope_ref)."""

import numpy as np


def thetas(d, base=10000.0):
    """theta_i = base^(-2i/d), i = 0 .. d/2 - 1 (RoFormer eq 15)."""
    return base ** (-np.arange(0, d, 2) / d)


def first_negative_B(base, d=128, limit=200_000):
    """Men et al.'s B_m = sum_i cos(m theta_i): the first m < ``limit`` with B_m < 0 (None if none), brute force."""
    m = np.arange(limit, dtype=float)
    B = np.cos(m[:, None] * thetas(d, base)[None, :]).sum(axis=1)
    neg = np.flatnonzero(B < 0)
    return int(neg[0]) if len(neg) else None
