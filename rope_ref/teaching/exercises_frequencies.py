"""Checkers for the exercises of notebook 08 (what RoPE's frequencies are for).

Each checker prints one line -- "Not answered yet ...", "Correct: ..." or "Not yet: <why>" -- and returns
True or False; an unanswered exercise (``None``) is not an error, so Run All works.
"""

from __future__ import annotations

import numbers

from .exercises import unanswered, verdict
from .frequencies import supported_context


def check_supported_context(answer, base: float = 500000.0, d: int = 128) -> bool:
    """Exercise: the longest context L that base ``base`` supports by Men et al.'s criterion
    (B_{m,theta} >= 0 for every integer distance 0 <= m <= L), for head dimension ``d``."""
    if unanswered(answer, hint="set answer to an integer and run the cell again."):
        return False
    if isinstance(answer, bool) or not isinstance(answer, numbers.Integral):
        return verdict(False, f"the answer is a whole number of positions (an int), got {answer!r}")
    right = supported_context(base, d)
    answer = int(answer)
    if answer == right:
        return verdict(True, f"B_m >= 0 for every m up to {right:,}; at m = {right + 1:,} it is negative.")
    if answer == right + 1:
        return verdict(False, f"{answer:,} is the first distance where B_m < 0; the supported length ends one before.")
    if answer > right:
        return verdict(False, f"B_m is already negative at m = {right + 1:,}, before {answer:,}: scan from m = 0 "
                              "and stop at the first negative value.")
    return verdict(False, f"B_m is still >= 0 at every m up to {answer + 1:,}: the first negative value comes later.")
