"""The exercise of notebook 11: which of three RoPE kernels for SmolLM2 (base 10^5, interleaved) has a planted bug?

The checker prints one line and returns a bool, as in :mod:`~rope_ref.teaching.exercises`.  It finds the buggy kernel
without the model: by eq 11, a right RoPE gives scores (R_m q) . (R_n k) equal to rope_ref's at every (m, n).
"""

from __future__ import annotations

import functools

import numpy as np

from ..forms import rotate
from .exercises import unanswered, verdict

BASE = 100000.0


def _rope_at(x, positions, *, offset: float = 0.0, table_length: int | None = None):
    """RoPE at positions + offset, modulo ``table_length`` if given (a cos/sin table that short, read with wrap-around)."""
    shifted = np.asarray(positions, dtype=np.float64) + offset
    return rotate(x, shifted if table_length is None else shifted % table_length, base=BASE)


MYSTERY_ROPES = {"A": functools.partial(_rope_at, offset=1000.0),
                 "B": functools.partial(_rope_at, table_length=32),
                 "C": functools.partial(rotate, base=BASE, pairing="interleaved")}


def _keeps_scores(rope, seq: int = 80, d: int = 64) -> bool:
    """True when rope's scores (R_m q) . (R_n k) equal rope_ref's for random q, k at positions 0..seq-1."""
    q, k = np.random.default_rng(11).standard_normal((2, 1, seq, d))
    positions = np.arange(seq, dtype=np.float64)
    scores = rope(q, positions)[0] @ rope(k, positions)[0].T
    return bool(np.allclose(scores, rotate(q, positions, base=BASE)[0] @ rotate(k, positions, base=BASE)[0].T,
                            atol=1e-8))


def check_mystery_rope(answer) -> bool:
    """``answer``: the letter ("A", "B" or "C") of the kernel in :data:`MYSTERY_ROPES` with the planted bug."""
    if unanswered(answer, hint='set answer to the letter ("A", "B" or "C") of the kernel with the bug'):
        return False
    if not isinstance(answer, str) or answer.strip().upper() not in MYSTERY_ROPES:
        return verdict(False, f'answer should be one of the letters "A", "B", "C", got {answer!r}')
    letter = answer.strip().upper()
    buggy = [name for name, rope in MYSTERY_ROPES.items() if not _keeps_scores(rope)]
    if letter in buggy:
        return verdict(True, f"kernel {letter} wraps its positions modulo 32 (a cos/sin table built for 32 positions): "
                             "every prompt shorter than 33 tokens is exact, a longer one loses where its tokens are")
    if letter == "A":
        return verdict(False, "kernel A adds 1000 to every position; by eq 11 that changes no score q_m . k_n, "
                              "so the model does not notice: compare the copy accuracies")
    return verdict(False, f"kernel {letter} is rope_ref's own rotate with the model's base; look at the copy "
                          "accuracy of each kernel, or at the previous-token head after position 32")
