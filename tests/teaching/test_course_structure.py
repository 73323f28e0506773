"""The course's shape: objectives at the top, exercises with hidden, self-checking solutions, the fixed order."""

import json
import re
from pathlib import Path

import pytest

NB_DIR = Path(__file__).resolve().parents[2] / "notebooks"
COURSE = ["00_why_positions", "01_three_forms", "02_rotations", "03_long_term_decay", "04_attention",
          "05_context_extension", "06_precision"]


def cells(name):
    return json.loads((NB_DIR / f"{name}.ipynb").read_text())["cells"]


def src(cell):
    return "".join(cell["source"])


def tags(cell):
    return cell["metadata"].get("tags", [])


@pytest.mark.parametrize("name", COURSE)
def test_learning_objectives_near_the_top(name):
    cs = cells(name)
    found = [i for i, c in enumerate(cs[:4]) if c["cell_type"] == "markdown"
             and src(c).lstrip().startswith("## Learning objectives")]
    assert found, f"{name}: no markdown cell starting with '## Learning objectives' among the first 4"
    bullets = [ln for ln in src(cs[found[0]]).splitlines() if ln.startswith("* ")]
    assert len(bullets) >= 3, f"{name}: learning objectives need a bullet list"


@pytest.mark.parametrize("name", COURSE)
def test_every_exercise_has_a_hidden_self_checking_solution(name):
    cs = cells(name)
    exercises = [i for i, c in enumerate(cs) if "exercise" in tags(c)]
    assert exercises, f"{name}: no cell tagged 'exercise'"
    for i in exercises:
        assert cs[i]["cell_type"] == "markdown"
        j = i + 1
        solution = []
        while j < len(cs) and "solution" in tags(cs[j]):
            solution.append(cs[j])
            j += 1
        assert solution, f"{name}: exercise cell {i} is not followed by cells tagged 'solution'"
        for c in solution:
            assert c["metadata"].get("jupyter", {}).get("source_hidden") is True, \
                f"{name}: a solution cell after exercise {i} is not collapsed (jupyter.source_hidden)"
        code = [src(c) for c in solution if c["cell_type"] == "code"]
        assert code and all("assert " in s for s in code), \
            f"{name}: the solution to exercise {i} must be code that checks itself (assert)"
        assert all("rr." in s for s in code), f"{name}: the solution to exercise {i} must call rope_ref"


def test_exactly_one_cell_writes_a_formula_and_it_is_the_eq34_solution():
    tagged = [(name, c) for name in COURSE for c in cells(name) if "writes-a-formula" in tags(c)]
    assert len(tagged) == 1
    name, c = tagged[0]
    assert name == "01_three_forms" and "solution" in tags(c) and "rr.rotate(x)" in src(c)
    lines = [ln for ln in src(c).splitlines() if ln.strip() and not ln.startswith(("print", "assert", "x = "))]
    assert len(lines) <= 5, "eq 34 in five lines"


def test_notebook_01_shows_the_plain_eq34_source():
    code = [src(c) for c in cells("01_three_forms") if c["cell_type"] == "code"]
    assert any("inspect.getsource(rr.rotate_elementwise)" in s for s in code)


def test_notebook_02_run_all_shows_what_the_text_describes():
    # The text describes m = 3, n = 7; no later cell may move the widget.
    cs = cells("02_rotations")
    code = [src(c) for c in cs if c["cell_type"] == "code"]
    widget = [s for s in code if "rotations_widget(" in s]
    assert len(widget) == 1 and re.search(r"rotations_widget\(m=3, n=7\b", widget[0])
    assert not any(re.search(r"w\.(controls|view)\b", s) for s in code), "a cell moves the widget"
    text = " ".join(src(c) for c in cs if c["cell_type"] == "markdown")
    assert "$m = 3$, $n = 7$" in text
    assert "(\\phi_q - \\phi_k) + (m-n)\\theta_i" in text and "all $d/2" in text and "aliasing" in text


def test_notebook_04_has_a_cache_and_a_pattern_and_the_caveat():
    cs = cells("04_attention")
    code = "\n".join(src(c) for c in cs if c["cell_type"] == "code")
    text = "\n".join(src(c) for c in cs if c["cell_type"] == "markdown")
    assert "quantities.KVCache()" in code and "fig_attention_pattern()" in code
    assert "negative" in text and "not** a probability" in text


def test_notebook_05_draws_every_method_and_no_noisy_far_distance_panel():
    code = "\n".join(src(c) for c in cells("05_context_extension") if c["cell_type"] == "code")
    assert "fig_scores_beyond_training" not in code and "scaling_widget(" in code


def test_markdown_has_no_unformatted_float_noise():
    # e.g. 4.2700000000000005 in prose
    for name in COURSE:
        for c in cells(name):
            assert not re.search(r"\d\.\d{9,}", src(c)), f"{name}: unformatted number in a cell's source"
