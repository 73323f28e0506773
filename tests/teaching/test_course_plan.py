"""docs/lecture_plan.md: its measured reading times are recounted from the notebooks, and the core path adds up."""

import json
import math
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PLAN = ROOT / "docs" / "lecture_plan.md"
WPM, PER_CODE_CELL, PER_VISUAL = 200, 0.5, 1.0
CORE = ["00_why_positions", "01_three_forms", "02_rotations", "03_long_term_decay", "04_attention",
        "05_context_extension"]
#: Every notebook in notebooks/: the measured table has a row for each, the extensions (06-...) included.
ALL = sorted(p.stem for p in (ROOT / "notebooks").glob("*.ipynb"))
#: A cell that draws a figure or a slider view: figures.fig_*, the extensions' F.fig_* / mx.fig_*, *_widget(,
#: and notebook 07's kernel_vs_expected(.
VISUAL = r"\bfig\w*\(|_widget\(|kernel_vs_expected\("


def cells(name):
    return json.loads((ROOT / "notebooks" / f"{name}.ipynb").read_text())["cells"]


def measure(cs):
    """(words, code cells, figure/view cells, exercises) of cells a room reads: no solutions, no student cells."""
    words = code = visual = exercises = 0
    for c in cs:
        src, tags = "".join(c["source"]), c["metadata"].get("tags", [])
        if "solution" in tags:
            continue
        if c["cell_type"] == "markdown":
            words += len(re.sub(r"\$\$.*?\$\$", " formula ", src, flags=re.S).split())
            exercises += "exercise" in tags
        elif "exercise" not in tags:
            code += 1
            visual += bool(re.search(VISUAL, src))
    return words, code, visual, exercises


def minutes(words, code, visual):
    return words / WPM + PER_CODE_CELL * code + PER_VISUAL * visual


def section(name, heading):
    """The cells from a '## heading' cell to the next '##' heading (exclusive)."""
    cs, out, inside = cells(name), [], False
    for c in cs:
        src = "".join(c["source"])
        if c["cell_type"] == "markdown" and re.match(r"#{1,2} ", src):
            inside = src.startswith(heading)
        if inside:
            out.append(c)
    assert out, heading
    return out


def test_measured_table_is_recounted_from_the_notebooks():
    text = PLAN.read_text()
    rows = {m[0]: m[1:] for m in re.findall(r"^\| (\d\d_\w+) \| (\d+) \| (\d+) \| (\d+) \| ([\d.]+) \| (\d+) \|$", text, re.M)}
    assert set(rows) == set(ALL), sorted(set(rows) ^ set(ALL))
    for name in ALL:
        w, c, v, e = measure(cells(name))
        assert rows[name] == (str(w), str(c), str(v), f"{minutes(w, c, v):.1f}", str(e)), name


def test_core_path_adds_up_to_at_most_90_minutes():
    text = PLAN.read_text()
    core = {m[1]: int(m[0]) for m in re.findall(r"^\| (\d+) \| (0\d_\w+) \|", text, re.M)}
    assert list(core) == CORE
    live = {"00_why_positions": 5, "01_three_forms": 8, "02_rotations": 5}
    home = {"01_three_forms": "## The 2-D derivation", "04_attention": "## Linear attention"}
    for name in CORE:
        w, c, v, _ = measure(cells(name))
        at_home = minutes(*measure(section(name, home[name]))[:3]) if name in home else 0.0
        if name in home:
            assert f"{at_home:.1f}" in text, f"{name}: the plan states the {at_home:.1f} min read at home"
        assert core[name] == math.ceil(minutes(w, c, v) - at_home + live.get(name, 0)), name
    total = re.search(r"\*\*(\d+) \+ (\d+) = (\d+)\*\*", text)
    assert total and int(total[1]) == sum(core.values()) and int(total[1]) + int(total[2]) == int(total[3]) <= 90
