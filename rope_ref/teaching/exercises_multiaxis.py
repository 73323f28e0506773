"""Checkers for the exercises of notebook 09 (RoPE beyond one axis).

Every checker prints one line and returns a bool, as :mod:`rope_ref.teaching.exercises` does:
``Not answered yet ...`` (False) while the answer is ``None``, ``Correct: ...`` (True), or
``Not yet: <why>`` (False), naming the common slip without giving the right value away.  The right
answer comes from :func:`rope_ref.mrope_position_ids`; tests/teaching/test_notebook_09.py tries
right and wrong answers on each checker.
"""

from __future__ import annotations

import numbers

import numpy as np

from ..multiaxis import mrope_position_ids

#: the exercise's sequence: 5 text tokens, an image of 6 x 10 patches (merged 2 x 2), 3 text tokens.
AFTER_IMAGE_SEGMENTS = (("text", 5), ("image", (1, 6, 10)), ("text", 3))


def _say(ok: bool, text: str) -> bool:
    print(("Correct: " if ok else "Not yet: ") + text)
    return ok


def check_text_after_image(answer, segments=AFTER_IMAGE_SEGMENTS, spatial_merge_size: int = 2) -> bool:
    """``answer``: the position id of the first text token after the image (an int, or its (t, h, w) ids)."""
    if answer is None:
        print("Not answered yet: set answer to the position id of the first text token after the image, "
              "then run this cell")
        return False
    values = list(np.asarray(answer).ravel()) if isinstance(answer, (tuple, list, np.ndarray)) else [answer]
    if len(values) not in (1, 3) or any(isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Integral)
                                        for v in values):
        return _say(False, f"answer should be one integer (or three: t, h, w), got {answer!r}")
    if len(set(int(v) for v in values)) != 1:
        return _say(False, f"you gave different ids {tuple(int(v) for v in values)} on the three axes, but a text "
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
        return _say(True, f"the image's ids run from {start} to {right - 1} (its widest axis has "
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
    return _say(False, hints.get(value, f"{value} is not where the text resumes; find the largest id the image "
                                        "uses on any axis"))
