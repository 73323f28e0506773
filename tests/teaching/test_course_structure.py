"""The course's shape: objectives at the top, exercises with hidden, self-checking solutions, the fixed order."""

import json
import re
from pathlib import Path

import pytest

NB_DIR = Path(__file__).resolve().parents[2] / "notebooks"
#: Every notebook in notebooks/ follows the convention below: a new notebook is checked without being listed.
ALL = sorted(p.stem for p in NB_DIR.glob("*.ipynb"))


def cells(name):
    return json.loads((NB_DIR / f"{name}.ipynb").read_text())["cells"]


def src(cell):
    return "".join(cell["source"])


def tags(cell):
    return cell["metadata"].get("tags", [])


@pytest.mark.parametrize("name", ALL)
def test_learning_objectives_near_the_top(name):
    cs = cells(name)
    found = [i for i, c in enumerate(cs[:4]) if c["cell_type"] == "markdown"
             and src(c).lstrip().startswith("## Learning objectives")]
    assert found, f"{name}: no markdown cell starting with '## Learning objectives' among the first 4"
    bullets = [ln for ln in src(cs[found[0]]).splitlines() if ln.startswith("* ")]
    assert len(bullets) >= 3, f"{name}: learning objectives need a bullet list"


#: The notebooks with at least one exercise (a markdown cell tagged exercise).
CHECKED = [name for name in ALL if any("exercise" in c["metadata"].get("tags", []) and c["cell_type"] == "markdown"
                                       for c in json.loads((NB_DIR / f"{name}.ipynb").read_text())["cells"])]
SOLUTION_HEADING = "#### Solution"


def heading_level(cell) -> int:
    """The level of the first line's markdown heading (0: not a heading)."""
    first = src(cell).lstrip().split("\n", 1)[0] if cell["cell_type"] == "markdown" else ""
    m = re.match(r"(#{1,6}) ", first)
    return len(m.group(1)) if m else 0


def checker_modules(cs) -> dict:
    """The notebook's names for rope_ref.teaching's checker modules (exercises, exercises_<topic>), from its
    import lines: `from rope_ref.teaching import exercises_x [as y]` binds y (or exercises_x)."""
    names = {}
    for c in cs:
        if c["cell_type"] != "code":
            continue
        for line in src(c).splitlines():
            m = re.match(r"from rope_ref\.teaching import (.+)$", line.split("#")[0].strip())
            if not m:
                continue
            for item in m.group(1).strip("() ").split(","):
                parts = item.split()
                if parts and re.fullmatch(r"exercises(_\w+)?", parts[0]):
                    names[parts[-1] if len(parts) == 3 and parts[1] == "as" else parts[0]] = parts[0]
    return names


def exercises_of(cs):
    """For each task cell: (task index, student cell index, heading index, [solution indices])."""
    out = []
    for i, c in enumerate(cs):
        if "exercise" not in tags(c) or c["cell_type"] != "markdown":
            continue
        j = i + 1
        while j < len(cs) and cs[j]["cell_type"] == "markdown" and "exercise" in tags(cs[j]):
            j += 1
        student = j if j < len(cs) and cs[j]["cell_type"] == "code" and "exercise" in tags(cs[j]) else None
        h = (student if student is not None else i) + 1
        sol = []
        k = h + 1
        while k < len(cs) and "solution" in tags(cs[k]):
            sol.append(k)
            k += 1
        out.append((i, student, h, sol))
    return out


@pytest.mark.parametrize("name", CHECKED)
def test_every_exercise_has_a_student_cell_a_checker_and_a_hidden_solution(name):
    """The convention (docs/lecture_plan.md, "Exercises and hidden solutions"): task (markdown, tag exercise),
    student cell (code, tag exercise: answer = None, then a checker from rope_ref.teaching.exercises or
    rope_ref.teaching.exercises_<topic>, called through the module's name as the notebook imports it), a collapsed
    heading "#### Solution" (tag solution, heading_collapsed), solution cells (tag solution, source and outputs
    hidden) ending in `assert exercises.<the same checker>(...)`, then a heading of level <= 4 or the end, so that
    the collapsed heading hides the solution cells and nothing else."""
    import importlib
    cs = cells(name)
    modules = checker_modules(cs)
    assert modules, f"{name}: no `from rope_ref.teaching import exercises...` line"
    found = exercises_of(cs)
    assert found, f"{name}: no markdown cell tagged 'exercise'"
    for task, student, h, sol in found:
        assert src(cs[task]).lstrip().startswith("### Exercise"), f"{name} cell {task}: a task starts '### Exercise'"
        assert student is not None, f"{name}: exercise cell {task} has no student code cell tagged 'exercise' after it"
        code = src(cs[student])
        calls = re.findall(r"^(\w+)\.(check_\w+)\(", code, re.M)
        assert len(calls) == 1 and calls[0][0] in modules, \
            f"{name} cell {student}: the student cell calls one checker of a rope_ref.teaching.exercises* module " \
            f"(as imported: {sorted(modules)}), got {calls}"
        alias, checker = calls[0]
        module = importlib.import_module(f"rope_ref.teaching.{modules[alias]}")
        assert callable(getattr(module, checker, None)), f"{name}: {modules[alias]}.{checker} does not exist"
        assert re.search(r"^\w+ = None\b", code, re.M), f"{name} cell {student}: the student's answer starts as None"
        assert code.rstrip().endswith(");"), f"{name} cell {student}: the checker's call ends with ';' (no stray False)"
        head = cs[h] if h < len(cs) else None
        assert head is not None and head["cell_type"] == "markdown" and src(head).strip() == SOLUTION_HEADING, \
            f"{name}: after the student cell {student} comes a markdown cell '{SOLUTION_HEADING}' and nothing else"
        assert head["metadata"].get("heading_collapsed") is True and "solution" in tags(head), \
            f"{name} cell {h}: the solution heading is collapsed (heading_collapsed: true) and tagged solution"
        assert head["metadata"].get("jp-MarkdownHeadingCollapsed") is True, \
            f"{name} cell {h}: JupyterLab 4 reads the collapsed state from jp-MarkdownHeadingCollapsed: true"
        assert sol, f"{name}: no cells tagged 'solution' under the heading {h}"
        for k in sol:
            jm = cs[k]["metadata"].get("jupyter", {})
            assert jm.get("source_hidden") is True and jm.get("outputs_hidden") is True, \
                f"{name} cell {k}: a solution cell hides its source and its outputs"
            first = src(cs[k]).split("\n", 1)[0]
            assert first == ("# (solution)" if cs[k]["cell_type"] == "code" else "*(solution)*"), \
                f"{name} cell {k}: a hidden cell still shows its first line; it must give nothing away, got {first!r}"
            if cs[k]["cell_type"] == "code":       # a hidden output shows its first line too
                assert src(cs[k]).split("\n")[1].startswith('print("(solution)")'), \
                    f"{name} cell {k}: a solution's first output line is print(\"(solution)\")"
        sol_code = [src(cs[k]) for k in sol if cs[k]["cell_type"] == "code"]
        assert sol_code and re.search(rf"^assert {alias}\.{checker}\(", sol_code[-1], re.M), \
            f"{name}: the solution to exercise {task} ends (its last code cell) with `assert {alias}.{checker}(...)`"
        after = sol[-1] + 1
        assert after == len(cs) or 1 <= heading_level(cs[after]) <= 4, \
            f"{name} cell {after}: the cell after a solution must be a heading (level 1-4) or nothing, else the " \
            "collapsed '#### Solution' hides it too"


@pytest.mark.parametrize("name", ALL)
def test_no_notebook_ends_in_a_solution(name):
    """After Run All, JupyterLab makes the last cell the active one and unfolds the collapsed heading above it:
    a notebook ending in a solution shows it without a click (test_browser checks what the browser shows)."""
    last = cells(name)[-1]
    assert "solution" not in tags(last), \
        f"{name}: the last cell is a solution; end with a heading cell (e.g. '## Next') after the last solution"


@pytest.mark.parametrize("name", ALL)
def test_no_solution_cell_outside_a_solution_run(name):
    cs = cells(name)
    under = {k for _, _, h, sol in exercises_of(cs) for k in [h, *sol]}
    stray = [i for i, c in enumerate(cs) if "solution" in tags(c) and i not in under]
    assert not stray, f"{name}: cells {stray} are tagged solution but not under a '#### Solution' heading"


def test_the_eq34_exercise_solution_is_at_most_five_lines():
    # The lesson shows eq 34 for one vector (test_notebooks checks it); the exercise extends it to a sequence.
    solved = [c for c in cells("01_three_forms") if "solution" in tags(c) and "check_eq34(" in src(c)]
    assert len(solved) == 1 and "rr.rotate(x)" in src(solved[0])
    lines = [ln for ln in src(solved[0]).splitlines()
             if ln.strip() and not ln.startswith(("print", "assert", "x = ", "#"))]
    assert len(lines) <= 5, "eq 34 in five lines"


def test_notebook_02_run_all_shows_what_the_text_describes():
    # The text describes m = 3, n = 7; no later cell may move the widget.
    cs = cells("02_rotations")
    code = [src(c) for c in cs if c["cell_type"] == "code"]
    widget = [s for s in code if "rotations_widget(" in s]
    assert len(widget) == 1 and re.search(r"rotations_widget\(m=3, n=7\b", widget[0])
    assert not any(re.search(r"w\.(controls|view)\b", s) for s in code), "a cell moves the widget"
    text = " ".join(src(c) for c in cs if c["cell_type"] == "markdown")
    assert "$m = 3$, $n = 7$" in text and "**both +**" in text
    assert "(\\phi_q - \\phi_k) + (m-n)\\theta_i" in text and "all $d/2" in text and "liasing" in text


def test_notebook_04_has_a_cache_and_a_pattern_and_the_caveat():
    cs = cells("04_attention")
    code = "\n".join(src(c) for c in cs if c["cell_type"] == "code")
    text = "\n".join(src(c) for c in cs if c["cell_type"] == "markdown")
    assert "keys.append(rr.rotate(k[..., t, :], t))" in code and "fig_attention_pattern()" in code
    assert "negative" in text and "not** a probability" in text


def test_notebook_05_draws_every_method_and_no_noisy_far_distance_panel():
    code = "\n".join(src(c) for c in cells("05_context_extension") if c["cell_type"] == "code")
    assert "fig_scores_beyond_training" not in code and "scaling_widget(" in code


def test_markdown_has_no_unformatted_float_noise():
    # e.g. 4.2700000000000005 in prose
    for name in ALL:
        for c in cells(name):
            assert not re.search(r"\d\.\d{9,}", src(c)), f"{name}: unformatted number in a cell's source"
