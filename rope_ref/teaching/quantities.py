"""Quantities the notebooks, views and figures share: seeded q and k, the RoPE score."""

import numpy as np

from .._validate import check_d, check_finite, check_positions_any, check_positive_int, check_seed, check_x
from ..forms import rotate


def random_qk(d: int, seed: int = 0, n: int | None = None):
    """Seeded standard-normal query and key vectors: shape ``(d,)`` each, or ``(n, d)``."""
    shape = (check_d(d),) if n is None else (check_positive_int(n, "n"), check_d(d))
    return np.random.default_rng(check_seed(seed)).standard_normal((2, *shape))


def _qk(q, k, one_d: bool = False):
    """Checked finite q, k ``(..., d)`` with the same even d (``one_d``: single vectors ``(d,)``)."""
    q, k = check_finite(check_x(q, "q"), "q"), check_finite(check_x(k, "k"), "k")
    if q.shape[-1] != k.shape[-1] or one_d and (q.ndim != 1 or k.ndim != 1):
        raise ValueError(f"q and k must be {'single vectors' if one_d else 'of shapes (..., d)'} with the same feature "
                         f"size d, got q {q.shape}, k {k.shape}")
    return q, k


def score(q, k, m, n, *, base: float = 10000.0) -> np.ndarray:
    """q_m . k_n = <rotate(q, m), rotate(k, n)> (eq 16; at m = 0, g(n) of eq 11); ``q``, ``k`` ``(..., d)``, m, n
    broadcast with their leading axes and against each other; returns float64 of that broadcast shape."""
    q, k = _qk(q, k)
    m, n = check_positions_any(m, "m"), check_positions_any(n, "n")
    try:
        shape = np.broadcast_shapes(q.shape[:-1], k.shape[:-1], m.shape, n.shape)
    except ValueError:
        raise ValueError(f"q, k (without d), m and n must broadcast, got shapes {q.shape}, {k.shape}, {m.shape}, "
                         f"{n.shape}") from None
    qm = rotate(np.broadcast_to(q, shape + q.shape[-1:]), np.broadcast_to(m, shape), base=base)
    kn = rotate(np.broadcast_to(k, shape + k.shape[-1:]), np.broadcast_to(n, shape), base=base)
    with np.errstate(over="ignore", invalid="ignore"):
        result = np.einsum("...d,...d->...", qm, kn)
    if not np.all(np.isfinite(result)):
        raise ValueError("q and k: the score q_m . k_n overflows float64; expected smaller q and k")
    return result

