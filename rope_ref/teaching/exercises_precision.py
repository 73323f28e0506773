"""Checker for the exercise of notebook 06 (precision): reduce the angle first, then cast.  It prints one line
and returns a bool, as :mod:`rope_ref.teaching.exercises` describes."""

from __future__ import annotations

import numbers

import numpy as np

from ..forms import frequencies, rotation_angles, wrap_angle
from .exercises import unanswered, verdict
from .precision import angle_errors


def reduced_then_cast_error(position: float = 1e6, d: int = 128, base: float = 10000.0) -> float:
    """Largest |angle error| (rad, over the pairs) when m theta_i is formed in float64, reduced to (-pi, pi]
    in float64, and only then cast to float32."""
    exact = rotation_angles(position, frequencies(d, base))
    cast = wrap_angle(exact).astype(np.float32).astype(np.float64)
    return float(np.abs(wrap_angle(cast - exact)).max())


def check_reduced_cast_error(answer, position: float = 1e6, d: int = 128, base: float = 10000.0) -> bool:
    """Exercise: the largest angle error (radians) of "reduce in float64, then cast to float32" at ``position``."""
    if unanswered(answer, hint="set answer to the largest angle error in radians and run the cell again."):
        return False
    if isinstance(answer, bool) or not isinstance(answer, numbers.Real) or not np.isfinite(answer) or answer < 0:
        return verdict(False, f"the answer is an error in radians, a finite real number >= 0, got {answer!r}")
    right = reduced_then_cast_error(position, d, base)
    naive = float(angle_errors([position], d, base, np.float32)["angle"][0])
    if abs(answer - right) <= 0.05 * right:
        return verdict(True, f"{right:.2e} rad, at most half an ulp of pi in float32 -- "
                             f"{naive / right:,.0f} times less than forming the product in float32 ({naive:.1e} rad).")
    if abs(answer - naive) <= 0.05 * naive:
        return verdict(False, f"{answer:.1e} rad is the error of the product formed in float32; reduce the float64 "
                              "angle to (-pi, pi] first, then cast.")
    if answer == 0:
        return verdict(False, "a float32 cast of an angle near pi rounds it (float32 keeps 24 bits): the error is "
                              "not 0. Compare the cast angle with the float64 one.")
    return verdict(False, f"{answer:.2e} rad is not the largest error over the 64 pairs; compare each cast angle with "
                          "its float64 value (mod 2 pi) and take the largest.")
