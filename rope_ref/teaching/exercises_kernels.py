"""Checker for the exercise of notebook 07 (a bug hunt); it prints one line and returns a bool, as
:mod:`rope_ref.teaching.exercises` describes.  It never trusts identify (which the notebook uses to hunt): each kind of
bug is tested on ``mystery_rope`` directly against ``rope_ref.rotate``, and a wrong guess is answered with what that
test found, so the student learns what rules the guess out.
"""

from __future__ import annotations

import numpy as np

from ..forms import rotate
from . import example_kernels
from .exercises import unanswered, verdict

_X = np.random.default_rng(7).standard_normal((8, 16))      # 8 rows, d = 16: Llama's kernel rotates row r at r


def _facts(kernel) -> dict:
    """For each kind of bug, whether ``kernel`` (meant as Llama's) is right in that respect, with what shows it."""
    out, want = kernel(_X), rotate(_X)
    moved = kernel(np.eye(16)[:4])                            # rows 0..3: basis vectors e_0..e_3 at positions 0..3
    pairs_ok = bool(np.allclose(moved[:, 4:], 0) and np.allclose(moved[[0, 1, 2, 3], [2, 3, 0, 1]], 0))
    norms_ok = bool(np.allclose(np.linalg.norm(out, axis=1), np.linalg.norm(_X, axis=1)))
    shift = next((s for s in range(-4, 5) if np.allclose(out, rotate(_X, np.arange(8.0) + s), atol=1e-10)), None)
    return {
        "pairing": (pairs_ok, "feature 0 moves only into feature 1, and feature 2 only into 3: pairs (2i, 2i + 1), "
                              "Llama's"),
        "scale": (norms_ok, "every row keeps its length: nothing scales the rotated features"),
        "base": (shift is not None, "from one row to the next, pair p turns by exactly theta_p = 10000^(-2p/d) "
                                    "(the frequencies in the left panel lie on the expected line)"),
        "direction": (shift is not None, "it turns the same way as Llama's kernel: the phase error does not grow "
                                         "with the row"),
        "precision": (shift is not None, "the angles agree with float64 to 1e-10 once the rows are shifted: no "
                                         "rounding noise"),
        "offset": (shift == 0, "row r is rotated as position r" if shift == 0 else
                   f"row 0 is rotated as position {shift}, every row {shift} position{'s' * (shift != 1)} too far: "
                   "the flat lines at theta_p x 1 in the right panel"),
    }


#: The kinds of bug the answer names, as notebook 07's exercise lists them.
BUG_KINDS = ("pairing", "base", "offset", "direction", "scale", "precision")


def check_planted_bug(answer) -> bool:
    """``answer``: the kind of bug ``mystery_rope`` has, one of :data:`BUG_KINDS` (a string)."""
    if unanswered(answer, hint=f"set answer to the kind of bug, one of {', '.join(BUG_KINDS)}"):
        return False
    if not isinstance(answer, str) or answer.strip().lower() not in BUG_KINDS:
        return verdict(False, f"answer should be one of the strings {', '.join(map(repr, BUG_KINDS))}, got {answer!r}")
    kind = answer.strip().lower()
    facts = _facts(example_kernels.mystery_rope)
    ok, evidence = facts[kind]
    if not ok:
        return verdict(True, f"{kind}: {evidence}. identify's note says the same; the fix is to count positions from 0")
    return verdict(False, f"not the {kind}: {evidence}. Look again at the phase-error panel: what is flat, what is "
                          "not?")

