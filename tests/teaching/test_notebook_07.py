"""Notebook 07 (check your kernel): the facts its prose states, recomputed here without identify (which kernel's
rebuild may reword), and its exercise's checker."""

import ast
import inspect
from types import SimpleNamespace

import ml_dtypes
import numpy as np
import pytest

import rope_ref as rr
from rope_ref.teaching import example_kernels, exercises
from rope_ref.teaching.style import MIN_FONT_PT, new_axes

import notebook_cells

NAME = "07_check_your_rope"
TEXT = notebook_cells.text(NAME)


def defined(*cell_ids) -> dict:
    """The functions the cells ``cell_ids`` define, each ``def`` run alone (not the rest of its cell)."""
    namespace = {"np": np, "rr": rr, "new_axes": new_axes}
    for cell in (c for c in notebook_cells.cells(NAME) if c["id"] in cell_ids):
        module = ast.parse("\n".join(ln for ln in notebook_cells.src(cell).splitlines() if not ln.startswith("%")))
        module.body = [node for node in module.body if isinstance(node, ast.FunctionDef)]
        exec(compile(module, f"{NAME}.ipynb:{cell['id']}", "exec"), namespace)
    return namespace


@pytest.mark.parametrize("answer,ok,start", [     # None and NaN: test_course_exercises' odd answers
    ("offset", True, "Correct: offset: row 0 is rotated as position 1"), (" Offset", True, "Correct:"),
    ("position", False, "Not yet: answer should be one of"),
    *[(kind, False, f"Not yet: not the {kind}") for kind in ["base", "pairing", "direction", "scale", "precision"]]])
def test_the_checker(capsys, answer, ok, start):
    assert exercises.check_planted_bug(answer) is ok
    said = capsys.readouterr().out
    assert said.startswith(start) and said.count("\n") == 1
    assert ok or answer not in exercises.BUG_KINDS or "offset" not in said.lower()   # nor told the bug


def test_the_planted_bug_is_an_offset_and_the_question_hides_it():
    x = np.random.default_rng(0).standard_normal((9, 16))
    np.testing.assert_allclose(example_kernels.mystery_rope(x), rr.rotate(x, np.arange(1, 10)), atol=1e-12)
    assert inspect.signature(example_kernels.mystery_rope) == inspect.signature(defined("nb07-02")["llama_style_rope"])
    cells = notebook_cells.cells(NAME)
    start = next(i for i, c in enumerate(cells) if "## Hunt the planted bug" in notebook_cells.src(c))
    asked = next(i for i, c in enumerate(cells) if "exercise" in notebook_cells.tags(c) and c["cell_type"] == "code")
    code = "\n".join(notebook_cells.src(c) for c in cells[start:asked] if c["cell_type"] == "code")
    assert "getsource" not in code and "summary()" not in code and "assert_rope_matches(" not in code.split("#")[0]


def test_the_picture_draws_a_shift_flat_and_a_wrong_frequency_growing():
    draw = defined("nb07-07")["kernel_vs_expected"]
    theta, rows = np.array([1.0, 0.1, 0.01]), np.arange(6.0)
    for found, offset, error in [(theta, 4.0, np.tile([4.0 - 2 * np.pi, 0.4, 0.04], (6, 1))),      # 4 rad wraps
                                 (1.01 * theta, 0.0, 0.01 * np.outer(rows, theta))]:
        fig = draw(SimpleNamespace(inv_freq=found, offset=offset, rows=6), theta)
        left, right = fig.axes
        np.testing.assert_allclose(left.get_lines()[1].get_ydata(), found)
        np.testing.assert_allclose(np.transpose([line.get_ydata() for line in right.get_lines()[:3]]), error,
                                   atol=1e-12)
    assert min(t.get_fontsize() for t in fig.findobj(lambda o: hasattr(o, "get_fontsize"))) >= MIN_FONT_PT


def test_stated_facts_of_the_bfloat16_cast():
    inv_freq = 500000.0 ** (-np.arange(0, 128, 2) / 128)
    rounded = inv_freq.astype(np.float32).astype(ml_dtypes.bfloat16).astype(np.float64)
    relative = np.abs(rounded / inv_freq - 1)
    assert f"{inv_freq[1]:.6f} {rounded[1]:.6f}" == "0.814617 0.816406"
    assert list(np.flatnonzero(relative == 0)) == [0] and round(relative[33] * 1e6) == 4
    assert np.argmax(relative) == 13 and f"{relative.max():.2%}" == "0.33%" and relative.max() < 2.0 ** -8

    def angle_error(position):                              # wrapped to [-pi, pi], as a rotation sees it
        return np.abs(np.angle(np.exp(1j * position * (rounded - inv_freq))))
    assert np.argmax(angle_error(255)) == 1 and f"{angle_error(255)[1]:.2f}" == "0.46"
    at_end = angle_error(8191)
    assert (at_end > 1).sum() == 10 and np.argmax(at_end) == 8 and f"{at_end[8]:.1f}" == "2.9"
    for shown in ["pair 1's 0.814617 becomes 0.816406", "pair 33 moves by only 4 parts in a million",
                  "the other 62 move by up to 0.33% (pair 13)", "pair 1 is 0.46 rad off at position 255",
                  "10 pairs are more than 1 rad off, pair 8 by 2.9 rad", "each by less than bfloat16's rounding step",
                  "read a fitted base in such a report as noise", "(notebook 06's checklist, item 4)"]:
        assert shown in TEXT, shown
    checklist = notebook_cells.prose("06_precision").split("\n4. ")[1]
    assert checklist.startswith("**The table covers the longest position.**")


def test_the_clamped_cache_and_the_ported_kernel():
    """The clamped replay repeats row 255 past the table; the ported kernel misses only YaRN's attention factor."""
    rotary, cells = example_kernels.replayed_llama_rotary(), defined("nb07-20", "nb07-22b")
    cos, sin = rotary(np.zeros((1, 1, 256, 128), np.float32), np.arange(256)[None])
    x = np.random.default_rng(1).standard_normal((1, 1, 64, 128)).astype(np.float32)
    index = np.arange(200, 264).clip(max=255)[None]
    out = cells["apply_rotary_pos_emb"](x, x, cos[0, index], sin[0, index])[0][0, 0]
    expected = rr.rotate(x[0, 0].astype(np.float64), np.minimum(np.arange(200, 264), 255.0), pairing="half",
                         inv_freq=rr.from_hf_config(example_kernels.config("meta-llama-3-8b")).inv_freq())
    np.testing.assert_allclose(out, expected, atol=2e-3)
    cfg = rr.from_hf_config(example_kernels.config("qwen2.5-7b-instruct-yarn"))
    y = np.random.default_rng(2).standard_normal((16, cfg.head_dim))
    ported = cells["hf_style_rope"](y, inv_freq=cfg.inv_freq())
    np.testing.assert_allclose(ported * cfg.attention_factor, cfg.rotate(y), atol=1e-5)
    assert "reaches position 256 at row 56" in TEXT and 200 + 56 == 256
