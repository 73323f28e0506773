"""Checker for the exercise of notebook 07 (checking a kernel); it prints one line and returns a bool, as
:mod:`rope_ref.teaching.exercises` describes.  It derives the right answer itself, by comparing the kernel's output
with ``rope_ref.rotate`` at candidate positions (not with identify, which the notebook uses to find it).
"""

from __future__ import annotations

import numbers

import numpy as np

from ..forms import rotate
from . import example_kernels
from .exercises import unanswered, verdict


def _rotates_row0_to(kernel, position, d=16, seq=8) -> bool:
    """True when kernel(x) is Llama-style (interleaved, base 10^4) RoPE with row r at position + r."""
    x = np.random.default_rng(7).standard_normal((seq, d))
    return bool(np.allclose(kernel(x), rotate(x, np.arange(seq) + float(position)), atol=1e-10))


def check_planted_bug(answer) -> bool:
    """``answer``: the position ``buggy_rope`` rotates its row 0 to (an integer)."""
    if unanswered(answer, hint="set answer to the position buggy_rope rotates its first row to"):
        return False
    if isinstance(answer, bool) or not isinstance(answer, (numbers.Real, np.integer, np.floating)):
        return verdict(False, f"answer should be a number (a position), got {answer!r}")
    if not np.isfinite(answer):
        return verdict(False, f"answer should be a finite position, got {float(answer)!r}")
    if _rotates_row0_to(example_kernels.buggy_rope, answer):
        return verdict(True, f"buggy_rope rotates row 0 as position {answer:g}, so every position is one too high; "
                             "Llama's kernel starts at 0")
    if _rotates_row0_to(example_kernels.llama_style_rope, answer):
        return verdict(False, f"position {answer:g} is where Llama's kernel starts; read the flat lines in the phase-"
                              "error plot: each pair is off by theta_p times the shift")
    return verdict(False, f"buggy_rope does not rotate row 0 as position {answer:g}")
