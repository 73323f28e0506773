"""Notebook 09 (multi-axis RoPE): the numbers its prose states, recomputed here, and its two exercises' checkers."""

import numpy as np
import pytest

import rope_ref as rr
from rope_ref.teaching import exercises

import notebook_cells

NAME = "09_multi_axis"
TEXT = notebook_cells.prose(NAME)


def _say(*phrases):
    for phrase in phrases:
        assert phrase in TEXT, phrase


def plain_score(qxy, kxy):
    """2-D axial RoPE score (d = 64, base 100: x on pairs 0..15, y on 16..31) of the exercise's q at qxy, k at kxy."""
    q, k = exercises.same_score_qk()
    theta = 100.0 ** (-np.arange(16) / 16)
    ang = np.concatenate([theta * (kxy[0] - qxy[0]), theta * (kxy[1] - qxy[1])])
    a, b = k[0::2], k[1::2]
    return q[0::2] @ (a * np.cos(ang) - b * np.sin(ang)) + q[1::2] @ (a * np.sin(ang) + b * np.cos(ang))


def test_relative_in_both_axes_and_the_raster_order():
    q, k = exercises.same_score_qk()
    got = rr.rotate(np.stack([q, k]), np.array([[3.0, 9.0], [4.0, 1.0]]), inv_freq=rr.axial_frequencies(64, base=100.0))
    assert abs(got[0] @ got[1] - plain_score((3, 4), (9, 1))) < 1e-12
    _say("$196^2 = 38416$", "although they lie 13 columns apart")
    assert 196 ** 2 == 38416


def test_same_score_checker_right_and_wrong_answers(capsys):
    # By hand: the offset (7 - 2, 1 - 3) = (5, -2) from (10, 10) is (15, 8).
    q, k = exercises.same_score_qk()
    assert abs(plain_score((2, 3), (7, 1)) - plain_score((10, 10), (15, 8))) < 1e-12 and not np.allclose(q, k)
    assert abs(plain_score((2, 3), (7, 1)) - plain_score((10, 10), (5, 12))) > 0.1      # the reverse differs
    for answer, ok, words in [((15, 8), True, "Correct"), ([15, 8], True, "Correct"), ((5, -2), False, "between"),
                              ((5, 12), False, "reversed"), ((8, 15), False, "swapped"), ((7, 1), False, "stays"),
                              ((15.0, 8), False, "integers"), (15, False, "integers"), ((True, 8), False, "integers")]:
        assert exercises.check_same_score_patch(answer) is ok, answer
        out = capsys.readouterr().out
        assert words in out and (ok or "(15, 8)" not in out), (answer, out)


def test_checker_right_and_wrong_answers(capsys):
    # By hand: the image starts at 5; 6 x 10 patches merged 2 x 2 are 3 x 5 tokens, rows 5..7, columns 5..9.
    for answer, ok, words in [(10, True, "Correct"), ((10, 10, 10), True, "Correct"), (np.int64(10), True, "Correct"),
                              ([10], True, "Correct"), (np.array(10), True, "Correct"), ([[10]], True, "Correct"),
                              (20, False, "1-D RoPE"), (15, False, "spatial merge"), (9, False, "largest id"),
                              (8, False, "columns"), (11, False, "largest id the"), ((10, 8, 10), False, "same id"),
                              ("10", False, "integer"), (True, False, "integer"), (10.0, False, "integer")]:
        assert exercises.check_text_after_image(answer) is ok, answer
        out = capsys.readouterr().out
        assert words in out, (answer, out)
        assert ok or "10" not in out.replace("6 x 10", "").replace(str(answer), ""), out   # never the right value


@pytest.mark.slow
def test_mrope_sentences():
    _say("`[16, 24, 24]` in contiguous blocks for Qwen2-VL and Qwen2.5-VL", "`[24, 20, 20]` interleaved",
         "temporal axis gets the 16 fastest pairs, height the next 24 and\nwidth the 24 slowest",
         "by only $1.8\\times10^{-4}$ rad", "width's fastest pair is pair 2, with $\\theta_2 = 0.62$",
         "Temporal\ngets the 4 leftover pairs at the slow end (60..63)")
    bands = notebook_cells.run_cells(NAME, "c02", "c19")["bands"]
    q2, q3 = bands["Qwen2-VL"], bands["Qwen3-VL"]
    assert q2["temporal"]["pairs"] == list(range(16)) and q2["height"]["pairs"] == list(range(16, 40))
    assert q2["width"]["pairs"] == list(range(40, 64))
    assert f"{1e6 ** (-80 / 128):.1e}" == "1.8e-04" == f"{q2['width']['fastest']:.1e}"      # theta_40, base 1e6
    assert q3["width"]["pairs"][0] == 2 and f"{5e6 ** (-4 / 128):.2f}" == "0.62" == f"{q3['width']['fastest']:.2f}"
    assert q3["temporal"]["pairs"][-4:] == [60, 61, 62, 63] and q3["temporal"]["pairs"][-5] == 57


def test_text_is_one_dimensional_rope_and_resumes_after_the_image():
    _say("bit for bit", "$p_t = p_h = p_w = m$")
    x = np.random.default_rng(0).standard_normal((50, 128))
    m = np.arange(50.0)
    for sections, inter in (([16, 24, 24], False), ([24, 20, 20], True)):
        F = rr.mrope_frequencies(128, sections, base=1e6, interleaved=inter)
        text = rr.rotate(x, np.stack([m, m, m]), inv_freq=F, pairing="half")
        assert np.array_equal(text, rr.rotate(x, m, base=1e6, pairing="half"))
    _say("$8\\times12$ patches is $4\\times6 = 24$ tokens", "The image's ids run from 3 to 8",
         "resumes at 9, not at\n$3 + 24 = 27$")
    ids = rr.mrope_position_ids([("text", 3), ("image", (1, 8, 12)), ("text", 4)], spatial_merge_size=2)
    assert ids.shape == (3, 3 + 24 + 4)
    image = ids[:, 3:27]
    assert image.min() == 3 and image.max() == 8 and set(image[1].tolist()) == {3, 4, 5, 6}
    np.testing.assert_array_equal(ids[:, 27], [9, 9, 9])

