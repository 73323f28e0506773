"""Checkers for the exercises of notebook 09 (RoPE beyond one axis); each prints one line and returns a bool, as
:mod:`rope_ref.teaching.exercises` describes, naming the common slip without giving the right value away.  The
right answer comes from :mod:`rope_ref` (``mrope_position_ids``; ``rotate`` with 2-D axial frequencies).
"""

from __future__ import annotations

import numbers

import numpy as np

from ..forms import rotate
from ..multiaxis import axial_frequencies, mrope_position_ids
from .exercises import unanswered, verdict
from .vision_rope import BASE_GRID
from .quantities import random_qk

#: the exercise's sequence: 5 text tokens, an image of 6 x 10 patches (merged 2 x 2), 3 text tokens.
AFTER_IMAGE_SEGMENTS = (("text", 5), ("image", (1, 6, 10)), ("text", 3))


def check_text_after_image(answer, segments=AFTER_IMAGE_SEGMENTS, spatial_merge_size: int = 2) -> bool:
    """``answer``: the position id of the first text token after the image (an int, or its (t, h, w) ids)."""
    if unanswered(answer, hint="set answer to the position id of the first text token after the image, "
                               "then run this cell"):
        return False
    values = list(np.asarray(answer).ravel()) if isinstance(answer, (tuple, list, np.ndarray)) else [answer]
    if len(values) not in (1, 3) or any(isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Integral)
                                        for v in values):
        return verdict(False, f"answer should be one integer (or three: t, h, w), got {answer!r}")
    if len(set(int(v) for v in values)) != 1:
        return verdict(False, f"you gave different ids {tuple(int(v) for v in values)} on the three axes, but a text "
                              "token has the same id on t, h and w")
    value = int(values[0])
    segments = [tuple(s) for s in segments]
    ids = mrope_position_ids(segments, spatial_merge_size=spatial_merge_size)
    n_before = sum(s[1] for s in segments[:1])
    t, h, w = segments[1][1]
    tokens = t * h * w // spatial_merge_size ** 2
    right = int(ids[0, n_before + tokens])
    start = n_before
    if value == right:
        return verdict(True, f"the image's ids run from {start} to {right - 1} (its widest axis has "
                             f"{max(h, w) // spatial_merge_size} tokens), so the text resumes at {right}; "
                             f"counting tokens as 1-D RoPE does would give {start + tokens}")
    hints = {start + tokens: "that counts every image token as one position, as 1-D RoPE would; "
                             "an image token's ids are (start + t, start + row, start + column)",
             start + max(h, w): "the grid (t, h, w) counts patches before the spatial merge: "
                                f"{spatial_merge_size} x {spatial_merge_size} patches become one token",
             start + max(h, w) - 1: "the grid counts patches before the spatial merge, and the text starts one "
                                    "after the largest id",
             right - 1: "that is the largest id the image uses; the text starts one after it",
             start + h // spatial_merge_size: "that is one past the image's last row; the columns go further",
             start + 1: "that is one past the image's temporal id; its rows and columns go further"}
    return verdict(False, hints.get(value, f"{value} is not where the text resumes; find the largest id the image "
                                        "uses on any axis"))


#: the second exercise: query patch (2, 3) with key patch (7, 1); the query moves to (10, 10).
SAME_SCORE_FROM, SAME_SCORE_TO, SAME_SCORE_QUERY = (2, 3), (7, 1), (10, 10)


def same_score_qk(d: int = 64, seed: int = 1):
    """The exercise's query and key: seeded standard-normal, independent (so the score of an offset and of its
    reverse differ)."""
    return random_qk(d, seed)


def _score(q, k, q_xy, k_xy) -> float:
    """q at patch q_xy against k at patch k_xy under 2-D axial RoPE (base BASE_GRID)."""
    positions = np.array([[q_xy[0], k_xy[0]], [q_xy[1], k_xy[1]]], dtype=np.float64)
    q_rotated, k_rotated = rotate(np.stack([q, k]), positions, inv_freq=axial_frequencies(q.size, base=BASE_GRID))
    return float(q_rotated @ k_rotated)


def check_same_score_patch(answer) -> bool:
    """``answer``: the key patch (x, y) that, with the query at (10, 10), gives exactly the score of
    query (2, 3) and key (7, 1) under 2-D axial RoPE."""
    if unanswered(answer, hint="set answer to the key patch (x, y), then run this cell"):
        return False
    if (not isinstance(answer, (tuple, list, np.ndarray)) or len(answer) != 2
            or any(isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Integral) for v in answer)):
        return verdict(False, f"answer should be a patch (x, y) of two integers, got {answer!r}")
    x, y = (int(v) for v in answer)
    (x1, y1), (x2, y2), (qx, qy) = SAME_SCORE_FROM, SAME_SCORE_TO, SAME_SCORE_QUERY
    dx, dy = x2 - x1, y2 - y1
    q, k = same_score_qk()
    target = _score(q, k, SAME_SCORE_FROM, SAME_SCORE_TO)
    yours = _score(q, k, SAME_SCORE_QUERY, (x, y))
    if (x - qx, y - qy) == (dx, dy):
        return verdict(True, f"key ({x}, {y}) sits at the same offset from the query as (7, 1) from (2, 3): "
                             f"score {yours:.6f} = {target:.6f}")
    if (x, y) == (dx, dy):
        return verdict(False, "that is the offset between the patches; the answer is a patch, seen from the query "
                              "at (10, 10)")
    if (x - qx, y - qy) == (-dx, -dy):
        return verdict(False, f"that patch is at the reversed offset: score {yours:.4f}, not {target:.4f} "
                              "(the key goes where the key was, relative to the query)")
    if (x - qx, y - qy) == (dy, dx):
        return verdict(False, f"x and y are swapped: score {yours:.4f}, not {target:.4f}")
    return verdict(False, f"with the query at (10, 10) that key scores {yours:.4f}, not {target:.4f}; "
                          "what stays the same when both patches move together?")
