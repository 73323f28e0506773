"""Checkers for the exercises of notebooks 06-11 (the extensions), each one line and a bool, as
:mod:`rope_ref.teaching.exercises` describes.
"""

import bisect
import functools
import hashlib
import numbers

import numpy as np

from ..forms import frequencies, rotate, rotation_angles, wrap_angle
from ..multiaxis import mrope_position_ids
from . import example_kernels
from .base_bound import supported_context
from .exercises import judge, unanswered, verdict
from .precision import angle_errors
from .quantities import random_qk
from .vision_rope import _axial_score


def _is_integer(value) -> bool:
    return not isinstance(value, (bool, np.bool_)) and isinstance(value, numbers.Integral)


def _choice(answer, choices, name: str, hint: str, fold=str.lower):
    """``answer`` folded (stripped, ``fold``) if it is one of ``choices``; else None after the line saying why not."""
    if unanswered(answer, hint=hint):
        return None
    if isinstance(answer, str) and fold(answer.strip()) in choices:
        return fold(answer.strip())
    verdict(False, f"answer should be one of the {name} {', '.join(map(repr, choices))}, got {answer!r}")
    return None


def reduced_then_cast_error(position: float = 1e6, d: int = 128, base: float = 10000.0) -> float:
    """Largest |angle error| (rad) over the pairs when m theta_i is reduced to (-pi, pi] in float64, then cast."""
    exact = rotation_angles(position, frequencies(d, base))
    cast = wrap_angle(exact).astype(np.float32).astype(np.float64)
    return float(np.abs(wrap_angle(cast - exact)).max())


def check_reduced_cast_error(answer, position: float = 1e6, d: int = 128, base: float = 10000.0) -> bool:
    """Notebook 06: the largest angle error (radians) of "reduce in float64, then cast to float32"."""
    if unanswered(answer, hint="set answer to the largest angle error in radians and run the cell again."):
        return False
    if isinstance(answer, bool) or not isinstance(answer, numbers.Real) or not np.isfinite(answer) or answer < 0:
        return verdict(False, f"the answer is an error in radians, a finite real number >= 0, got {answer!r}")
    right = reduced_then_cast_error(position, d, base)
    naive = float(angle_errors([position], d, base, np.float32)["angle"][0])
    mistakes = [(naive, f"{answer:.1e} rad is the error of the product formed in float32; reduce the float64 angle to "
                        "(-pi, pi] first, then cast."),
                (0.0, "a float32 cast of an angle near pi rounds it (float32 keeps 24 bits): the error is not 0. "
                      "Compare the cast angle with the float64 one.")]
    return judge(lambda error: abs(answer - error) <= 0.05 * error, right, f"{right:.2e} rad, at most half an ulp of "
                 f"pi in float32 -- {naive / right:,.0f} times less than forming the product in float32 ({naive:.1e} "
                 "rad).", mistakes, f"{answer:.2e} rad is not the largest error over the 64 pairs; compare each cast "
                 "angle with its float64 value (mod 2 pi) and take the largest.")


# --- notebook 07: a bug hunt.  The checker never trusts identify (which the notebook hunts with): each kind of bug
# is tested on mystery_rope directly against rope_ref.rotate, and a wrong guess is answered with what that test found.

#: The kinds of bug the answer names, as notebook 07's exercise lists them.
BUG_KINDS = ("pairing", "base", "offset", "direction", "scale", "precision")
_X = np.random.default_rng(7).standard_normal((8, 16))      # 8 rows, d = 16: Llama's kernel rotates row r at r


def _facts(kernel) -> dict:
    """For each kind of bug, whether ``kernel`` (meant as Llama's) is right in that respect, with what shows it."""
    out = kernel(_X)
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


def check_planted_bug(answer) -> bool:
    """``answer``: the kind of bug ``mystery_rope`` has, one of :data:`BUG_KINDS` (a string)."""
    hint = f"set answer to the kind of bug, one of {', '.join(BUG_KINDS)}"
    if (kind := _choice(answer, BUG_KINDS, "strings", hint)) is None:
        return False
    ok, evidence = _facts(example_kernels.mystery_rope)[kind]
    if not ok:
        return verdict(True, f"{kind}: {evidence}; the fix is to count positions from 0")
    return verdict(False, f"not the {kind}: {evidence}. Look again at the phase-error panel: what is flat, what is "
                          "not?")


def check_supported_context(answer, base: float = 500000.0, d: int = 128) -> bool:
    """Notebook 08: the longest context L that ``base`` supports by Men et al.'s criterion (B_m >= 0 for m <= L)."""
    if unanswered(answer, hint="set answer to an integer and run the cell again."):
        return False
    if not _is_integer(answer):
        return verdict(False, f"the answer is a whole number of positions (an int), got {answer!r}")
    right = supported_context(base, d)
    mistakes = [(-1, "-1 is what argmax(margin < 0) - 1 gives when no B_m in your range of distances is negative "
                     "(argmax of all False is 0): scan further."),
                (supported_context(10000.0, d), f"{answer:,} is the context of base 10,000, similarity_margin's "
                                                "default base: pass the exercise's base."),
                (right + 1, f"{answer:,} is the first distance where B_m < 0; the supported length ends one before.")]
    return judge(lambda length: length == answer, right,
                 f"B_m >= 0 for every m up to {right:,}; at m = {right + 1:,} it is negative.", mistakes,
                 "a context length is a number of positions, 0 or more." if answer < 0 else
                 f"B_m is already negative at some m <= {answer:,}: scan from m = 0 and stop at the first negative "
                 "value." if answer > right else
                 f"B_m is still >= 0 at every m up to {answer + 1:,}: the first negative value comes later.")


def diagonal_head_weight(norm_sq: float, pair: int, n_keys: int = 48, d: int = 64) -> float:
    """alpha_{i,i} of Barbero et al.'s diagonal head (arXiv:2410.06205): every one of ``n_keys`` tokens
    is psi on ``pair`` (frequency g), |psi|^2 = ``norm_sq``, so alpha_{i,i} = 1 / sum_r exp(|psi|^2 (cos(r g) - 1))."""
    g = frequencies(d)[pair]
    return float(1.0 / np.exp(norm_sq * (np.cos(np.arange(n_keys) * g) - 1.0)).sum())


def smallest_diagonal_norm(target: float = 0.9, pair: int = 8, n_keys: int = 48, d: int = 64) -> int:
    """The smallest integer |psi|^2 >= 1 for which :func:`diagonal_head_weight` on ``pair`` is at least ``target``.
    The weight rises with |psi|^2 (every term exp(|psi|^2 (cos(r g) - 1)), r != 0, falls): a bisection finds it."""
    if isinstance(target, bool) or not isinstance(target, numbers.Real) or not 0 < target < 1:
        raise ValueError(f"target must be a weight in (0, 1), got {target!r}")
    if not _is_integer(pair) or not 0 <= pair < d // 2:
        raise ValueError(f"pair must be an integer in 0..d/2-1 = 0..{d // 2 - 1}, got {pair!r}")
    norms = range(1, (1 << 40) + 1)
    first = bisect.bisect_left(norms, target, key=lambda norm: diagonal_head_weight(float(norm), pair, n_keys, d))
    if first == len(norms):
        raise ValueError(f"pair {pair} turns too slowly: no |psi|^2 up to 2**40 reaches {target}")
    return norms[first]


def check_diagonal_norm(answer, target: float = 0.9, pair: int = 8) -> bool:
    """Notebook 10: the smallest integer |psi|^2 at which Barbero et al.'s diagonal head puts ``target`` on itself."""
    if unanswered(answer, hint="set answer to an integer and run the cell again."):
        return False
    if not _is_integer(answer) or answer < 1:
        return verdict(False, f"|psi|^2 is a squared norm, here a whole number from 1 up (an int), got {answer!r}")
    right = smallest_diagonal_norm(target, pair)
    if answer == right:
        return verdict(True, f"|psi|^2 = {right:,} gives {diagonal_head_weight(float(right), pair):.5f} >= {target}; "
                             f"{right - 1:,} gives {diagonal_head_weight(float(right - 1), pair):.5f}.")
    if answer < right:
        return verdict(False, f"at |psi|^2 = {answer:,} the weight is {diagonal_head_weight(float(answer), pair):.5f}, "
                              f"below {target}: it must be larger.")
    return verdict(False, f"|psi|^2 = {answer:,} reaches {target}, but so does a smaller value: find the first one.")


#: notebook 09's sequence: 5 text tokens, an image of 6 x 10 patches (merged 2 x 2), 3 text tokens.
AFTER_IMAGE_SEGMENTS = (("text", 5), ("image", (1, 6, 10)), ("text", 3))


def check_text_after_image(answer, segments=AFTER_IMAGE_SEGMENTS, spatial_merge_size: int = 2) -> bool:
    """``answer``: the position id of the first text token after the image (an int, or its (t, h, w) ids)."""
    if unanswered(answer, hint="set answer to the position id of the first text token after the image, "
                               "then run this cell"):
        return False
    values = list(np.asarray(answer).ravel()) if isinstance(answer, (tuple, list, np.ndarray)) else [answer]
    if len(values) not in (1, 3) or not all(map(_is_integer, values)):
        return verdict(False, f"answer should be one integer (or three: t, h, w), got {answer!r}")
    if len(set(int(v) for v in values)) != 1:
        return verdict(False, f"you gave different ids {tuple(int(v) for v in values)} on the three axes, but a text "
                              "token has the same id on t, h and w")
    value = int(values[0])
    ids = mrope_position_ids(segments, spatial_merge_size=spatial_merge_size)
    start = segments[0][1]
    t, h, w = segments[1][1]
    tokens = t * h * w // spatial_merge_size ** 2
    right = int(ids[0, start + tokens])
    hints = {start + tokens: "that counts every image token as one position, as 1-D RoPE would; "
                             "an image token's ids are (start + t, start + row, start + column)",
             start + max(h, w): "the grid (t, h, w) counts patches before the spatial merge: "
                                f"{spatial_merge_size} x {spatial_merge_size} patches become one token",
             start + max(h, w) - 1: "the grid counts patches before the spatial merge, and the text starts one "
                                    "after the largest id",
             right - 1: "that is the largest id the image uses; the text starts one after it",
             start + h // spatial_merge_size: "that is one past the image's last row; the columns go further",
             start + 1: "that is one past the image's temporal id; its rows and columns go further"}
    correct = (f"the image's ids run from {start} to {right - 1} (its widest axis has {max(h, w) // spatial_merge_size}"
               f" tokens), so the text resumes at {right}")
    return judge(lambda position: position == value, right, correct, hints.items(),
                 f"{value} is not where the text resumes; find the largest id the image uses on any axis")


#: the second exercise: query patch (2, 3) with key patch (7, 1); the query moves to (10, 10).
SAME_SCORE_FROM, SAME_SCORE_TO, SAME_SCORE_QUERY = (2, 3), (7, 1), (10, 10)


def same_score_qk(d: int = 64, seed: int = 1):
    """The exercise's query and key, independent (an offset and its reverse score differently)."""
    return random_qk(d, seed)


def check_same_score_patch(answer) -> bool:
    """``answer``: the key patch (x, y) that, with the query at (10, 10), scores as query (2, 3) and key (7, 1)."""
    if unanswered(answer, hint="set answer to the key patch (x, y), then run this cell"):
        return False
    if not isinstance(answer, (tuple, list, np.ndarray)) or len(answer) != 2 or not all(map(_is_integer, answer)):
        return verdict(False, f"answer should be a patch (x, y) of two integers, got {answer!r}")
    x, y = (int(v) for v in answer)
    (x1, y1), (x2, y2), (qx, qy) = SAME_SCORE_FROM, SAME_SCORE_TO, SAME_SCORE_QUERY
    dx, dy = x2 - x1, y2 - y1
    q, k = same_score_qk()
    target = _axial_score(q, k, SAME_SCORE_FROM, SAME_SCORE_TO)
    yours = _axial_score(q, k, SAME_SCORE_QUERY, (x, y))
    mistakes = [((dx, dy), "that is the offset between the patches; the answer is a patch, seen from the query "
                           "at (10, 10)"),
                ((qx - dx, qy - dy), f"that patch is at the reversed offset: score {yours:.4f}, not {target:.4f} "
                                     "(the key goes where the key was, relative to the query)"),
                ((qx + dy, qy + dx), f"x and y are swapped: score {yours:.4f}, not {target:.4f}")]
    correct = (f"key ({x}, {y}) sits at the same offset from the query as (7, 1) from (2, 3): score {yours:.6f} = "
               f"{target:.6f}")
    return judge(lambda patch: patch == (x, y), (qx + dx, qy + dy), correct, mistakes,
                 f"with the query at (10, 10) that key scores {yours:.4f}, not {target:.4f}; what stays the same when "
                 "both patches move together?")


# --- notebook 11: which of three RoPE kernels for SmolLM2 (base 10^5, interleaved) has a planted bug?  Found
# without the model: by eq 11, a right RoPE gives scores (R_m q) . (R_n k) equal to rope_ref's at every (m, n).  The
# letters are dealt by a hash, so that reading this module does not hand out the notebook's answer.

SMOLLM2_BASE = 100000.0


def _mystery_kernel(x, positions, *, shift: float, period: float):
    """RoPE at (positions + shift) modulo ``period``."""
    return rotate(x, np.fmod(np.asarray(positions, dtype=np.float64) + shift, period), base=SMOLLM2_BASE)


_DEALT = sorted(range(3), key=lambda i: hashlib.sha256(f"rope_ref 11 {i}".encode()).hexdigest())
_SHIFTS, _PERIODS = (1e3, 0.0, 0.0), (np.inf, 2.0 ** 5, np.inf)
MYSTERY_ROPES = {letter: functools.partial(_mystery_kernel, shift=_SHIFTS[i], period=_PERIODS[i])
                 for letter, i in zip("ABC", _DEALT)}


def _keeps_scores(rope, seq: int = 80, d: int = 64) -> bool:
    """True when rope's scores (R_m q) . (R_n k) equal rope_ref's for random q, k at positions 0..seq-1."""
    q, k = np.random.default_rng(11).standard_normal((2, 1, seq, d))
    positions = np.arange(seq, dtype=np.float64)
    scores = rope(q, positions)[0] @ rope(k, positions)[0].T
    rotated_q, rotated_k = (rotate(x, positions, base=SMOLLM2_BASE)[0] for x in (q, k))
    return bool(np.allclose(scores, rotated_q @ rotated_k.T, atol=1e-8))


def check_mystery_rope(answer) -> bool:
    """``answer``: the letter ("A", "B" or "C") of the kernel in :data:`MYSTERY_ROPES` with the planted bug."""
    hint = 'set answer to the letter ("A", "B" or "C") of the kernel with the bug'
    if (letter := _choice(answer, MYSTERY_ROPES, "letters", hint, fold=str.upper)) is None:
        return False
    if not _keeps_scores(MYSTERY_ROPES[letter]):
        return verdict(True, f"kernel {letter} wraps its positions modulo 32 (a cos/sin table built for 32 positions): "
                             "every prompt shorter than 33 tokens is exact, a longer one loses where its tokens are")
    return verdict(False, f"kernel {letter} gives every score q_m . k_n the model's own RoPE gives (eq 11): it is not "
                          "the bug. Measure each kernel, with the copy task or an attention map")
