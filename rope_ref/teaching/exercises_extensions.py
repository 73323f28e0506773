"""Checkers for the exercises of notebooks 06-11 (the extensions), each one call of
:func:`rope_ref.teaching.exercises.check`: one line and a bool, never an exception."""

import bisect
import functools
import hashlib

import numpy as np

from ..forms import frequencies, rotate, rotation_angles, wrap_angle
from ..multiaxis import mrope_position_ids
from . import example_kernels
from .base_bound import supported_context
from .exercises import INTEGER, NUMBER, check, integer_in, is_integer, one_of
from .precision import angle_errors
from .quantities import random_qk
from .vision_rope import _axial_score


def check_reduced_cast_error(answer, position: float = 1e6, d: int = 128, base: float = 10000.0) -> bool:
    """Notebook 06: the largest angle error (rad) of "reduce m theta_i to (-pi, pi] in float64, cast to float32"."""
    exact = rotation_angles(position, frequencies(d, base))
    right = float(np.abs(wrap_angle(wrap_angle(exact).astype(np.float32).astype(np.float64) - exact)).max())
    naive = float(angle_errors([position], d, base, np.float32)["angle"][0])
    return check({"answer": (answer, NUMBER)}, right, f"{right:.2e} rad, at most half an ulp of pi in float32: "
                 f"{naive / right:,.0f} times less than forming the product in float32 ({naive:.1e} rad).",
                 [(naive, "that is the error of the product formed in float32; reduce the float64 angle to (-pi, pi] "
                          "first, then cast."),
                  (0.0, "a float32 cast of an angle near pi rounds it: the error is not 0.")],
                 "that is not the largest error over the 64 pairs; compare each cast angle with its float64 value "
                 "(mod 2 pi).", lambda a, ref: abs(a - ref) <= 0.05 * ref)


#: Notebook 07: the kinds of bug the answer names, and what rules each wrong one out.
BUG_KINDS = {"pairing": "feature 0 moves only into feature 1, feature 2 only into 3: Llama's pairs (2i, 2i + 1)",
             "base": "from one row to the next, pair p turns by exactly theta_p = 10000^(-2p/d)",
             "offset": None,
             "direction": "it turns the same way as Llama's kernel: the phase error does not grow with the row",
             "scale": "every row keeps its length: nothing scales the rotated features",
             "precision": "the angles agree with float64 to 1e-10 once the rows are shifted: no rounding noise"}


def check_planted_bug(answer) -> bool:
    """``answer``: the kind of bug ``mystery_rope`` has, one of :data:`BUG_KINDS` (a string).  Measured, not read
    from identify: mystery_rope equals rope_ref's rotate at positions shifted by some s, so only the offset is wrong."""
    x = np.random.default_rng(7).standard_normal((8, 16))
    shift = next(s for s in range(-4, 5)
                 if np.allclose(example_kernels.mystery_rope(x), rotate(x, np.arange(8.0) + s), atol=1e-10))
    return check({"answer": (answer, one_of(BUG_KINDS))}, "offset", f"offset: row 0 is rotated as position {shift}, "
                 "every row one position too far; the fix is to count positions from 0",
                 otherwise=lambda a: f"not the {a}: {BUG_KINDS[a]}. Look again at the phase-error panel: what is flat,"
                                     " what is not?")


def check_supported_context(answer, base: float = 500000.0, d: int = 128) -> bool:
    """Notebook 08: the longest context L that ``base`` supports by Men et al.'s criterion (B_m >= 0 for m <= L)."""
    right = supported_context(base, d)
    return check({"answer": (answer, INTEGER)}, right, f"B_m >= 0 for every m up to {right:,}; at m = {right + 1:,} "
                 "it is negative.",
                 [(-1, "-1 is what argmax(margin < 0) - 1 gives when no B_m in your range is negative: scan further."),
                  (supported_context(10000.0, d), "that is the context of base 10,000, similarity_margin's default "
                                                  "base: pass the exercise's base."),
                  (right + 1, "that is the first distance where B_m < 0; the supported length ends one before.")],
                 lambda a: "a context length is a number of positions, 0 or more." if a < 0 else
                 f"B_m is already negative at some m <= {a:,}: stop at the first negative value." if a > right else
                 f"B_m is still >= 0 at every m up to {a + 1:,}: the first negative value comes later.")


def diagonal_head_weight(norm_sq: float, pair: int, n_keys: int = 48, d: int = 64) -> float:
    """alpha_{i,i} of Barbero et al.'s diagonal head (arXiv:2410.06205): every one of ``n_keys`` tokens
    is psi on ``pair`` (frequency g), |psi|^2 = ``norm_sq``, so alpha_{i,i} = 1 / sum_r exp(|psi|^2 (cos(r g) - 1))."""
    g = frequencies(d)[pair]
    return float(1.0 / np.exp(norm_sq * (np.cos(np.arange(n_keys) * g) - 1.0)).sum())


def smallest_diagonal_norm(target: float = 0.9, pair: int = 8, n_keys: int = 48, d: int = 64) -> int:
    """The smallest integer |psi|^2 >= 1 for which :func:`diagonal_head_weight` on ``pair`` is at least ``target``
    (a bisection: the weight rises with |psi|^2, every term exp(|psi|^2 (cos(r g) - 1)), r != 0, falls)."""
    return 1 + bisect.bisect_left(range(1, 1 << 40), target,
                                  key=lambda norm: diagonal_head_weight(float(norm), pair, n_keys, d))


def check_diagonal_norm(answer, target: float = 0.9, pair: int = 8) -> bool:
    """Notebook 10: the smallest integer |psi|^2 at which Barbero et al.'s diagonal head puts ``target`` on itself."""
    right = smallest_diagonal_norm(target, pair)
    return check({"answer": (answer, integer_in(1))}, right, f"|psi|^2 = {right:,} gives "
                 f"{diagonal_head_weight(float(right), pair):.5f} >= {target}; {right - 1:,} gives "
                 f"{diagonal_head_weight(float(right - 1), pair):.5f}.",
                 otherwise=lambda a: f"at |psi|^2 = {a:,} the weight is {diagonal_head_weight(float(a), pair):.5f}, "
                 f"below {target}: it must be larger." if a < right else
                 f"|psi|^2 = {a:,} reaches {target}, but so does a smaller value: find the first one.")


#: notebook 09's sequence: 5 text tokens, an image of 6 x 10 patches (merged 2 x 2), 3 text tokens.
AFTER_IMAGE_SEGMENTS = (("text", 5), ("image", (1, 6, 10)), ("text", 3))


def _ids(value) -> list:
    return list(np.asarray(value, dtype=object).ravel()) if isinstance(value, (tuple, list, np.ndarray)) else [value]


def check_text_after_image(answer, segments=AFTER_IMAGE_SEGMENTS, spatial_merge_size: int = 2) -> bool:
    """``answer``: the position id of the first text token after the image (an int, or its (t, h, w) ids)."""
    ids = mrope_position_ids(segments, spatial_merge_size=spatial_merge_size)
    start, (t, h, w) = segments[0][1], segments[1][1]
    tokens = t * h * w // spatial_merge_size ** 2
    right = int(ids[0, start + tokens])
    position = ("one integer, or the same integer three times (a text token has the same id on t, h and w)",
                lambda v: len(_ids(v)) in (1, 3) and all(map(is_integer, _ids(v))) and len(set(_ids(v))) == 1,
                lambda v: int(_ids(v)[0]))
    return check({"answer": (answer, position)}, right, f"the image's ids run from {start} to {right - 1} (its widest "
                 f"axis has {max(h, w) // spatial_merge_size} tokens), so the text resumes at {right}",
                 [(start + tokens, "that counts every image token as one position, as 1-D RoPE would; an image "
                                   "token's ids are (start + t, start + row, start + column)"),
                  (start + max(h, w), "the grid (t, h, w) counts patches before the spatial merge: "
                                      f"{spatial_merge_size} x {spatial_merge_size} patches become one token"),
                  (start + max(h, w) - 1, "the grid counts patches before the spatial merge, and the text starts "
                                          "one after the largest id"),
                  (right - 1, "that is the largest id the image uses; the text starts one after it"),
                  (start + h // spatial_merge_size, "that is one past the image's last row; the columns go further"),
                  (start + 1, "that is one past the image's temporal id; its rows and columns go further")],
                 "that is not where the text resumes; find the largest id the image uses on any axis")


#: the second exercise: query patch (2, 3) with key patch (7, 1); the query moves to (10, 10).
SAME_SCORE_FROM, SAME_SCORE_TO, SAME_SCORE_QUERY = (2, 3), (7, 1), (10, 10)
PATCH = ("a patch (x, y) of two integers", lambda v: isinstance(v, (tuple, list, np.ndarray)) and len(v) == 2
         and all(map(is_integer, v)), lambda v: tuple(int(i) for i in v))


def same_score_qk(d: int = 64, seed: int = 1):
    """The exercise's query and key, independent (an offset and its reverse score differently)."""
    return random_qk(d, seed)


def check_same_score_patch(answer) -> bool:
    """``answer``: the key patch (x, y) that, with the query at (10, 10), scores as query (2, 3) and key (7, 1)."""
    (x1, y1), (x2, y2), (qx, qy) = SAME_SCORE_FROM, SAME_SCORE_TO, SAME_SCORE_QUERY
    dx, dy = x2 - x1, y2 - y1
    q, k = same_score_qk()
    target = _axial_score(q, k, SAME_SCORE_FROM, SAME_SCORE_TO)

    def scores(patch):
        return f"score {_axial_score(q, k, SAME_SCORE_QUERY, patch):.4f}, not {target:.4f}"
    return check({"answer": (answer, PATCH)}, (qx + dx, qy + dy),
                 lambda a: f"key {a} sits at the same offset from the query as (7, 1) from (2, 3): "
                           f"score {_axial_score(q, k, SAME_SCORE_QUERY, a):.6f} = {target:.6f}",
                 [((dx, dy), "that is the offset between the patches; the answer is a patch, seen from the query"),
                  ((qx - dx, qy - dy), lambda a: f"that patch is at the reversed offset: {scores(a)}"),
                  ((qx + dy, qy + dx), lambda a: f"x and y are swapped: {scores(a)}")],
                 lambda a: f"with the query at (10, 10) that key has {scores(a)}; what stays the same when both "
                           "patches move together?")


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


def check_mystery_rope(answer) -> bool:
    """``answer``: the letter ("A", "B" or "C") of the kernel in :data:`MYSTERY_ROPES` with the planted bug: the one
    whose scores (R_m q) . (R_n k) differ from rope_ref's, for random q, k at positions 0..79."""
    q, k = np.random.default_rng(11).standard_normal((2, 80, 64))
    positions = np.arange(80.0)
    scores = rotate(q, positions, base=SMOLLM2_BASE) @ rotate(k, positions, base=SMOLLM2_BASE).T
    bug = next(letter for letter, rope in MYSTERY_ROPES.items()
               if not np.allclose(rope(q, positions) @ rope(k, positions).T, scores, atol=1e-8))
    return check({"answer": (answer, one_of(MYSTERY_ROPES, str.upper))}, bug, f"kernel {bug} wraps its positions "
                 "modulo 32 (a cos/sin table built for 32 positions): every prompt shorter than 33 tokens is exact, a "
                 "longer one loses where its tokens are", otherwise=lambda a: f"kernel {a} gives every score q_m . k_n "
                 "the model's own RoPE gives (eq 11): it is not the bug. Measure each kernel, with the copy task or an "
                 "attention map")
