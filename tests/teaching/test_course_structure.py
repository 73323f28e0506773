"""The course's shape: objectives at the top, each exercise a task, a student cell and a folded solution that ends in
the same checker, the fixed order of notebook 02's view, the topics 04 and 05 keep."""

import importlib
import re

import pytest

from notebook_cells import NOTEBOOKS, cells, src, tags

ALL = sorted(p.stem for p in NOTEBOOKS.glob("*.ipynb"))
#: The notebooks with at least one exercise (a markdown cell tagged exercise).
CHECKED = [name for name in ALL if any("exercise" in tags(c) and c["cell_type"] == "markdown" for c in cells(name))]


@pytest.mark.parametrize("name", ALL)
def test_learning_objectives_near_the_top(name):
    cs = cells(name)
    found = [c for c in cs[:4] if c["cell_type"] == "markdown" and src(c).lstrip().startswith("## Learning objectives")]
    assert found, f"{name}: no markdown cell starting with '## Learning objectives' among the first 4"
    assert len([ln for ln in src(found[0]).splitlines() if ln.startswith("* ")]) >= 3, f"{name}: a bullet list"


def checker_modules(cs) -> dict:
    """{name: module} of `from rope_ref.teaching import exercises [as y]` lines (y, else exercises)."""
    names = {}
    for line in (ln for c in cs if c["cell_type"] == "code" for ln in src(c).splitlines()):
        m = re.match(r"from rope_ref\.teaching import (.+)$", line.split("#")[0].strip())
        for item in m.group(1).strip("() ").split(",") if m else []:
            parts = item.split()
            if parts and re.fullmatch(r"exercises(_\w+)?", parts[0]):
                names[parts[-1] if len(parts) == 3 and parts[1] == "as" else parts[0]] = parts[0]
    return names


@pytest.mark.parametrize("name", CHECKED)
def test_every_exercise_is_a_task_a_student_cell_and_a_solution_with_the_same_checker(name):
    """docs/lecture_plan.md, "Exercises and solutions": task (markdown, tag exercise, '### Exercise'), student cell
    (code, tag exercise: answer = None, then one checker call ending in ';'), then the solution (one markdown cell
    tagged solution; test_notebooks checks its <details> form) whose code calls the same checker."""
    cs = cells(name)
    modules = checker_modules(cs)
    assert modules, f"{name}: no `from rope_ref.teaching import exercises...` line"
    for i, c in enumerate(cs):
        if not ("exercise" in tags(c) and c["cell_type"] == "markdown" and src(c).lstrip().startswith("### Exercise")):
            continue
        j = i + 1
        while j < len(cs) and cs[j]["cell_type"] == "markdown" and "exercise" in tags(cs[j]):
            j += 1                                                  # a task may span several markdown cells
        student, solution = cs[j], cs[j + 1] if j + 1 < len(cs) else None
        assert student["cell_type"] == "code" and "exercise" in tags(student), f"{name} cell {i}: no student cell"
        calls = re.findall(r"^(\w+)\.(check_\w+)\(", src(student), re.M)
        assert len(calls) == 1 and calls[0][0] in modules, f"{name} cell {j}: one checker call, got {calls}"
        alias, checker = calls[0]
        assert callable(getattr(importlib.import_module(f"rope_ref.teaching.{modules[alias]}"), checker, None))
        assert re.search(r"^\w+ = None\b", src(student), re.M) and src(student).rstrip().endswith(");"), \
            f"{name} cell {j}: the answer starts as None and the checker's call ends with ';'"
        assert solution is not None and "solution" in tags(solution), f"{name}: the solution follows cell {j}"
        assert f"{alias}.{checker}(" in src(solution), f"{name}: the solution calls {alias}.{checker}"
    tagged = [i for i, c in enumerate(cs) if "exercise" in tags(c) and c["cell_type"] == "markdown"]
    assert any(src(cs[i]).lstrip().startswith("### Exercise") for i in tagged), f"{name}: a task starts '### Exercise'"


def test_the_eq34_exercise_solution_is_at_most_five_lines():
    # The lesson shows eq 34 for one vector (test_notebooks checks it); the exercise extends it to a sequence.
    solved = [src(c) for c in cells("01_three_forms") if "solution" in tags(c) and "check_eq34(" in src(c)]
    assert len(solved) == 1
    code = solved[0].split("```python\n")[1].split("```")[0]
    lines = [ln for ln in code.splitlines() if ln.strip() and not ln.startswith(("print", "exercises.", "x = ", "#"))]
    assert len(lines) <= 5, "eq 34 in five lines"


def test_notebook_02_run_all_shows_what_the_text_describes():
    # The text describes m = 3, n = 7; no later cell may move the widget.
    cs = cells("02_rotations")
    code = [src(c) for c in cs if c["cell_type"] == "code"]
    widget = [s for s in code if "rotations_widget(" in s]
    assert len(widget) == 1 and re.search(r"rotations_widget\(m=3, n=7\b", widget[0])
    assert not any(re.search(r"w\.(controls|view)\b", s) for s in code), "a cell moves the widget"


def test_notebook_03_shows_no_slider_frame_before_its_exercise():
    # the decay view's frames include base 5e5 and its mean over [128, 256]: the exercise's answer
    cs = cells("03_long_term_decay")
    exercise = next(i for i, c in enumerate(cs) if "check_decay_prediction(" in src(c) and "exercise" in tags(c))
    before = [src(c) for c in cs[:exercise] if c["cell_type"] == "code"]
    assert before and all("decay_widget(" not in s and "base=5e5" not in s for s in before)


def test_notebooks_04_and_05_keep_their_topics():
    code4 = "\n".join(src(c) for c in cells("04_attention") if c["cell_type"] == "code")
    assert "keys.append(rr.rotate(k[..., t, :], t))" in code4 and "fig_attention_pattern()" in code4
    code5 = "\n".join(src(c) for c in cells("05_context_extension") if c["cell_type"] == "code")
    assert "fig_scores_beyond_training" not in code5 and "scaling_widget(" in code5 and "wavelengths(" not in code5


@pytest.mark.parametrize("name", ALL)
def test_markdown_has_no_unformatted_float_noise(name):
    # e.g. 4.2700000000000005 in prose
    assert not [c for c in cells(name) if re.search(r"\d\.\d{9,}", src(c))], f"{name}: unformatted number in a cell"
