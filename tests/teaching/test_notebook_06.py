"""Notebook 06's engineering checklist: every number its new prose states, recomputed here in plain NumPy
(without rope_ref.teaching.precision), and its exercise's checker with right and wrong answers."""

import math
from pathlib import Path

import numpy as np
import pytest

import rope_ref as rr
from rope_ref.teaching.exercises_precision import check_reduced_cast_error, reduced_then_cast_error

import notebook_cells
from frequency_formulas import thetas

ROOT = Path(__file__).resolve().parents[2]
NB = ROOT / "notebooks" / "06_precision.ipynb"


def cells():
    return notebook_cells.cells(NB.stem)


def text():
    return notebook_cells.prose(NB.stem, solutions=None)


def test_float16_table_at_position_1857():
    # the whole table in float16: position and theta cast, product rounded, cos rounded
    th16 = thetas(128).astype(np.float16)
    ang = (np.float16(1857) * th16).astype(np.float16).astype(np.float64)
    exact = 1857 * thetas(128)
    angle_err = np.abs(ang - exact).max()
    cos_err = np.abs(np.cos(ang).astype(np.float16).astype(np.float64) - np.cos(exact)).max()
    assert f"{angle_err:.2f}" == "0.73" and f"{cos_err:.2f}" == "0.71"
    t = text()
    assert "position 1857" in t and "off by 0.73 rad" in t and "off by 0.71" in t
    assert "0.78" not in t                 # the unverified number from the issue is not repeated


def test_the_notebooks_own_angle_errors():
    """The notebook's cells c06-04 (the table of angle errors) and c06-12 (the float16 table at 1857), run: against
    the rounding written out here, one multiplication per pair (Python floats through NumPy scalars)."""
    nb = notebook_cells.run_cells(NB.stem, "c06-02", "c06-04", "c06-12")
    for base in [1e4, 5e5]:
        th = thetas(128, base)
        for p, err in zip([10, 100, 1_000, 10_000, 100_000, 1_000_000], nb["errors"]["float32", base]):
            worst = max(abs(float(np.float32(np.float32(p) * np.float32(t))) - p * t) for t in th)
            assert err == pytest.approx(worst, rel=1e-12, abs=0)
    assert np.all(np.isinf(nb["errors"]["float16", 1e4][4:]))           # 10^5 and 10^6 overflow float16
    exact = 1857 * thetas(128)
    assert f"{np.abs(nb['angle16'] - exact).max():.2f}" == "0.73"
    assert f"{np.abs(nb['cos16'] - np.cos(exact)).max():.2f}" == "0.71"


def test_clamped_table_numbers():
    positions = 4090 + np.arange(16)
    assert positions.max() == 4105 and int((positions >= 4096).sum()) == 10
    th = thetas(128)
    wrong = (np.minimum(positions, 4095)[:, None] - positions[:, None]) * th[None, :]
    wrapped = np.abs((wrong + np.pi) % (2 * np.pi) - np.pi)
    assert f"{wrapped.max():.2f}" == "3.12"
    t = text()
    assert "reuses row 4095 for 10 positions" in t and "up to 3.12 rad" in t
    assert 'mode="clip"' in t and "KV-cache offset plus the new tokens" in t


def test_attention_factor_numbers_and_where_it_goes():
    factor = 0.1 * math.log(4) + 1
    assert f"{factor:.4f}" == "1.1386" and f"{factor ** 2:.4f}" == "1.2965"
    t = text()
    assert "YaRN's factor 1.1386" in t and "by 1.2965" in t
    assert "multiplies $\\cos$ and $\\sin$" in t or "multiplies $\\cos$ and $\\sin$ by it" in t
    # the config's rotation is the plain rotation (dense matrices, not the fast path) times the factor
    cfg = rr.from_hf_config(ROOT / "tests" / "data" / "configs" / "qwen2.5-7b-instruct-yarn.json")
    assert cfg.attention_factor == pytest.approx(factor)
    x = np.random.default_rng(0).standard_normal(cfg.head_dim)
    half = cfg.head_dim // 2
    th = cfg.inv_freq()
    y = np.empty_like(x)
    c, s = np.cos(7 * th), np.sin(7 * th)
    y[:half], y[half:] = x[:half] * c - x[half:] * s, x[half:] * c + x[:half] * s     # rotate_half pairs
    np.testing.assert_allclose(cfg.rotate(x[None], np.array([7.0]))[0], factor * y, rtol=1e-12)


def test_reduce_then_cast_numbers():
    exact = 1e6 * thetas(128)
    red = (exact + np.pi) % (2 * np.pi) - np.pi
    err = np.abs(red.astype(np.float32).astype(np.float64) - red).max()
    assert err == pytest.approx(reduced_then_cast_error(), rel=1e-6)
    assert err <= np.spacing(np.float32(np.pi)) / 2 and f"{np.spacing(np.float32(np.pi)) / 2:.1e}" == "1.2e-07"


def test_checker_with_right_wrong_and_missing_answers(capsys):
    right = reduced_then_cast_error()
    assert check_reduced_cast_error(None) is False and capsys.readouterr().out.startswith("Not answered yet")
    assert check_reduced_cast_error(right) is True and capsys.readouterr().out.startswith("Correct: ")
    naive = float(np.abs((np.float32(1e6) * thetas(128).astype(np.float32)).astype(np.float64)
                         - 1e6 * thetas(128)).max())
    assert check_reduced_cast_error(naive) is False and "product formed in float32" in capsys.readouterr().out
    assert check_reduced_cast_error(0.0) is False and "not 0" in capsys.readouterr().out
    assert check_reduced_cast_error(1e-3) is False and capsys.readouterr().out.startswith("Not yet: ")
    assert check_reduced_cast_error("small") is False and "finite real number" in capsys.readouterr().out


def test_exercise_follows_the_course_convention():
    cs = cells()
    tags = [c["metadata"].get("tags", []) for c in cs]
    ex = [i for i, t in enumerate(tags) if "exercise" in t]
    assert [cs[i]["cell_type"] for i in ex] == ["markdown", "code"] and ex[1] == ex[0] + 1
    assert "answer = None" in "".join(cs[ex[1]]["source"])
    heading = cs[ex[1] + 1]
    assert heading["metadata"].get("heading_collapsed") is True and "".join(heading["source"]).strip() == "#### Solution"
    assert heading["metadata"].get("jp-MarkdownHeadingCollapsed") is True     # what JupyterLab 4 folds by
    sol = cs[ex[1] + 2:]
    assert all("".join(c["source"]).startswith(("# (solution)\n", "*(solution)*")) for c in sol)
    assert sol and all("solution" in c["metadata"].get("tags", []) for c in sol)
    assert all(c["metadata"]["jupyter"] == {"source_hidden": True, "outputs_hidden": True} for c in sol)
    code = [c for c in sol if c["cell_type"] == "code"]
    assert "".join(code[-1]["source"]).strip().splitlines()[-1] == "assert exercises_precision.check_reduced_cast_error(answer)"
