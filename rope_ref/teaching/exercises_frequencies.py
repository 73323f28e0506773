"""Checkers for the exercises of notebooks 08 (what RoPE's frequencies are for) and 10 (the papers' numbers);
each prints one line and returns a bool, as :mod:`rope_ref.teaching.exercises` describes."""

from __future__ import annotations

import numbers

import numpy as np

from ..forms import frequencies
from .exercises import unanswered, verdict
from .base_bound import supported_context


def _whole_answer(answer, what: str, lowest: int, why: str):
    """``answer`` as an int if it is a whole number >= ``lowest``; otherwise prints "Not answered yet" (None) or
    why not (``what`` it should be; ``why``, when below ``lowest``), and returns None."""
    if unanswered(answer, hint="set answer to an integer and run the cell again."):
        return None
    if isinstance(answer, bool) or not isinstance(answer, numbers.Integral):
        verdict(False, f"the answer is {what} (an int), got {answer!r}")
    elif answer < lowest:
        verdict(False, f"{why}: got {answer!r}")
    else:
        return int(answer)
    return None


def check_supported_context(answer, base: float = 500000.0, d: int = 128) -> bool:
    """Exercise: the longest context L that base ``base`` supports by Men et al.'s criterion
    (B_{m,theta} >= 0 for every integer distance 0 <= m <= L), for head dimension ``d``."""
    answer = _whole_answer(answer, "a whole number of positions", 0,
                           "a context length is a number of positions, 0 or more")
    if answer is None:
        return False
    right = supported_context(base, d)
    if answer == right:
        return verdict(True, f"B_m >= 0 for every m up to {right:,}; at m = {right + 1:,} it is negative.")
    if answer == right + 1:
        return verdict(False, f"{answer:,} is the first distance where B_m < 0; the supported length ends one before.")
    if answer > right:
        return verdict(False, f"B_m is already negative at m = {right + 1:,}, before {answer:,}: scan from m = 0 "
                              "and stop at the first negative value.")
    return verdict(False, f"B_m is still >= 0 at every m up to {answer + 1:,}: the first negative value comes later.")


def diagonal_head_weight(norm_sq: float, pair: int, n_keys: int = 48, d: int = 64) -> float:
    """alpha_{i,i} of Barbero et al.'s diagonal head (Theorem 5.3, arXiv:2410.06205): every one of ``n_keys`` tokens
    is psi on ``pair`` (frequency g), |psi|^2 = ``norm_sq``, so alpha_{i,i} = 1 / sum_r exp(|psi|^2 (cos(r g) - 1))."""
    g = frequencies(d)[pair]
    return float(1.0 / np.exp(norm_sq * (np.cos(np.arange(n_keys) * g) - 1.0)).sum())


def smallest_diagonal_norm(target: float = 0.9, pair: int = 8, n_keys: int = 48, d: int = 64) -> int:
    """The smallest integer |psi|^2 >= 1 for which Theorem 5.3's diagonal head (:func:`diagonal_head_weight`) on
    ``pair`` puts at least ``target`` on the query's own token.  alpha_{i,i} = 1 / (1 + sum_{r != 0}
    exp(|psi|^2 (cos(r g) - 1))) rises with |psi|^2 (every term falls), so a bisection finds it."""
    if isinstance(target, bool) or not isinstance(target, numbers.Real) or not 0 < target < 1:
        raise ValueError(f"target must be a weight in (0, 1), got {target!r}")
    if isinstance(pair, bool) or not isinstance(pair, numbers.Integral) or not 0 <= pair < d // 2:
        raise ValueError(f"pair must be an integer in 0..d/2-1 = 0..{d // 2 - 1}, got {pair!r}")
    lo, hi = 0, 1
    while diagonal_head_weight(float(hi), pair, n_keys, d) < target:
        lo, hi = hi, 2 * hi
        if hi > 1 << 40:
            raise ValueError(f"pair {pair} turns too slowly: no |psi|^2 up to 2**40 reaches {target}")
    while hi - lo > 1:                                     # weight(lo) < target <= weight(hi)
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if diagonal_head_weight(float(mid), pair, n_keys, d) >= target else (mid, hi)
    return hi


def check_diagonal_norm(answer, target: float = 0.9, pair: int = 8) -> bool:
    """Exercise (notebook 10): the smallest integer |psi|^2 at which the diagonal head of Theorem 5.3, built on
    ``pair`` (48 tokens, d = 64), puts at least ``target`` of the last token's attention on itself."""
    answer = _whole_answer(answer, "a whole number", 1, "|psi|^2 is a squared norm, and the search starts at 1")
    if answer is None:
        return False
    right = smallest_diagonal_norm(target, pair)
    if answer == right:
        return verdict(True, f"|psi|^2 = {right:,} gives {diagonal_head_weight(float(right), pair):.5f} >= {target}; "
                             f"{right - 1:,} gives {diagonal_head_weight(float(right - 1), pair):.5f}.")
    if answer < right:
        return verdict(False, f"at |psi|^2 = {answer:,} the weight is {diagonal_head_weight(float(answer), pair):.5f}, "
                              f"below {target}: it must be larger.")
    return verdict(False, f"|psi|^2 = {answer:,} reaches {target}, but so does a smaller value: find the first one.")
