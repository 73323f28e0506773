"""Notebook 07: its structure (objectives, an exercise with a hidden solution, the answer after the
question), and every fact its prose states, checked independently of the notebook's own output."""

import functools
import inspect
import json
import math
from pathlib import Path

import numpy as np
import pytest

import rope_ref as rr
from rope_ref.teaching import example_kernels

NB = Path(__file__).resolve().parents[2] / "notebooks" / "07_check_your_rope.ipynb"
CELLS = json.loads(NB.read_text())["cells"]


def src(cell):
    return "".join(cell["source"])


def tags(cell):
    return cell["metadata"].get("tags", [])


TEXT = "\n".join(src(c) for c in CELLS if c["cell_type"] == "markdown" and "solution" not in tags(c))


def test_learning_objectives_at_the_top():
    found = [c for c in CELLS[:4] if c["cell_type"] == "markdown" and src(c).lstrip().startswith("## Learning objectives")]
    assert found and sum(ln.startswith("* ") for ln in src(found[0]).splitlines()) >= 3


def exercise_and_solution():
    i = next(i for i, c in enumerate(CELLS) if "exercise" in tags(c))
    j = i + 1
    while j < len(CELLS) and "solution" in tags(CELLS[j]):
        j += 1
    return i, CELLS[i + 1:j]


def test_the_exercise_has_hidden_solution_cells():
    i, solution = exercise_and_solution()
    assert CELLS[i]["cell_type"] == "markdown" and "planted bug" in src(CELLS[i])
    assert solution and all(c["metadata"].get("jupyter", {}).get("source_hidden") is True for c in solution)
    assert any(c["cell_type"] == "code" and "assert " in src(c) for c in solution)


def test_the_solution_runs_and_checks_itself():
    _, solution = exercise_and_solution()
    namespace = {"np": np, "rr": rr, "example_kernels": example_kernels, "inspect": inspect, "functools": functools}
    for c in solution:
        if c["cell_type"] == "code":
            exec(compile(src(c), "solution", "exec"), namespace)      # its asserts must hold
    assert "offset" in namespace["message"]


def test_the_bug_is_what_the_solution_says():
    """Independent of identify: buggy_rope is Llama's RoPE with row r at position r + 1."""
    x = np.random.default_rng(0).standard_normal((9, 16))
    np.testing.assert_allclose(example_kernels.buggy_rope(x), rr.rotate(x, np.arange(1, 10)), atol=1e-12)
    np.testing.assert_allclose(example_kernels.llama_style_rope(x), rr.rotate(x), atol=1e-12)
    _, solution = exercise_and_solution()
    assert "row 0 is rotated as position 1" in src(solution[0])


def test_the_question_does_not_give_the_answer_away():
    # The signature is Llama's; the cells up to the exercise never run a check on the buggy kernel
    # nor say what the bug is.
    assert inspect.signature(example_kernels.buggy_rope) == inspect.signature(example_kernels.llama_style_rope)
    i, _ = exercise_and_solution()
    start = next(k for k, c in enumerate(CELLS) if "## Find the planted bug" in src(c))
    asked = CELLS[start:i + 1]
    code = "\n".join(src(c) for c in asked if c["cell_type"] == "code")
    assert "assert_rope_matches" not in code and "identify(" not in code
    assert not any(w in "\n".join(src(c) for c in asked) for w in ("off by one", "position 1", "offset"))


def test_float16_kernel_source_is_shown_and_spec_printed_once():
    code = [src(c) for c in CELLS if c["cell_type"] == "code"]
    assert any("getsource(example_kernels.float16_angle_rope)" in s for s in code)
    # assert_rope_matches' message already ends with the identified spec: no cell prints both.
    assert not any("print(spec)" in s and "assert_rope_matches" in s for s in code)


def test_stated_numbers():
    cfg = rr.from_hf_config(example_kernels.config_path("qwen2.5-7b-instruct-yarn"))
    assert "19 published configs" in TEXT
    assert len(list(example_kernels.CONFIGS.glob("*.json"))) == 19
    assert "all 128 features" in TEXT and cfg.head_dim == cfg.rotary_dim == 128
    assert "half-split pairs" in TEXT and cfg.pairing == "half"
    assert "base $10^6$" in TEXT and cfg.base == 1e6
    assert "YaRN factor 4" in TEXT and cfg.rope_type == "yarn" and cfg.params["factor"] == 4.0
    assert r"$0.1 \ln 4 + 1 \approx 1.139$" in TEXT
    assert math.isclose(cfg.attention_factor, 0.1 * math.log(4) + 1) and round(cfg.attention_factor, 3) == 1.139


def test_the_ported_kernel_misses_exactly_the_attention_factor():
    cfg = rr.from_hf_config(example_kernels.config_path("qwen2.5-7b-instruct-yarn"))
    x = np.random.default_rng(1).standard_normal((16, 128))
    ported = example_kernels.hf_style_rope(x, cfg.inv_freq())
    fixed = example_kernels.hf_style_rope(x, cfg.inv_freq(), cfg.attention_factor)
    want = cfg.rotate(x)
    # float32 angles for positions < 16: |error| <= 4 * 2^-24 * 16 rad per unit of |x|.
    tol = 4 * 2.0 ** -24 * 16 * np.abs(x).max() * cfg.attention_factor * 2
    assert np.abs(fixed - want).max() < tol
    np.testing.assert_allclose(ported * cfg.attention_factor, want, atol=tol)


def test_config_path_names_the_shipped_configs():
    with pytest.raises(ValueError, match="qwen2.5-7b-instruct-yarn"):
        example_kernels.config_path("qwen")
